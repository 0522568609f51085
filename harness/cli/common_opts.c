/* The table of options common to several commands, and the parser and
 * help printer every command's options go through (see common_opts.h). */
#include "cli/common_opts.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/suggest.h"

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

/* --level LEVEL: the trace level of every run, as `--set trace.level=`
 * (a program gets REPRO_TRACE_LEVEL). At op, detail at every step too
 * (trace.every=1), so that the first divergent step has its op outputs
 * whatever that step is; a --set trace.every after it wins. */
static int set_level(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                     const char *value)
{
    (void)row, (void)as_list;
    static const char *const sets[] = {"trace.level=step", "trace.level=tensor",
                                       "trace.level=op"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(sets[i] + strlen("trace.level="), value))
            continue;
        if (repro_run_pass_add(&c->pass, cmd, "set", sets[i]) < 0)
            return -1;
        return i == 2 && repro_run_pass_add(&c->pass, cmd, "set", "trace.every=1") < 0 ? -1 : 0;
    }
    return repro_error_set(REPRO_EINVAL, "%s: --level %s: expected step, tensor or op", cmd,
                           value);
}

/* --name: checked as a golden's name (it names goldens and run directories). */
static int set_name(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                    const char *value)
{
    (void)row, (void)cmd, (void)as_list;
    if (repro_golden_name_check(value))
        return -1;
    snprintf(c->name, sizeof c->name, "%s", value);
    return 0;
}

/* --timeout: whole seconds, up to a week. */
static int set_timeout(repro_common *c, const repro_common_opt *row, const char *cmd,
                       int as_list, const char *value)
{
    (void)row, (void)as_list;
    char what[64];
    long t;
    snprintf(what, sizeof what, "%s: --timeout", cmd);
    if (repro_parse_count(what, value, 1, 7 * 24 * 3600, &t))
        return -1;
    c->timeout_s = (double)t;
    return 0;
}

/* What --name names differs by command; the default too. */
static const struct repro_common_help name_help[] = {
    {REPRO_CLI_RUN, "-- PROGRAM only: the name of its runs and goldens"},
    {REPRO_CLI_CHECK,
     "-- PROGRAM only: its goldens' name (default: the\nexperiment name the program records)"},
    {REPRO_CLI_BLESS, "-- PROGRAM only: the golden's name (default: the name\nit records)"},
    {REPRO_CLI_BISECT, "-- PROGRAM only: the program's golden and run name"},
    {REPRO_CLI_LOG, "a program's goldens (default: the program's basename)"},
    {0, NULL},
};

/* bisect takes --threads, --workers and --ranks as one value (every run's)
 * or two (the scope bisect: the first op whose bits differ between them). */
static const struct repro_common_help threads_help[] = {
    {REPRO_CLI_BISECT,
     "one count: every run's kernel threads; two, A,B: run\nboth at trace level op (and A "
     "twice) and name the first\nop whose output differs between them from identical\n"
     "inputs: a thread-count-dependent kernel"},
    {0, NULL},
};
static const struct repro_common_help workers_help[] = {
    {REPRO_CLI_BISECT, "one count: every run's loader workers; two, A,B: as\n--threads A,B, "
                       "for the worker count"},
    {0, NULL},
};
static const struct repro_common_help ranks_help[] = {
    {REPRO_CLI_BISECT, "one count: every run's world size; two, A,B: as\n--threads A,B, for "
                       "the world size (the first differing\ntensor: data-parallel runs record "
                       "no op outputs)"},
    {0, NULL},
};

static const struct repro_common_help tp_help[] = {
    {REPRO_CLI_BISECT, "one size: every run's tensor-parallel size; two, A,B:\nas --ranks A,B, "
                       "for the tensor-parallel size"},
    {0, NULL},
};

#define ALL REPRO_CLI_WORKLOAD
#define SCREEN REPRO_CLI_SCREEN /* runs the workload, one rank per process */
#define PROGRAM_CMDS (REPRO_CLI_RUN | REPRO_CLI_CHECK | REPRO_CLI_BLESS | REPRO_CLI_BISECT)
#define MULTI (REPRO_CLI_CHECK | REPRO_CLI_BLESS | REPRO_CLI_COMPARE)

/* One row per option. A run option with a list form, like --threads or
 * --ranks, is one row, plus its config key in multirun.c's pass-through
 * table. Lists are planned
 * as runs by check (cmd_check.c add_lists); a command added to a row's
 * list_commands must plan c->lists too (compare does not today). */
const repro_common_opt repro_common_opts[] = {
    {"quiet", 'q', NULL, "no progress on stderr", ALL | SCREEN, 0, NULL, NULL, NULL, NULL,
     set_quiet, NULL},
    {"json", 0, NULL, "the result as one JSON document on stdout", ALL | SCREEN, 0, NULL, NULL,
     NULL, NULL,
     set_json, NULL},
    {"runs", 0, "N", "fresh-process runs that must agree (default 2)", MULTI, 0, NULL, NULL, NULL,
     NULL, set_runs, NULL},
    {"steps", 0, "N", "train N steps (train.steps), every run", ALL | SCREEN, 0, NULL, NULL, NULL,
     NULL,
     pass_or_list, NULL},
    {"seed", 0, "S", "global seed (train.seed), every run", ALL | SCREEN, 0, NULL, NULL, NULL, NULL,
     pass_or_list, NULL},
    {"set", 0, "KEY=VALUE",
     "override any config key, as section.key or an unambiguous\nkey; validated like the file; "
     "may be repeated",
     ALL | SCREEN, 0, NULL, NULL, NULL, NULL, pass_or_list, NULL},
    {"threads", 0, "T", "kernel threads (train.threads); results do not depend on it", ALL | SCREEN,
     REPRO_CLI_CHECK | REPRO_CLI_BISECT, "LIST", "one more run per kernel thread count, e.g. 1,2,3",
     "thread count", "threads", pass_or_list, threads_help},
    {"workers", 0, "W", "data-loader workers (data.num_workers)", ALL | SCREEN,
     REPRO_CLI_CHECK | REPRO_CLI_BISECT, "LIST",
     "one more run per loader worker count, e.g. 0,1,3", "worker count", "workers",
     pass_or_list, workers_help},
    {"ranks", 0, "N",
     "data-parallel processes (train.ranks): starts them with\nmpirun, or joins the MPI job it "
     "runs in; rank 0 writes\nthe trace, every rank checks its replica after every update;\n"
     "-- PROGRAM: N processes with RANK, WORLD_SIZE, MASTER_ADDR\nand MASTER_PORT set "
     "(docs/PROTOCOL.md)",
     ALL, REPRO_CLI_CHECK | REPRO_CLI_BISECT, "LIST",
     "one more run per data-parallel world size (MPI ranks),\ne.g. 1,2,4 (an experiment needs "
     "[train] shard_size;\na program gets RANK, WORLD_SIZE, MASTER_ADDR and\nMASTER_PORT, "
     "docs/PROTOCOL.md)",
     "world size", "ranks", pass_or_list, ranks_help},
    {"tp", 0, "N",
     "tensor-parallel processes (parallel.tp): the mlp's fc1\ncolumn-parallel, fc2 row-parallel, "
     "N x ranks processes\nstarted with mpirun (docs/tensor-parallel.md); -- PROGRAM:\n"
     "REPRO_TP and REPRO_TP_RANK set (docs/PROTOCOL.md)",
     ALL, REPRO_CLI_CHECK | REPRO_CLI_BISECT, "LIST",
     "one more run per tensor-parallel size, e.g. 1,2,4 (the\nsame bits as one process with "
     "linear.tp_reduce = ordered)",
     "tensor-parallel size", "tp", pass_or_list, tp_help},
    {"level", 0, "LEVEL",
     "trace level of every run: step (digests only), tensor\n(each tensor's digest and stats), "
     "or op (also every op\noutput, in execution order, at every step: the report\nthen names "
     "the first op that diverged; a program gets\nREPRO_TRACE_LEVEL=op, and the Python client "
     "hooks its\nmodules)",
     REPRO_CLI_RUN | REPRO_CLI_CHECK, 0, NULL, NULL, NULL, NULL, set_level, NULL},
    {"name", 0, "NAME", "-- PROGRAM only: the name of its runs and goldens",
     PROGRAM_CMDS | REPRO_CLI_LOG, 0, NULL, NULL, NULL, NULL, set_name, name_help},
    {"timeout", 0, "SECONDS", "-- PROGRAM only: kill a run that takes longer (default:\nnever)",
     PROGRAM_CMDS, 0, NULL, NULL, NULL, NULL, set_timeout, NULL},
    {NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
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
    if (strlen(flag) > 16) /* at least two spaces before the help */
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

/* Whether spec's own table has an option called name (it then shadows a
 * common row of that name). */
static int own_has(const repro_cli_spec *s, const char *name)
{
    for (const repro_cli_opt *o = s->own; o && o->name; o++)
        if (!strcmp(o->name, name))
            return 1;
    return 0;
}

/* Whether common row r is part of command s's table. */
static int takes(const repro_cli_spec *s, const repro_common_opt *r)
{
    return (r->commands & s->bit) && !own_has(s, r->name);
}

/* The help of common row r as command bit reads it. */
static const char *row_help(const repro_common_opt *r, unsigned bit)
{
    for (const struct repro_common_help *h = r->help_for; h && h->commands; h++)
        if (h->commands & bit)
            return h->help;
    if (r->list_commands & bit)
        return r->list_help;
    return r->help;
}

void repro_cli_help(FILE *out, const repro_cli_spec *s)
{
    fputs(s->synopsis, out);
    fputs("\noptions:\n", out);
    for (const repro_cli_opt *o = s->own; o && o->name; o++)
        help_line(out, o->short_name, o->name, o->arg, o->help);
    if (s->bit & REPRO_CLI_WORKLOAD)
        fprintf(out, "\noptions common to the commands that run the workload (run, check, bless,\n"
                     "compare, bisect, submit):\n");
    for (const repro_common_opt *r = repro_common_opts; r->name; r++) {
        if (!takes(s, r))
            continue;
        int list = (r->list_commands & s->bit) != 0;
        help_line(out, r->short_name, r->name, list ? r->list_arg : r->arg, row_help(r, s->bit));
    }
    help_line(out, 'h', "help", NULL, "this text");
    if (s->epilogue)
        fputs(s->epilogue, out);
}

/* ---- parsing ---------------------------------------------------------------- */

int repro_cli_split_program(int *argc, char **argv, char ***program)
{
    *program = NULL;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--"))
            continue;
        if (i + 1 >= *argc)
            return repro_error_set(REPRO_EINVAL, "%s: nothing after '--' (expected a program "
                                                 "and its arguments)", argv[0]);
        *program = &argv[i + 1];
        argv[i] = NULL; /* getopt stops here; argv[argc] stays NULL for the program */
        *argc = i;
        return 0;
    }
    return 0;
}

int repro_cli_unknown_option(const char *cmd, const char *arg, const struct option *opts)
{
    const char *names[128];
    char flags[128][40];
    size_t n = 0;
    for (; opts && opts[n].name && n < 128; n++) {
        snprintf(flags[n], sizeof flags[n], "--%s", opts[n].name);
        names[n] = flags[n];
    }
    char flag[64], hint[96];
    snprintf(flag, sizeof flag, "%.*s", (int)strcspn(arg, "="), arg);
    repro_suggest_phrase(hint, sizeof hint, flag, names, n);
    return repro_error_set(REPRO_EINVAL, "%s: unknown option '%s'%s (see `repro help %s`)", cmd,
                           arg, hint, cmd);
}

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
        if (!takes(s, r))
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
        if (ch == -1) {
            p->args = argv + optind;
            p->nargs = argc - optind;
            return 0;
        }
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

int repro_cli_parse(repro_cli_parser *p, const repro_cli_spec *s, int argc, char **argv,
                    repro_common *c, int (*own)(void *ctx, int id, const char *value), void *ctx)
{
    repro_cli_parser_init(p, s);
    const char *v;
    int id;
    while ((id = repro_cli_next(p, argc, argv, c, &v)) != 0) {
        if (id == REPRO_CLI_HELP) {
            repro_cli_help(stdout, s);
            return 1;
        }
        if (id < 0 || (own && own(ctx, id, v)))
            return -1;
    }
    return 0;
}

int repro_cli_given(const repro_cli_spec *s, int argc, char **argv, int id)
{
    repro_cli_parser p;
    repro_cli_parser_init(&p, s);
    int found = 0, ch;
    while ((ch = getopt_long(argc, argv, p.shorts, p.lo, NULL)) != -1) {
        int i = ch >= 256 ? ch - 256 : ch == '?' || ch == ':' ? -1 : short_index(&p, ch);
        if (i >= 0 && i < p.n && p.own[i] && p.own[i]->id == id)
            found = 1;
    }
    repro_cli_parser_init(&p, s); /* getopt back at the start for the real parse */
    return found;
}

int repro_cli_operands(const repro_cli_parser *p, int lo, int hi, const char *what)
{
    if (p->nargs >= lo && (hi < 0 || p->nargs <= hi))
        return 0;
    return repro_error_set(REPRO_EINVAL, "%s: expected %s, got %d (see `repro help %s`)",
                           p->spec->name, what, p->nargs, p->spec->name);
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
