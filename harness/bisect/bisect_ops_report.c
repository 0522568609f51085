/* The op level's reports (see bisect_ops.h): the first divergent op, the
 * culprit variants and the batch-invariance verdict, in words on a stream
 * and as JSON, for `repro bisect EXP` and anything else that runs the
 * searches. */
#include "bisect/bisect_ops.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* "first divergence: step N, forward, layer L, NAME (op O, variant V,
 * deterministic)": the line every op-level report starts with. */
void repro_bisect_ops_print_first(FILE *out, const repro_bisect_ops_result *r)
{
    fprintf(out, "first divergence: step %ld, %s, layer %s, %s (op %s, variant %s%s)\n",
            r->first_step,
            !strcmp(r->phase, "fwd")   ? "forward"
            : !strcmp(r->phase, "bwd") ? "backward"
                                       : "-",
            r->layer[0] ? r->layer : "-", r->name, r->op[0] ? r->op : "?",
            r->variant[0] ? r->variant : "?",
            r->has_info ? (r->deterministic ? ", deterministic" : ", NONdeterministic") : "");
}

/* The first divergent op, in words and in doc. */
void repro_bisect_ops_report_first(FILE *out, const repro_bisect_ops_result *r, json_t *doc)
{
    json_t *fo = json_pack("{s:I, s:s, s:s, s:s}", "step", (json_int_t)r->first_step, "name",
                           r->name, "phase", r->phase[0] ? r->phase : "?", "layer", r->layer);
    if (r->op[0])
        json_object_set_new(fo, "op", json_string(r->op));
    if (r->variant[0])
        json_object_set_new(fo, "variant", json_string(r->variant));
    if (r->has_info)
        json_object_set_new(fo, "deterministic", json_boolean(r->deterministic));
    json_object_set_new(fo, "inputs_identical", json_boolean(r->inputs_identical));
    json_object_set_new(doc, "diverged", json_true());
    json_object_set_new(doc, "first_divergent_op", fo);
    if (!out)
        return;
    repro_bisect_ops_print_first(out, r);
    if (r->no_op_differs)
        fprintf(out, "  (no op output differs there: the first differing tensor is shown)\n");
    if (r->inputs_identical)
        fprintf(out,
                "  its inputs were identical in both runs (step %ld's state, the batch and every "
                "op output before it agree bit for bit): %s produced different outputs from "
                "identical inputs, so it is nondeterministic%s\n",
                r->first_step - 1, r->op[0] ? r->op : r->name,
                r->has_info && r->deterministic
                    ? " — although its variant is registered as deterministic: the kernel or "
                      "its registration is wrong"
                    : "");
}

/* The culprits, in words and in doc. */
void repro_bisect_ops_report_culprits(FILE *out, const repro_bisect_ops_result *r, int repeat,
                                      json_t *cul)
{
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        json_array_append_new(cul, json_pack("{s:s, s:s}", "op",
                                             repro_config_key_name(r->culprits[i]), "variant", v));
    }
    if (!out)
        return;
    if (r->nculprits == 0)
        fprintf(out,
                "culprits: none of the %d nondeterministic variants in use makes the runs differ "
                "on its own within %ld steps x %d runs\n",
                r->ncand, r->test_steps, repeat);
    else
        fprintf(out, "culprit%s (minimal: with %s deterministic the runs reproduce):\n",
                r->nculprits == 1 ? "" : "s", r->nculprits == 1 ? "it" : "them");
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        fprintf(out, "  variant.%s = %s\n", repro_config_key_name(r->culprits[i]), v);
    }
}

/* Not batch-invariant: the first divergent op and the culprits, in words
 * and in doc. */
void repro_bisect_batchinv_report(FILE *out, const repro_bisect_batchinv_result *r, json_t *doc)
{
    const repro_batchinv_result *c = &r->check;
    const repro_batchinv_mismatch *m = c->nshown         ? &c->shown[0]
                                       : c->train_nshown ? &c->train_shown[0]
                                                         : NULL;
    json_t *cul = json_array();
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        json_array_append_new(cul, json_pack("{s:s, s:s}", "op",
                                             repro_config_key_name(r->culprits[i]), "variant", v));
    }
    json_object_set_new(doc, "first_divergent_op",
                        m && m->first_op[0]
                            ? json_pack("{s:s, s:s, s:s, s:I}", "name", m->first_op, "op", m->op,
                                        "variant", m->variant, "sample", (json_int_t)m->sample)
                            : json_null());
    json_object_set_new(doc, "candidates", json_integer(r->ncand));
    json_object_set_new(doc, "culprits", cul);
    json_object_set_new(doc, "jointly", json_boolean(r->jointly));
    if (!out)
        return;
    fprintf(out,
            "NOT batch-invariant (scope: %s): %d of %d held-out samples and %d of %d training "
            "samples differ with their batch\n",
            REPRO_BATCHINV_SCOPE, c->ndiffer, c->nsamples, c->train_ndiffer, c->train_batch);
    if (m)
        fprintf(out, "first divergent op: %s (op %s, variant %s), sample %ld: %s vs %s\n",
                m->first_op[0] ? m->first_op : "?", m->op[0] ? m->op : "?",
                m->variant[0] ? m->variant : "?", m->sample, m->a.label, m->b.label);
    if (r->ncand == 0)
        fprintf(out,
                "no variant in use is registered not batch-invariant: a kernel registered "
                "batch-invariant is not (%s): the kernel or its registration is wrong\n",
                m && m->op[0] ? m->op : "see the first divergent op");
    else if (r->nculprits == 0)
        fprintf(out,
                "culprits: none: with the %d non-batch-invariant variant%s at %s default the check "
                "still fails\n",
                r->ncand, r->ncand == 1 ? "" : "s", r->ncand == 1 ? "its" : "their");
    else
        fprintf(out, "culprit%s (with %s at the default the check passes%s):\n",
                r->nculprits == 1 ? "" : "s", r->nculprits == 1 ? "it" : "them",
                r->jointly ? "; no one alone suffices" : "");
    for (int i = 0; i < r->nculprits; i++) {
        char v[64];
        repro_config_variant_name(&r->cfg, r->culprits[i], v, sizeof v);
        fprintf(out, "  variant.%s = %s (not batch-invariant)\n",
                repro_config_key_name(r->culprits[i]), v);
    }
}
