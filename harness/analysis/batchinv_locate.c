/* One sample's row of every op output, and the first op where two batches
 * part (batchinv_locate.h). The observer copies the row as the kernel left
 * it, before the next op runs: the op that first differs is where the batch
 * composition entered the sample's numbers. */
#include "analysis/batchinv_locate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/variants.h"
#include "util/error.h"
#include "util/opnames.h"

typedef struct {
    repro_model *m;
    int pos;
    repro_op_rows *out;
    int failed;
} capture_ctx;

static void on_op(void *vctx, const char *name, float *data, int ndim, const long *shape)
{
    capture_ctx *c = vctx;
    repro_op_rows *r = c->out;
    if (c->failed || r->n >= REPRO_MAX_LAYERS + 1 || ndim < 1 || shape[0] <= c->pos)
        return;
    long len = 1;
    for (int i = 1; i < ndim; i++)
        len *= shape[i];
    float *row = malloc((size_t)(len > 0 ? len : 1) * sizeof *row);
    if (!row) {
        c->failed = 1;
        return;
    }
    /* backend memory: a device backend's row comes back through its copy */
    c->m->be->copy_d2h(c->m->be_ctx, row, data + (size_t)c->pos * (size_t)len,
                       (size_t)len * sizeof *row);
    snprintf(r->name[r->n], sizeof r->name[r->n], "%s", name);
    r->row[r->n] = row;
    r->len[r->n++] = len;
}

int repro_batchinv_capture(repro_model *m, const float *x, int B, int pos, int train,
                           uint64_t seed, long step, repro_op_rows *out)
{
    memset(out, 0, sizeof *out);
    capture_ctx c = {m, pos, out, 0};
    void (*saved)(void *, const char *, float *, int, const long *) = m->on_op;
    void *saved_ctx = m->on_op_ctx;
    m->on_op = on_op;
    m->on_op_ctx = &c;
    const float *logits = repro_model_forward(m, x, B, train, seed, step);
    m->on_op = saved;
    m->on_op_ctx = saved_ctx;
    if (!logits)
        return -1;
    if (c.failed)
        return repro_error_set(REPRO_ENOMEM, "out of memory capturing op outputs");
    return 0;
}

void repro_op_rows_free(repro_op_rows *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->row[i]);
    memset(r, 0, sizeof *r);
}

void repro_batchinv_name_op(const repro_config *cfg, repro_batchinv_mismatch *m)
{
    const char *vop = !strcmp(m->first_op, "softmax_xent") ? "softmax_xent"
                                                            : repro_op_variant(m->first_op);
    const repro_variant_info *vi = NULL;
    m->op[0] = m->variant[0] = '\0';
    m->batch_invariant = -2;
    if (!vop)
        return;
    snprintf(m->op, sizeof m->op, "%s", vop);
    int k = repro_config_find_key(vop);
    if (k >= 0 && repro_config_key_is_variant(k)) {
        repro_config_variant_name(cfg, k, m->variant, sizeof m->variant);
        vi = repro_variant_find(vop, m->variant);
    } else {
        /* an op with one implementation: the registry's first entry */
        for (const repro_variant_info *v = repro_variants; v->op && !vi; v++)
            if (!strcmp(v->op, vop))
                vi = v;
        if (vi)
            snprintf(m->variant, sizeof m->variant, "%s", vi->variant);
    }
    if (vi)
        m->batch_invariant = vi->batch_invariant;
}

int repro_batchinv_first_op(const repro_op_rows *a, const repro_op_rows *b,
                            const repro_config *cfg, repro_batchinv_mismatch *m)
{
    int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n; i++) {
        if (a->len[i] == b->len[i] &&
            !memcmp(a->row[i], b->row[i], (size_t)a->len[i] * sizeof(float)))
            continue;
        snprintf(m->first_op, sizeof m->first_op, "%s", a->name[i]);
        long len = a->len[i] < b->len[i] ? a->len[i] : b->len[i];
        m->nelem = len;
        m->ndiffer_elem = 0;
        m->max_abs = 0;
        for (long j = 0; j < len; j++) {
            if (!memcmp(&a->row[i][j], &b->row[i][j], sizeof(float)))
                continue;
            m->ndiffer_elem++;
            double d = fabs((double)a->row[i][j] - (double)b->row[i][j]);
            if (d > m->max_abs || isnan(d))
                m->max_abs = d;
        }
        repro_batchinv_name_op(cfg, m);
        return 1;
    }
    return 0;
}
