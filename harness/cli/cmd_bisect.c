/* `repro bisect`: one command, three searches, all engines and reports in
 * harness/bisect/. With --commits GOOD..BAD it finds the first commit where
 * the experiment, or with `-- PROGRAM ARGS` the user's program in the
 * user's repository, stops reproducing (bisect_commits.c); without it, the
 * first divergent op and the culprit variants of an experiment
 * (bisect_ops.c), or the first divergent op of a program
 * (bisect_program_ops.c). Here: the options, which search, the exit codes. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bisect/bisect_commits.h"
#include "bisect/bisect_ops.h"
#include "analysis/batchinv.h"
#include "analysis/multirun.h"
#include "cli/cli.h"
#include "cli/common_opts.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/opnames.h"

/* The command line, parsed once for the three searches (the commit
 * search, the op level of an experiment, the op level of a program): the
 * common options and bisect's own, and which own options were given, so
 * each search refuses the ones that do not apply to it. */
enum { BI_COMMITS = 1, BI_BUILD, BI_REPEAT, BI_NAME, BI_TIMEOUT, BI_QUARANTINE, BI_BATCHINV,
       BI_BATCH_SIZES };

typedef struct {
    repro_common co;
    const char *commits, *build, *quarantine;
    const char *repeat;      /* --repeat K, read by the search (its range), or NULL */
    int batch_invariance;
    repro_batchinv_opts bi;  /* --batch-sizes */
    unsigned given;          /* 1 << id of each own option given; --name and
                              * --timeout (common rows, in co) as BI_NAME,
                              * BI_TIMEOUT */
    char **args;             /* the operands: the experiment, if any */
    int nargs;
    /* --threads A,B (--workers, --ranks): the scope bisect; flag NULL when
     * none was given (a single count is every run's, in co.pass) */
    const char *scope_flag;
    char scope_a[24], scope_b[24];
} repro_bisect_args;

static const char synopsis[] =
    "usage: repro bisect --commits GOOD..BAD EXP [--build CMD] [--repeat K] [options]\n"
    "       repro bisect --commits GOOD..BAD [--build CMD] [--repeat K] [--name NAME]\n"
    "                    [--timeout S] [options] -- PROGRAM [ARGS...]\n"
    "                                 (your repository's history, your program)\n"
    "       repro bisect EXP [--repeat K] [--quarantine OP] [options]\n"
    "                                 (op level: the first divergent op and its variant)\n"
    "       repro bisect EXP --batch-invariance [--batch-sizes 1,7,64]\n"
    "                                 (which variant makes a sample's bits depend on\n"
    "                                 its batch: `repro check --batch-invariance`, then\n"
    "                                 each variant in use that is registered not\n"
    "                                 batch-invariant switched to its default on its\n"
    "                                 own; exit 0 when the check passes, 1 when it\n"
    "                                 fails, with the culprits named)\n"
    "       repro bisect [--repeat K] [--name NAME] [--timeout S] [options] -- PROGRAM [ARGS...]\n"
    "                                 (op level, for a program that records its op\n"
    "                                 outputs at REPRO_TRACE_LEVEL=op: the first op\n"
    "                                 whose output differs, and whether its inputs\n"
    "                                 were identical)\n"
    "       repro bisect --threads A,B [options] (EXP | -- PROGRAM [ARGS...])\n"
    "       repro bisect --workers A,B ...,  repro bisect --ranks A,B EXP ...\n"
    "                                 (a scope: A, A again and B at trace level op;\n"
    "                                 the first op whose output differs between A and\n"
    "                                 B while every op before it and the step's batch\n"
    "                                 agree, in words: a kernel whose bits depend on\n"
    "                                 the setting, with the module's class and the\n"
    "                                 thread pool that differed for a program, the\n"
    "                                 kernel variant and why for EXP)\n"
    "\n"
    "Op level (without --commits): runs EXP K times at trace level op, finds the\n"
    "first divergent op output and the kernel variant that produced it, says\n"
    "whether its inputs were identical (then the op itself is nondeterministic),\n"
    "and switches the nondeterministic variants in use one by one (ddmin) to name\n"
    "the culprit(s).\n"
    "\n"
    "With --commits: finds the first commit on BAD's first-parent chain after GOOD\n"
    "where EXP stops reproducing. Each probed commit is checked out into a temporary\n"
    "linked worktree (incremental builds: only what changed is rebuilt), built with\n"
    "CMD, and its own ./repro runs EXP K times: the runs must agree with each other\n"
    "and run 1 must match GOOD's reference, which is GOOD's golden for this\n"
    "environment class (golden/EXP/CLASS.jsonl at GOOD) or, without one or when run\n"
    "options (--steps, --seed, --set, ...) are given, GOOD's own run (GOOD is then\n"
    "built and run first, and its runs must agree). BAD is tested first. A commit\n"
    "that does not build or whose run fails is skipped, as `git bisect skip` does,\n"
    "and the search goes around it. Each probe is printed as it is decided; at the\n"
    "end, the first bad commit, the numerics paths it changed (kernels/, harness/,\n"
    "Makefile, EXP) and the work it took.\n"
    "\n"
    "With --commits and `-- PROGRAM ARGS...`: the same search over the history of the\n"
    "git repository you are in, for a program of yours that records through librepro\n"
    "or the Python client (docs/PROTOCOL.md). At each probed commit CMD builds the\n"
    "worktree, then PROGRAM (an argument vector, never a shell) runs K times through\n"
    "the runner protocol with the worktree's top level as its working directory: a\n"
    "relative PROGRAM such as ./build/prog is that commit's build. GOOD is always\n"
    "built and run first; its runs must agree, and its reference is its golden\n"
    "golden/NAME/CLASS.jsonl at GOOD (NAME: --name, else the experiment name GOOD's\n"
    "program records; CLASS: the class its trace records, else this machine's),\n"
    "which its run 1 must match, or without one its own run 1. A commit whose build\n"
    "fails or whose program cannot be tested (it exits non-zero, times out, writes\n"
    "no complete trace: what `repro check -- PROGRAM` exits 3 for) is skipped. At the\n"
    "end: the first bad commit and every path it changed. The run options reach the\n"
    "program as REPRO_SET_STEPS, REPRO_SEED, REPRO_SET_<KEY>; --seed and --set leave\n"
    "the golden out.\n";

static const char epilogue[] =
    "\n"
    "Exit: 0 a first bad commit was found, 1 BAD reproduces (nothing to bisect),\n"
    "2 usage or input error (bad range, GOOD not an ancestor of BAD, GOOD not good),\n"
    "3 environment (not a git repository, worktree failure), 125 only skipped\n"
    "commits were left, so no first bad commit can be named; 130 (143) after Ctrl-C\n"
    "(SIGTERM), which reaches the running build or program too, and the worktree\n"
    "is removed. At op level and for a scope: 0 all runs identical, 1 a divergence\n"
    "was found.\n";

static const repro_cli_opt own_opts[] = {
    {"commits", 0, "GOOD..BAD",
     "search the commits: the range, one argument as git writes\nit; any revs git accepts "
     "(HEAD~5..HEAD, v1.0..main)",
     BI_COMMITS},
    {"build", 0, "CMD",
     "--commits: build command, run by /bin/sh -c in the worktree\n(default: make); for EXP it "
     "must leave ./repro there",
     BI_BUILD},
    {"repeat", 0, "K", "runs per commit (default 2) or at op level (default 3)", BI_REPEAT},
    {"quarantine", 0, "OP",
     "op level: substitute run 1's outputs of OP (an op output\nsuch as bwd.fc1.dw, or a variant "
     "op such as\nlinear.bwd_weight) in the other runs, to find a second\nculprit behind the "
     "first",
     BI_QUARANTINE},
    {"batch-invariance", 0, NULL, "op level: the batch-invariance search (see above)",
     BI_BATCHINV},
    {"batch-sizes", 0, "LIST", "batch sizes for --batch-invariance (default 1,7,64)",
     BI_BATCH_SIZES},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_bisect_spec = {"bisect", REPRO_CLI_BISECT, synopsis, own_opts,
                                          epilogue};

/* Refuses (-1, error slot) an own option given that is not in `allowed`
 * (a mask of 1 << BI_*), naming the search `what` it does not apply to. */
static int args_only(const repro_bisect_args *a, unsigned allowed, const char *what)
{
    for (const repro_cli_opt *o = own_opts; o->name; o++)
        if ((a->given & (1u << o->id)) && !(allowed & (1u << o->id)))
            return repro_error_set(REPRO_EINVAL, "bisect: --%s does not apply to %s", o->name,
                                   what);
    if ((a->given & (1u << BI_NAME)) && !(allowed & (1u << BI_NAME)))
        return repro_error_set(REPRO_EINVAL, "bisect: --name does not apply to %s", what);
    if ((a->given & (1u << BI_TIMEOUT)) && !(allowed & (1u << BI_TIMEOUT)))
        return repro_error_set(REPRO_EINVAL, "bisect: --timeout does not apply to %s", what);
    return 0;
}

/* --repeat's value in lo..hi, else def: 0 or -1 (error slot). */
static int args_repeat(const repro_bisect_args *a, int lo, int hi, int def, int *out)
{
    *out = def;
    return a->repeat ? repro_parse_count_int("bisect: --repeat", a->repeat, lo, hi, out) : 0;
}

/* An own option: 0 or -1 (error slot). */
static int bisect_option(void *ctx, int id, const char *v)
{
    repro_bisect_args *a = ctx;
    a->given |= 1u << id;
    switch (id) {
    case BI_COMMITS: a->commits = v; return 0;
    case BI_BUILD:
        a->build = v;
        return v[0] ? 0 : repro_error_set(REPRO_EINVAL, "bisect: --build: empty command");
    case BI_REPEAT: a->repeat = v; return 0;
    case BI_QUARANTINE: a->quarantine = v; return 0;
    case BI_BATCHINV: a->batch_invariance = 1; return 0;
    case BI_BATCH_SIZES: return repro_batchinv_parse_sizes(&a->bi, "bisect: --batch-sizes", v);
    }
    return 0;
}

/* --threads, --workers, --ranks as bisect takes them: one count is every
 * run's (a pass-through option, as before), two are the scope bisect's
 * settings. 0 or -1 (error slot). */
static int resolve_lists(repro_bisect_args *a)
{
    for (int i = 0; i < a->co.nlists; i++) {
        const char *flag = a->co.lists[i].flag, *value = a->co.lists[i].value;
        long v[3];
        int n;
        if (repro_parse_count_list(flag, value, strcmp(flag, "--workers") ? 1 : 0, 256, v, 3,
                                   &n) ||
            n > 2)
            return repro_error_set(REPRO_EINVAL, "bisect: %s %s: give one count (every run's) "
                                                 "or two, A,B (the scope bisect)", flag, value);
        if (n == 1) {
            if (repro_run_pass_add(&a->co.pass, "bisect", flag + 2, value) < 0)
                return -1;
            continue;
        }
        if (a->scope_flag)
            return repro_error_set(REPRO_EINVAL, "bisect: %s and %s: bisect one scope at a "
                                                 "time", a->scope_flag, flag);
        a->scope_flag = flag;
        snprintf(a->scope_a, sizeof a->scope_a, "%ld", v[0]);
        snprintf(a->scope_b, sizeof a->scope_b, "%ld", v[1]);
    }
    return 0;
}

/* Every option of every search; 0, 1 for --help (printed), or -1. */
static int parse_args(int argc, char **argv, repro_bisect_args *a)
{
    repro_batchinv_opts_init(&a->bi);
    repro_cli_parser p;
    int rc = repro_cli_parse(&p, &repro_bisect_spec, argc, argv, &a->co, bisect_option, a);
    if (rc)
        return rc;
    a->args = p.args;
    a->nargs = p.nargs;
    if (a->co.name[0]) /* the common rows: refused by the searches they do not fit */
        a->given |= 1u << BI_NAME;
    if (a->co.timeout_s > 0)
        a->given |= 1u << BI_TIMEOUT;
    return resolve_lists(a);
}

/* ---- commits ---------------------------------------------------------------- */

#define BIT(x) (1u << (x))

/* The commit search's options, and its one EXP or a program. */
static int commits_opts(const repro_bisect_args *a, char **program, repro_bisect_opts *b)
{
    unsigned allowed = BIT(BI_COMMITS) | BIT(BI_BUILD) | BIT(BI_REPEAT);
    if (program)
        allowed |= BIT(BI_NAME) | BIT(BI_TIMEOUT);
    if (args_only(a, allowed, program ? "the commit search of a program"
                                                   : "the commit search of an experiment "
                                                     "(--name and --timeout are for a program "
                                                     "after '--')"))
        return -1;
    if (a->scope_flag)
        return repro_error_set(REPRO_EINVAL, "bisect: %s %s,%s (the scope bisect) does not "
                                             "combine with --commits", a->scope_flag,
                               a->scope_a, a->scope_b);
    b->range = a->commits;
    b->build = a->build;
    if (args_repeat(a, 1, 64, 2, &b->repeat))
        return -1;
    b->quiet = a->co.quiet;
    b->name = a->co.name[0] ? a->co.name : NULL;
    b->timeout_s = a->co.timeout_s;
    b->pass = a->co.pass.argv;
    b->npass = a->co.pass.n;
    b->overridden = a->co.pass.overridden;
    if (program) {
        if (a->nargs > 0)
            return repro_error_set(REPRO_EINVAL,
                                   "bisect: '%s' and a program after '--': give one or the other",
                                   a->args[0]);
        b->program = program;
        return 0;
    }
    if (a->nargs != 1)
        return repro_error_set(REPRO_EINVAL,
                               "bisect: expected one experiment file after the options (or "
                               "'-- PROGRAM ARGS...')");
    b->exp = a->args[0];
    return 0;
}

/* ---- op level --------------------------------------------------------------- */

typedef struct {
    repro_bisect_ops_opts b;
    int json;
    int batch_invariance;   /* --batch-invariance */
    repro_batchinv_opts bi; /* its batch sizes */
} bisect_ops_cli;

/* The op level's options and its one EXP: 0 or -1 (error slot). */
static int ops_opts(const repro_bisect_args *a, bisect_ops_cli *o)
{
    if (args_only(a, BIT(BI_REPEAT) | BIT(BI_QUARANTINE) | BIT(BI_BATCHINV) |
                                      BIT(BI_BATCH_SIZES),
                               "the op level of an experiment (--build needs --commits; --name "
                               "and --timeout are for a program after '--')"))
        return -1;
    if (args_repeat(a, 2, 32, 3, &o->b.repeat))
        return -1;
    o->b.pass = a->co.pass;
    o->b.quarantine = a->quarantine;
    o->b.scope_flag = a->scope_flag;
    o->b.scope_a = a->scope_a;
    o->b.scope_b = a->scope_b;
    if (a->scope_flag && (a->given & BIT(BI_REPEAT)))
        return repro_error_set(REPRO_EINVAL, "bisect: --repeat does not apply to the scope "
                                             "bisect (%s A,B runs A twice and B once)",
                               a->scope_flag);
    if (a->scope_flag && (a->quarantine || a->batch_invariance))
        return repro_error_set(REPRO_EINVAL, "bisect: %s A,B (the scope bisect) does not "
                                             "combine with %s", a->scope_flag,
                               a->quarantine ? "--quarantine" : "--batch-invariance");
    o->json = a->co.json;
    o->batch_invariance = a->batch_invariance;
    o->bi = a->bi;
    if (a->nargs != 1)
        return repro_error_set(REPRO_EINVAL, "bisect: expected one experiment file");
    o->b.exp = a->args[0];
    o->b.quiet = o->json || a->co.quiet;
    return 0;
}

/* (b) after a divergence: the culprit search and its report. The exit code
 * (1: the runs diverged; an error's code if the search failed). */
static int culprits(const bisect_ops_cli *o, repro_bisect_ops_result *r, json_t *doc)
{
    int exit_code = REPRO_EXIT_MISMATCH;
    json_t *cul = json_array();
    if (r->ncand == 0) {
        if (!o->json)
            printf(r->inputs_identical
                       ? "no nondeterministic kernel variant is in use%s, yet %s gave different "
                         "outputs from identical inputs: that kernel is nondeterministic\n"
                       : "no nondeterministic kernel variant is in use%s: the divergence comes "
                         "from its inputs (%s: data, environment, a fault)\n",
                   o->b.quarantine ? " besides the quarantined one" : "",
                   r->inputs_identical ? r->name : "the batch differs");
    } else if (repro_bisect_ops_culprits(&o->b, r)) {
        exit_code = repro_report_error();
    } else {
        repro_bisect_ops_report_culprits(o->json ? NULL : stdout, r, o->b.repeat, cul);
    }
    json_object_set_new(doc, "culprits", cul);
    json_object_set_new(doc, "candidates", json_integer(r->ncand));
    return exit_code;
}

/* (a) and, after a divergence, (b); the report; the exit code. */
static int bisect_ops(const bisect_ops_cli *o, repro_bisect_ops_result *r)
{
    int rc = repro_bisect_ops_locate(&o->b, r);
    if (rc)
        return rc < 0 ? repro_report_error() : rc; /* a child's exit status */
    json_t *doc = json_object();
    json_object_set_new(doc, "experiment", json_string(r->cfg.name));
    if (o->b.quarantine)
        json_object_set_new(doc, "quarantine", json_string(o->b.quarantine));
    int exit_code = 0;
    if (!r->diverged && o->b.scope_flag) {
        json_object_set_new(doc, "diverged", json_false());
        if (!o->json)
            printf("no divergence: %s=%s (twice) and %s=%s agree bit for bit over %ld steps\n",
                   o->b.scope_flag + 2, o->b.scope_a, o->b.scope_flag + 2, o->b.scope_b,
                   r->steps);
    } else if (!r->diverged) {
        json_object_set_new(doc, "diverged", json_false());
        if (!o->json)
            printf("no divergence: two runs agree bit for bit over %ld steps%s\n", r->steps,
                   o->b.quarantine ? " (with the quarantined op substituted)" : "");
    } else if (o->b.scope_flag) {
        repro_bisect_scope_report_builtin(o->json ? NULL : stdout, &o->b, r, doc);
        exit_code = REPRO_EXIT_MISMATCH;
    } else {
        repro_bisect_ops_report_first(o->json ? NULL : stdout, r, doc);
        exit_code = culprits(o, r, doc);
    }
    json_object_set_new(doc, "runs", json_integer(r->runs));
    if (o->json) {
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        printf("%ld fresh runs (traces under runs/%s/)\n", r->runs, r->cfg.name);
    }
    json_decref(doc);
    return repro_finish_stdout(exit_code);
}

/* ---- batch invariance ---------------------------------------------------------- */

/* `bisect EXP --batch-invariance`: 0 invariant, 1 not (culprits named). */
static int bisect_batchinv(bisect_ops_cli *o)
{
    repro_bisect_batchinv_result *r = calloc(1, sizeof *r);
    if (!r) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    int exit_code = 0;
    if (repro_bisect_batchinv(&o->b, &o->bi, r)) {
        free(r);
        return repro_report_error();
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "experiment", json_string(r->cfg.name));
    json_object_set_new(doc, "scope", json_string(REPRO_BATCHINV_SCOPE));
    json_object_set_new(doc, "batch_invariant", json_boolean(r->check.batch_invariant));
    if (r->check.batch_invariant) {
        if (!o->json)
            printf("batch-invariant: every sample's rows identical bit for bit in %d "
                   "compositions: nothing to bisect\n",
                   r->check.ncomps);
    } else {
        repro_bisect_batchinv_report(o->json ? NULL : stdout, r, doc);
        exit_code = REPRO_EXIT_MISMATCH;
    }
    json_object_set_new(doc, "checks", json_integer(r->tests));
    if (o->json) {
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        printf("%d in-process checks\n", r->tests);
    }
    json_decref(doc);
    free(r);
    return repro_finish_stdout(exit_code);
}

static int cmd_bisect_ops(const repro_bisect_args *a)
{
    bisect_ops_cli o;
    memset(&o, 0, sizeof o);
    repro_bisect_ops_result *r = calloc(1, sizeof *r);
    int rc = r ? ops_opts(a, &o) : repro_error_set(REPRO_ENOMEM, "out of memory");
    if (rc == 0 && o.batch_invariance)
        rc = bisect_batchinv(&o);
    else if (rc || repro_bisect_ops_prepare(&o.b, r))
        rc = repro_report_error();
    else
        rc = bisect_ops(&o, r);
    free(r);
    return rc;
}

/* ---- a program's op level ----------------------------------------------------- */

/* `repro bisect [options] -- PROGRAM ARGS...`: K runs at trace level op
 * (bisect_ops.h). Exit 1 when a difference was found, 0 when all agree. */
static int cmd_bisect_program(const repro_bisect_args *a, char **program)
{
    if (args_only(a, BIT(BI_REPEAT) | BIT(BI_NAME) | BIT(BI_TIMEOUT),
                  "the op level of a program (give --commits for the commit search)"))
        return repro_report_error();
    if (a->nargs > 0) {
        repro_error_set(REPRO_EINVAL, "bisect: '%s' and a program after '--': give one",
                        a->args[0]);
        return repro_report_error();
    }
    int repeat;
    if (args_repeat(a, 2, 32, 3, &repeat))
        return repro_report_error();
    if (a->scope_flag && a->repeat) {
        repro_error_set(REPRO_EINVAL, "bisect: --repeat does not apply to the scope bisect (%s "
                                      "A,B runs A twice and B once)", a->scope_flag);
        return repro_report_error();
    }
    repro_multirun *m = repro_cli_program_runs(&a->co, program, a->co.name, a->co.timeout_s, "bisect");
    if (!m)
        return REPRO_EXIT_ENV;
    int rc;
    if (a->scope_flag) {
        rc = repro_bisect_scope_plan_program(m, a->scope_flag, a->scope_a, a->scope_b);
    } else {
        m->pass[m->npass++] = "--set";
        m->pass[m->npass++] = "trace.level=op";
        m->pass[m->npass++] = "--set"; /* op detail at whichever step parts */
        m->pass[m->npass++] = "trace.every=1";
        rc = repro_multirun_add_runs(m, repeat);
    }
    if (rc || repro_multirun_execute(m)) {
        rc = repro_report_error();
    } else {
        json_t *doc = a->co.json ? json_object() : NULL;
        int diverged = a->scope_flag
                           ? repro_bisect_scope_report_program(a->co.json ? NULL : stdout, m,
                                                               a->scope_flag, a->scope_a,
                                                               a->scope_b, doc)
                           : repro_bisect_program_ops_report(stdout, m, doc);
        rc = diverged ? REPRO_EXIT_MISMATCH : 0;
        if (doc) {
            json_dumpf(doc, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
            json_decref(doc);
        }
        rc = repro_finish_stdout(rc);
    }
    repro_multirun_release(m);
    free(m);
    return rc;
}

/* ---- the command ----------------------------------------------------------------- */

static int cmd_bisect_commits(const repro_bisect_args *a, char **program)
{
    repro_bisect_opts b;
    memset(&b, 0, sizeof b);
    if (commits_opts(a, program, &b))
        return repro_report_error();
    /* Probes are the report in text mode; with --json they are progress. */
    b.steps = a->co.json ? (b.quiet ? NULL : stderr) : stdout;
    repro_bisect_result r;
    int rc = repro_bisect_commits(&b, &r);
    if (rc < 0) {
        /* Interrupted: the engine's code is 128 + the signal, which is
         * what a shell reports for a command a signal stopped. */
        int code = repro_error_code();
        rc = repro_report_error();
        if (code > 128 && code < 128 + 65)
            rc = code;
    } else if (a->co.json) {
        json_t *doc = repro_bisect_json(&r);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        repro_bisect_print_summary(stdout, &r);
    }
    repro_bisect_result_release(&r);
    return repro_finish_stdout(rc);
}

/* --commits selects the commit search; without it, EXP the op level and a
 * program after '--' a program's op level. One parse for all three. */
int repro_cmd_bisect(int argc, char **argv)
{
    char **program;
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    repro_bisect_args *a = calloc(1, sizeof *a);
    if (!a) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    int rc = parse_args(argc, argv, a);
    if (rc)
        rc = rc == 1 ? repro_finish_stdout(0) : repro_report_error();
    else if (a->commits)
        rc = cmd_bisect_commits(a, program);
    else if (program)
        rc = cmd_bisect_program(a, program);
    else
        rc = cmd_bisect_ops(a);
    free(a);
    return rc;
}
