/* `repro bless EXP`: runs the experiment N times in fresh processes and, if
 * every run is identical, installs the trace as the golden record for this
 * environment class, tied to the commit it was blessed at. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/config.h"
#include "record/env.h"
#include "util/error.h"
#include "golden/git.h"
#include "golden/golden.h"
#include "analysis/multirun.h"

const char repro_bless_usage[] =
    "usage: repro bless EXP [--runs N] [--every K] [--allow-dirty]\n"
    "\n"
    "Runs EXP N times (default 2), each in a fresh process; when all runs are\n"
    "identical, writes golden/EXP/CLASS.jsonl (CLASS: this machine's environment\n"
    "class, see `repro env`) atomically. Its header names the commit (HEAD), whether\n"
    "the tree was dirty, and the tree ids of the paths that can change numerics\n"
    "(kernels/, harness/, Makefile, the experiment file). Commit the golden so that\n"
    "`repro check` compares with it. Changes under golden/ do not count as dirty.\n"
    "\n"
    "  --runs N       runs that must agree (default 2)\n"
    "  --every K      keep tensor detail every K-th step in the golden (default 10;\n"
    "                 the chain covers every step); 1 keeps every step\n"
    "  --allow-dirty  bless on a tree with uncommitted changes (recorded)\n"
    "  -h, --help     this text\n"
    "\n"
    "Exit: 0 blessed, 1 runs differ (refused, with the check report), 2 dirty tree\n"
    "or bad experiment, 3 environment (not a git repository, lock held).\n";

static json_t *commit_json(const repro_git_commit *c)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "id", c->id, "short", c->short_id, "summary",
                     c->summary, "time", c->time_iso);
}

int repro_cmd_bless(int argc, char **argv)
{
    static const struct option opts[] = {
        {"runs", required_argument, 0, 'r'}, {"every", required_argument, 0, 'e'},
        {"allow-dirty", no_argument, 0, 'd'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int runs = 2, every = 10, allow_dirty = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'r':
            runs = (int)strtol(optarg, &end, 10);
            if (*end || runs < 1 || runs > 32) {
                repro_error_set(REPRO_EINVAL, "bless: --runs %s: expected 1..32", optarg);
                return repro_report_error();
            }
            break;
        case 'e':
            every = (int)strtol(optarg, &end, 10);
            if (*end || every < 1) {
                repro_error_set(REPRO_EINVAL, "bless: --every %s: expected K >= 1", optarg);
                return repro_report_error();
            }
            break;
        case 'd': allow_dirty = 1; break;
        case 'h': fputs(repro_bless_usage, stdout); return repro_finish_stdout(0);
        case ':':
            repro_error_set(REPRO_EINVAL, "bless: option '%s' needs a value", argv[optind - 1]);
            return repro_report_error();
        default:
            repro_error_set(REPRO_EINVAL, "bless: unknown option '%s' (see `repro help bless`)",
                            argv[optind - 1]);
            return repro_report_error();
        }
    }
    if (optind + 1 != argc) {
        repro_error_set(REPRO_EINVAL, "bless: expected one experiment file");
        return repro_report_error();
    }
    const char *exp = argv[optind];
    static repro_config cfg;
    if (repro_config_load(&cfg, exp) || repro_config_validate(&cfg))
        return repro_report_error();

    repro_git *g = NULL;
    repro_git_commit head = {0};
    repro_git_dirty *dirty = NULL;
    char *exp_rel = NULL;
    json_t *golden = NULL;
    static repro_multirun m;
    int mr_used = 0, rc = 0;
    repro_env env;
    if (repro_git_open(&g, NULL) || repro_git_head(g, &head) || repro_git_relpath(g, exp, &exp_rel) ||
        repro_git_dirty_list(g, NULL, 0, &dirty) ||
        repro_env_get_backend(&env, cfg.train_backend == REPRO_BACKEND_CUDA ? "cuda" : "cpu")) {
        rc = repro_report_error();
        goto done;
    }
    /* Goldens are outputs, not inputs: blessing one experiment after another
     * must not count the first one's new golden as a dirty tree. */
    size_t kept = 0;
    for (size_t i = 0; i < dirty->n; i++) {
        if (!strncmp(dirty->entries[i].path, "golden/", 7)) {
            free(dirty->entries[i].path);
            free(dirty->entries[i].old_path);
            continue;
        }
        dirty->entries[kept++] = dirty->entries[i];
    }
    dirty->n = kept;
    if (dirty->n > 0 && !allow_dirty) {
        fprintf(stderr, "repro: bless: the work tree has uncommitted changes; a golden must name "
                        "the commit it belongs to:\n");
        for (size_t i = 0; i < dirty->n && i < 20; i++)
            fprintf(stderr, "  %c %s\n", dirty->entries[i].status, dirty->entries[i].path);
        if (dirty->n > 20)
            fprintf(stderr, "  ... and %zu more\n", dirty->n - 20);
        fprintf(stderr, "repro: commit them, or bless anyway with --allow-dirty (recorded)\n");
        rc = REPRO_EXIT_USAGE;
        goto done;
    }

    /* The runs must agree before anything is written. */
    repro_multirun_init(&m, exp, cfg.name, "bless");
    mr_used = 1;
    static char every_set[64];
    snprintf(every_set, sizeof every_set, "trace.every=%d", every);
    m.pass[m.npass++] = "--set";
    m.pass[m.npass++] = every_set;
    for (int i = 0; i < runs; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        repro_multirun_add(&m, label, "fresh-process run to run", NULL, NULL);
    }
    rc = repro_multirun_execute(&m);
    if (rc) {
        rc = rc < 0 ? repro_report_error() : rc;
        goto done;
    }
    if (m.failed) {
        repro_multirun_print(&m, stdout);
        printf("bless refused: %d of %d runs differ from run 1, so there is no one trajectory to "
               "bless (traces in %s)\n",
               m.failed, m.nplan - 1, m.root);
        rc = REPRO_EXIT_MISMATCH;
        goto done;
    }

    /* The golden's provenance. */
    json_t *trees = json_object();
    const char *paths[8];
    int np = 0;
    for (int i = 0; i < repro_numerics_npaths; i++)
        paths[np++] = repro_numerics_paths[i];
    paths[np++] = exp_rel;
    for (int i = 0; i < np; i++) {
        char id[41];
        if (repro_git_tree_id(g, NULL, paths[i], id)) {
            json_decref(trees);
            rc = repro_report_error();
            goto done;
        }
        json_object_set_new(trees, paths[i], json_string(id));
    }
    json_t *dirty_files = json_array();
    for (size_t i = 0; i < dirty->n; i++)
        json_array_append_new(dirty_files, json_string(dirty->entries[i].path));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    golden = json_object();
    json_object_set_new(golden, "commit", commit_json(&head));
    json_object_set_new(golden, "dirty", json_boolean(dirty->n > 0));
    json_object_set_new(golden, "dirty_files", dirty_files);
    json_object_set_new(golden, "allow_dirty", json_boolean(allow_dirty));
    json_object_set_new(golden, "numerics_trees", trees);
    json_object_set_new(golden, "experiment_file", json_string(exp_rel));
    json_object_set_new(golden, "runs", json_integer(runs));
    json_object_set_new(golden, "env_class", json_string(env.class_id));
    json_object_set_new(golden, "blessed_at", json_string(stamp));
    json_object_set_new(golden, "shallow", json_boolean(repro_git_is_shallow(g)));

    char dest[1400], shown[1400];
    repro_golden_path(repro_git_workdir(g), cfg.name, env.class_id, dest, sizeof dest);
    repro_golden_path("", cfg.name, env.class_id, shown, sizeof shown);
    if (repro_golden_install(m.traces[0].path, dest, golden, 10)) {
        rc = repro_report_error();
        goto done;
    }
    char chain[65];
    repro_digest_hex(&m.traces[0].trailer_chain, chain);
    printf("blessed %s: %d identical runs of %ld steps at %s%s (%s), chain %s\n", shown, runs,
           m.traces[0].trailer_steps, head.short_id, dirty->n ? " + uncommitted changes" : "",
           head.summary, chain);
    printf("commit it so that `repro check %s` compares with it\n", exp);
done:
    json_decref(golden);
    if (mr_used)
        repro_multirun_release(&m);
    free(exp_rel);
    repro_git_dirty_free(dirty);
    repro_git_commit_release(&head);
    repro_git_free(g);
    return repro_finish_stdout(rc);
}
