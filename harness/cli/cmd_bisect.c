/* `repro bisect`: one command, two searches, both engines in the library.
 * With --commits GOOD..BAD it finds the first commit where the experiment,
 * or with `-- PROGRAM ARGS` the user's program in the user's repository,
 * stops reproducing (bisect/bisect_commits.c); without it, the first
 * divergent op and the culprit variants (bisect/bisect_ops.c). Here: the
 * options, the reports and the exit codes of both. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bisect/bisect_commits.h"
#include "bisect/bisect_ops.h"
#include "analysis/multirun.h"
#include "cli/bisect_args.h"
#include "cli/cli.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/opnames.h"

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
    "is removed. At op level: 0 all runs identical, 1 a divergence was found.\n";

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
    {"name", 0, "NAME", "-- PROGRAM only: the program's golden and run name", BI_NAME},
    {"timeout", 0, "S", "-- PROGRAM only: kill a run of the program after S seconds",
     BI_TIMEOUT},
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

int repro_bisect_args_only(const repro_bisect_args *a, unsigned allowed, const char *what)
{
    for (const repro_cli_opt *o = own_opts; o->name; o++)
        if ((a->given & (1u << o->id)) && !(allowed & (1u << o->id)))
            return repro_error_set(REPRO_EINVAL, "bisect: --%s does not apply to %s", o->name,
                                   what);
    return 0;
}

int repro_bisect_args_repeat(const repro_bisect_args *a, int lo, int hi, int def, int *out)
{
    *out = def;
    return a->repeat ? repro_parse_count_int("bisect: --repeat", a->repeat, lo, hi, out) : 0;
}

/* An own option: 0 or -1 (error slot). */
static int bisect_option(repro_bisect_args *a, int id, const char *v)
{
    long t;
    a->given |= 1u << id;
    switch (id) {
    case BI_COMMITS: a->commits = v; return 0;
    case BI_BUILD:
        a->build = v;
        return v[0] ? 0 : repro_error_set(REPRO_EINVAL, "bisect: --build: empty command");
    case BI_REPEAT: a->repeat = v; return 0;
    case BI_NAME:
        if (repro_golden_name_check(v))
            return -1;
        snprintf(a->name, sizeof a->name, "%s", v);
        return 0;
    case BI_TIMEOUT:
        if (repro_parse_count("bisect: --timeout", v, 1, 7 * 24 * 3600, &t))
            return -1;
        a->timeout_s = (double)t;
        return 0;
    case BI_QUARANTINE: a->quarantine = v; return 0;
    case BI_BATCHINV: a->batch_invariance = 1; return 0;
    case BI_BATCH_SIZES: return repro_batchinv_parse_sizes(&a->bi, "bisect: --batch-sizes", v);
    }
    return 0;
}

/* Every option of every search; 0, 1 for --help (printed), or -1. */
static int parse_args(int argc, char **argv, repro_bisect_args *a)
{
    repro_batchinv_opts_init(&a->bi);
    repro_cli_parser p;
    repro_cli_parser_init(&p, &repro_bisect_spec);
    const char *v;
    int id;
    while ((id = repro_cli_next(&p, argc, argv, &a->co, &v)) != 0) {
        if (id == REPRO_CLI_HELP) {
            repro_cli_help(stdout, &repro_bisect_spec);
            return 1;
        }
        if (id < 0 || bisect_option(a, id, v))
            return -1;
    }
    return 0;
}

/* ---- commits ---------------------------------------------------------------- */

#define BIT(x) (1u << (x))

/* The commit search's options, and its one EXP or a program. */
static int commits_opts(const repro_bisect_args *a, int argc, char **argv, char **program,
                        repro_bisect_opts *b)
{
    unsigned allowed = BIT(BI_COMMITS) | BIT(BI_BUILD) | BIT(BI_REPEAT);
    if (program)
        allowed |= BIT(BI_NAME) | BIT(BI_TIMEOUT);
    if (repro_bisect_args_only(a, allowed, program ? "the commit search of a program"
                                                   : "the commit search of an experiment "
                                                     "(--name and --timeout are for a program "
                                                     "after '--')"))
        return -1;
    b->range = a->commits;
    b->build = a->build;
    if (repro_bisect_args_repeat(a, 1, 64, 2, &b->repeat))
        return -1;
    b->quiet = a->co.quiet;
    b->name = a->name[0] ? a->name : NULL;
    b->timeout_s = a->timeout_s;
    b->pass = a->co.pass.argv;
    b->npass = a->co.pass.n;
    b->overridden = a->co.pass.overridden;
    if (program) {
        if (optind < argc)
            return repro_error_set(REPRO_EINVAL,
                                   "bisect: '%s' and a program after '--': give one or the other",
                                   argv[optind]);
        b->program = program;
        return 0;
    }
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL,
                               "bisect: expected one experiment file after the options (or "
                               "'-- PROGRAM ARGS...')");
    b->exp = argv[optind];
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
static int ops_opts(const repro_bisect_args *a, int argc, char **argv, bisect_ops_cli *o)
{
    if (repro_bisect_args_only(a, BIT(BI_REPEAT) | BIT(BI_QUARANTINE) | BIT(BI_BATCHINV) |
                                      BIT(BI_BATCH_SIZES),
                               "the op level of an experiment (--build needs --commits; --name "
                               "and --timeout are for a program after '--')"))
        return -1;
    if (repro_bisect_args_repeat(a, 2, 32, 3, &o->b.repeat))
        return -1;
    o->b.pass = a->co.pass;
    o->b.quarantine = a->quarantine;
    o->json = a->co.json;
    o->batch_invariance = a->batch_invariance;
    o->bi = a->bi;
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL, "bisect: expected one experiment file");
    o->b.exp = argv[optind];
    o->b.quiet = o->json || a->co.quiet;
    return 0;
}

/* The first divergent op, in words and in doc. */
static void report_first(const bisect_ops_cli *o, const repro_bisect_ops_result *r, json_t *doc)
{
    json_t *fo = json_pack("{s:I, s:s, s:s, s:s}", "step", (json_int_t)r->first_step, "name",
                           r->name, "phase", r->phase[0] ? r->phase : "?", "layer", r->layer);
    if (r->op[0])
        json_object_set_new(fo, "op", json_string(r->op));
    if (r->variant[0])
        json_object_set_new(fo, "variant", json_string(r->variant));
    if (r->has_info)
        json_object_set_new(fo, "deterministic", json_boolean(r->deterministic));
    json_object_set_new(fo, "inputs_identical", json_boolean(r->inputs_identical));
    json_object_set_new(doc, "diverged", json_true());
    json_object_set_new(doc, "first_divergent_op", fo);
    if (o->json)
        return;
    printf("first divergence: step %ld, %s, layer %s, %s (op %s, variant %s%s)\n", r->first_step,
           !strcmp(r->phase, "fwd") ? "forward" : !strcmp(r->phase, "bwd") ? "backward" : "-",
           r->layer[0] ? r->layer : "-", r->name, r->op[0] ? r->op : "?",
           r->variant[0] ? r->variant : "?",
           r->has_info ? (r->deterministic ? ", deterministic" : ", NONdeterministic") : "");
    if (r->no_op_differs)
        printf("  (no op output differs there: the first differing tensor is shown)\n");
    if (r->inputs_identical)
        printf("  its inputs were identical in both runs (step %ld's state, the batch and every "
               "op output before it agree bit for bit): %s produced different outputs from "
               "identical inputs, so it is nondeterministic%s\n",
               r->first_step - 1, r->op[0] ? r->op : r->name,
               r->has_info && r->deterministic
                   ? " — although its variant is registered as deterministic: the kernel or "
                     "its registration is wrong"
                   : "");
}

/* The culprits, in words and in doc. */
static void report_culprits(const bisect_ops_cli *o, const repro_bisect_ops_result *r,
                            json_t *cul)
{
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        json_array_append_new(cul, json_pack("{s:s, s:s}", "op",
                                             repro_config_key_name(r->culprits[i]), "variant", v));
    }
    if (o->json)
        return;
    if (r->nculprits == 0)
        printf("culprits: none of the %d nondeterministic variants in use makes the runs differ "
               "on its own within %ld steps x %d runs\n",
               r->ncand, r->test_steps, o->b.repeat);
    else
        printf("culprit%s (minimal: with %s deterministic the runs reproduce):\n",
               r->nculprits == 1 ? "" : "s", r->nculprits == 1 ? "it" : "them");
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        printf("  variant.%s = %s\n", repro_config_key_name(r->culprits[i]), v);
    }
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
        report_culprits(o, r, cul);
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
    if (!r->diverged) {
        json_object_set_new(doc, "diverged", json_false());
        if (!o->json)
            printf("no divergence: two runs agree bit for bit over %ld steps%s\n", r->steps,
                   o->b.quarantine ? " (with the quarantined op substituted)" : "");
    } else {
        report_first(o, r, doc);
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

static void report_batchinv(const bisect_ops_cli *o, const repro_bisect_batchinv_result *r,
                            json_t *doc)
{
    const repro_batchinv_result *c = &r->check;
    const repro_batchinv_mismatch *m = c->nshown ? &c->shown[0]
                                       : c->train_nshown ? &c->train_shown[0] : NULL;
    json_t *cul = json_array();
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        json_array_append_new(cul, json_pack("{s:s, s:s}", "op",
                                             repro_config_key_name(r->culprits[i]), "variant", v));
    }
    json_object_set_new(doc, "first_divergent_op",
                        m && m->first_op[0]
                            ? json_pack("{s:s, s:s, s:s, s:I}", "name", m->first_op, "op", m->op,
                                        "variant", m->variant, "sample", (json_int_t)m->sample)
                            : json_null());
    json_object_set_new(doc, "candidates", json_integer(r->ncand));
    json_object_set_new(doc, "culprits", cul);
    json_object_set_new(doc, "jointly", json_boolean(r->jointly));
    if (o->json)
        return;
    printf("NOT batch-invariant (scope: %s): %d of %d held-out samples and %d of %d training "
           "samples differ with their batch\n",
           REPRO_BATCHINV_SCOPE, c->ndiffer, c->nsamples, c->train_ndiffer, c->train_batch);
    if (m)
        printf("first divergent op: %s (op %s, variant %s), sample %ld: %s vs %s\n",
               m->first_op[0] ? m->first_op : "?", m->op[0] ? m->op : "?",
               m->variant[0] ? m->variant : "?", m->sample, m->a.label, m->b.label);
    if (r->ncand == 0)
        printf("no variant in use is registered not batch-invariant: a kernel registered "
               "batch-invariant is not (%s): the kernel or its registration is wrong\n",
               m && m->op[0] ? m->op : "see the first divergent op");
    else if (r->nculprits == 0)
        printf("culprits: none: with the %d non-batch-invariant variant%s at %s default the check "
               "still fails\n",
               r->ncand, r->ncand == 1 ? "" : "s", r->ncand == 1 ? "its" : "their");
    else
        printf("culprit%s (with %s at the default the check passes%s):\n",
               r->nculprits == 1 ? "" : "s", r->nculprits == 1 ? "it" : "them",
               r->jointly ? "; no one alone suffices" : "");
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        printf("  variant.%s = %s (not batch-invariant)\n", repro_config_key_name(r->culprits[i]),
               v);
    }
}

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
        report_batchinv(o, r, doc);
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

static int cmd_bisect_ops(const repro_bisect_args *a, int argc, char **argv)
{
    bisect_ops_cli o;
    memset(&o, 0, sizeof o);
    repro_bisect_ops_result *r = calloc(1, sizeof *r);
    int rc = r ? ops_opts(a, argc, argv, &o) : repro_error_set(REPRO_ENOMEM, "out of memory");
    if (rc == 0 && o.batch_invariance)
        rc = bisect_batchinv(&o);
    else if (rc || repro_bisect_ops_prepare(&o.b, r))
        rc = repro_report_error();
    else
        rc = bisect_ops(&o, r);
    free(r);
    return rc;
}

/* ---- the command ----------------------------------------------------------------- */

static int cmd_bisect_commits(const repro_bisect_args *a, int argc, char **argv, char **program)
{
    repro_bisect_opts b;
    memset(&b, 0, sizeof b);
    if (commits_opts(a, argc, argv, program, &b))
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
        rc = cmd_bisect_commits(a, argc, argv, program);
    else if (program)
        rc = repro_cmd_bisect_program(a, argc, argv, program);
    else
        rc = cmd_bisect_ops(a, argc, argv);
    free(a);
    return rc;
}
