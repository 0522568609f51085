/* `repro check EXP`: runs the experiment several times as fresh processes
 * (optionally across thread and worker counts), compares the traces, and
 * says whether the run is reproducible — and if not, where, and in which
 * scope of the determinism contract. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "analysis/batchinv.h"
#include "analysis/batchinv_rows.h"
#include "analysis/compare.h"
#include "analysis/external_ranks.h"
#include "core/loader.h"
#include "util/error.h"
#include "golden/check_golden.h"
#include "golden/check_report.h"
#include "golden/golden.h"
#include "analysis/multirun.h"
#include "util/junit.h"
#include "util/child.h"
#include "util/escape.h"
#include "util/numparse.h"
#include "util/outpath.h"
#include "util/progress.h"
#include "util/runs.h"
#include "record/trace.h"

static const char synopsis[] =
    "usage: repro check EXP [options]\n"
    "       repro check [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs EXP several times, each in a fresh process (several at once where the\n"
    "CPUs allow: --jobs), and compares the traces bit for bit. Exit 0 when all\n"
    "runs are identical (the shared chain digest is printed), 1 when they are not,\n"
    "with a report: the first divergent step, the tensors that differ there in\n"
    "forward/backward order (the first is the likely origin), the element range,\n"
    "max |a-b| and ULP distance (from tensor dumps of both sides, re-run to that\n"
    "step), and the scope of the mismatch: fresh-process run to run, thread count,\n"
    "or worker count.\n"
    "\n"
    "Run 1 is also compared with the golden record of this environment class\n"
    "(golden/EXP/CLASS.jsonl in the repository of EXP or PROGRAM, from any directory;\n"
    "see `repro bless`): on a mismatch the report names the commits since the blessed\n"
    "one that touched kernels/, harness/, Makefile or the experiment (for a program:\n"
    "the paths of its repository, and a `repro bisect` command that runs as printed).\n"
    "Without a golden for this class it lists the classes that have one\n"
    "and compares with the closest by tolerance; that is not a failure unless\n"
    "--require-golden. --steps, --seed, --set and the other run options apply to\n"
    "every run (--seed and --set leave the golden out).\n";

static const char epilogue[] =
    "\n"
    "With `-- PROGRAM ARGS...` repro checks a program it did not write: each run\n"
    "starts PROGRAM (argv as given, no shell) in a fresh process with the runner\n"
    "protocol in its environment (REPRO_TRACE, REPRO_SEED, REPRO_THREADS,\n"
    "REPRO_WORKERS, REPRO_RUN_INDEX, REPRO_SET_<KEY> for --set KEY=VALUE and\n"
    "REPRO_SET_STEPS for --steps; see docs/PROTOCOL.md); the program records its\n"
    "tensors through librepro or the Python client. A program that exits non-zero,\n"
    "times out, or writes no trace, a cut-short trace or a trace of another seed\n"
    "could not be tested: exit 3, with the end of its stderr.\n"
    "\n"
    "Traces, logs and dumps are kept under runs/EXP/check-STAMP/.\n"
    "Exit: 0 reproducible, 1 not, 2 bad experiment or option, 3 environment.\n";

enum { O_RESUME_AT = 1, O_JUNIT, O_REQUIRE, O_NO_GOLDEN, O_KEEP, O_BATCHINV, O_BATCH_SIZES,
       O_GIT_BISECT, O_JOBS, O_STRICT_SCOPES, O_REPORT };

static const repro_cli_opt own_opts[] = {
    {"resume-at", 0, "K",
     "one more run that trains to step K, checkpoints, and\nresumes in a fresh process; its "
     "steps K+1.. must equal\nrun 1's (scope checkpoint/resume)",
     O_RESUME_AT},
    {"junit", 0, "FILE", "also write a JUnit XML report for CI", O_JUNIT},
    {"report", 0, "FILE",
     "also write the check as one self-contained HTML page\n(verdict per scope, divergence "
     "curve and tensors,\ngolden history, memory timeline, environment, timing;\nno script, "
     "nothing fetched); a path that cannot be\nwritten is exit 2 before any run; written "
     "even when\nthe check is cut short (docs/report.md)",
     O_REPORT},
    {"require-golden", 0, NULL, "fail (exit 1) when this environment class has no golden",
     O_REQUIRE},
    {"no-golden", 0, NULL, "do not compare with the golden", O_NO_GOLDEN},
    {"keep", 0, NULL,
     "keep the traces of a passing check (by default they are\nremoved; a failing check's "
     "always stay, and runs/NAME/\nkeeps the newest $REPRO_KEEP_RUNS run directories, default "
     "20)",
     O_KEEP},
    {"batch-invariance", 0, NULL,
     "check only that each sample gets the same bits whatever\nbatch it is in (scope batch "
     "composition): the held-out\nsamples through the eval forward in batches of each\n"
     "--batch-sizes and in shuffled compositions, and one\ntraining batch whole vs in 8 "
     "micro-batches, compared row\nby row bit for bit; a sample that differs is named with\n"
     "its batches and the first op whose row differs. Runs in\nthis process (same weights: "
     "after --steps N training\nsteps, default 0). With -- PROGRAM: one run per size with\n"
     "REPRO_BATCH_SIZE, rows compared by sample id\n(docs/PROTOCOL.md)",
     O_BATCHINV},
    {"batch-sizes", 0, "LIST", "batch sizes for --batch-invariance (default 1,7,64)",
     O_BATCH_SIZES},
    {"git-bisect", 0, NULL,
     "exit codes for `git bisect run`: 0 good, 1 bad, 125 this\ntree cannot be tested "
     "(environment, a run that failed),\n130 on a usage or input error (git aborts the "
     "bisection)",
     O_GIT_BISECT},
    {"strict-scopes", 0, NULL,
     "a --threads, --workers or (program) --ranks scope whose\nruns all recorded the same "
     "count, or none (the program\nignored REPRO_THREADS, or does not say), fails with exit\n"
     "3 instead of a warning",
     O_STRICT_SCOPES},
    {"jobs", 0, "N",
     "runs at once (default: as many as the CPUs hold:\nCPUs / (threads x ranks) of the widest "
     "run; 1 for a\nprogram after '--', which may share files between runs);\nthe bits never "
     "depend on it",
     O_JOBS},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_check_spec = {"check", REPRO_CLI_CHECK, synopsis, own_opts, epilogue};

typedef struct {
    repro_common co;                /* the common options (common_opts.h) */
    int runs;                       /* --runs, default 2 */
    const char *junit;
    int require_golden, no_golden;
    int overridden; /* --set or --seed: the committed config's golden may not apply */
    const char *exp;
    char **program;                 /* `-- PROGRAM ARGS...`, or NULL */
    char name[128];                 /* the program's golden name */
    int name_given;                 /* --name; else the name the program records */
    long resume_at;
    /* what the experiment's data settings mean for a worker-count check */
    int augments;                   /* shift, flip or noise is on */
    int augment_by_worker;          /* augment_seed = worker */
    int allreduce_ring;             /* [variant] allreduce = ring */
    int tp_ring;                    /* [variant] linear.tp_reduce = ring */
    int keep;                       /* --keep: a passing check keeps its traces */
    int batch_invariance;           /* --batch-invariance: that scope only */
    repro_batchinv_opts bi;         /* its batch sizes */
    int bi_sizes_given, runs_given;
    int jobs;                       /* --jobs; 0: fit the machine */
    int strict_scopes;              /* --strict-scopes: an unexercised scope is exit 3 */
    /* --report: the page is opened (its temporary file made) before the
     * first run, so a path that cannot be written fails at once. */
    const char *report_path;
    repro_outfile report;
    int report_open;
    char command[4096];             /* the command line, for the page */
    char started_at[32];            /* when the check began (UTC) */
    double t0;
    char golden_name[128];          /* the experiment's name (its goldens') */
} check_opts;

/* --batch-invariance is a scope of its own: the options of the other
 * scopes and of the golden do not combine with it. 0 or -1 (error slot). */
static int batch_invariance_conflicts(const check_opts *o)
{
    if (!o->batch_invariance)
        return o->bi_sizes_given ? repro_error_set(REPRO_EINVAL, "check: --batch-sizes needs "
                                                                 "--batch-invariance")
                                 : 0;
    const char *other = o->runs_given      ? "--runs"
                        : o->jobs          ? "--jobs"
                        : o->co.nlists     ? o->co.lists[0].flag
                        : o->resume_at     ? "--resume-at"
                        : o->require_golden ? "--require-golden"
                        : o->report_path    ? "--report"
                                            : NULL;
    if (other)
        return repro_error_set(REPRO_EINVAL,
                               "check: %s does not combine with --batch-invariance (a scope of "
                               "its own: check the others in a separate call)",
                               other);
    return 0;
}

/* An own option: 0 or -1 (error slot). */
static int check_option(void *ctx, int id, const char *v)
{
    check_opts *o = ctx;
    long t;
    switch (id) {
    case O_BATCHINV: o->batch_invariance = 1; return 0;
    case O_BATCH_SIZES:
        o->bi_sizes_given = 1;
        return repro_batchinv_parse_sizes(&o->bi, "check: --batch-sizes", v);
    case O_RESUME_AT: return repro_parse_count("check: --resume-at", v, 1, LONG_MAX, &o->resume_at);
    case O_JUNIT: o->junit = v; return 0;
    case O_REPORT: o->report_path = v; return 0;
    case O_REQUIRE: o->require_golden = 1; return 0;
    case O_GIT_BISECT: return 0; /* read before parsing (repro_cmd_check) */
    case O_KEEP: o->keep = 1; return 0;
    case O_STRICT_SCOPES: o->strict_scopes = 1; return 0;
    case O_NO_GOLDEN: o->no_golden = 1; return 0;
    case O_JOBS:
        if (repro_parse_count("check: --jobs", v, 1, REPRO_MULTIRUN_MAX, &t))
            return -1;
        o->jobs = (int)t;
        return 0;
    }
    return 0;
}

/* The options before the program (o->program, already cut off argv): 0, 1
 * for --help (printed), or -1 (error slot). */
static int parse_check_args(int argc, char **argv, check_opts *o)
{
    repro_batchinv_opts_init(&o->bi);
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_check_spec, argc, argv, &o->co, check_option, o);
    if (parsed)
        return parsed;
    o->runs = o->co.runs ? o->co.runs : 2;
    o->runs_given = o->co.runs != 0;
    snprintf(o->name, sizeof o->name, "%s", o->co.name);
    o->name_given = o->co.name[0] != '\0';
    if (batch_invariance_conflicts(o))
        return -1;
    if (o->program) {
        if (p.nargs)
            return repro_error_set(REPRO_EINVAL,
                                   "check: '%s' and a program after '--': give one or the other",
                                   p.args[0]);
        if (o->resume_at)
            return repro_error_set(REPRO_EINVAL,
                                   "check: --resume-at needs repro's own checkpoints; a program "
                                   "after '--' has none");
        if (!o->name[0])
            repro_program_name(o->program, o->name, sizeof o->name);
        o->exp = o->name;
        o->overridden = o->co.pass.overridden;
        return 0;
    }
    if (o->name[0] || o->co.timeout_s > 0)
        return repro_error_set(REPRO_EINVAL, "check: --name and --timeout are for a program "
                                             "after '--'");
    if (!p.nargs)
        return repro_error_set(REPRO_EINVAL, "check: missing experiment file (or '-- PROGRAM "
                                             "ARGS...')");
    if (p.nargs > 1)
        return repro_error_set(REPRO_EINVAL, "check: more than one experiment ('%s', '%s')",
                               p.args[0], p.args[1]);
    o->exp = p.args[0];
    o->overridden = o->co.pass.overridden;
    return 0;
}

/* One more run per item of each list option (--threads 1,2,3). */
static int add_lists(repro_multirun *m, const check_opts *o)
{
    for (int i = 0; i < o->co.nlists; i++)
        if (repro_multirun_add_list(m, o->co.lists[i].flag, o->co.lists[i].value,
                                    o->co.lists[i].scope, o->co.lists[i].what))
            return -1;
    return 0;
}

/* The runs: N with the experiment's own settings, one per thread and
 * worker count, one resumed. The experiment and the overrides are
 * validated here, so errors name the file. 0 or -1 (error slot). */
/* What every check plans: the common options to every run, --runs runs
 * and one run per value of each list (--threads, --workers, --ranks). */
static int plan_common_runs(repro_multirun *m, const check_opts *o)
{
    repro_multirun_add_pass(m, &o->co.pass);
    m->quiet = o->co.json || o->co.quiet;
    return repro_multirun_add_runs(m, o->runs) || add_lists(m, o) ? -1 : 0;
}

static int plan_program_runs(repro_multirun *m, const check_opts *o)
{
    repro_multirun_init(m, o->name, o->name, "check");
    m->stream = 1; /* memory independent of the number of steps */
    m->cmd = o->program;
    m->timeout_s = o->co.timeout_s;
    if (plan_common_runs(m, o))
        return -1;
    m->jobs = o->jobs ? o->jobs : 1; /* a program may share files between runs */
    if (m->nplan < 2 && o->no_golden)
        return repro_error_set(REPRO_EINVAL,
                               "check: one run and no golden compare with nothing");
    return 0;
}

/* Each run's own option (--threads 3) against the experiment, before any
 * run starts: a value the config refuses (workers=65) used to fail only
 * that run, after the others had trained. */
static int validate_planned(const repro_multirun *m, const repro_config *cfg)
{
    for (int i = 0; i < m->nplan; i++) {
        if (!m->plan[i].extra[0][0])
            continue;
        repro_config *run = malloc(sizeof *run);
        if (!run)
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        *run = *cfg;
        char *pass[2] = {(char *)m->plan[i].extra[0], (char *)m->plan[i].extra[1]};
        int rc = repro_config_apply_run_options(run, pass, 2) || repro_config_validate(run);
        free(run);
        if (rc)
            return repro_error_wrap(REPRO_EINVAL, "check: %s %s", m->plan[i].extra[0],
                                    m->plan[i].extra[1]);
    }
    return 0;
}

/* A program given where an experiment goes (`repro check ./prog`): say
 * how to run it rather than that it is not text. */
static int program_without_dashes(const char *path)
{
    char magic[4] = {0};
    FILE *f = access(path, X_OK) == 0 ? fopen(path, "rb") : NULL;
    if (!f)
        return 0;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if ((n == 4 && !memcmp(magic, "\x7f" "ELF", 4)) || (n >= 2 && !memcmp(magic, "#!", 2)))
        return repro_error_set(REPRO_EINVAL,
                               "check: %s is a program, not an experiment file: put '--' before "
                               "it (repro check [options] -- %s ARGS...)",
                               path, path);
    return 0;
}

static int plan_runs(repro_multirun *m, check_opts *o)
{
    if (o->program)
        return plan_program_runs(m, o);
    repro_config cfg;
    if (program_without_dashes(o->exp) || repro_config_load(&cfg, o->exp) ||
        repro_config_apply_run_options(&cfg, o->co.pass.argv, o->co.pass.n) ||
        repro_config_validate(&cfg))
        return -1;
    o->augments = cfg.data_shift > 0 || cfg.data_flip || cfg.data_noise > 0;
    o->augment_by_worker = cfg.data_augment_seed == REPRO_AUGMENT_SEED_WORKER;
    o->allreduce_ring = cfg.variant_allreduce == 1; /* ring (core/dist.h) */
    o->tp_ring = cfg.variant_linear_tp_reduce == 1;  /* ring (core/tp.h) */
    repro_multirun_init(m, o->exp, cfg.name, "check");
    snprintf(o->golden_name, sizeof o->golden_name, "%s", cfg.name);
    m->memory_timeline = o->report_path != NULL; /* the page's memory section */
    m->stream = 1; /* memory independent of the number of steps */
    m->total_steps = cfg.train_steps;
    if (plan_common_runs(m, o))
        return -1;
    long resume_at = o->resume_at;
    if (resume_at) {
        if (resume_at >= cfg.train_steps)
            return repro_error_set(REPRO_EINVAL,
                                   "check: --resume-at %ld: the run has %d steps, so nothing "
                                   "would be left to resume",
                                   resume_at, cfg.train_steps);
        char label[64];
        snprintf(label, sizeof label, "resumed at %ld", resume_at);
        if (repro_multirun_add(m, label, "checkpoint/resume", NULL, NULL))
            return -1;
        m->plan[m->nplan - 1].resume_at = resume_at;
    }
    if (validate_planned(m, &cfg))
        return -1;
    m->jobs = o->jobs ? o->jobs : repro_multirun_auto_jobs(m, cfg.train_threads, cfg.train_ranks);
    if (m->nplan < 2 && o->no_golden)
        return repro_error_set(REPRO_EINVAL,
                               "check: one run and no golden compare with nothing");
    return 0;
}

/* The JUnit report: one case per comparison of runs, and the golden's
 * own case (failed on a mismatch or a missing required golden, errored
 * when the golden could not be compared), so every exit 1 leaves a
 * failure in the file and every exit 2/3 an error. */
static int write_junit(const repro_multirun *m, const check_opts *o, int grc, const char *gtext)
{
    repro_junit_case extra = {0};
    char name[320], msg[200];
    snprintf(name, sizeof name, "%s: run 1 vs golden", o->exp);
    extra.name = name;
    extra.failed = grc == REPRO_EXIT_MISMATCH;
    extra.errored = grc != 0 && grc != REPRO_EXIT_MISMATCH;
    snprintf(msg, sizeof msg, "%s", o->no_golden ? "not compared (--no-golden)"
                                    : grc == 0     ? "matches or no golden for this class"
                                    : extra.failed ? "golden mismatch"
                                                   : "golden could not be compared");
    extra.message = msg;
    extra.details = gtext;
    return repro_multirun_junit_with(m, o->junit, o->no_golden ? NULL : &extra);
}

/* An exit-2/3 path with --junit: one errored case with the message. */
static int junit_error(const check_opts *o, int exit_code)
{
    if (!o->junit)
        return exit_code;
    char name[320];
    snprintf(name, sizeof name, "%s", o->exp ? o->exp : "repro check");
    repro_junit_case c = {name, 0, 1, repro_error_message(), repro_error_message(), 0};
    if (repro_junit_write(o->junit, "repro check", &c, 1))
        fprintf(stderr, "repro: %s\n", repro_error_message());
    return exit_code;
}

/* What the data settings say about a worker-count check: the cause of a
 * worker-count failure, or that a setting has no effect here. */
static void worker_notes(const repro_multirun *m, const check_opts *o)
{
    int worker_runs = 0, worker_failed = 0;
    for (int i = 1; i < m->nplan; i++)
        if (!strcmp(m->plan[i].scope, "worker count")) {
            worker_runs = 1;
            worker_failed |= !m->divs[i].identical;
        }
    if (worker_failed && o->augment_by_worker && o->augments)
        printf("cause: augmentation draws from each loader worker's RNG (augment_seed = worker, "
               "PyTorch's behaviour: base_seed + worker id), so which worker loads a sample "
               "changes its augmentation; augment_seed = sample keys it by (base_seed, sample "
               "id) and makes the worker count irrelevant\n");
    for (int i = 1; i < m->nplan; i++)
        if (!strcmp(m->plan[i].scope, "world size") && !m->divs[i].identical) {
            printf("cause: %s\n",
                   o->allreduce_ring
                       ? "allreduce = ring sums each chunk of the gradient starting at another "
                         "rank, so the association of the sum changes with the number of ranks "
                         "(as NCCL's and Gloo's rings do); allreduce = ordered adds every "
                         "shard's sum in shard order on every rank and makes the world size "
                         "irrelevant"
                       : "the gradient sum depends on the world size: check [variant] allreduce "
                         "and that the loader's shards (shard_size) are the same in every run");
            break;
        }
    for (int i = 1; i < m->nplan; i++)
        if (!strcmp(m->plan[i].scope, "tensor-parallel size") && !m->divs[i].identical) {
            printf("cause: %s\n",
                   o->tp_ring
                       ? "linear.tp_reduce = ring sums each rank's slice of fc2's inputs and "
                         "then all-reduces the partial sums (as Megatron over NCCL does), so the "
                         "association of every output's sum changes with the tensor-parallel "
                         "size; linear.tp_reduce = ordered passes the running sums rank to rank "
                         "in ascending input order, the one-process order, and makes the size "
                         "irrelevant"
                       : "the row-parallel sum depends on the tensor-parallel size: check "
                         "[variant] linear.tp_reduce");
            break;
        }
    if ((worker_runs || o->augment_by_worker) && !o->augments)
        printf("note: this experiment has no augmentation (shift, flip and noise are off), so "
               "augment_seed has no effect here%s\n",
               worker_runs ? " and the worker count only moves loading between threads" : "");
}

/* runs/ does not grow without end: a passing check's traces go (unless
 * --keep: nothing there is needed to act on a pass), and the name's
 * directory keeps only the newest run directories. */
static void tidy_runs(const repro_multirun *m, const check_opts *o, int exit_code)
{
    if (exit_code == 0 && !o->keep && repro_runs_remove(m->root) && !o->co.json)
        fprintf(stderr, "repro: %s\n", repro_error_message());
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", m->root);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (repro_runs_prune(dir, repro_runs_keep_default(), 0, NULL, NULL) && !o->co.json)
            fprintf(stderr, "repro: %s\n", repro_error_message());
    }
}

/* --threads and --workers scopes whose runs did not differ in the count
 * they used: a warning, or with --strict-scopes exit 3 (a pass would claim
 * what was never tried). A failed check keeps its exit 1. */
static int scope_verdict(const repro_multirun *m, const check_opts *o, json_t *doc,
                         int exit_code)
{
    char msg[1024];
    int n = repro_multirun_unexercised(m, msg, sizeof msg);
    if (doc)
        json_object_set_new(doc, "scopes_not_exercised", json_string(n ? msg : ""));
    if (!n)
        return exit_code;
    int fail = o->strict_scopes && exit_code == 0;
    for (const char *p = msg; *p;) {
        size_t len = strcspn(p, "\n");
        fprintf(stderr, "repro: %s%.*s\n", fail ? "" : "warning: ", (int)len, p);
        p += len + (p[len] == '\n');
    }
    return fail ? REPRO_EXIT_ENV : exit_code;
}

/* --report: opens the page's file before the first run, so that a path
 * that cannot be written (a directory, a missing or read-only directory)
 * is an input error now rather than after the training. 0 or -1. */
static int open_report(check_opts *o)
{
    if (!o->report_path)
        return 0;
    if (repro_outfile_open(&o->report, o->report_path, "HTML report"))
        return repro_error_wrap(REPRO_EINVAL, "check: --report");
    o->report_open = 1;
    /* A Ctrl-C between two runs, or while the traces are compared, must
     * not kill the check before its page is written (marked as cut). */
    repro_child_trap_hold();
    return 0;
}

/* The name of the goldens the page's history is of. */
static const char *report_golden_name(const check_opts *o, const repro_multirun *m, int compared)
{
    if (o->program && o->name_given)
        return o->name;
    if (compared && m->ntraces > 0)
        return m->traces[0].experiment;
    return o->program ? "" : o->golden_name;
}

/* Writes the page (h: what the check knows), marked as cut when a signal
 * interrupted the check. 0, or -1 (error slot). */
static int write_report_page(check_opts *o, const repro_multirun *m, repro_check_html *h)
{
    if (!o->report_open)
        return 0;
    o->report_open = 0;
    char cut[300];
    int sig = repro_child_interrupted();
    h->signal = sig;
    if (sig && !h->cut) {
        snprintf(cut, sizeof cut, "interrupted by signal %d (%s)", sig, strsignal(sig));
        h->cut = cut;
    }
    h->title = o->program ? o->name : o->exp;
    h->command = o->command;
    h->m = m;
    h->started_at = o->started_at;
    h->wall_s = repro_now() - o->t0;
    repro_check_report_src src = {o->program ? NULL : o->exp, o->program,
                                  report_golden_name(o, m, h->compared)};
    return repro_check_report_write(&o->report, h, &src);
}

/* A check that stopped before its verdict (a signal, a run that failed, a
 * trace that could not be read): the page with what it had, marked as
 * cut. The error that stopped it stays in the slot for the caller. */
static void cut_report(check_opts *o, const repro_multirun *m, int exit_code)
{
    if (!o->report_open)
        return;
    int code = repro_error_code();
    char msg[1024], cut[1200];
    snprintf(msg, sizeof msg, "%s", repro_error_message());
    int sig = repro_child_interrupted();
    if (sig)
        snprintf(cut, sizeof cut, "interrupted by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(cut, sizeof cut, "the check could not finish: %s", msg);
    repro_check_html h = {0};
    h.exit_code = sig ? 128 + sig : exit_code;
    h.cut = cut;
    if (write_report_page(o, m, &h))
        fprintf(stderr, "repro: %s\n", repro_error_message());
    repro_error_set(code, "%s", msg);
}

/* The verdict of the runs and the golden, as text or JSON; the exit code. */
static int report(repro_multirun *m, check_opts *o)
{
    char chain[65];
    repro_digest_hex(&m->traces[0].trailer_chain, chain);
    int exit_code = m->failed ? REPRO_EXIT_MISMATCH : 0;
    /* The golden of this environment class, compared with run 1. */
    char *gtext = NULL;
    size_t glen = 0;
    FILE *gout = o->co.json ? NULL : open_memstream(&gtext, &glen);
    json_t *gjson = o->co.json ? json_object() : NULL;
    int grc = 0;
    if (!o->no_golden) {
        /* A program's goldens are filed under --name, else under the
         * experiment name it records (its repro_run_info). */
        const char *gname = o->program && o->name_given ? o->name : m->traces[0].experiment;
        if (o->program && !o->name_given && repro_golden_name_check(gname))
            grc = -1;
        else
            grc = repro_check_golden(&m->traces[0], gname, o->program ? NULL : o->exp,
                                     o->program, o->overridden, o->require_golden, gout, gjson);
        if (grc < 0 || grc >= REPRO_EXIT_USAGE)
            grc = repro_report_error();
    }
    if (gout)
        fclose(gout);
    if (grc == REPRO_EXIT_MISMATCH)
        exit_code = REPRO_EXIT_MISMATCH;
    else if (grc)
        exit_code = grc;
    char verdict[1400];
    if (m->failed == 0)
        snprintf(verdict, sizeof verdict, "%s: %d run%s identical over %ld steps, chain %s\n",
                 exit_code ? "NOT reproducible (golden)" : "reproducible", m->nplan,
                 m->nplan == 1 ? "" : "s", m->traces[0].trailer_steps, chain);
    else
        snprintf(verdict, sizeof verdict,
                 "NOT reproducible: %d of %d runs differ from %s (traces in %s)\n", m->failed,
                 m->nplan - 1, m->plan[0].label, m->root);
    if (o->co.json) {
        json_t *doc = repro_multirun_json(m);
        json_object_set_new(doc, "experiment", json_string(m->traces[0].experiment));
        json_object_set_new(doc, "reproducible", json_boolean(exit_code == 0));
        json_object_set_new(doc, "runs_identical", json_boolean(m->failed == 0));
        json_object_set_new(doc, "chain", json_string(chain));
        json_object_set_new(doc, "directory", json_string(m->root));
        exit_code = scope_verdict(m, o, doc, exit_code);
        json_object_set_new(doc, "reproducible", json_boolean(exit_code == 0));
        json_object_set_new(doc, "golden", o->no_golden ? json_null() : gjson);
        if (o->no_golden)
            json_decref(gjson);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        repro_multirun_print(m, stdout);
        if (!o->program)
            worker_notes(m, o);
        else /* a world size that changed a gradient: what DDP does (external_ranks.h) */
            repro_external_ranks_cause(m, stdout);
        if (gtext)
            fputs(gtext, stdout);
        fputs(verdict, stdout);
        exit_code = scope_verdict(m, o, NULL, exit_code);
    }
    if (o->report_open) {
        char unexercised[1024];
        repro_check_html h = {0};
        h.compared = 1;
        h.exit_code = exit_code;
        h.verdict = verdict;
        h.golden_compared = !o->no_golden;
        h.golden_rc = grc;
        h.golden_text = gtext;
        h.unexercised = repro_multirun_unexercised(m, unexercised, sizeof unexercised)
                            ? unexercised
                            : NULL;
        if (write_report_page(o, m, &h))
            exit_code = repro_report_error();
    }
    if (o->junit && write_junit(m, o, grc, gtext))
        exit_code = repro_report_error();
    free(gtext);
    tidy_runs(m, o, exit_code);
    return repro_finish_stdout(exit_code);
}

/* `--git-bisect`: exit codes as `git bisect run` reads them. 0 good, 1 bad,
 * 125 when this tree cannot be tested (an environment problem, a run that
 * could not be tested), and above 127 on a usage or input error, which
 * makes git abort the bisection instead of blaming a commit for a typo. */
static int git_bisect_code(int rc)
{
    switch (rc) {
    case REPRO_EXIT_OK:
    case REPRO_EXIT_MISMATCH: return rc;
    case REPRO_EXIT_USAGE: return 128 + REPRO_EXIT_USAGE;
    default: return REPRO_EXIT_SKIP;
    }
}

static int check_main(int argc, char **argv, char **program);

/* ---- --batch-invariance ------------------------------------------------------ */

/* Did the options give --steps (the weights are then trained that far)? */
static int steps_given(const check_opts *o)
{
    for (int i = 0; i + 1 < o->co.pass.n; i += 2)
        if (!strcmp(o->co.pass.argv[i], "--steps"))
            return 1;
    return 0;
}

/* The verdict as text or JSON (and JUnit); 0 invariant, 1 not. */
static int batch_invariance_report(const check_opts *o, void *json, int invariant,
                                   void (*print)(FILE *, const void *), const void *r,
                                   int (*junit)(const char *, const void *))
{
    int exit_code = invariant ? 0 : REPRO_EXIT_MISMATCH;
    if (o->co.json) {
        json_dumpf(json, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        print(stdout, r);
    }
    json_decref(json);
    if (o->junit && junit(o->junit, r))
        exit_code = repro_report_error();
    return repro_finish_stdout(exit_code);
}

static void print_bi(FILE *out, const void *r) { repro_batchinv_print(out, r); }
static int junit_bi(const char *path, const void *r) { return repro_batchinv_junit(path, r); }
static void print_rows(FILE *out, const void *r) { repro_batchinv_rows_print(out, r); }
static int junit_rows(const char *path, const void *r)
{
    return repro_batchinv_rows_junit(path, r);
}

/* A program: one run per batch size through the multirun engine, then
 * its rows compared by sample id. */
static int check_program_batch_invariance(repro_multirun *m, const check_opts *o)
{
    repro_batchinv_rows_result *r = calloc(1, sizeof *r);
    if (!r) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return junit_error(o, repro_report_error());
    }
    int rc = repro_batchinv_rows_plan(m, o->name, o->program, o->co.timeout_s, &o->co.pass,
                                      &o->bi);
    if (rc == 0)
        m->quiet = o->co.json || o->co.quiet;
    if (rc == 0 && (rc = repro_multirun_execute(m)) > 0) {
        repro_error_set(rc == REPRO_EXIT_USAGE ? REPRO_EINVAL : REPRO_EIO,
                        "a run failed (exit %d): its stderr is shown above", rc);
        rc = junit_error(o, rc);
    } else if (rc < 0 || (rc = repro_batchinv_rows_compare(m, r)) < 0) {
        rc = junit_error(o, repro_report_error());
    } else {
        rc = batch_invariance_report(o, repro_batchinv_rows_json(r), r->batch_invariant,
                                     print_rows, r, junit_rows);
    }
    free(r);
    return rc;
}

/* `check EXP --batch-invariance`: the engine in this process. */
static int check_batch_invariance(repro_multirun *m, const check_opts *o)
{
    if (o->program)
        return check_program_batch_invariance(m, o);
    repro_config cfg;
    if (repro_config_load(&cfg, o->exp) ||
        repro_config_apply_run_options(&cfg, o->co.pass.argv, o->co.pass.n) ||
        repro_config_validate(&cfg))
        return junit_error(o, repro_report_error());
    repro_batchinv_opts bo = o->bi;
    bo.quiet = o->co.json || o->co.quiet;
    bo.train_steps = steps_given(o) ? cfg.train_steps : 0;
    repro_batchinv_result *r = calloc(1, sizeof *r);
    int rc;
    if (!r) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        rc = junit_error(o, repro_report_error());
    } else if (repro_batchinv_run(&cfg, &bo, r))
        rc = junit_error(o, repro_report_error());
    else
        rc = batch_invariance_report(o, repro_batchinv_json(r), r->batch_invariant, print_bi, r,
                                     junit_bi);
    free(r);
    return rc;
}

int repro_cmd_check(int argc, char **argv)
{
    /* --git-bisect is looked for first, so that even a usage error is
     * reported in its terms. */
    char **program;
    int split = repro_cli_split_program(&argc, argv, &program);
    int git_bisect = repro_cli_given(&repro_check_spec, argc, argv, O_GIT_BISECT);
    int rc = split ? repro_report_error() : check_main(argc, argv, program);
    return git_bisect ? git_bisect_code(rc) : rc;
}

static int check_main(int argc, char **argv, char **program)
{
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    check_opts o = {0};
    o.program = program;
    o.t0 = repro_now();
    time_t now = time(NULL);
    struct tm tm;
    strftime(o.started_at, sizeof o.started_at, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    snprintf(o.command, sizeof o.command, "repro check");
    for (int i = 1; i < argc; i++)
        repro_shell_word_append(o.command, sizeof o.command, argv[i]);
    if (program)
        repro_shell_word_append(o.command, sizeof o.command, "--");
    for (int i = 0; program && program[i]; i++)
        repro_shell_word_append(o.command, sizeof o.command, program[i]);
    int rc = parse_check_args(argc, argv, &o);
    if (rc == 1)
        rc = repro_finish_stdout(0); /* --help */
    else if (rc)
        rc = junit_error(&o, repro_report_error());
    else if (o.batch_invariance)
        rc = check_batch_invariance(m, &o);
    else if (plan_runs(m, &o) || open_report(&o))
        rc = junit_error(&o, repro_report_error());
    else if ((rc = repro_multirun_execute(m)) > 0) { /* a child's exit status, passed on */
        repro_error_set(rc == REPRO_EXIT_USAGE ? REPRO_EINVAL : REPRO_EIO,
                        "a run failed (exit %d): its stderr is shown above", rc);
        cut_report(&o, m, rc);
        rc = junit_error(&o, rc);
    } else if (rc < 0) {
        cut_report(&o, m, repro_exit_code_for(repro_error_code()));
        rc = junit_error(&o, repro_report_error());
    } else
        rc = report(m, &o);
    if (o.report_open)
        repro_outfile_abort(&o.report);
    repro_multirun_release(m);
    free(m);
    return rc;
}
