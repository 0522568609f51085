/* The table of options common to the commands that run the workload, and
 * the parser and help printer built from it (see common_opts.h). */
#include "cli/common_opts.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/error.h"
#include "util/numparse.h"

static int set_quiet(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                     const char *value)
{
    (void)row, (void)cmd, (void)as_list, (void)value;
    c->quiet = 1;
    return 0;
}

static int set_json(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                    const char *value)
{
    (void)row, (void)cmd, (void)as_list, (void)value;
    c->json = 1;
    return 0;
}

static int set_runs(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                    const char *value)
{
    (void)row, (void)as_list;
    char what[64];
    snprintf(what, sizeof what, "%s: --runs", cmd);
    /* compare runs each value N times: fewer per value */
    return repro_parse_count_int(what, value, 1, strcmp(cmd, "compare") ? 32 : 16, &c->runs);
}

/* A `repro run` option forwarded to every run (checked as it is read:
 * analysis/multirun.c), or on a list command a comma list of values, one
 * more run each (checked when the runs are planned). */
static int pass_or_list(repro_common *c, const repro_common_opt *row, const char *cmd,
                        int as_list, const char *value)
{
    if (!as_list) {
        int rc = repro_run_pass_add(&c->pass, cmd, row->name, value);
        return rc < 0 ? -1
               : rc   ? 0
                      : repro_error_set(REPRO_EINVAL, "%s: --%s: not a run option", cmd,
                                        row->name);
    }
    if (c->nlists == REPRO_CLI_MAX_LISTS)
        return repro_error_set(REPRO_EINVAL, "%s: too many lists of runs", cmd);
    for (int i = 0; i < c->nlists; i++)
        if (!strcmp(c->lists[i].flag + 2, row->name))
            return repro_error_set(REPRO_EINVAL, "%s: --%s given twice (give one list)", cmd,
                                   row->name);
    snprintf(c->lists[c->nlists].flag, sizeof c->lists[0].flag, "--%s", row->name);
    c->lists[c->nlists].value = value;
    c->lists[c->nlists].scope = row->scope;
    c->lists[c->nlists].what = row->what;
    c->nlists++;
    return 0;
}

#define ALL REPRO_CLI_WORKLOAD
#define MULTI (REPRO_CLI_CHECK | REPRO_CLI_BLESS | REPRO_CLI_COMPARE)

/* One row per option. A run option with a list form, like --threads or
 * --ranks, is one row, plus its config key in multirun.c's pass-through
 * table. Lists are planned
 * as runs by check (cmd_check.c add_lists); a command added to a row's
 * list_commands must plan c->lists too (compare does not today). */
const repro_common_opt repro_common_opts[] = {
    {"quiet", 'q', NULL, "no progress on stderr", ALL, 0, NULL, NULL, NULL, NULL, set_quiet},
    {"json", 0, NULL, "the result as one JSON document on stdout", ALL, 0, NULL, NULL, NULL, NULL,
     set_json},
    {"runs", 0, "N", "fresh-process runs that must agree (default 2)", MULTI, 0, NULL, NULL, NULL,
     NULL, set_runs},
    {"steps", 0, "N", "train N steps (train.steps), every run", ALL, 0, NULL, NULL, NULL, NULL,
     pass_or_list},
    {"seed", 0, "S", "global seed (train.seed), every run", ALL, 0, NULL, NULL, NULL, NULL,
     pass_or_list},
    {"set", 0, "KEY=VALUE",
     "override any config key, as section.key or an unambiguous\nkey; validated like the file; "
     "may be repeated",
     ALL, 0, NULL, NULL, NULL, NULL, pass_or_list},
    {"threads", 0, "T", "kernel threads (train.threads); results do not depend on it", ALL,
     REPRO_CLI_CHECK, "LIST", "one more run per kernel thread count, e.g. 1,2,3",
     "thread count", "threads", pass_or_list},
    {"workers", 0, "W", "data-loader workers (data.num_workers)", ALL, REPRO_CLI_CHECK, "LIST",
     "one more run per loader worker count, e.g. 0,1,3", "worker count", "workers",
     pass_or_list},
    {"ranks", 0, "N",
     "data-parallel processes (train.ranks): starts them with\nmpirun, or joins the MPI job it "
     "runs in; rank 0 writes\nthe trace, every rank checks its replica after every update",
     ALL, REPRO_CLI_CHECK, "LIST",
     "one more run per data-parallel world size (MPI ranks),\ne.g. 1,2,4 (needs [train] "
     "shard_size)",
     "world size", "ranks", pass_or_list},
    {NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
};

/* ---- help ------------------------------------------------------------------- */

/* "  -q, --quiet       help" with the help's further lines indented. */
static void help_line(FILE *out, int short_name, const char *name, const char *arg,
                      const char *help)
{
    char flag[96];
    if (short_name)
        snprintf(flag, sizeof flag, "-%c, --%s%s%s", short_name, name, arg ? " " : "",
                 arg ? arg : "");
    else
        snprintf(flag, sizeof flag, "--%s%s%s", name, arg ? " " : "", arg ? arg : "");
    if (strlen(flag) > 17)
        fprintf(out, "  %s\n%20s", flag, "");
    else
        fprintf(out, "  %-18s", flag);
    for (const char *p = help; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(out, "%.*s\n", (int)n, p);
        p += n;
        if (*p == '\n' && *++p)
            fprintf(out, "%20s", "");
    }
}

void repro_cli_help(FILE *out, const repro_cli_spec *s)
{
    fputs(s->synopsis, out);
    fputs("\noptions:\n", out);
    for (const repro_cli_opt *o = s->own; o && o->name; o++)
        help_line(out, o->short_name, o->name, o->arg, o->help);
    fprintf(out, "\noptions common to the commands that run the workload (run, check, bless,\n"
                 "compare, bisect, submit):\n");
    for (const repro_common_opt *r = repro_common_opts; r->name; r++) {
        if (!(r->commands & s->bit))
            continue;
        int list = (r->list_commands & s->bit) != 0;
        help_line(out, r->short_name, r->name, list ? r->list_arg : r->arg,
                  list ? r->list_help : r->help);
    }
    help_line(out, 'h', "help", NULL, "this text");
    if (s->epilogue)
        fputs(s->epilogue, out);
}

/* ---- parsing ---------------------------------------------------------------- */

static void add(repro_cli_parser *p, const char *name, int has_arg, int short_name)
{
    p->lo[p->n] = (struct option){name, has_arg ? required_argument : no_argument, 0, 256 + p->n};
    if (short_name) {
        size_t k = strlen(p->shorts);
        p->shorts[k++] = (char)short_name;
        if (has_arg)
            p->shorts[k++] = ':';
        p->shorts[k] = '\0';
    }
    p->n++;
}

void repro_cli_parser_init(repro_cli_parser *p, const repro_cli_spec *s)
{
    memset(p, 0, sizeof *p);
    p->spec = s;
    p->shorts[0] = ':'; /* a missing value is ':', not '?' */
    for (const repro_cli_opt *o = s->own; o && o->name && p->n < REPRO_CLI_MAX_OPTS - 1; o++) {
        p->own[p->n] = o;
        add(p, o->name, o->arg != NULL, o->short_name);
    }
    for (const repro_common_opt *r = repro_common_opts; r->name && p->n < REPRO_CLI_MAX_OPTS - 1;
         r++) {
        if (!(r->commands & s->bit))
            continue;
        p->common[p->n] = r;
        add(p, r->name, r->arg != NULL, r->short_name);
    }
    add(p, "help", 0, 'h');
    p->lo[p->n] = (struct option){0, 0, 0, 0};
    optind = 1;
    opterr = 0;
}

/* The table index of short option ch, or -1. */
static int short_index(const repro_cli_parser *p, int ch)
{
    for (int i = 0; i < p->n; i++) {
        int sn = p->own[i] ? p->own[i]->short_name : p->common[i] ? p->common[i]->short_name : 'h';
        if (sn == ch)
            return i;
    }
    return -1;
}

int repro_cli_next(repro_cli_parser *p, int argc, char **argv, repro_common *c,
                   const char **value)
{
    for (;;) {
        int ch = getopt_long(argc, argv, p->shorts, p->lo, NULL);
        if (ch == -1)
            return 0;
        if (ch == ':')
            return repro_error_set(REPRO_EINVAL, "%s: option '%s' needs a value", p->spec->name,
                                   argv[optind - 1]);
        int i = ch >= 256 ? ch - 256 : ch == '?' ? -1 : short_index(p, ch);
        if (i < 0 || i >= p->n)
            return repro_cli_unknown_option(p->spec->name, argv[optind - 1], p->lo);
        *value = optarg;
        if (p->own[i])
            return p->own[i]->id;
        if (!p->common[i])
            return REPRO_CLI_HELP;
        const repro_common_opt *r = p->common[i];
        if (r->parse(c, r, p->spec->name, (r->list_commands & p->spec->bit) != 0, optarg))
            return -1;
    }
}

repro_multirun *repro_cli_program_runs(const repro_common *co, char **program, const char *name,
                                       double timeout_s, const char *kind)
{
    char label[128];
    snprintf(label, sizeof label, "%s", name);
    if (!label[0])
        repro_program_name(program, label, sizeof label);
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    repro_multirun_init(m, label, label, kind);
    m->cmd = program;
    m->timeout_s = timeout_s;
    m->quiet = co->quiet || co->json;
    m->no_element_detail = 1;
    repro_multirun_add_pass(m, &co->pass);
    return m;
}
