/* `repro bisect`: one command, two searches. With --commits GOOD..BAD it
 * finds the first commit where the experiment stops reproducing (here: the
 * options, the report); without it, the op-level bisect (bisect_ops.c) gets
 * the whole command line. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/bisect_commits.h"
#include "analysis/bisect_ops.h"
#include "cli/cli.h"
#include "util/error.h"

const char repro_bisect_usage[] =
    "usage: repro bisect --commits GOOD..BAD EXP [--build CMD] [--repeat K] [--json] [-q]\n"
    "       repro bisect EXP          (op level: the first divergent op and its variant)\n"
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
    "  --commits GOOD..BAD  the range, one argument as git writes it; any revs git\n"
    "                    accepts (HEAD~5..HEAD, v1.0..main, a1b2c3d..f00ba47)\n"
    "  --build CMD       build command, run by /bin/sh -c in the worktree\n"
    "                    (default: make); it must leave ./repro there\n"
    "  --repeat K        runs per commit (default 2)\n"
    "  --json            the report as one JSON document (probes on stderr)\n"
    "  -q, --quiet       no progress on stderr\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit: 0 a first bad commit was found, 1 BAD reproduces (nothing to bisect),\n"
    "2 usage or input error (bad range, GOOD not an ancestor of BAD, GOOD not good),\n"
    "3 environment (not a git repository, worktree failure), 125 only skipped\n"
    "commits were left, so no first bad commit can be named.\n";

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
} bisect_cli;

static int parse_args(int argc, char **argv, bisect_cli *o)
{
    static const struct option opts[] = {
        {"commits", required_argument, 0, 'c'}, {"build", required_argument, 0, 'b'},
        {"repeat", required_argument, 0, 'r'},  {"json", no_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},         {0, 0, 0, 0},
    };
    int c;
    char *end;
    long k;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":q", opts, NULL)) != -1) {
        switch (c) {
        case 'c': o->b.range = optarg; break;
        case 'b':
            if (!optarg[0])
                return repro_error_set(REPRO_EINVAL, "bisect: --build: empty command");
            o->b.build = optarg;
            break;
        case 'r':
            k = strtol(optarg, &end, 10);
            if (*end || end == optarg || k < 1 || k > 64)
                return repro_error_set(REPRO_EINVAL, "bisect: --repeat %s: expected 1..64",
                                       optarg);
            o->b.repeat = (int)k;
            break;
        case 'j': o->json = 1; break;
        case 'q': o->b.quiet = 1; break;
        case ':':
            return repro_error_set(REPRO_EINVAL, "bisect: %s needs a value",
                                   argv[optind - 1]);
        default:
            return repro_error_set(REPRO_EINVAL,
                                   "bisect: bad option '%s' (see `repro help bisect`)",
                                   argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL,
                               "bisect: expected one experiment file after the options");
    o->b.exp = argv[optind];
    return 0;
}

int repro_cmd_bisect(int argc, char **argv)
{
    /* --commits selects the commit search; anything else is the op level's.
     * Help is this file's: the usage covers both. */
    if (has_option(argc, argv, "--help") || has_option(argc, argv, "-h")) {
        fputs(repro_bisect_usage, stdout);
        return repro_finish_stdout(0);
    }
    if (!has_option(argc, argv, "--commits"))
        return repro_bisect_ops_main(argc, argv);
    bisect_cli o;
    memset(&o, 0, sizeof o);
    o.b.repeat = 2;
    if (parse_args(argc, argv, &o))
        return repro_report_error();
    /* Probes are the report in text mode; with --json they are progress. */
    o.b.steps = o.json ? (o.b.quiet ? NULL : stderr) : stdout;
    repro_bisect_result r;
    int rc = repro_bisect_commits(&o.b, &r);
    if (rc < 0) {
        rc = repro_report_error();
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
