/* `repro run EXP`: one training run, hashed at every step into a trace. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/memtl_svg.h"
#include "analysis/multirun.h"
#include "cli/run_memtl.h"
#include "cli/run_train.h"
#include "core/session.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"

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
       O_ALGO_LOCK, O_CKPT_EVERY, O_CKPT_DIR, O_RESUME, O_PRINT_CONFIG, O_MEMTL,
       O_RELEASE_EVERY };

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
    {"memory-timeline", 0, "FILE",
     "write the run's memory over steps to FILE: .svg (a picture:\ncategories stacked, "
     "allocated and reserved as lines,\nzero_grad, accumulation, working copies, checkpoints "
     "and\nreleases marked) or .json (a PyTorch memory snapshot);\nwith a program, what the "
     "Python client records; a run\nthat fails still writes what it recorded, marked cut\n"
     "(docs/memory.md)",
     O_MEMTL},
    {"memory-release-every", 0, "K",
     "after every K-th step return the allocator's cached\nmemory to the system (empty_cache) "
     "and mark it on the\nmemory timeline",
     O_RELEASE_EVERY},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_run_spec = {"run", REPRO_CLI_RUN, synopsis, own_opts, epilogue};

typedef struct {
    repro_common co; /* -q, --json, --steps, --seed, --set, --threads, --workers */
    repro_session_opts so; /* the session's: trace, dumps, taps, checkpoints, resume */
    char backend_set[80]; /* --backend NAME as train.backend=NAME */
    const char *exp_only; /* an option for EXP given (refused with a program) */
    const char *memtl_path; /* --memory-timeline FILE, or NULL */
    int print_cfg;
    char **args; /* the operands: the experiment */
    int nargs;
} run_opts;

/* An own option: 0 or -1 (error slot). */
static int run_option(run_opts *o, int id, const char *v)
{
    repro_session_opts *so = &o->so;
    switch (id) {
    case O_BACKEND: /* in order with the run options: a later --set wins */
        if (strlen(v) >= sizeof o->backend_set - 16)
            return repro_error_set(REPRO_EINVAL, "run: --backend %.32s...: no such backend", v);
        snprintf(o->backend_set, sizeof o->backend_set, "train.backend=%s", v);
        return repro_run_pass_add(&o->co.pass, "run", "set", o->backend_set) < 0 ? -1 : 0;
    case O_PRINT_CONFIG: o->print_cfg = 1; return 0;
    case O_MEMTL: o->memtl_path = v; return 0;
    case O_RELEASE_EVERY:
        return repro_parse_count("run: --memory-release-every", v, 1, LONG_MAX, &so->release_every);
    case O_OUTPUT: so->output = v; return 0;
    case O_NO_TRACE: so->no_trace = 1; return 0;
    case O_ALGO_LOCK: so->algo_lock = v; return 0;
    case O_DUMP_ONLY: so->dump_only = v; return 0;
    case O_CKPT_DIR: so->checkpoint_dir = v; return 0;
    case O_RESUME: so->resume = v; return 0;
    case O_CKPT_EVERY:
        return repro_parse_count("run: --checkpoint-every", v, 1, LONG_MAX, &so->checkpoint_every);
    case O_DUMP: return repro_session_parse_dump(so, "run: --dump", v);
    case O_TAP_WRITE: return repro_session_parse_tap(so, "run: --tap-write", REPRO_TAP_WRITE, v);
    case O_TAP_READ: return repro_session_parse_tap(so, "run: --tap-read", REPRO_TAP_READ, v);
    }
    return 0;
}

/* An own option through the table's loop: remembered as one that only an
 * experiment takes. */
static int run_own(void *ctx, int id, const char *v)
{
    run_opts *o = ctx;
    if (run_option(o, id, v))
        return -1;
    if (id != O_MEMTL) /* a program's run records one too (the Python client's) */
        o->exp_only = own_opts[id - 1].name; /* ids are 1 + the row */
    return 0;
}

/* Every option, common and own, into o (nothing applied yet); the
 * operands into o->args. 0, 1 for --help (printed), or -1. */
static int parse_options(int argc, char **argv, run_opts *o)
{
    repro_cli_parser p;
    int rc = repro_cli_parse(&p, &repro_run_spec, argc, argv, &o->co, run_own, o);
    o->args = p.args;
    o->nargs = rc == 0 ? p.nargs : 0;
    return rc;
}

/* The experiment, then the run options (and --backend) in the order
 * given. 0 or -1 (error slot). */
static int load_config(repro_config *cfg, run_opts *o)
{
    if (o->co.name[0] || o->co.timeout_s > 0) /* the common --name, --timeout */
        return repro_error_set(REPRO_EINVAL, "run: --name and --timeout are for a program after "
                                             "'--'");
    if (o->nargs < 1)
        return repro_error_set(REPRO_EINVAL, "run: missing experiment file (see `repro help run`)");
    if (o->nargs > 1)
        return repro_error_set(REPRO_EINVAL, "run: more than one experiment ('%s', '%s')",
                               o->args[0], o->args[1]);
    if (repro_config_load(cfg, o->args[0]) ||
        repro_config_apply_run_options(cfg, o->co.pass.argv, o->co.pass.n))
        return -1;
    if (o->so.no_trace && (o->so.output || o->so.ndump))
        return repro_error_set(REPRO_EINVAL, "run: --no-trace excludes -o and --dump");
    if (o->so.checkpoint_dir && !o->so.checkpoint_every)
        return repro_error_set(REPRO_EINVAL, "run: --checkpoint-dir needs --checkpoint-every");
    if (o->so.release_every && !o->memtl_path)
        return repro_error_set(REPRO_EINVAL, "run: --memory-release-every needs --memory-timeline");
    /* Refused now, not after the training. */
    if (o->memtl_path && repro_memtl_check_path(o->memtl_path, "run: --memory-timeline"))
        return -1;
    return repro_config_validate(cfg);
}

/* `repro run [options] -- PROGRAM ARGS...`: one run of an external
 * program through the multi-run engine (the same protocol and checks as
 * `repro check -- ...`). */
static int run_program(run_opts *o, char **program)
{
    if (o->exp_only) {
        repro_error_set(REPRO_EINVAL, "run: option '--%s' does not apply with a program after "
                                      "'--'", o->exp_only);
        return repro_report_error();
    }
    if (o->nargs > 0) {
        repro_error_set(REPRO_EINVAL, "run: '%s' and a program after '--': give one or the other",
                        o->args[0]);
        return repro_report_error();
    }
    char tl_tmp[4400];
    if (o->memtl_path && (repro_memtl_check_path(o->memtl_path, "run: --memory-timeline") ||
                          repro_run_memtl_begin(o->memtl_path, tl_tmp, sizeof tl_tmp)))
        return repro_report_error();
    repro_multirun *m = repro_cli_program_runs(&o->co, program, o->co.name, o->co.timeout_s, "run");
    if (!m)
        return REPRO_EXIT_ENV;
    int failed = repro_multirun_add(m, "run", "fresh-process run to run", NULL, NULL) ||
                 repro_multirun_execute(m);
    if (o->memtl_path && repro_run_memtl_end(o->memtl_path, tl_tmp, failed))
        failed = 1;
    int rc = failed ? repro_report_error() : 0;
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

int repro_cmd_run(int argc, char **argv)
{
    char **program;
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    run_opts o;
    memset(&o, 0, sizeof o);
    repro_config *cfg = calloc(1, sizeof *cfg); /* large: off the stack */
    if (!cfg) {
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    int rc = parse_options(argc, argv, &o), exit_code;
    if (rc == 0 && program)
        exit_code = run_program(&o, program);
    else if (rc == 0 && load_config(cfg, &o) == 0)
        exit_code = o.print_cfg ? (repro_config_dump(cfg, stdout), repro_finish_stdout(0))
                                : repro_run_train(argc, argv, &o.co, &o.so, cfg, o.memtl_path);
    else
        exit_code = rc == 1 ? repro_finish_stdout(0) : repro_report_error();
    free(cfg);
    return exit_code;
}
