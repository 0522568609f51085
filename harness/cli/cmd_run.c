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
#include "util/escape.h"
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

const char repro_run_usage[] =
    "usage: repro run EXP [options]\n"
    "       repro run [--steps N] [--seed S] [--set K=V] [--threads T] [--workers W]\n"
    "                 [--name NAME] [--timeout SECONDS] -- PROGRAM [ARGS...]\n"
    "\n"
    "Trains the experiment EXP (an INI file, see `repro help config`) once,\n"
    "hashing every tensor of every step into a trace, and prints a summary:\n"
    "final loss, held-out loss and accuracy, speed, and the final chain digest,\n"
    "which certifies the whole trajectory.\n"
    "\n"
    "  --steps N         train N steps (train.steps)\n"
    "  --seed S          global seed (train.seed)\n"
    "  --threads T       kernel threads (train.threads); results do not depend on it\n"
    "  --workers W       data-loader workers (data.num_workers)\n"
    "  --ranks N         data-parallel processes (train.ranks): starts them with\n"
    "                    mpirun, or joins the MPI job it runs in (mpirun -np N\n"
    "                    repro run EXP, srun, a hostfile); rank 0 writes the trace,\n"
    "                    every rank checks its replica after every update"
    "  --backend NAME    kernel backend, cpu or cuda (train.backend); exit 3 when\n"
    "                    this build or machine has no usable GPU\n"
    "  --set KEY=VALUE   override any key, as section.key or an unambiguous key;\n"
    "                    validated like the file; may be repeated\n"
    "  -o, --output PATH write the trace there (default runs/EXP/RUN-ID/trace.jsonl)\n"
    "  --no-trace        hash every step but write no trace file\n"
    "  --dump STEP[,STEP...]\n"
    "                    also write every hashed tensor of those steps as .npy\n"
    "                    (dump/step-NNNNNN/NAME.npy beside the trace), with the\n"
    "                    dropout masks (mask.LAYER; ranks = 1 only) and the\n"
    "                    optimizer's scalars (optim.*); an item may be a range A-B\n"
    "                    or A-B/K (every K-th);\n"
    "                    step 0 is the initial state (parameters before any update)\n"
    "  --dump-only GLOB  only the tensors whose name matches, e.g. 'param.*'\n"
    "  --tap-write OP=FILE, --tap-read OP=FILE\n"
    "                    quarantine taps (used by `repro bisect --quarantine`): save\n"
    "                    every output of OP (an op output such as bwd.fc1.dw, or a\n"
    "                    variant op such as linear.bwd_weight) to FILE, or replace\n"
    "                    it with FILE's values, step by step\n"
    "  --algo-lock TRACE replay the convolution algorithms recorded in TRACE (makes a\n"
    "                    benchmark = on run reproducible)\n"
    "  --checkpoint-every K\n"
    "                    save a checkpoint after every K-th step (model, optimizer\n"
    "                    state, loader position and RNG streams, the chain so far),\n"
    "                    atomically, as ckpt-STEP.bin beside the trace\n"
    "  --checkpoint-dir DIR  write the checkpoints there instead\n"
    "  --resume CKPT     continue from a checkpoint of this experiment and config:\n"
    "                    the trace holds steps after it, bitwise equal to the\n"
    "                    uninterrupted run's, its chain continuing the checkpoint's\n"
    "  --print-config    print the effective config (INI) and exit\n"
    "  -q, --quiet       no progress on stderr\n"
    "  -h, --help        this text\n"
    "\n"
    "With `-- PROGRAM ARGS...` it runs a program that records through librepro,\n"
    "once, with the runner protocol in its environment (see `repro help check`),\n"
    "and prints the chain digest of the trace it wrote (under runs/NAME/).\n"
    "\n"
    "Progress goes to stderr: a live line on a terminal, else a line every\n"
    "train.log_every steps. Exit: 0 ok, 2 bad experiment or option, 3 environment.\n";

#define MAX_DUMP 64

typedef struct {
    int quiet, print_cfg, no_trace;
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

/* Parses `repro run` options into cfg (loaded from the file first). */
static int parse_run_args(int argc, char **argv, repro_config *cfg, run_opts *o)
{
    static const struct option opts[] = {
        {"steps", required_argument, 0, 's'},   {"seed", required_argument, 0, 'S'},
        {"threads", required_argument, 0, 't'}, {"workers", required_argument, 0, 'w'},
        {"set", required_argument, 0, 'k'},     {"print-config", no_argument, 0, 'p'},
        {"output", required_argument, 0, 'o'},  {"no-trace", no_argument, 0, 'n'},
        {"dump", required_argument, 0, 'd'},    {"quiet", no_argument, 0, 'q'},
        {"tap-write", required_argument, 0, 'W'}, {"tap-read", required_argument, 0, 'R'},
        {"algo-lock", required_argument, 0, 'L'},
        {"checkpoint-every", required_argument, 0, 'K'},
        {"checkpoint-dir", required_argument, 0, 'C'},
        {"resume", required_argument, 0, 'U'},
        {"backend", required_argument, 0, 'B'},  {"dump-only", required_argument, 0, 'O'},
        {"ranks", required_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    /* First pass: find EXP (the one non-option) without applying anything. */
    const char *exp = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_run_usage, stdout);
            return 1;
        }
        if (a[0] == '-' && a[1]) {
            int takes = !strcmp(a, "--steps") || !strcmp(a, "--seed") || !strcmp(a, "--threads") ||
                        !strcmp(a, "--workers") || !strcmp(a, "--set") || !strcmp(a, "-o") ||
                        !strcmp(a, "--output") || !strcmp(a, "--dump") ||
                        !strcmp(a, "--tap-write") || !strcmp(a, "--tap-read") ||
                        !strcmp(a, "--algo-lock") || !strcmp(a, "--checkpoint-every") ||
                        !strcmp(a, "--checkpoint-dir") || !strcmp(a, "--resume") ||
                        !strcmp(a, "--backend") || !strcmp(a, "--dump-only") ||
                        !strcmp(a, "--ranks");
            i += takes;
            continue;
        }
        if (exp)
            return repro_error_set(REPRO_EINVAL, "run: more than one experiment ('%s', '%s')",
                                   exp, a);
        exp = a;
    }
    if (!exp)
        return repro_error_set(REPRO_EINVAL, "run: missing experiment file (see `repro help run`)");
    if (repro_config_load(cfg, exp))
        return -1;

    optind = 1;
    opterr = 0;
    int c;
    char set[REPRO_CONFIG_PATH_MAX + 64];
    while ((c = getopt_long(argc, argv, ":qho:", opts, NULL)) != -1) {
        const char *key = NULL;
        switch (c) {
        case 's': key = "train.steps"; break;
        case 'S': key = "train.seed"; break;
        case 't': key = "train.threads"; break;
        case 'w': key = "data.num_workers"; break;
        case 'B': key = "train.backend"; break;
        case 'N': key = "train.ranks"; break;
        case 'k':
            if (repro_config_set(cfg, optarg))
                return -1;
            break;
        case 'p': o->print_cfg = 1; break;
        case 'q': o->quiet = 1; break;
        case 'o': o->output = optarg; break;
        case 'n': o->no_trace = 1; break;
        case 'L': o->algo_lock = optarg; break;
        case 'O': o->dump_only = optarg; break;
        case 'C': o->checkpoint_dir = optarg; break;
        case 'U': o->resume = optarg; break;
        case 'K': {
            char *end;
            o->checkpoint_every = strtol(optarg, &end, 10);
            if (end == optarg || *end || o->checkpoint_every < 1)
                return repro_error_set(REPRO_EINVAL,
                                       "run: --checkpoint-every %s: expected a step count >= 1",
                                       optarg);
            break;
        }
        case 'd':
            if (parse_dump(optarg, o))
                return -1;
            break;
        case 'W':
        case 'R': {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1] || (size_t)(eq - optarg) >= sizeof o->tap_op)
                return repro_error_set(REPRO_EINVAL, "run: --tap-%s %s: expected OP=FILE",
                                       c == 'W' ? "write" : "read", optarg);
            snprintf(o->tap_op, sizeof o->tap_op, "%.*s", (int)(eq - optarg), optarg);
            o->tap_path = eq + 1;
            o->tap_mode = c == 'W' ? REPRO_TAP_WRITE : REPRO_TAP_READ;
            break;
        }
        case ':':
            return repro_error_set(REPRO_EINVAL, "run: option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return repro_cli_unknown_option("run", argv[optind - 1], opts);
        }
        if (key) {
            snprintf(set, sizeof set, "%s=%s", key, optarg);
            if (repro_config_set(cfg, set))
                return -1;
        }
    }
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
    if (removed && !c->o.quiet)
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
    repro_progress_init(&prog, stderr, c->cfg.train_steps, c->cfg.train_log_every, c->o.quiet);
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

/* Data parallel: every rank's step time and peak memory, printed by rank 0. */
static int rank_stats(run_ctx *c)
{
    int world = c->t.world;
    double *secs = calloc((size_t)world, sizeof *secs);
    long *rss = calloc((size_t)world, sizeof *rss);
    int rc = !secs || !rss ? repro_error_set(REPRO_ENOMEM, "out of memory")
                           : repro_train_rank_stats(&c->t, c->train_s, secs, rss);
    long steps = c->cfg.train_steps - c->ck.step;
    for (int r = 0; !rc && c->rank == 0 && r < world; r++)
        printf("  rank %d: %.2f ms/step, peak resident %.1f MiB\n", r,
               steps > 0 ? 1e3 * secs[r] / (double)steps : 0.0, (double)rss[r] / 1024.0);
    free(secs);
    free(rss);
    return rc;
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
    printf("  loss %.6f -> %.9g (float bits 0x%08x)\n", c->first_loss, final, bits);
    printf("  held-out: loss %.6f, accuracy %.2f%% of %d samples\n", eval_loss, 100.0 * acc,
           c->t.test_set.n);
    if (c->t.scaler.enabled)
        printf("  fp16 loss scaler: scale %g, %ld of %ld steps skipped (inf/NaN gradients)\n",
               (double)c->t.scaler.scale, c->t.scaler.skipped_total, c->t.step);
    printf("  %.2f s training, %.1f steps/s, %.2f s setup\n", c->train_s,
           (c->cfg.train_steps - c->ck.step) / c->train_s, c->setup_s);
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
static int run_program(int argc, char **argv, char **program)
{
    static const struct option opts[] = {
        {"steps", required_argument, 0, 's'},   {"seed", required_argument, 0, 'S'},
        {"threads", required_argument, 0, 't'}, {"workers", required_argument, 0, 'w'},
        {"set", required_argument, 0, 'k'},     {"name", required_argument, 0, 'n'},
        {"timeout", required_argument, 0, 'T'}, {"quiet", no_argument, 0, 'q'},
        {0, 0, 0, 0},
    };
    repro_run_pass pass = {0};
    char name[128] = "";
    long timeout = 0;
    int quiet = 0, c, li = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":q", opts, &li)) != -1) {
        if (c == 'n') {
            if (repro_golden_name_check(optarg))
                return repro_report_error();
            snprintf(name, sizeof name, "%s", optarg);
        } else if (c == 'T') {
            if (repro_parse_count("run: --timeout", optarg, 1, 7 * 24 * 3600, &timeout))
                return repro_report_error();
        } else if (c == 'q') {
            quiet = 1;
        } else if (c == ':' || c == '?' ||
                   repro_run_pass_add(&pass, "run", opts[li].name, optarg) < 0) {
            if (c == ':' || c == '?')
                repro_error_set(REPRO_EINVAL, "run: option '%s' %s with a program after '--'",
                                argv[optind - 1], c == ':' ? "needs a value" : "does not apply");
            return repro_report_error();
        }
    }
    if (optind < argc) {
        repro_error_set(REPRO_EINVAL, "run: '%s' and a program after '--': give one or the other",
                        argv[optind]);
        return repro_report_error();
    }
    if (!name[0])
        repro_program_name(program, name, sizeof name);
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m)
        return REPRO_EXIT_ENV;
    repro_multirun_init(m, name, name, "run");
    m->cmd = program;
    m->timeout_s = (double)timeout;
    m->quiet = quiet;
    m->no_element_detail = 1;
    repro_multirun_add_pass(m, &pass);
    int rc = repro_multirun_add(m, "run", "fresh-process run to run", NULL, NULL) ||
                     repro_multirun_execute(m)
                 ? repro_report_error()
                 : 0;
    if (!rc) {
        char hex[65];
        repro_digest_hex(&m->traces[0].trailer_chain, hex);
        printf("repro run -- %s: %ld steps\n  trace %s\nchain %s\n", program[0],
               m->traces[0].trailer_steps, m->traces[0].path, hex);
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
        c->o.quiet = 1;
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
    if (program)
        return run_program(argc, argv, program);
    run_ctx *c = calloc(1, sizeof *c); /* large (the config): off the stack */
    if (!c) {
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    int rc = parse_run_args(argc, argv, &c->cfg, &c->o), exit_code = 0;
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
    free(c);
    return exit_code;
}
