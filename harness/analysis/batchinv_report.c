/* Reports of the batch-invariance check (batchinv.h): text, JSON and JUnit.
 * Every mismatch names its scope ("batch composition"), the sample, the two
 * compositions with the sample's batch and row in each, and the first op
 * whose row for it differs, with the variant behind that op. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/batchinv.h"
#include "kernels/variants.h"
#include "util/error.h"
#include "util/junit.h"

static const char *batch_word(int b)
{
    return b == 1 ? "batch-invariant" : b == 0 ? "NOT batch-invariant"
                                    : b == REPRO_BATCH_NA ? "no per-sample rows" : "not registered";
}

static void print_place(FILE *out, const repro_batchinv_place *p)
{
    fprintf(out, "%s (batch %d, row %d of %d)", p->label, p->batch, p->pos, p->bsize);
}

static void print_mismatch(FILE *out, const repro_batchinv_mismatch *m, int train)
{
    if (train)
        fprintf(out, "  sample %ld of the batch (id %ld): %s differ between ", m->sample,
                m->sample_id, m->what);
    else
        fprintf(out, "  sample %ld: %s differ between ", m->sample, m->what);
    print_place(out, &m->a);
    fputs(" and ", out);
    print_place(out, &m->b);
    fputc('\n', out);
    if (!m->first_op[0])
        return;
    fprintf(out, "    first differing op: %s", m->first_op);
    if (m->op[0])
        fprintf(out, " (%s, variant %s: %s)", m->op, m->variant[0] ? m->variant : "?",
                batch_word(m->batch_invariant));
    if (m->nelem > 0)
        fprintf(out, ", %ld of %ld elements of its row, max |a-b| %.3g", m->ndiffer_elem,
                m->nelem, m->max_abs);
    fputc('\n', out);
}

static void print_train(FILE *out, const repro_batchinv_result *r)
{
    if (!r->train_checked)
        return;
    fprintf(out, "  training: step %ld's batch of %d whole vs %d micro-batches of %d, %s: ",
            r->train_step, r->train_batch, r->train_nmicro, r->train_micro_size,
            r->train_mode ? "train-mode forward"
                          : "eval-mode forward (the model has dropout, whose mask follows the "
                            "position in the batch)");
    if (r->train_ndiffer == 0)
        fprintf(out, "logits, softmax rows and losses identical\n");
    else
        fprintf(out, "%d of %d samples differ\n", r->train_ndiffer, r->train_batch);
}

void repro_batchinv_print(FILE *out, const repro_batchinv_result *r)
{
    fprintf(out, "batch invariance of %s (scope: %s): %d held-out samples, eval-mode forward, "
                 "weights after %ld training steps\n",
            r->experiment, REPRO_BATCHINV_SCOPE, r->nsamples, r->train_steps);
    for (int c = 0; c < r->ncomps; c++) {
        fprintf(out, "  %-22s ", r->comps[c].label);
        if (c == 0)
            fprintf(out, "reference\n");
        else if (r->comps[c].ndiffer == 0)
            fprintf(out, "identical\n");
        else
            fprintf(out, "%d of %d samples differ\n", r->comps[c].ndiffer, r->nsamples);
    }
    print_train(out, r);
    for (int i = 0; i < r->nshown; i++)
        print_mismatch(out, &r->shown[i], 0);
    if (r->ndiffer > r->nshown)
        fprintf(out, "  (%d more held-out samples differ)\n", r->ndiffer - r->nshown);
    for (int i = 0; i < r->train_nshown; i++)
        print_mismatch(out, &r->train_shown[i], 1);
    if (r->train_ndiffer > r->train_nshown)
        fprintf(out, "  (%d more training samples differ)\n", r->train_ndiffer - r->train_nshown);
    if (r->batch_invariant)
        fprintf(out, "batch-invariant: every sample's logits identical bit for bit in %d "
                     "compositions%s\n",
                r->ncomps, r->train_checked ? ", and the training rows whole and in micro-batches"
                                            : "");
    else
        fprintf(out, "NOT batch-invariant (scope: %s): %d of %d held-out samples and %d of %d "
                     "training samples differ with the batch they are in\n",
                REPRO_BATCHINV_SCOPE, r->ndiffer, r->nsamples, r->train_ndiffer, r->train_batch);
}

static json_t *place_json(const repro_batchinv_place *p)
{
    return json_pack("{s:s, s:i, s:i, s:i}", "composition", p->label, "batch", p->batch, "row",
                     p->pos, "batch_size", p->bsize);
}

static json_t *mismatch_json(const repro_batchinv_mismatch *m)
{
    json_t *o = json_pack("{s:I, s:I, s:s, s:o, s:o}", "sample", (json_int_t)m->sample,
                          "sample_id", (json_int_t)m->sample_id, "differs", m->what, "a",
                          place_json(&m->a), "b", place_json(&m->b));
    if (!o)
        return NULL;
    json_object_set_new(o, "first_op", m->first_op[0] ? json_string(m->first_op) : json_null());
    json_object_set_new(o, "op", m->op[0] ? json_string(m->op) : json_null());
    json_object_set_new(o, "variant", m->variant[0] ? json_string(m->variant) : json_null());
    json_object_set_new(o, "variant_batch_invariant",
                        m->batch_invariant == 0 || m->batch_invariant == 1
                            ? json_boolean(m->batch_invariant)
                            : json_null());
    json_object_set_new(o, "elements", json_integer(m->nelem));
    json_object_set_new(o, "elements_differ", json_integer(m->ndiffer_elem));
    json_object_set_new(o, "max_abs_diff", json_real(m->max_abs));
    return o;
}

void *repro_batchinv_json(const repro_batchinv_result *r)
{
    json_t *comps = json_array(), *shown = json_array(), *tshown = json_array();
    for (int c = 0; c < r->ncomps; c++)
        json_array_append_new(comps, json_pack("{s:s, s:i, s:b, s:b, s:i}", "label",
                                               r->comps[c].label, "batch_size", r->comps[c].size,
                                               "shuffled", r->comps[c].shuffled, "reference",
                                               c == 0, "samples_differ", r->comps[c].ndiffer));
    for (int i = 0; i < r->nshown; i++)
        json_array_append_new(shown, mismatch_json(&r->shown[i]));
    for (int i = 0; i < r->train_nshown; i++)
        json_array_append_new(tshown, mismatch_json(&r->train_shown[i]));
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->shuffle_seed);
    json_t *train = r->train_checked
                        ? json_pack("{s:I, s:i, s:i, s:i, s:s, s:i, s:o}", "step",
                                    (json_int_t)r->train_step, "batch_size", r->train_batch,
                                    "micro_batches", r->train_nmicro, "micro_batch_size",
                                    r->train_micro_size, "forward",
                                    r->train_mode ? "train" : "eval (dropout excluded)",
                                    "samples_differ", r->train_ndiffer, "mismatches", tshown)
                        : (json_decref(tshown), json_null());
    return json_pack("{s:s, s:s, s:b, s:i, s:I, s:s, s:o, s:i, s:o, s:o}", "experiment",
                     r->experiment, "scope", REPRO_BATCHINV_SCOPE, "batch_invariant",
                     r->batch_invariant, "samples", r->nsamples, "train_steps",
                     (json_int_t)r->train_steps, "shuffle_seed", seed, "compositions", comps,
                     "samples_differ", r->ndiffer, "mismatches", shown, "training", train);
}

/* The report of the mismatches in one case's details. */
static char *details_text(const repro_batchinv_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    repro_batchinv_print(f, r);
    fclose(f);
    return buf;
}

int repro_batchinv_junit(const char *path, const repro_batchinv_result *r)
{
    repro_junit_case cases[REPRO_BATCHINV_MAX_COMPS + 1];
    char names[REPRO_BATCHINV_MAX_COMPS + 1][320], msgs[REPRO_BATCHINV_MAX_COMPS + 1][160];
    char *details = details_text(r);
    int n = 0;
    memset(cases, 0, sizeof cases);
    for (int c = 1; c < r->ncomps; c++, n++) {
        snprintf(names[n], sizeof names[n], "%s: %s vs %s (%s)", r->experiment,
                 r->comps[0].label, r->comps[c].label, REPRO_BATCHINV_SCOPE);
        snprintf(msgs[n], sizeof msgs[n], "%d of %d samples' logits differ", r->comps[c].ndiffer,
                 r->nsamples);
        cases[n] = (repro_junit_case){names[n], r->comps[c].ndiffer > 0, 0, msgs[n],
                                      r->comps[c].ndiffer > 0 ? details : NULL, 0};
    }
    if (r->train_checked) {
        snprintf(names[n], sizeof names[n], "%s: training batch of %d vs %d micro-batches (%s)",
                 r->experiment, r->train_batch, r->train_nmicro, REPRO_BATCHINV_SCOPE);
        snprintf(msgs[n], sizeof msgs[n], "%d of %d samples' rows differ", r->train_ndiffer,
                 r->train_batch);
        cases[n] = (repro_junit_case){names[n], r->train_ndiffer > 0, 0, msgs[n],
                                      r->train_ndiffer > 0 ? details : NULL, 0};
        n++;
    }
    int rc = repro_junit_write(path, "repro check --batch-invariance", cases, n);
    free(details);
    return rc;
}
