/* Reports of a program's batch-invariance check (batchinv_rows.h): text,
 * JSON and JUnit. A differing row names its sample id, the two runs' batch
 * sizes, and what the traces know of each side (shape and statistics: the
 * rows' bytes stay in the program). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/batchinv_rows.h"
#include "util/junit.h"

void repro_batchinv_rows_print(FILE *out, const repro_batchinv_rows_result *r)
{
    fprintf(out, "batch invariance of %s (scope: %s): %ld rows per run, one run per batch size\n",
            r->experiment, REPRO_BATCHINV_SCOPE, r->nrows);
    for (int i = 0; i < r->nruns; i++) {
        fprintf(out, "  %-12s ", r->labels[i]);
        if (i == 0)
            fprintf(out, "reference\n");
        else if (r->ndiffer_run[i] == 0)
            fprintf(out, "identical\n");
        else
            fprintf(out, "%d of %ld rows differ\n", r->ndiffer_run[i], r->nrows);
    }
    for (int i = 0; i < r->nshown; i++) {
        const repro_batchinv_row_diff *d = &r->shown[i];
        fprintf(out, "  sample %s (step %ld): %s and %s differ: sum %.9g vs %.9g, max |x| %.9g "
                     "vs %.9g\n",
                d->id, d->step, r->labels[d->a], r->labels[d->b], d->ta.sum, d->tb.sum,
                d->ta.max_abs, d->tb.max_abs);
    }
    if (r->ndiffer > r->nshown)
        fprintf(out, "  (%ld more samples differ)\n", r->ndiffer - r->nshown);
    if (r->batch_invariant)
        fprintf(out, "batch-invariant: every sample's row identical bit for bit in %d batch "
                     "sizes\n",
                r->nruns);
    else
        fprintf(out, "NOT batch-invariant (scope: %s): %ld of %ld samples' rows depend on the "
                     "batch size\n",
                REPRO_BATCHINV_SCOPE, r->ndiffer, r->nrows);
}

static json_t *side_json(const repro_trace_tensor *t)
{
    char hex[65];
    repro_digest_hex(&t->digest, hex);
    return json_pack("{s:s, s:f, s:f, s:f}", "digest", hex, "l2", t->l2, "sum", t->sum,
                     "max_abs", t->max_abs);
}

void *repro_batchinv_rows_json(const repro_batchinv_rows_result *r)
{
    json_t *runs = json_array(), *shown = json_array();
    for (int i = 0; i < r->nruns; i++)
        json_array_append_new(runs, json_pack("{s:s, s:i, s:b, s:i}", "label", r->labels[i],
                                              "batch_size", r->sizes[i], "reference", i == 0,
                                              "rows_differ", r->ndiffer_run[i]));
    for (int i = 0; i < r->nshown; i++) {
        const repro_batchinv_row_diff *d = &r->shown[i];
        json_array_append_new(shown, json_pack("{s:s, s:I, s:s, s:s, s:o, s:o}", "sample", d->id,
                                               "step", (json_int_t)d->step, "a",
                                               r->labels[d->a], "b", r->labels[d->b], "row_a",
                                               side_json(&d->ta), "row_b", side_json(&d->tb)));
    }
    return json_pack("{s:s, s:s, s:b, s:I, s:o, s:I, s:o}", "experiment", r->experiment,
                     "scope", REPRO_BATCHINV_SCOPE, "batch_invariant", r->batch_invariant,
                     "rows", (json_int_t)r->nrows, "runs", runs, "samples_differ",
                     (json_int_t)r->ndiffer, "mismatches", shown);
}

int repro_batchinv_rows_junit(const char *path, const repro_batchinv_rows_result *r)
{
    repro_junit_case cases[REPRO_BATCHINV_MAX_SIZES];
    char names[REPRO_BATCHINV_MAX_SIZES][320], msgs[REPRO_BATCHINV_MAX_SIZES][120];
    char *details = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&details, &len);
    if (f) {
        repro_batchinv_rows_print(f, r);
        fclose(f);
    }
    int n = 0;
    for (int i = 1; i < r->nruns; i++, n++) {
        snprintf(names[n], sizeof names[n], "%s: %s vs %s (%s)", r->experiment, r->labels[0],
                 r->labels[i], REPRO_BATCHINV_SCOPE);
        snprintf(msgs[n], sizeof msgs[n], "%d of %ld rows differ", r->ndiffer_run[i], r->nrows);
        cases[n] = (repro_junit_case){names[n], r->ndiffer_run[i] > 0, 0, msgs[n],
                                      r->ndiffer_run[i] > 0 ? details : NULL, 0};
    }
    int rc = repro_junit_write(path, "repro check --batch-invariance", cases, n);
    free(details);
    return rc;
}
