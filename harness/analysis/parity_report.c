/* The report of `repro parity` (parity.h): text and JSON. */
#include "analysis/parity.h"

#include <jansson.h>
#include <string.h>

static unsigned bits_of(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static const char *bi_word(int b)
{
    return b == -2 ? "" : b == 1 ? ", batch-invariant" : b == 0 ? ", NOT batch-invariant" : "";
}

static void print_first(FILE *out, const repro_parity_result *r)
{
    const repro_parity_diff *d = &r->first;
    fprintf(out, "  first difference: probe %d (line %d: %s), position %ld, element %ld\n",
            d->probe, d->line, d->text, d->position, d->element);
    if (d->train_batch >= 0)
        fprintf(out, "    trainer   %.9g (0x%08x)  in batches of %d: batch %d, row %d of %d\n",
                d->train_value, bits_of(d->train_value), r->train_batch, d->train_batch,
                d->train_row, d->train_bsize);
    else
        fprintf(out, "    trainer   %.9g (0x%08x)  in the program's own batches\n",
                d->train_value, bits_of(d->train_value));
    fprintf(out, "    inference %.9g (0x%08x)  in batches of %d: batch %d, row %d of %d\n",
            d->infer_value, bits_of(d->infer_value), r->comps[d->comp].size, d->batch, d->row,
            d->bsize);
    fprintf(out, "    %ld of %ld values of the probe's output differ, max |a-b| %.3g\n",
            d->ndiffer_values, d->npositions * d->nelements, d->max_abs);
    if (d->first_op[0])
        fprintf(out, "    first differing op: %s (%s): trainer %s, inference %s%s\n", d->first_op,
                d->op[0] ? d->op : "no registry op", d->train_variant[0] ? d->train_variant : "-",
                d->infer_variant[0] ? d->infer_variant : "-", bi_word(d->infer_batch_invariant));
    if (!strcmp(d->changed, "inference"))
        fprintf(out, "    changed: the inference side (its kernel for %s differs from the "
                     "trainer's)\n",
                d->first_op);
    else if (!strcmp(d->changed, "batch composition"))
        fprintf(out, "    changed: neither side's kernels; the same kernels give other bits in "
                     "another batch\n");
    else
        fprintf(out, "    changed: the inference side %s\n",
                d->infer_self_consistent
                    ? "(the same output in every composition: its engine computes other math)"
                    : "(its output depends on the batch it is served in)");
}

void repro_parity_print(FILE *out, const repro_parity_result *r)
{
    fprintf(out, "parity of %s (scope: %s): the trainer's forward vs the inference side on %s",
            r->experiment, REPRO_PARITY_SCOPE, r->checkpoint);
    if (r->step > 0)
        fprintf(out, " (step %ld)", r->step);
    fprintf(out, ", %d probes\n", r->nprobes);
    if (r->train_batch > 0)
        fprintf(out, "  %-12s batches of %d (reference)\n", "trainer", r->train_batch);
    else
        fprintf(out, "  %-12s its own batches (reference)\n", "trainer");
    for (int c = 0; c < r->ncomps; c++) {
        if (r->comps[c].ndiffer)
            fprintf(out, "  %-12s %d of %d probes differ\n", r->comps[c].label,
                    r->comps[c].ndiffer, r->nprobes);
        else
            fprintf(out, "  %-12s identical\n", r->comps[c].label);
    }
    if (r->has_first)
        print_first(out, r);
    if (r->parity)
        fprintf(out, "parity: every probe's output identical bit for bit in %d inference "
                     "batch compositions\n",
                r->ncomps);
    else
        fprintf(out,
                "NO PARITY (scope: %s): %d of %d probes differ between the trainer and the "
                "inference side; the inference side is %sbatch-invariant\n",
                REPRO_PARITY_SCOPE, r->ndiffer, r->nprobes,
                r->infer_batch_invariant ? "" : "NOT ");
}

static json_t *first_json(const repro_parity_result *r)
{
    const repro_parity_diff *d = &r->first;
    return json_pack("{s:i, s:i, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:f, s:f, s:I, s:f, s:s, "
                     "s:s, s:s, s:s, s:s, s:b}",
                     "probe", d->probe, "line", d->line, "text", d->text, "composition",
                     r->comps[d->comp].label, "batch", d->batch, "row", d->row, "batch_size",
                     d->bsize, "position", (json_int_t)d->position, "element",
                     (json_int_t)d->element, "trainer", (double)d->train_value, "inference",
                     (double)d->infer_value, "values_differ", (json_int_t)d->ndiffer_values,
                     "max_abs", d->max_abs, "first_op", d->first_op, "op", d->op,
                     "trainer_variant", d->train_variant, "inference_variant", d->infer_variant,
                     "changed", d->changed, "inference_self_consistent",
                     d->infer_self_consistent);
}

void *repro_parity_json(const repro_parity_result *r)
{
    json_t *comps = json_array();
    for (int c = 0; comps && c < r->ncomps; c++)
        if (json_array_append_new(comps, json_pack("{s:s, s:i, s:i}", "label", r->comps[c].label,
                                                   "batch_size", r->comps[c].size, "differ",
                                                   r->comps[c].ndiffer))) {
            json_decref(comps);
            comps = NULL;
        }
    json_t *first = r->has_first ? first_json(r) : json_null();
    if (!comps || !first) {
        json_decref(comps);
        json_decref(first);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:o, s:i, s:b, s:o, s:b}", "experiment",
                     r->experiment, "scope", REPRO_PARITY_SCOPE, "checkpoint", r->checkpoint,
                     "step", (json_int_t)r->step, "probes", r->nprobes, "trainer_batch",
                     r->train_batch, "compositions", comps, "differ", r->ndiffer,
                     "inference_batch_invariant", r->infer_batch_invariant, "first", first,
                     "parity", r->parity);
}
