/* `repro run EXP`: one training run, hashed at every step into a trace. */
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/multirun.h"
#include "core/checkpoint.h"
#include "golden/golden.h"
#include "util/numparse.h"
#include "cli/cli.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/fsutil.h"
#include "kernels/philox.h"
#include "util/progress.h"
#include "core/memory.h"
#include "core/train_record.h"
#include "util/seeds.h"
#include "core/train.h"
#include "core/dist.h"
#include "core/train_dist.h"
#include "cli/run_ranks.h"
#include "util/escape.h"

static const char synopsis[] =
    "usage: repro run EXP [options]\n"
    "       repro run [--steps N] [--seed S] [--set K=V] [--threads T] [--workers W]\n"
    "                 [--name NAME] [--timeout SECONDS] [-q] [--json] -- PROGRAM [ARGS...]\n"
    "\n"
    "Trains the experiment EXP (an INI file, see `repro help config`) once,\n"
    "hashing every tensor of every step into a trace, and prints a summary:\n"
    "final loss, held-out loss and accuracy, speed, and the final chain digest,\n"
    "which certifies the whole trajectory.\n";

static const char epilogue[] =
    "\n"
    "With `-- PROGRAM ARGS...` it runs a program that records through librepro,\n"
    "once, with the runner protocol in its environment (see `repro help check`),\n"
    "and prints the chain digest of the trace it wrote (under runs/NAME/).\n"
    "\n"
    "Progress goes to stderr: a live line on a terminal, else a line every\n"
    "train.log_every steps. Exit: 0 ok, 2 bad experiment or option, 3 environment.\n";

enum { O_BACKEND = 1, O_OUTPUT, O_NO_TRACE, O_DUMP, O_DUMP_ONLY, O_TAP_WRITE, O_TAP_READ,
       O_ALGO_LOCK, O_CKPT_EVERY, O_CKPT_DIR, O_RESUME, O_PRINT_CONFIG };

static const repro_cli_opt own_opts[] = {
    {"backend", 0, "NAME",
     "kernel backend, cpu or cuda (train.backend); exit 3 when\nthis build or machine has no "
     "usable GPU",
     O_BACKEND},
    {"output", 'o', "PATH", "write the trace there (default runs/EXP/RUN-ID/trace.jsonl)",
     O_OUTPUT},
    {"no-trace", 0, NULL, "hash every step but write no trace file", O_NO_TRACE},
    {"dump", 0, "STEP[,STEP...]",
     "also write every hashed tensor of those steps as .npy\n(dump/step-NNNNNN/NAME.npy beside "
     "the trace), with the\ndropout masks (mask.LAYER; ranks = 1 only), the optimizer's scalars\n(optim.*) and, "
     "under accumulation_steps K > 1, each\nmicro-batch's inputs (batch.*.mbI.npy, I = 0..K-1);"
     "\nan item may be a range A-B or A-B/K (every K-th);\nstep 0 is the initial state "
     "(parameters before any update)",
     O_DUMP},
    {"dump-only", 0, "GLOB", "only the tensors whose name matches, e.g. 'param.*'", O_DUMP_ONLY},
    {"tap-write", 0, "OP=FILE",
     "quarantine taps (used by `repro bisect --quarantine`): save\nevery output of OP (an op "
     "output such as bwd.fc1.dw, or a\nvariant op such as linear.bwd_weight) to FILE, step by "
     "step",
     O_TAP_WRITE},
    {"tap-read", 0, "OP=FILE", "replace every output of OP with FILE's values, step by step",
     O_TAP_READ},
    {"algo-lock", 0, "TRACE",
     "replay the convolution algorithms recorded in TRACE (makes a\nbenchmark = on run "
     "reproducible)",
     O_ALGO_LOCK},
    {"checkpoint-every", 0, "K",
     "save a checkpoint after every K-th step (model, optimizer\nstate, loader position and RNG "
     "streams, the chain so far),\natomically, as ckpt-STEP.bin beside the trace",
     O_CKPT_EVERY},
    {"checkpoint-dir", 0, "DIR", "write the checkpoints there instead", O_CKPT_DIR},
    {"resume", 0, "CKPT",
     "continue from a checkpoint of this experiment and config:\nthe trace holds steps after it, "
     "bitwise equal to the\nuninterrupted run's, its chain continuing the checkpoint's",
     O_RESUME},
    {"print-config", 0, NULL, "print the effective config (INI) and exit", O_PRINT_CONFIG},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_run_spec = {"run", REPRO_CLI_RUN, synopsis, own_opts, epilogue};

#define MAX_DUMP 64

typedef struct {
    repro_common co; /* -q, --json, --steps, --seed, --set, --threads, --workers */
    char backend_set[80]; /* --backend NAME as train.backend=NAME */
    const char *exp_only; /* an option for EXP given (refused with a program) */
    int print_cfg, no_trace;
    int tap_mode;
    char tap_op[128];
    const char *tap_path;
    const char *algo_lock;
    const char *output;
    long checkpoint_every;
    const char *checkpoint_dir;
    const char *resume;
    long dump[MAX_DUMP];
    int ndump;
    const char *dump_only; /* a glob over tensor names, or NULL: all */
} run_opts;

/* One decimal step number at *p (digits only); advances *p. */
static int dump_number(const char **p, long *out)
{
    if (**p < '0' || **p > '9')
        return -1;
    long v = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (v > (LONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

static int dump_add(run_opts *o, long v)
{
    if (o->ndump == MAX_DUMP)
        return repro_error_set(REPRO_EINVAL, "run: --dump: at most %d steps", MAX_DUMP);
    o->dump[o->ndump++] = v;
    return 0;
}

/* --dump STEP[,STEP...] where each item is N, or A-B, or A-B/K (every K-th
 * step from A to B). Step 0 is the initial state, before any update. */
static int parse_dump(const char *spec, run_opts *o)
{
    const char *p = spec;
    while (*p) {
        long a, b, k = 1;
        if (dump_number(&p, &a))
            goto bad;
        b = a;
        if (*p == '-' && (p++, dump_number(&p, &b) || b < a))
            goto bad;
        if (*p == '/' && (p++, dump_number(&p, &k) || k < 1))
            goto bad;
        if (*p && *p != ',')
            goto bad;
        for (long s = a; s <= b; s += k)
            if (dump_add(o, s))
                return -1;
        p = *p ? p + 1 : p;
    }
    return 0;
bad:
    return repro_error_set(REPRO_EINVAL,
                           "run: --dump %s: expected STEP, A-B or A-B/K, comma-separated", spec);
}

/* --tap-write/--tap-read OP=FILE. */
static int parse_tap(run_opts *o, int id, const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1] || (size_t)(eq - v) >= sizeof o->tap_op)
        return repro_error_set(REPRO_EINVAL, "run: --tap-%s %s: expected OP=FILE",
                               id == O_TAP_WRITE ? "write" : "read", v);
    snprintf(o->tap_op, sizeof o->tap_op, "%.*s", (int)(eq - v), v);
    o->tap_path = eq + 1;
    o->tap_mode = id == O_TAP_WRITE ? REPRO_TAP_WRITE : REPRO_TAP_READ;
    return 0;
}

/* An own option: 0 or -1 (error slot). */
static int run_option(run_opts *o, int id, const char *v)
{
    switch (id) {
    case O_BACKEND: /* in order with the run options: a later --set wins */
        if (strlen(v) >= sizeof o->backend_set - 16)
            return repro_error_set(REPRO_EINVAL, "run: --backend %.32s...: no such backend", v);
        snprintf(o->backend_set, sizeof o->backend_set, "train.backend=%s", v);
        return repro_run_pass_add(&o->co.pass, "run", "set", o->backend_set) < 0 ? -1 : 0;
    case O_PRINT_CONFIG: o->print_cfg = 1; return 0;
    case O_OUTPUT: o->output = v; return 0;
    case O_NO_TRACE: o->no_trace = 1; return 0;
    case O_ALGO_LOCK: o->algo_lock = v; return 0;
    case O_DUMP_ONLY: o->dump_only = v; return 0;
    case O_CKPT_DIR: o->checkpoint_dir = v; return 0;
    case O_RESUME: o->resume = v; return 0;
    case O_CKPT_EVERY:
        return repro_parse_count("run: --checkpoint-every", v, 1, LONG_MAX, &o->checkpoint_every);
    case O_DUMP: return parse_dump(v, o);
    case O_TAP_WRITE:
    case O_TAP_READ: return parse_tap(o, id, v);
    }
    return 0;
}

/* Every option, common and own, into o (nothing applied yet); the
 * operands stay at argv[optind..]. 0, 1 for --help (printed), or -1. */
static int parse_options(int argc, char **argv, run_opts *o)
{
    repro_cli_parser p;
    repro_cli_parser_init(&p, &repro_run_spec);
    const char *v;
    int id;
    while ((id = repro_cli_next(&p, argc, argv, &o->co, &v)) != 0) {
        if (id == REPRO_CLI_HELP) {
            repro_cli_help(stdout, &repro_run_spec);
            return 1;
        }
        if (id < 0 || run_option(o, id, v))
            return -1;
        o->exp_only = own_opts[id - 1].name; /* ids are 1 + the row */
    }
    return 0;
}

/* The experiment, then the run options (and --backend) in the order
 * given. 0 or -1 (error slot). */
static int load_config(int argc, char **argv, repro_config *cfg, run_opts *o)
{
    if (o->co.name[0] || o->co.timeout_s > 0) /* the common --name, --timeout */
        return repro_error_set(REPRO_EINVAL, "run: --name and --timeout are for a program after "
                                             "'--'");
    if (optind >= argc)
        return repro_error_set(REPRO_EINVAL, "run: missing experiment file (see `repro help run`)");
    if (optind + 1 < argc)
        return repro_error_set(REPRO_EINVAL, "run: more than one experiment ('%s', '%s')",
                               argv[optind], argv[optind + 1]);
    if (repro_config_load(cfg, argv[optind]) ||
        repro_config_apply_run_options(cfg, o->co.pass.argv, o->co.pass.n))
        return -1;
    if (o->no_trace && (o->output || o->ndump))
        return repro_error_set(REPRO_EINVAL, "run: --no-trace excludes -o and --dump");
    if (o->checkpoint_dir && !o->checkpoint_every)
        return repro_error_set(REPRO_EINVAL, "run: --checkpoint-dir needs --checkpoint-every");
    return repro_config_validate(cfg);
}

/* runs/<experiment>/<YYYYmmdd-HHMMSS>-<pid>/trace.jsonl */
static void default_trace_path(const repro_config *cfg, char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, len, "runs/%s/%s-%ld/trace.jsonl", cfg->name, stamp, (long)getpid());
}

/* The trace's directory + "/dump". */
static void dump_dir_for(const char *trace, char *buf, size_t len)
{
    const char *slash = strrchr(trace, '/');
    if (slash)
        snprintf(buf, len, "%.*s/dump", (int)(slash - trace), trace);
    else
        snprintf(buf, len, "dump");
}

/* Everything one `repro run` holds, so each phase below is a function
 * that fits on a screen and the cleanup is in one place. */
typedef struct {
    repro_config cfg;
    run_opts o;
    char trace_path[1200], dump_dir[1300], ckpt_dir[1300];
    repro_trainer t;
    int trainer_ready;
    repro_train_recorder *rec;
    repro_checkpoint_info ck;
    double setup_s, train_s, first_loss;
    repro_dist *dist; /* data parallel: this process's MPI job, or NULL */
    int rank;
    double *rank_seconds; /* rank 0 of a job: every rank's training time ... */
    long *rank_rss_kib;   /* ... and peak resident set, rank order */
} run_ctx;

/* Where the trace, its dumps and the checkpoints go. */
static void plan_paths(run_ctx *c)
{
    if (c->o.output)
        snprintf(c->trace_path, sizeof c->trace_path, "%s", c->o.output);
    else
        default_trace_path(&c->cfg, c->trace_path, sizeof c->trace_path);
    dump_dir_for(c->trace_path, c->dump_dir, sizeof c->dump_dir);
    if (c->o.checkpoint_dir) {
        snprintf(c->ckpt_dir, sizeof c->ckpt_dir, "%s", c->o.checkpoint_dir);
    } else {
        const char *slash = strrchr(c->trace_path, '/');
        snprintf(c->ckpt_dir, sizeof c->ckpt_dir, "%.*s",
                 slash ? (int)(slash - c->trace_path) : 1, slash ? c->trace_path : ".");
    }
}

/* Resume before the recorder starts: it continues the checkpoint's chain. */
static int resume(run_ctx *c)
{
    c->ck = (repro_checkpoint_info){0, -1, {{0}}};
    if (!c->o.resume)
        return 0;
    if (repro_checkpoint_load(&c->t, c->o.resume, &c->ck))
        return -1;
    if (c->ck.chain_steps != c->ck.step)
        return repro_error_set(REPRO_EINVAL,
                               "run: %s carries no hash chain (saved without a recorder): a "
                               "resumed trace could not continue it",
                               c->o.resume);
    if (c->ck.step >= c->cfg.train_steps)
        return repro_error_set(REPRO_EINVAL,
                               "run: %s is at step %ld; this run has only %ld steps (raise "
                               "--steps)",
                               c->o.resume, c->ck.step, (long)c->cfg.train_steps);
    return 0;
}

/* The trainer's recorder. The negative control (util/fault.h) is read
 * here, at the top, and passed down: the numerics core never reads the
 * environment. */
static int start_recorder(run_ctx *c)
{
    repro_fault fault;
    if (repro_fault_from_env(&fault) || repro_fault_overflow_from_env(&c->t.scaler.fault_step))
        return -1;
    c->t.fault = fault; /* a replica fault (rank=R) is the trainer's to apply */
    if (c->rank != 0)
        return 0; /* data parallel: rank 0 records, the others only train */
    const char *spec = getenv("REPRO_FAULT");
    if (spec && *spec && (fault.active || c->t.scaler.fault_step))
        fprintf(stderr, "repro: warning: REPRO_FAULT=%s: a test-only fault is injected into this "
                        "run (recorded in its trace header)\n",
                spec);
    repro_train_recorder_opts ro = {
        .trace_path = c->o.no_trace ? NULL : c->trace_path,
        .level = c->cfg.trace_level,
        .every = c->cfg.trace_every,
        .total_steps = c->cfg.train_steps,
        .dump_steps = c->o.dump,
        .ndump = c->o.ndump,
        .dump_only = c->o.dump_only,
        .dump_dir = c->dump_dir,
        .tap_op = c->o.tap_mode ? c->o.tap_op : NULL,
        .tap_path = c->o.tap_path,
        .tap_mode = c->o.tap_mode,
        .start_step = c->ck.step,
        .start_chain = c->o.resume ? &c->ck.chain : NULL,
        .resumed_from = c->o.resume,
        .fault_spec = fault.active || c->t.scaler.fault_step ? spec : NULL,
    };
    return repro_train_recorder_new(&c->rec, &c->t, &ro, &fault);
}

/* Temporaries of checkpoints whose writer was killed, left in the
 * directory this run checkpoints into: removed before it writes there. */
static int clean_checkpoint_temps(const run_ctx *c)
{
    int removed;
    if (repro_checkpoint_clean_temps(c->ckpt_dir, &removed))
        return -1;
    if (removed && !c->o.co.quiet)
        fprintf(stderr, "repro: removed %d abandoned checkpoint temporar%s from %s\n", removed,
                removed == 1 ? "y" : "ies", c->ckpt_dir);
    return 0;
}

static int setup(run_ctx *c)
{
    double t0 = repro_now();
    plan_paths(c);
    if (repro_trainer_init_ranked(&c->t, &c->cfg, c->dist))
        return -1;
    c->trainer_ready = 1;
    if ((c->o.algo_lock && repro_algo_policy_lock(&c->t.model.algo, c->o.algo_lock)) ||
        resume(c) || start_recorder(c))
        return -1;
    if (c->o.checkpoint_every && (repro_mkdirs(c->ckpt_dir) || clean_checkpoint_temps(c)))
        return -1;
    c->setup_s = repro_now() - t0;
    return 0;
}

static void print_header(const run_ctx *c)
{
    const repro_config *cfg = &c->cfg;
    char nondet[1024];
    if (repro_config_nondeterministic(cfg, nondet, sizeof nondet) &&
        cfg->train_deterministic == REPRO_DETERMINISTIC_WARN)
        fprintf(stderr, "repro: warning: nondeterministic kernel variants in use: %s\n", nondet);
    if (c->o.co.json)
        return; /* the summary is one JSON document at the end */
    printf("repro run %s (%s): %s, seed %llu, %ld steps, batch %d, threads %d, workers %d\n",
           cfg->name, cfg->path, cfg->model_type == REPRO_MODEL_MLP ? "mlp" : "cnn",
           (unsigned long long)cfg->train_seed, (long)cfg->train_steps, cfg->train_batch_size,
           cfg->train_threads, cfg->data_num_workers);
    printf("  seed scheme %s, rng %s, %ld parameters\n", REPRO_SEED_SCHEME, REPRO_RNG_VERSION,
           repro_model_param_count(&c->t.model));
    static const char *const prec[] = {"fp32", "bf16", "fp16"};
    printf("  precision %s, accumulation_steps %d (%d samples per update), zero_grad %s\n",
           prec[cfg->train_precision], cfg->train_accumulation_steps,
           cfg->train_accumulation_steps * cfg->train_batch_size,
           cfg->train_zero_grad == REPRO_ZERO_GRAD_NONE ? "none" : "zero");
    repro_memory mem;
    repro_memory_account(&c->t.model, cfg->train_zero_grad, &mem);
    repro_memory_print(stdout, &mem, "  ");
    if (cfg->train_ranks > 1 || cfg->train_shard_size > 0) {
        char ar[32];
        printf("  ranks %d (MPI), shards of %d samples (%d per batch), allreduce %s\n",
               cfg->train_ranks, cfg->train_shard_size,
               cfg->train_shard_size ? cfg->train_batch_size / cfg->train_shard_size : 1,
               repro_config_variant_name(cfg, REPRO_KEY_variant_allreduce, ar, sizeof ar));
    }
    if (c->o.resume)
        printf("  resumed from %s after step %ld\n", c->o.resume, c->ck.step);
    fflush(stdout);
}

static int maybe_checkpoint(run_ctx *c)
{
    if (!c->o.checkpoint_every || c->t.step % c->o.checkpoint_every != 0 || c->rank != 0)
        return 0;
    char ckpt[1400];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-%ld.bin", c->ckpt_dir, c->t.step);
    return repro_checkpoint_save(&c->t, ckpt);
}

/* The step loop. Every step is hashed before the clock stops: hashing is
 * part of a run. On failure the trace keeps its valid prefix. */
static int train(run_ctx *c)
{
    repro_progress prog;
    repro_progress_init(&prog, stderr, c->cfg.train_steps, c->cfg.train_log_every, c->o.co.quiet);
    double t1 = repro_now();
    int rc = 0;
    for (long s = c->ck.step; s < c->cfg.train_steps && !rc; s++) {
        rc = repro_trainer_step(&c->t) || maybe_checkpoint(c);
        if (s == c->ck.step)
            c->first_loss = c->t.loss;
        if (!rc)
            repro_progress_update(&prog, s + 1, c->t.loss);
    }
    if (!rc && c->rec)
        rc = repro_train_recorder_sync(c->rec);
    c->train_s = repro_now() - t1;
    repro_progress_finish(&prog);
    return rc ? -1 : 0;
}

/* --json: the summary as one document (the same facts as the text). */
static void print_ranks(const run_ctx *c, json_t *doc);

static int print_json(const run_ctx *c, const char *chain, float final, double eval_loss,
                      double acc)
{
    json_t *doc = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:s}", "experiment",
                            c->cfg.name, "path", c->cfg.path, "seed",
                            (json_int_t)c->cfg.train_seed, "steps", (json_int_t)c->cfg.train_steps,
                            "first_loss", c->first_loss, "final_loss", (double)final,
                            "eval_loss", isfinite(eval_loss) ? eval_loss : -1.0, "eval_accuracy",
                            isfinite(acc) ? acc : -1.0, "train_seconds", c->train_s, "chain",
                            chain);
    if (!doc)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    json_object_set_new(doc, "trace", c->o.no_trace ? json_null() : json_string(c->trace_path));
    if (c->o.ndump)
        json_object_set_new(doc, "dump_dir", json_string(c->dump_dir));
    print_ranks(c, doc);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(doc);
    return 0;
}

/* Data parallel: every rank's training time and peak memory, gathered
 * on rank 0 for the summary. */
static int rank_stats(run_ctx *c)
{
    int world = c->t.world;
    c->rank_seconds = calloc((size_t)world, sizeof *c->rank_seconds);
    c->rank_rss_kib = calloc((size_t)world, sizeof *c->rank_rss_kib);
    if (!c->rank_seconds || !c->rank_rss_kib)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    return repro_train_rank_stats(&c->t, c->train_s, c->rank_seconds, c->rank_rss_kib);
}

static double rank_ms_per_step(const run_ctx *c, int r)
{
    long steps = c->cfg.train_steps - c->ck.step;
    return steps > 0 ? 1e3 * c->rank_seconds[r] / (double)steps : 0.0;
}

/* "ranks": [{"rank", "ms_per_step", "peak_rss_mib"}...] (JSON), or one
 * line per rank. */
static void print_ranks(const run_ctx *c, json_t *doc)
{
    if (!c->dist)
        return;
    json_t *arr = doc ? json_array() : NULL;
    for (int r = 0; r < c->t.world; r++) {
        double mib = (double)c->rank_rss_kib[r] / 1024.0;
        if (arr)
            json_array_append_new(arr, json_pack("{s:i, s:f, s:f}", "rank", r, "ms_per_step",
                                                 rank_ms_per_step(c, r), "peak_rss_mib", mib));
        else
            printf("  rank %d: %.2f ms/step, peak resident %.1f MiB\n", r,
                   rank_ms_per_step(c, r), mib);
    }
    if (doc)
        json_object_set_new(doc, "ranks", arr);
}

/* Eval reads the trained weights only; its results go into the trailer as
 * information (not hashed). Then the summary. */
static int finish(run_ctx *c)
{
    if (c->dist && rank_stats(c))
        return -1;
    if (c->rank != 0)
        return 0;
    double eval_loss, acc;
    repro_trainer_evaluate(&c->t, &eval_loss, &acc);
    json_t *extra = json_pack("{s:f, s:f, s:f}", "train_seconds", c->train_s, "eval_loss",
                              isfinite(eval_loss) ? eval_loss : -1.0, "eval_accuracy",
                              isfinite(acc) ? acc : -1.0);
    repro_digest chain;
    int rc = repro_train_recorder_finish(c->rec, &chain, extra);
    json_decref(extra);
    if (rc)
        return -1;
    float final = (float)c->t.loss;
    uint32_t bits;
    memcpy(&bits, &final, sizeof bits);
    char hex[65];
    repro_digest_hex(&chain, hex);
    if (c->o.co.json)
        return print_json(c, hex, final, eval_loss, acc);
    printf("  loss %.6f -> %.9g (float bits 0x%08x)\n", c->first_loss, final, bits);
    printf("  held-out: loss %.6f, accuracy %.2f%% of %d samples\n", eval_loss, 100.0 * acc,
           c->t.test_set.n);
    if (c->t.scaler.enabled)
        printf("  fp16 loss scaler: scale %g, %ld of %ld steps skipped (inf/NaN gradients)\n",
               (double)c->t.scaler.scale, c->t.scaler.skipped_total, c->t.step);
    printf("  %.2f s training, %.1f steps/s, %.2f s setup\n", c->train_s,
           (c->cfg.train_steps - c->ck.step) / c->train_s, c->setup_s);
    print_ranks(c, NULL);
    if (!c->o.no_trace)
        printf("  trace %s\n", c->trace_path);
    if (c->o.ndump)
        printf("  dumps %s/step-NNNNNN/\n", c->dump_dir);
    printf("chain %s\n", hex);
    return 0;
}

/* `repro run [options] -- PROGRAM ARGS...`: one run of an external
 * program through the multi-run engine (the same protocol and checks as
 * `repro check -- ...`). */
static int run_program(run_opts *o, int argc, char **argv, char **program)
{
    if (o->exp_only) {
        repro_error_set(REPRO_EINVAL, "run: option '--%s' does not apply with a program after "
                                      "'--'", o->exp_only);
        return repro_report_error();
    }
    if (optind < argc) {
        repro_error_set(REPRO_EINVAL, "run: '%s' and a program after '--': give one or the other",
                        argv[optind]);
        return repro_report_error();
    }
    repro_multirun *m = repro_cli_program_runs(&o->co, program, o->co.name, o->co.timeout_s, "run");
    if (!m)
        return REPRO_EXIT_ENV;
    int rc = repro_multirun_add(m, "run", "fresh-process run to run", NULL, NULL) ||
                     repro_multirun_execute(m)
                 ? repro_report_error()
                 : 0;
    if (!rc) {
        char hex[65];
        repro_digest_hex(&m->traces[0].trailer_chain, hex);
        if (o->co.json) {
            json_t *doc = json_pack("{s:s, s:I, s:s, s:s}", "program", program[0], "steps",
                                    (json_int_t)m->traces[0].trailer_steps, "trace",
                                    m->traces[0].path, "chain", hex);
            json_dumpf(doc, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
            json_decref(doc);
        } else {
            printf("repro run -- %s: %ld steps\n  trace %s\nchain %s\n", program[0],
                   m->traces[0].trailer_steps, m->traces[0].path, hex);
        }
        rc = repro_finish_stdout(0);
    }
    repro_multirun_release(m);
    free(m);
    return rc;
}

/* Inside an MPI job (mpirun, srun): joins it as its rank. The world size
 * is the job's; a ranks value set to another is an error. Ranks other than
 * 0 write nothing (no trace, dumps or checkpoints; stdout to /dev/null). */
static int join_ranks(run_ctx *c)
{
    int world = repro_dist_launched_size();
    if (!world)
        return 0;
    repro_config *cfg = &c->cfg;
    if (cfg->line[REPRO_KEY_train_ranks] != 0 && cfg->train_ranks != world)
        return repro_error_set(REPRO_EINVAL,
                               "run: ranks = %d, but this MPI job has %d processes: drop "
                               "--ranks/ranks (the job's size is used) or start %d",
                               cfg->train_ranks, world, cfg->train_ranks);
    cfg->train_ranks = world;
    if (repro_config_validate(cfg) || repro_dist_join(&c->dist))
        return -1;
    c->rank = repro_dist_rank(c->dist);
    if (c->rank != 0) {
        c->o.no_trace = 1;
        c->o.output = NULL;
        c->o.co.quiet = 1;
        if (!freopen("/dev/null", "w", stdout))
            return repro_error_set_errno(REPRO_EIO, "run: rank %d: /dev/null", c->rank);
    }
    return 0;
}

/* A replica drift, and a refusal of the config or a checkpoint (which
 * every rank reads alike), are reported by rank 0; the other ranks exit
 * with the same code quietly. Any other error (a file missing on one
 * machine, MPI) is reported by the rank it happened on, naming it. */
static int report_rank_error(const run_ctx *c)
{
    /* a drift, or a refusal of the config or checkpoint every rank read alike */
    if (c->rank != 0 && (repro_error_code() == REPRO_EMISMATCH || repro_error_code() == REPRO_EINVAL))
        return repro_exit_code_for(repro_error_code());
    if (c->rank == 0)
        return repro_report_error();
    fprintf(stderr, "repro: rank %d: %s\n", c->rank, repro_esc(repro_error_message()));
    return repro_exit_code_for(repro_error_code());
}

int repro_cmd_run(int argc, char **argv)
{
    char **program;
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    run_ctx *c = calloc(1, sizeof *c); /* large (the config): off the stack */
    if (!c) {
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    int rc = parse_options(argc, argv, &c->o), exit_code = 0;
    if (rc == 0 && program) {
        exit_code = run_program(&c->o, argc, argv, program);
        free(c);
        return exit_code;
    }
    if (rc == 0)
        rc = load_config(argc, argv, &c->cfg, &c->o);
    if (rc == 1 || (rc == 0 && c->o.print_cfg)) {
        if (rc == 0)
            repro_config_dump(&c->cfg, stdout);
        exit_code = repro_finish_stdout(0);
    } else if (!rc && c->cfg.train_ranks > 1 && !repro_dist_launched_size()) {
        exit_code = repro_run_launch_ranks(c->cfg.train_ranks, argc, argv);
    } else if (rc || join_ranks(c) || setup(c)) {
        exit_code = report_rank_error(c);
    } else {
        print_header(c);
        exit_code = train(c) || finish(c) ? report_rank_error(c) : repro_finish_stdout(0);
    }
    if (c->trainer_ready)
        repro_trainer_release(&c->t); /* frees the recorder first */
    repro_dist_leave(c->dist);
    free(c->rank_seconds);
    free(c->rank_rss_kib);
    free(c);
    return exit_code;
}
