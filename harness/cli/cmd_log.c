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
#include "golden/golden_log.h"
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

/* The history as text: each commit, then each class's chain there. */
static void print_log(const json_t *doc)
{
    const char *name = json_string_value(json_object_get(doc, "experiment"));
    const json_t *commits = json_object_get(doc, "commits");
    size_t n = json_array_size(commits);
    printf("golden history of %s (%zu commit%s changed golden/%s/)\n", repro_esc(name), n,
           n == 1 ? "" : "s", repro_esc(name));
    for (size_t i = 0; i < n; i++) {
        const json_t *cm = json_array_get(commits, i);
        printf("%.7s %s %s\n", json_string_value(json_object_get(cm, "commit")),
               json_string_value(json_object_get(cm, "time")),
               repro_esc(json_string_value(json_object_get(cm, "summary"))));
        const char *cls;
        json_t *chain;
        json_object_foreach(json_object_get(cm, "chains"), cls, chain) {
            const char *hex = json_string_value(chain);
            printf("    %-28s chain %s\n", repro_esc(cls), hex[0] ? repro_esc(hex) : "(no trailer)");
        }
    }
    if (json_is_true(json_object_get(doc, "incomplete"))) {
        const char *note = json_string_value(json_object_get(doc, "note"));
        printf("(history incomplete: %s)\n", note ? note : "shallow clone");
    }
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
    json_t *doc = NULL;
    int rc = 0;
    if (repro_golden_log(exp_file, program, name, max, &doc))
        rc = repro_report_error();
    else if (json) {
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        print_log(doc);
    }
    json_decref(doc);
    return repro_finish_stdout(rc);
}
