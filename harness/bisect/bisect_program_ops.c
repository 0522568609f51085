/* The op level of a program (see bisect_ops.h): `repro bisect -- PROGRAM
 * ARGS...` runs the program K times at trace level op (REPRO_TRACE_LEVEL=op:
 * it records its op outputs with repro_recorder_op); the first pair of runs
 * that differ is searched for the first step, and in it the first op, whose
 * output differs. Every op recorded before it in that step was identical,
 * and so was the whole previous step: when no input tensor of the step
 * differs either, the op received identical inputs and produced different
 * outputs — the definition of a nondeterministic kernel, and the report
 * says exactly that. At the first step "the previous step" is the starting
 * state: unless the program recorded it (input.state.*), the report says it
 * cannot tell, rather than blame the op for an unseeded initialization. */
#include "bisect/bisect_ops.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "analysis/multirun.h"

/* Does a tensor that feeds the step (batch.*, input*) differ? */
static const char *input_that_differs(const repro_divergence *d)
{
    for (int i = 0; i < d->ntensors; i++)
        if (!strncmp(d->tensors[i].name, "batch.", 6) || !strncmp(d->tensors[i].name, "input", 5))
            return d->tensors[i].name;
    return NULL;
}

/* At the run's first step, "identical inputs" needs the state the step
 * started from: did run 1 record it (input.state.*, repro_recorder_state
 * or the Python client's module hooks)? A later step's start is the
 * previous step's state, which its chain digest already covers. */
static int start_state_known(const repro_trace *t, long step)
{
    if (step != t->first_step)
        return 1;
    const repro_trace_step *s = repro_trace_find_step(t, step);
    for (int i = 0; s && i < s->ntensors; i++)
        if (!strncmp(s->tensors[i].name, "input.state.", 12))
            return 1;
    return 0;
}

/* Runs 1 and i+1 differ: where, which op, and whether its inputs did;
 * in words on out, or into doc for --json. */
static void report(FILE *out, const repro_multirun *m, int i, json_t *doc)
{
    const repro_divergence *d = &m->divs[i];
    json_object_set_new(doc, "diverged", json_true());
    json_object_set_new(doc, "runs_compared", json_pack("[i, i]", 1, i + 1));
    json_object_set_new(doc, "first_step", json_integer(d->first_step));
    if (!doc)
        fprintf(out, "runs 1 and %d of %d differ: first at step %ld\n", i + 1, m->nplan,
                d->first_step);
    if (d->nops == 0) {
        const char *first = d->ntensors ? d->tensors[0].name : "?";
        json_object_set_new(doc, "first_tensor", json_string(first));
        if (!json_is_object(doc))
            fprintf(out, "no op output differs there (did the program record ops at "
                         "REPRO_TRACE_LEVEL=op?); the first differing tensor is %s\n",
                    first);
        return;
    }
    const char *op = d->ops[0].name, *input = input_that_differs(d);
    int nops, pos = repro_trace_op_position(&m->traces[0], d->first_step, op, &nops);
    int state = start_state_known(&m->traces[0], d->first_step);
    json_t *fo = json_pack("{s:s, s:i, s:i, s:b}", "name", op, "position", pos, "ops", nops,
                           "starting_state_recorded", state);
    /* unknown (null) when nothing differs but the start was not recorded */
    json_object_set_new(fo, "inputs_identical",
                        input ? json_false() : state ? json_true() : json_null());
    json_object_set_new(doc, "first_divergent_op", fo);
    if (input)
        json_object_set_new(doc, "input_that_differs", json_string(input));
    if (json_is_object(doc))
        return;
    fprintf(out, "first divergent op: %s (op %d of %d recorded at step %ld)\n", op, pos, nops,
            d->first_step);
    if (!input && !state) {
        fprintf(out, "the program's starting state was not recorded: cannot tell "
                     "nondeterministic from changed input (no batch tensor and none of the "
                     "%d op%s before %s differ, but the state step %ld started from, its initial "
                     "weights, is not in the trace: record it with repro_recorder_state, or in "
                     "Python with repro.torch.record_modules)\n",
                pos > 0 ? pos - 1 : 0, pos == 2 ? "" : "s", op, d->first_step);
    } else if (input) {
        fprintf(out, "its inputs differ: %s already differs at step %ld, so the difference "
                     "comes from the data (loader, augmentation, seeding), not from %s\n",
                input, d->first_step, op);
    } else {
        fprintf(out, "its inputs were identical in both runs: step %ld's state and the %d op%s "
                     "before it agree bit for bit, and no batch tensor differs.\n"
                     "%s produced different outputs from identical inputs: it is "
                     "nondeterministic (an unordered reduction, an atomic add, a race).\n",
                d->first_step - 1, pos > 0 ? pos - 1 : 0, pos == 2 ? "" : "s", op);
    }
}

int repro_bisect_program_ops_report(FILE *out, const repro_multirun *m, json_t *doc)
{
    int first = 0;
    for (int i = 1; i < m->nplan && !first; i++)
        if (!m->divs[i].identical)
            first = i;
    if (first) {
        report(out, m, first, doc);
    } else if (doc) {
        json_object_set_new(doc, "diverged", json_false());
    } else {
        fprintf(out, "all %d runs identical at level op over %ld steps: nothing to bisect\n",
                m->nplan, m->traces[0].trailer_steps);
    }
    if (doc) {
        json_object_set_new(doc, "runs", json_integer(m->nplan));
        json_object_set_new(doc, "steps", json_integer(m->traces[0].trailer_steps));
    }
    return first != 0;
}

