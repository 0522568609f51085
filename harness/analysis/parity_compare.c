/* The comparison of `repro parity` (parity.h): every probe's output in every
 * inference composition against the trainer's, bit for bit; the first
 * differing probe, position and element. Shared by the built-in and the
 * program engines, which differ only in how the outputs are produced. */
#include "analysis/parity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

int repro_parity_outputs_alloc(repro_parity_outputs *o, int nprobes)
{
    o->out = calloc((size_t)nprobes, sizeof *o->out);
    o->npos = calloc((size_t)nprobes, sizeof *o->npos);
    o->nelem = 0;
    if (!o->out || !o->npos) {
        free(o->out);
        free(o->npos);
        o->out = NULL;
        o->npos = NULL;
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    return 0;
}

void repro_parity_outputs_free(repro_parity_outputs *o, int nprobes)
{
    for (int i = 0; o->out && i < nprobes; i++)
        free(o->out[i]);
    free(o->out);
    free(o->npos);
    o->out = NULL;
    o->npos = NULL;
}

void repro_parity_place(int n, int size, int i, int *batch, int *row, int *bsize)
{
    if (size <= 0) { /* a program's own composition: not known */
        *batch = *row = *bsize = -1;
        return;
    }
    if (size > n)
        size = n;
    *batch = i / size;
    *row = i % size;
    *bsize = n - *batch * size < size ? n - *batch * size : size;
}

/* The first differing value of probe i between the trainer and
 * composition c, with the count and max |a-b| over the probe's output. */
static void first_value(const repro_parity_outputs *t, const repro_parity_outputs *in, int i,
                        repro_parity_diff *d)
{
    long n = t->npos[i] * t->nelem;
    const float *a = t->out[i], *b = in->out[i];
    d->ndiffer_values = 0;
    d->max_abs = 0;
    long first = -1;
    for (long k = 0; k < n; k++) {
        if (!memcmp(&a[k], &b[k], sizeof(float)))
            continue;
        if (first < 0)
            first = k;
        d->ndiffer_values++;
        double diff = fabs((double)a[k] - (double)b[k]);
        if (diff > d->max_abs || isnan(diff))
            d->max_abs = diff;
    }
    d->npositions = t->npos[i];
    d->nelements = t->nelem;
    d->position = first / t->nelem;
    d->element = first % t->nelem;
    d->train_value = a[first];
    d->infer_value = b[first];
}

static int same_shape(const repro_parity_outputs *t, const repro_parity_outputs *in, int i)
{
    return t->nelem == in->nelem && t->npos[i] == in->npos[i];
}

static int probe_equal(const repro_parity_outputs *t, const repro_parity_outputs *in, int i)
{
    return !memcmp(t->out[i], in->out[i], (size_t)(t->npos[i] * t->nelem) * sizeof(float));
}

static void note_first(const repro_parity_probes *probes, const repro_parity_outputs *train,
                       const repro_parity_outputs *infer, int ncomps, int i, int c,
                       repro_parity_result *r)
{
    repro_parity_diff *d = &r->first;
    r->has_first = 1;
    d->probe = i;
    d->line = probes->p[i].line;
    snprintf(d->text, sizeof d->text, "%.*s", (int)sizeof d->text - 1, probes->p[i].text);
    d->comp = c;
    repro_parity_place(probes->n, r->comps[c].size, i, &d->batch, &d->row, &d->bsize);
    repro_parity_place(probes->n, r->train_batch, i, &d->train_batch, &d->train_row,
                       &d->train_bsize);
    first_value(train, &infer[c], i, d);
    d->infer_self_consistent = 1;
    for (int k = 1; k < ncomps; k++)
        if (!probe_equal(&infer[0], &infer[k], i))
            d->infer_self_consistent = 0;
    snprintf(d->changed, sizeof d->changed, "unknown");
    d->infer_batch_invariant = -2;
}

int repro_parity_compare(const repro_parity_probes *probes, const repro_parity_outputs *train,
                         const repro_parity_outputs *infer, int ncomps, repro_parity_result *r)
{
    for (int i = 0; i < probes->n; i++)
        for (int c = 0; c < ncomps; c++)
            if (!same_shape(train, &infer[c], i))
                return repro_error_set(REPRO_EIO,
                                       "probe %d (line %d): the trainer's output is %ld x %ld, "
                                       "the inference side's in %s %ld x %ld: not comparable",
                                       i, probes->p[i].line, train->npos[i], train->nelem,
                                       r->comps[c].label, infer[c].npos[i], infer[c].nelem);
    r->infer_batch_invariant = 1;
    for (int i = 0; i < probes->n; i++) {
        int differs = 0;
        for (int c = 0; c < ncomps; c++) {
            if (c > 0 && !probe_equal(&infer[0], &infer[c], i))
                r->infer_batch_invariant = 0;
            if (probe_equal(train, &infer[c], i))
                continue;
            r->comps[c].ndiffer++;
            if (!differs && !r->has_first)
                note_first(probes, train, infer, ncomps, i, c, r);
            differs = 1;
        }
        r->ndiffer += differs;
    }
    r->parity = r->ndiffer == 0;
    return 0;
}
