/* The split layers of tensor parallel (see tp.h): column-parallel fc1 and
 * row-parallel fc2 forward and backward over the group, their slices
 * gathered into the whole tensors every rank holds. */
#include "core/tp.h"

#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "repro/tp.h"
#include "util/error.h"

typedef struct repro_tp {
    repro_dist *group;
    int rank, size, variant;
    float *slice;  /* capacity x widest slice: activations, dy or dx columns */
    float *gather; /* every rank's slice, rank-major */
    float *part;   /* one rank's gradient slice (and a ring's partial outputs) */
    float *wcols;  /* the row-parallel weight's columns, [out][K/N] */
    float *ring;   /* ring scratch */
} repro_tp;

/* Columns [c0, c0 + w) of a rows x ld matrix into dst (rows x w). */
static void take_cols(float *dst, const float *src, long rows, long ld, long c0, long w)
{
    for (long r = 0; r < rows; r++)
        memcpy(dst + r * w, src + r * ld + c0, (size_t)w * sizeof(float));
}

/* Every rank's rows x w slice, gathered, put back as columns of dst
 * (rows x N*w): rank q's slice is columns [q*w, (q+1)*w). */
static int gather_cols(repro_tp *tp, const float *mine, long rows, long w, float *dst)
{
    size_t bytes = (size_t)(rows * w) * sizeof(float);
    if (repro_dist_allgather(tp->group, mine, bytes, tp->gather))
        return -1;
    for (int q = 0; q < tp->size; q++)
        for (long r = 0; r < rows; r++)
            memcpy(dst + r * w * tp->size + q * w, tp->gather + (q * rows + r) * w,
                   (size_t)w * sizeof(float));
    return 0;
}

int repro_tp_attach(repro_model *m, struct repro_dist *group, int variant)
{
    int col = -1, row = -1;
    for (int i = 0; i < m->nlayers && row < 0; i++)
        if (m->layers[i].kind == REPRO_LAYER_LINEAR)
            *(col < 0 ? &col : &row) = i;
    int N = repro_dist_size(group);
    if (row < 0 || !m->be->host_memory || m->layers[col].out_c % N)
        return repro_error_set(REPRO_EINVAL, "tp = %d: the model has no two linear layers of a "
                                             "width it divides on a host-memory backend", N);
    repro_tp *tp = calloc(1, sizeof *tp);
    if (!tp)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    m->tp = tp;
    tp->group = group;
    tp->rank = repro_dist_rank(group);
    tp->size = N;
    tp->variant = variant;
    repro_layer *c = &m->layers[col], *r = &m->layers[row];
    c->tp = REPRO_TP_COLUMN;
    r->tp = REPRO_TP_ROW;
    long cap = m->capacity, width = c->out_c, I = c->in_c, O = r->out_c;
    long whole = cap * width; /* the largest gathered tensor: activations or a weight */
    whole = I * width > whole ? I * width : whole;
    whole = O * width > whole ? O * width : whole;
    tp->slice = malloc((size_t)(cap * width / N + 1) * sizeof(float));
    tp->gather = malloc((size_t)(whole + width) * sizeof(float));
    tp->part = malloc((size_t)(whole / N + width + cap * O + 1) * sizeof(float));
    tp->wcols = malloc((size_t)(O * width / N + 1) * sizeof(float));
    tp->ring = malloc((size_t)(cap * O + 1) * sizeof(float));
    if (!tp->slice || !tp->gather || !tp->part || !tp->wcols || !tp->ring) {
        repro_tp_detach(m);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    return 0;
}

void repro_tp_detach(repro_model *m)
{
    repro_tp *tp = m->tp;
    if (!tp)
        return;
    for (int i = 0; i < m->nlayers; i++)
        m->layers[i].tp = 0;
    free(tp->slice);
    free(tp->gather);
    free(tp->part);
    free(tp->wcols);
    free(tp->ring);
    free(tp);
    m->tp = NULL;
}

/* Column-parallel: this rank's outputs are whole sums (the kernel's),
 * gathered into every rank's out. */
static int forward_column(repro_model *m, const repro_layer *l, const float *in, float *out,
                          int B)
{
    repro_tp *tp = m->tp;
    const repro_param *w = &m->params[l->param];
    long ow = l->out_c / tp->size, o0 = ow * tp->rank;
    m->be->linear_forward(m->be_ctx, 0 /* ordered */, in, w->data + o0 * l->in_c,
                          w[1].data + o0, tp->slice, B, l->in_c, (int)ow, m->scratch);
    return gather_cols(tp, tp->slice, B, ow, out);
}

/* The negative control: each rank's slice summed from +0 (rank 0 from the
 * bias), then a ring all-reduce: the association depends on the size. */
static int forward_ring(repro_model *m, const repro_layer *l, const float *in, float *out, int B)
{
    repro_tp *tp = m->tp;
    const repro_param *w = &m->params[l->param];
    long kw = l->in_c / tp->size, k0 = kw * tp->rank, O = l->out_c;
    float *p = tp->part;
    for (int b = 0; b < B; b++)
        for (long o = 0; o < O; o++)
            p[b * O + o] = tp->rank == 0 ? w[1].data[o] : 0.0f;
    repro_tp_continue(p, O, in + k0, l->in_c, w->data + k0, l->in_c, B, (int)kw, (int)O);
    if (tp->size == 1) {
        memcpy(out, p, (size_t)(B * O) * sizeof(float));
        return 0;
    }
    return repro_dist_allreduce_ring(tp->group, p, B * O, out, tp->ring);
}

int repro_tp_forward(repro_model *m, const repro_layer *l, const float *in, float *out, int B)
{
    repro_tp *tp = m->tp;
    if (l->tp == REPRO_TP_COLUMN)
        return forward_column(m, l, in, out, B);
    if (tp->variant == REPRO_TP_REDUCE_RING)
        return forward_ring(m, l, in, out, B);
    const repro_param *w = &m->params[l->param];
    long kw = l->in_c / tp->size, k0 = kw * tp->rank;
    /* Tiles of 8 rows: the next rank starts after 1/8 of a batch of 64, not
     * 1/4 (the bits do not depend on the tile; make bench's chain / ring
     * at tp 2 read 0.92-0.97 with 8 and 0.82-0.95 with 16 on 2 cores). */
    return repro_tp_chain_rowpar(tp->group, in + k0, l->in_c, w->data + k0, l->in_c, w[1].data,
                                 out, B, (int)kw, l->out_c, 8);
}

/* One slice's dw (O' x I' over dy: B x O', x: B x I') and db (O'), by the
 * shard rule when the model has shards (each shard from +0 over its rows,
 * the shards summed by m->reduce in shard order, then written or added as
 * the model's own path does), else over the whole batch, continuing from
 * the old values when accumulating. Into tp->part: dw then db. */
static int slice_grads(repro_model *m, const float *dy, const float *x, int B, long I, long O,
                       int accumulate, const float *old_dw, const float *old_db)
{
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    repro_tp *tp = m->tp;
    long n = O * I + O;
    float *dw = tp->part, *db = dw + O * I;
    if (!m->shard_rows) {
        if (accumulate) {
            memcpy(dw, old_dw, (size_t)(O * I) * sizeof(float));
            memcpy(db, old_db, (size_t)O * sizeof(float));
        }
        be->linear_backward_weight(ctx, m->var_linear_bwd_weight, dy, x, dw, B, (int)I, (int)O,
                                   accumulate);
        be->linear_backward_bias(ctx, m->var_linear_bwd_bias, dy, db, B, (int)O, accumulate);
        return 0;
    }
    int S = m->shard_rows, nq = B / S;
    for (int q = 0; q < nq; q++) {
        float *sw = m->shard_slots + q * n;
        be->linear_backward_weight(ctx, m->var_linear_bwd_weight, dy + (long)q * S * O,
                                   x + (long)q * S * I, sw, S, (int)I, (int)O, 0);
        be->linear_backward_bias(ctx, m->var_linear_bwd_bias, dy + (long)q * S * O, sw + O * I,
                                 S, (int)O, 0);
    }
    if (m->reduce(m->reduce_ctx, m->shard_slots, nq, n, dw))
        return -1;
    if (accumulate) { /* the old gradient + the shards' sum, as the model adds */
        float *sum = m->shard_sum;
        memcpy(sum, dw, (size_t)n * sizeof(float));
        memcpy(dw, old_dw, (size_t)(O * I) * sizeof(float));
        memcpy(db, old_db, (size_t)O * sizeof(float));
        be->add(ctx, dw, sum, O * I);
        be->add(ctx, db, sum + O * I, O);
    }
    return 0;
}

/* Column-parallel backward: rows [o0, o0 + O/N) of dw and db from this
 * rank's columns of dy, gathered; dx whole from the replicated weight. */
static int backward_column(repro_model *m, const repro_layer *l, int i, float *din, int B,
                           int accumulate)
{
    repro_tp *tp = m->tp;
    repro_param *w = &m->params[l->param];
    long I = l->in_c, O = l->out_c, ow = O / tp->size, o0 = ow * tp->rank;
    const float *dout = m->dact[i + 1];
    take_cols(tp->slice, dout, B, O, o0, ow);
    if (slice_grads(m, tp->slice, m->act[i], B, I, ow, accumulate, w->grad + o0 * I,
                    w[1].grad + o0))
        return -1;
    /* rank q's (dw rows, db) slice: the dw rows are contiguous in the whole */
    long n = ow * I + ow;
    if (repro_dist_allgather(tp->group, tp->part, (size_t)n * sizeof(float), tp->gather))
        return -1;
    for (int q = 0; q < tp->size; q++) {
        memcpy(w->grad + q * ow * I, tp->gather + q * n, (size_t)(ow * I) * sizeof(float));
        memcpy(w[1].grad + q * ow, tp->gather + q * n + ow * I, (size_t)ow * sizeof(float));
    }
    if (din)
        m->be->linear_backward_data(m->be_ctx, dout, w->data, din, B, (int)I, (int)O);
    return 0;
}

/* Row-parallel backward: columns [k0, k0 + K/N) of dw from this rank's
 * columns of x, gathered; db whole on every rank (a sum over the batch);
 * dx's columns from the weight's columns (sums over the outputs, whole),
 * gathered. */
static int backward_row(repro_model *m, const repro_layer *l, int i, float *din, int B,
                        int accumulate)
{
    repro_tp *tp = m->tp;
    repro_param *w = &m->params[l->param];
    long K = l->in_c, O = l->out_c, kw = K / tp->size, k0 = kw * tp->rank;
    const float *dout = m->dact[i + 1];
    take_cols(tp->slice, m->act[i], B, K, k0, kw);
    take_cols(tp->wcols, w->grad, O, K, k0, kw); /* the old columns, for accumulate */
    if (slice_grads(m, dout, tp->slice, B, kw, O, accumulate, tp->wcols, w[1].grad))
        return -1;
    memcpy(w[1].grad, tp->part + O * kw, (size_t)O * sizeof(float));
    memcpy(tp->wcols, tp->part, (size_t)(O * kw) * sizeof(float));
    if (gather_cols(tp, tp->wcols, O, kw, w->grad))
        return -1;
    if (!din)
        return 0;
    take_cols(tp->wcols, w->data, O, K, k0, kw);
    m->be->linear_backward_data(m->be_ctx, dout, tp->wcols, tp->slice, B, (int)kw, (int)O);
    return gather_cols(tp, tp->slice, B, kw, din);
}

int repro_tp_backward(repro_model *m, const repro_layer *l, int i, float *din, int B,
                      int accumulate)
{
    return l->tp == REPRO_TP_COLUMN ? backward_column(m, l, i, din, B, accumulate)
                                    : backward_row(m, l, i, din, B, accumulate);
}
