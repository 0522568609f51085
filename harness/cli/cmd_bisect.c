/* `repro bisect`: one command, two searches, both engines in the library.
 * With --commits GOOD..BAD it finds the first commit where the experiment,
 * or with `-- PROGRAM ARGS` the user's program in the user's repository,
 * stops reproducing (golden/bisect_commits.c); without it, the first
 * divergent op and the culprit variants (analysis/bisect_ops.c). Here: the
 * options, the reports and the exit codes of both. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/bisect_commits.h"
#include "analysis/bisect_ops.h"
#include "analysis/multirun.h"
#include "cli/cli.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/opnames.h"

const char repro_bisect_usage[] =
    "usage: repro bisect --commits GOOD..BAD EXP [--build CMD] [--repeat K] [--json] [-q]\n"
    "       repro bisect --commits GOOD..BAD [--build CMD] [--repeat K] [--name NAME]\n"
    "                    [--timeout S] [--steps N] [--seed S] [--set K=V] [--json] [-q]\n"
    "                    -- PROGRAM [ARGS...]\n"
    "                                 (your repository's history, your program)\n"
    "       repro bisect EXP          (op level: the first divergent op and its variant)\n"
    "       repro bisect EXP --batch-invariance [--batch-sizes 1,7,64]\n"
    "                                 (which variant makes a sample's bits depend on\n"
    "                                 its batch: `repro check --batch-invariance`, then\n"
    "                                 each variant in use that is registered not\n"
    "                                 batch-invariant switched to its default on its\n"
    "                                 own; exit 0 when the check passes, 1 when it\n"
    "                                 fails, with the culprits named)\n"
    "       repro bisect [--repeat K] [--steps N] [--set K=V] -- PROGRAM [ARGS...]\n"
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
    "  --repeat K        runs (default 3)\n"
    "  --steps N, --seed S, --set KEY=VALUE\n"
    "                    as for `repro run`, applied to every run\n"
    "  --quarantine OP   substitute run 1's outputs of OP (an op output such as\n"
    "                    bwd.fc1.dw, or a variant op such as linear.bwd_weight) in\n"
    "                    the other runs, to find a second culprit behind the first\n"
    "  --json            the report as one JSON document\n"
    "\n"
    "With --commits: finds the first commit on BAD's first-parent chain after GOOD\n"
    "where EXP stops reproducing. Each probed commit is checked out into a temporary\n"
    "linked worktree (incremental builds: only what changed is rebuilt), built with\n"
    "CMD, and its own ./repro runs EXP K times: the runs must agree with each other\n"
    "and run 1 must match GOOD's reference, which is GOOD's golden for this\n"
    "environment class (golden/EXP/CLASS.jsonl at GOOD) or, without one, GOOD's own\n"
    "run (GOOD is then built and run first, and its runs must agree). BAD is tested\n"
    "first. A commit that does not build or whose run fails is skipped, as\n"
    "`git bisect skip` does, and the search goes around it. Each probe is printed as\n"
    "it is decided; at the end, the first bad commit, the numerics paths it changed\n"
    "(kernels/, harness/, Makefile, EXP) and the work it took.\n"
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
    "end: the first bad commit and every path it changed.\n"
    "  --name NAME       the program's golden name\n"
    "  --timeout S       kill a run of the program after S seconds\n"
    "  --steps N, --seed S, --set KEY=VALUE\n"
    "                    given to every run (REPRO_SET_STEPS, REPRO_SEED,\n"
    "                    REPRO_SET_<KEY>); --seed and --set leave the golden out\n"
    "\n"
    "  --commits GOOD..BAD  the range, one argument as git writes it; any revs git\n"
    "                    accepts (HEAD~5..HEAD, v1.0..main, a1b2c3d..f00ba47)\n"
    "  --build CMD       build command, run by /bin/sh -c in the worktree\n"
    "                    (default: make); for EXP it must leave ./repro there\n"
    "  --repeat K        runs per commit (default 2)\n"
    "  --json            the report as one JSON document (probes on stderr)\n"
    "  -q, --quiet       no progress on stderr\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit: 0 a first bad commit was found, 1 BAD reproduces (nothing to bisect),\n"
    "2 usage or input error (bad range, GOOD not an ancestor of BAD, GOOD not good),\n"
    "3 environment (not a git repository, worktree failure), 125 only skipped\n"
    "commits were left, so no first bad commit can be named; 130 (143) after Ctrl-C\n"
    "(SIGTERM), which reaches the running build or program too, and the worktree\n"
    "is removed.\n";

/* Is `name` (or name=...) among the options (before a "--")? */
static int has_option(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return 0;
        if (!strncmp(argv[i], name, n) && (argv[i][n] == '\0' || argv[i][n] == '='))
            return 1;
    }
    return 0;
}

typedef struct {
    repro_bisect_opts b;
    int json;
    repro_run_pass pass; /* --steps, --seed, --set for a program's runs */
    int program_only;    /* an option only a program takes was given */
} bisect_cli;

/* The options that only a program after '--' takes: --name, --timeout and
 * the pass-through ones. 0 or -1 (error slot). */
static int parse_program_option(bisect_cli *o, const char *name, const char *value)
{
    o->program_only = 1;
    if (!strcmp(name, "name")) {
        if (repro_golden_name_check(value))
            return -1;
        o->b.name = value;
        return 0;
    }
    if (!strcmp(name, "timeout")) {
        long t;
        if (repro_parse_count("bisect: --timeout", value, 1, 7 * 24 * 3600, &t))
            return -1;
        o->b.timeout_s = (double)t;
        return 0;
    }
    return repro_run_pass_add(&o->pass, "bisect", name, value) < 0 ? -1 : 0;
}

/* After the options: one EXP, or none with a program after '--'. */
static int parse_subject(int argc, char **argv, bisect_cli *o, char **program)
{
    if (program) {
        if (optind < argc)
            return repro_error_set(REPRO_EINVAL,
                                   "bisect: '%s' and a program after '--': give one or the other",
                                   argv[optind]);
        o->b.program = program;
        o->b.pass = o->pass.argv;
        o->b.npass = o->pass.n;
        o->b.overridden = o->pass.overridden;
        return 0;
    }
    if (o->program_only)
        return repro_error_set(REPRO_EINVAL, "bisect: --name, --timeout, --steps, --seed and "
                                             "--set are for a program after '--'");
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL,
                               "bisect: expected one experiment file after the options (or "
                               "'-- PROGRAM ARGS...')");
    o->b.exp = argv[optind];
    return 0;
}

static int parse_args(int argc, char **argv, bisect_cli *o, char **program)
{
    static const struct option opts[] = {
        {"commits", required_argument, 0, 'c'}, {"build", required_argument, 0, 'b'},
        {"repeat", required_argument, 0, 'r'},  {"json", no_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},         {"name", required_argument, 0, 'p'},
        {"timeout", required_argument, 0, 'p'}, {"steps", required_argument, 0, 'p'},
        {"seed", required_argument, 0, 'p'},    {"set", required_argument, 0, 'p'},
        {0, 0, 0, 0},
    };
    int c, li = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":q", opts, &li)) != -1) {
        switch (c) {
        case 'p':
            if (parse_program_option(o, opts[li].name, optarg))
                return -1;
            break;
        case 'c': o->b.range = optarg; break;
        case 'b':
            if (!optarg[0])
                return repro_error_set(REPRO_EINVAL, "bisect: --build: empty command");
            o->b.build = optarg;
            break;
        case 'r':
            if (repro_parse_count_int("bisect: --repeat", optarg, 1, 64, &o->b.repeat))
                return -1;
            break;
        case 'j': o->json = 1; break;
        case 'q': o->b.quiet = 1; break;
        case ':':
            return repro_error_set(REPRO_EINVAL, "bisect: %s needs a value",
                                   argv[optind - 1]);
        default:
            return repro_cli_unknown_option("bisect", argv[optind - 1], opts);
        }
    }
    return parse_subject(argc, argv, o, program);
}

/* ---- op level --------------------------------------------------------------- */

typedef struct {
    repro_bisect_ops_opts b;
    int json;
    int batch_invariance;   /* --batch-invariance */
    repro_batchinv_opts bi; /* its batch sizes */
} bisect_ops_cli;

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_ops_args(int argc, char **argv, bisect_ops_cli *o)
{
    static const struct option opts[] = {
        {"repeat", required_argument, 0, 'r'}, {"steps", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},   {"set", required_argument, 0, 'k'},
        {"quarantine", required_argument, 0, 'q'}, {"json", no_argument, 0, 'j'},
        {"batch-invariance", no_argument, 0, 'I'}, {"batch-sizes", required_argument, 0, 'Z'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    o->b.repeat = 3;
    repro_batchinv_opts_init(&o->bi);
    optind = 1;
    opterr = 0;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
        switch (c) {
        case 'r':
            if (repro_parse_count_int("bisect: --repeat", optarg, 2, 32, &o->b.repeat))
                return -1;
            break;
        case 's':
        case 'S':
        case 'k':
            if (repro_run_pass_add(&o->b.pass, "bisect", opts[li].name, optarg) < 0)
                return -1;
            break;
        case 'q': o->b.quarantine = optarg; break;
        case 'j': o->json = 1; break;
        case 'I': o->batch_invariance = 1; break;
        case 'Z':
            if (repro_batchinv_parse_sizes(&o->bi, "bisect: --batch-sizes", optarg))
                return -1;
            break;
        case 'h': fputs(repro_bisect_usage, stdout); return 1;
        case ':':
            return repro_error_set(REPRO_EINVAL, "bisect: option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return repro_cli_unknown_option("bisect", argv[optind - 1], opts);
        }
    }
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL, "bisect: expected one experiment file");
    o->b.exp = argv[optind];
    o->b.quiet = o->json;
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

static int cmd_bisect_ops(int argc, char **argv)
{
    bisect_ops_cli o;
    memset(&o, 0, sizeof o);
    repro_bisect_ops_result *r = calloc(1, sizeof *r);
    int rc = r ? parse_ops_args(argc, argv, &o)
               : repro_error_set(REPRO_ENOMEM, "out of memory");
    if (rc == 1)
        rc = repro_finish_stdout(0);
    else if (rc == 0 && o.batch_invariance)
        rc = bisect_batchinv(&o);
    else if (rc || repro_bisect_ops_prepare(&o.b, r))
        rc = repro_report_error();
    else
        rc = bisect_ops(&o, r);
    free(r);
    return rc;
}

/* ---- the command ----------------------------------------------------------------- */

int repro_cmd_bisect(int argc, char **argv)
{
    /* --commits selects the commit search; anything else is the op level's.
     * Help is this file's: the usage covers both. */
    if (has_option(argc, argv, "--help") || has_option(argc, argv, "-h")) {
        fputs(repro_bisect_usage, stdout);
        return repro_finish_stdout(0);
    }
    char **program;
    int commits = has_option(argc, argv, "--commits");
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    if (!commits)
        return program ? repro_cmd_bisect_program(argc, argv, program)
                       : cmd_bisect_ops(argc, argv);
    bisect_cli o;
    memset(&o, 0, sizeof o);
    o.b.repeat = 2;
    if (parse_args(argc, argv, &o, program))
        return repro_report_error();
    /* Probes are the report in text mode; with --json they are progress. */
    o.b.steps = o.json ? (o.b.quiet ? NULL : stderr) : stdout;
    repro_bisect_result r;
    int rc = repro_bisect_commits(&o.b, &r);
    if (rc < 0) {
        /* Interrupted: the engine's code is 128 + the signal, which is
         * what a shell reports for a command a signal stopped. */
        int code = repro_error_code();
        rc = repro_report_error();
        if (code > 128 && code < 128 + 65)
            rc = code;
    } else if (o.json) {
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
