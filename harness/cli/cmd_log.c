/* `repro log EXP`: the golden's history through git — every commit that
 * changed golden/<experiment>/, with its date, subject and the chain digest
 * each class's golden had there: where the numerics changed. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "util/error.h"
#include "util/escape.h"
#include "history/git.h"
#include "golden/golden.h"
#include "golden/golden_program.h"
#include "analysis/multirun.h"
#include "util/numparse.h"

static const char synopsis[] =
    "usage: repro log EXP [--json] [-n N]\n"
    "       repro log [--json] [-n N] [--name NAME] -- PROGRAM [ARGS...]\n"
    "\n"
    "Lists the commits that changed golden/EXP/ (newest first) with date, subject\n"
    "and the final chain digest of each environment class's golden at that commit:\n"
    "the points in history where the numerics changed.\n";

static const char epilogue[] = "\nExit: 0 ok, 2 bad experiment, 3 not a git repository.\n";

enum { O_MAX_COUNT = 1, O_JSON };

static const repro_cli_opt own_opts[] = {
    {"max-count", 'n', "N", "at most N commits", O_MAX_COUNT},
    {"json", 0, NULL, "as JSON", O_JSON},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_log_spec = {"log", REPRO_CLI_LOG, synopsis, own_opts, epilogue};

typedef struct {
    long max;
    int json;
} log_opts;

static int log_option(void *ctx, int id, const char *v)
{
    log_opts *o = ctx;
    if (id == O_JSON) {
        o->json = 1;
        return 0;
    }
    return repro_parse_count("log: -n", v, 1, LONG_MAX, &o->max);
}

/* The trailer's chain digest in a golden file's text, or "" if none. */
static void trailer_chain(const char *text, char *out, size_t len)
{
    out[0] = '\0';
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    char *line = strndup(start, (size_t)(end - start));
    json_t *j = line ? json_loads(line, 0, NULL) : NULL;
    const char *chain = json_string_value(json_object_get(j, "chain"));
    const char *type = json_string_value(json_object_get(j, "type"));
    if (chain && type && !strcmp(type, "trailer"))
        snprintf(out, len, "%s", chain);
    json_decref(j);
    free(line);
}

int repro_cmd_log(int argc, char **argv)
{
    log_opts o = {0, 0};
    repro_common co = {0};
    char **program;
    char name[128] = "";
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_log_spec, argc, argv, &co, log_option, &o);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed)
        return repro_report_error();
    int json = o.json;
    long max = o.max;
    snprintf(name, sizeof name, "%s", co.name);
    const char *exp_file = NULL;
    if (!name[0] && !program) {
        if (p.nargs != 1) {
            repro_error_set(REPRO_EINVAL, "log: expected one experiment file (or --name NAME, or "
                                          "-- PROGRAM)");
            return repro_report_error();
        }
        repro_config *cfg = malloc(sizeof *cfg);
        if (!cfg || repro_config_load(cfg, p.args[0])) {
            free(cfg);
            return repro_report_error();
        }
        snprintf(name, sizeof name, "%s", cfg->name);
        free(cfg);
        exp_file = p.args[0];
    } else if (p.nargs) {
        repro_error_set(REPRO_EINVAL, "log: '%s' with --name or a program: give one", p.args[0]);
        return repro_report_error();
    }
    repro_git *g = NULL;
    repro_git_history *h = NULL;
    char **classes = NULL;
    int ncls = 0, rc = 0;
    char prefix[300];
    /* A program's golden is named after the experiment it records (or
     * --name), as bless and check name it: found by the program its header
     * records, since log does not run it. */
    if (repro_golden_open_repo(&g, exp_file, program) ||
        (!name[0] && repro_golden_name_for_program(repro_git_workdir(g), program, name,
                                                   sizeof name))) {
        rc = repro_report_error();
        goto done;
    }
    snprintf(prefix, sizeof prefix, "golden/%s/", name);
    if (repro_git_path_history(g, prefix, (size_t)max, &h)) {
        rc = repro_report_error();
        goto done;
    }
    ncls = repro_golden_classes(repro_git_workdir(g), name, &classes);
    json_t *arr = json_array();
    if (!json)
        printf("golden history of %s (%zu commit%s changed %s)\n", repro_esc(name), h->n,
               h->n == 1 ? "" : "s", repro_esc(prefix));
    for (size_t i = 0; i < h->n; i++) {
        const repro_git_commit *cm = &h->commits[i];
        json_t *o = json_pack("{s:s, s:s, s:s}", "commit", cm->id, "time", cm->time_iso,
                              "summary", cm->summary);
        json_t *chains = json_object();
        if (!json)
            printf("%s %s %s\n", cm->short_id, cm->time_iso, repro_esc(cm->summary));
        for (int k = 0; k < ncls; k++) {
            char path[400], chain[65];
            snprintf(path, sizeof path, "%s%s.jsonl", prefix, classes[k]);
            void *data = NULL;
            size_t len = 0;
            if (repro_git_read_blob(g, cm->id, path, &data, &len)) {
                repro_error_clear();
                continue; /* this class had no golden at that commit */
            }
            trailer_chain(data, chain, sizeof chain);
            free(data);
            json_object_set_new(chains, classes[k], json_string(chain));
            if (!json)
                printf("    %-28s chain %s\n", repro_esc(classes[k]),
                       chain[0] ? repro_esc(chain) : "(no trailer)");
        }
        json_object_set_new(o, "chains", chains);
        json_array_append_new(arr, o);
    }
    if (h->incomplete && !json)
        printf("(history incomplete: %s)\n", h->note ? h->note : "shallow clone");
    if (json) {
        json_t *doc = json_pack("{s:s, s:o, s:b}", "experiment", name, "commits", arr,
                                "incomplete", h->incomplete);
        if (h->note)
            json_object_set_new(doc, "note", json_string(h->note));
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        json_decref(arr);
    }
done:
    repro_golden_classes_free(classes, ncls);
    repro_git_history_free(h);
    repro_git_free(g);
    return repro_finish_stdout(rc);
}
