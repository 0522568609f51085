/* `repro bisect [options] -- PROGRAM ARGS...`: op-level bisection of a
 * program repro did not write. The program is run K times at trace level
 * op (REPRO_TRACE_LEVEL=op: it records its op outputs with
 * repro_recorder_op); the first pair of runs that differ is searched for
 * the first step, and in it the first op, whose output differs. Every op
 * recorded before it in that step was identical, and so was the whole
 * previous step: when no input tensor of the step differs either, the op
 * received identical inputs and produced different outputs — the
 * definition of a nondeterministic kernel, and the report says exactly
 * that. Exit 1 when a difference was found, 0 when all K runs agree. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/multirun.h"
#include "cli/cli.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/numparse.h"

typedef struct {
    int repeat;
    double timeout_s;
    char name[128];
    repro_run_pass pass;
} program_opts;

static int parse(int argc, char **argv, program_opts *o)
{
    static const struct option opts[] = {
        {"repeat", required_argument, 0, 'r'}, {"timeout", required_argument, 0, 'T'},
        {"name", required_argument, 0, 'n'},   {"steps", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},   {"set", required_argument, 0, 'k'},
        {"threads", required_argument, 0, 't'}, {"workers", required_argument, 0, 'w'},
        {0, 0, 0, 0},
    };
    o->repeat = 3;
    optind = 1;
    opterr = 0;
    int c, li = 0;
    long t;
    while ((c = getopt_long(argc, argv, ":", opts, &li)) != -1) {
        if (c == 'r' && repro_parse_count_int("bisect: --repeat", optarg, 2, 32, &o->repeat))
            return -1;
        if (c == 'T') {
            if (repro_parse_count("bisect: --timeout", optarg, 1, 7 * 24 * 3600, &t))
                return -1;
            o->timeout_s = (double)t;
        }
        if (c == 'n' && repro_golden_name_check(optarg))
            return -1;
        if (c == 'n')
            snprintf(o->name, sizeof o->name, "%s", optarg);
        if (c == ':' || c == '?')
            return repro_error_set(REPRO_EINVAL, "bisect: option '%s' %s with a program after "
                                                 "'--'", argv[optind - 1],
                                   c == ':' ? "needs a value" : "does not apply");
        if (strchr("sSktw", c) && repro_run_pass_add(&o->pass, "bisect", opts[li].name, optarg) < 0)
            return -1;
    }
    if (optind != argc)
        return repro_error_set(REPRO_EINVAL, "bisect: '%s' and a program after '--': give one",
                               argv[optind]);
    return 0;
}

/* Does a tensor that feeds the step (batch.*, input*) differ? */
static const char *input_that_differs(const repro_divergence *d)
{
    for (int i = 0; i < d->ntensors; i++)
        if (!strncmp(d->tensors[i].name, "batch.", 6) || !strncmp(d->tensors[i].name, "input", 5))
            return d->tensors[i].name;
    return NULL;
}

/* The position (1-based) of op `name` in run 1's list at `step`. */
static int op_position(const repro_trace *t, long step, const char *name, int *nops)
{
    const repro_trace_step *s = repro_trace_find_step(t, step);
    *nops = s ? s->nops : 0;
    for (int i = 0; s && i < s->nops; i++)
        if (!strcmp(s->ops[i].name, name))
            return i + 1;
    return 0;
}

static int report(const repro_multirun *m, int i)
{
    const repro_divergence *d = &m->divs[i];
    printf("runs 1 and %d of %d differ: first at step %ld\n", i + 1, m->nplan, d->first_step);
    if (d->nops == 0) {
        const char *first = d->ntensors ? d->tensors[0].name : "?";
        printf("no op output differs there (did the program record ops at "
               "REPRO_TRACE_LEVEL=op?); the first differing tensor is %s\n",
               first);
        return REPRO_EXIT_MISMATCH;
    }
    const char *op = d->ops[0].name, *input = input_that_differs(d);
    int nops, pos = op_position(&m->traces[0], d->first_step, op, &nops);
    printf("first divergent op: %s (op %d of %d recorded at step %ld)\n", op, pos, nops,
           d->first_step);
    if (input) {
        printf("its inputs differ: %s already differs at step %ld, so the difference comes "
               "from the data (loader, augmentation, seeding), not from %s\n",
               input, d->first_step, op);
    } else {
        printf("its inputs were identical in both runs: step %ld's state and the %d op%s "
               "before it agree bit for bit, and no batch tensor differs.\n"
               "%s produced different outputs from identical inputs: it is nondeterministic "
               "(an unordered reduction, an atomic add, a race).\n",
               d->first_step - 1, pos > 0 ? pos - 1 : 0, pos == 2 ? "" : "s", op);
    }
    return REPRO_EXIT_MISMATCH;
}

int repro_cmd_bisect_program(int argc, char **argv, char **program)
{
    program_opts o = {0};
    if (parse(argc, argv, &o))
        return repro_report_error();
    if (!o.name[0])
        repro_program_name(program, o.name, sizeof o.name);
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m)
        return REPRO_EXIT_ENV;
    repro_multirun_init(m, o.name, o.name, "bisect");
    m->cmd = program;
    m->timeout_s = o.timeout_s;
    m->no_element_detail = 1;
    repro_multirun_add_pass(m, &o.pass);
    m->pass[m->npass++] = "--set";
    m->pass[m->npass++] = "trace.level=op";
    int rc = repro_multirun_add_runs(m, o.repeat);
    if (rc || repro_multirun_execute(m)) {
        rc = repro_report_error();
    } else {
        int first = 0;
        for (int i = 1; i < m->nplan && !first; i++)
            if (!m->divs[i].identical)
                first = i;
        if (first)
            rc = report(m, first);
        else
            printf("all %d runs identical at level op over %ld steps: nothing to bisect\n",
                   m->nplan, m->traces[0].trailer_steps);
        rc = repro_finish_stdout(rc);
    }
    repro_multirun_release(m);
    free(m);
    return rc;
}
