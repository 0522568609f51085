/* `repro run EXP`: one training run, hashed at every step into a trace. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "cli/cli.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "kernels/philox.h"
#include "util/progress.h"
#include "core/memory.h"
#include "record/record.h"
#include "util/seeds.h"
#include "core/train.h"

const char repro_run_usage[] =
    "usage: repro run EXP [options]\n"
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
    "  --backend NAME    kernel backend, cpu or cuda (train.backend); exit 3 when\n"
    "                    this build or machine has no usable GPU\n"
    "  --set KEY=VALUE   override any key, as section.key or an unambiguous key;\n"
    "                    validated like the file; may be repeated\n"
    "  -o, --output PATH write the trace there (default runs/EXP/RUN-ID/trace.jsonl)\n"
    "  --no-trace        hash every step but write no trace file\n"
    "  --dump STEP[,STEP...]\n"
    "                    also write every hashed tensor of those steps as .npy\n"
    "                    (dump/step-NNNNNN/NAME.npy beside the trace)\n"
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
} run_opts;

static int parse_dump(const char *spec, run_opts *o)
{
    const char *p = spec;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || (*end && *end != ','))
            return repro_error_set(REPRO_EINVAL, "run: --dump %s: expected STEP[,STEP...]",
                                   spec);
        if (o->ndump == MAX_DUMP)
            return repro_error_set(REPRO_EINVAL, "run: --dump: at most %d steps", MAX_DUMP);
        o->dump[o->ndump++] = v;
        p = *end ? end + 1 : end;
    }
    return 0;
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
        {"backend", required_argument, 0, 'B'},
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
                        !strcmp(a, "--backend");
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
        case 'k':
            if (repro_config_set(cfg, optarg))
                return -1;
            break;
        case 'p': o->print_cfg = 1; break;
        case 'q': o->quiet = 1; break;
        case 'o': o->output = optarg; break;
        case 'n': o->no_trace = 1; break;
        case 'L': o->algo_lock = optarg; break;
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
            return repro_error_set(REPRO_EINVAL, "run: unknown option '%s' (see `repro help run`)",
                                   argv[optind - 1]);
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

int repro_cmd_run(int argc, char **argv)
{
    static repro_config cfg; /* large: keep it off the stack */
    run_opts o = {0};
    int rc = parse_run_args(argc, argv, &cfg, &o);
    if (rc == 1)
        return repro_finish_stdout(0);
    if (rc)
        return repro_report_error();
    if (o.print_cfg) {
        repro_config_dump(&cfg, stdout);
        return repro_finish_stdout(0);
    }

    char trace_path[1200], dump_dir[1300];
    if (o.output)
        snprintf(trace_path, sizeof trace_path, "%s", o.output);
    else
        default_trace_path(&cfg, trace_path, sizeof trace_path);
    dump_dir_for(trace_path, dump_dir, sizeof dump_dir);

    repro_trainer t;
    repro_recorder *rec = NULL;
    double t0 = repro_now();
    if (repro_trainer_init(&t, &cfg))
        return repro_report_error();
    if (o.algo_lock && repro_algo_policy_lock(&t.model.algo, o.algo_lock)) {
        rc = repro_report_error();
        repro_trainer_release(&t);
        return rc;
    }
    long steps = cfg.train_steps;
    /* Resume before the recorder starts: it continues the checkpoint's chain. */
    repro_checkpoint_info ck = {0, -1, {{0}}};
    if (o.resume) {
        if (repro_checkpoint_load(&t, o.resume, &ck)) {
            rc = repro_report_error();
            repro_trainer_release(&t);
            return rc;
        }
        if (ck.chain_steps != ck.step || ck.step >= steps) {
            if (ck.chain_steps != ck.step)
                repro_error_set(REPRO_EINVAL,
                                "run: %s carries no hash chain (saved without a recorder): a "
                                "resumed trace could not continue it",
                                o.resume);
            else
                repro_error_set(REPRO_EINVAL,
                                "run: %s is at step %ld; this run has only %ld steps (raise "
                                "--steps)",
                                o.resume, ck.step, steps);
            rc = repro_report_error();
            repro_trainer_release(&t);
            return rc;
        }
    }
    char ckpt_dir[1300];
    if (o.checkpoint_dir)
        snprintf(ckpt_dir, sizeof ckpt_dir, "%s", o.checkpoint_dir);
    else {
        const char *slash = strrchr(trace_path, '/');
        snprintf(ckpt_dir, sizeof ckpt_dir, "%.*s", slash ? (int)(slash - trace_path) : 1,
                 slash ? trace_path : ".");
    }
    repro_recorder_opts ro = {
        .trace_path = o.no_trace ? NULL : trace_path,
        .level = cfg.trace_level,
        .every = cfg.trace_every,
        .total_steps = steps,
        .dump_steps = o.dump,
        .ndump = o.ndump,
        .dump_dir = dump_dir,
        .tap_op = o.tap_mode ? o.tap_op : NULL,
        .tap_path = o.tap_path,
        .tap_mode = o.tap_mode,
        .start_step = ck.step,
        .start_chain = o.resume ? &ck.chain : NULL,
        .resumed_from = o.resume,
    };
    if (repro_recorder_new(&rec, &t, &ro)) {
        rc = repro_report_error();
        repro_trainer_release(&t);
        return rc;
    }
    double setup = repro_now() - t0;
    char nondet[1024];
    if (repro_config_nondeterministic(&cfg, nondet, sizeof nondet) &&
        cfg.train_deterministic == REPRO_DETERMINISTIC_WARN)
        fprintf(stderr, "repro: warning: nondeterministic kernel variants in use: %s\n", nondet);
    printf("repro run %s (%s): %s, seed %llu, %ld steps, batch %d, threads %d, workers %d\n",
           cfg.name, cfg.path, cfg.model_type == REPRO_MODEL_MLP ? "mlp" : "cnn",
           (unsigned long long)cfg.train_seed, steps, cfg.train_batch_size, cfg.train_threads,
           cfg.data_num_workers);
    printf("  seed scheme %s, rng %s, %ld parameters\n", REPRO_SEED_SCHEME, REPRO_RNG_VERSION,
           repro_model_param_count(&t.model));
    {
        static const char *const prec[] = {"fp32", "bf16", "fp16"};
        printf("  precision %s, accumulation_steps %d (%d samples per update), zero_grad %s\n",
               prec[cfg.train_precision], cfg.train_accumulation_steps,
               cfg.train_accumulation_steps * cfg.train_batch_size,
               cfg.train_zero_grad == REPRO_ZERO_GRAD_NONE ? "none" : "zero");
        repro_memory mem;
        repro_memory_account(&t.model, cfg.train_zero_grad, &mem);
        repro_memory_print(stdout, &mem, "  ");
    }
    if (o.resume)
        printf("  resumed from %s after step %ld\n", o.resume, ck.step);
    if (o.checkpoint_every && repro_mkdirs(ckpt_dir)) {
        rc = repro_report_error();
        repro_trainer_release(&t);
        return rc;
    }
    fflush(stdout);

    repro_progress prog;
    repro_progress_init(&prog, stderr, steps, cfg.train_log_every, o.quiet);
    double first_loss = 0;
    double t1 = repro_now();
    for (long s = ck.step; s < steps; s++) {
        if (repro_trainer_step(&t)) {
            repro_progress_finish(&prog);
            rc = repro_report_error();
            repro_trainer_release(&t); /* the trace keeps its valid prefix */
            return rc;
        }
        if (s == ck.step)
            first_loss = t.loss;
        if (o.checkpoint_every && t.step % o.checkpoint_every == 0) {
            char ckpt[1400];
            snprintf(ckpt, sizeof ckpt, "%s/ckpt-%ld.bin", ckpt_dir, t.step);
            if (repro_checkpoint_save(&t, ckpt)) {
                repro_progress_finish(&prog);
                rc = repro_report_error();
                repro_trainer_release(&t);
                return rc;
            }
        }
        repro_progress_update(&prog, s + 1, t.loss);
    }
    /* Every step hashed before the clock stops: hashing is part of a run. */
    if (repro_recorder_sync(rec)) {
        repro_progress_finish(&prog);
        rc = repro_report_error();
        repro_trainer_release(&t);
        return rc;
    }
    double train_s = repro_now() - t1;
    repro_progress_finish(&prog);

    /* Eval reads the trained weights only; its results go into the trailer
     * as information (not hashed). */
    double eval_loss, acc;
    repro_trainer_evaluate(&t, &eval_loss, &acc);
    json_t *extra = json_pack("{s:f, s:f, s:f}", "train_seconds", train_s, "eval_loss",
                              isfinite(eval_loss) ? eval_loss : -1.0, "eval_accuracy",
                              isfinite(acc) ? acc : -1.0);
    repro_digest chain;
    rc = repro_recorder_finish(rec, &chain, extra);
    json_decref(extra);
    if (rc) {
        rc = repro_report_error();
        repro_trainer_release(&t);
        return rc;
    }
    float final = (float)t.loss;
    uint32_t bits;
    memcpy(&bits, &final, sizeof bits);
    char hex[65];
    repro_digest_hex(&chain, hex);
    printf("  loss %.6f -> %.9g (float bits 0x%08x)\n", first_loss, final, bits);
    printf("  held-out: loss %.6f, accuracy %.2f%% of %d samples\n", eval_loss, 100.0 * acc,
           t.test_set.n);
    if (t.scaler.enabled)
        printf("  fp16 loss scaler: scale %g, %ld of %ld steps skipped (inf/NaN gradients)\n",
               (double)t.scaler.scale, t.scaler.skipped_total, t.step);
    printf("  %.2f s training, %.1f steps/s, %.2f s setup\n", train_s, (steps - ck.step) / train_s, setup);
    if (!o.no_trace)
        printf("  trace %s\n", trace_path);
    if (o.ndump)
        printf("  dumps %s/step-NNNNNN/\n", dump_dir);
    printf("chain %s\n", hex);
    repro_trainer_release(&t);
    return repro_finish_stdout(0);
}
