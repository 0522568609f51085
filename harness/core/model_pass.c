/* The forward and backward passes of the layer list (see model.h), every
 * kernel through the model's backend table, and the op observer's reports
 * of each kernel output. */
#include "core/model.h"

#include <stdio.h>
#include <string.h>

#include "core/dataset.h"
#include "core/tp.h"
#include "kernels/backend.h"
#include "util/seeds.h"

/* The config's precision ids are the backend's rounding formats. */
_Static_assert((int)REPRO_PRECISION_BF16 == (int)REPRO_ROUND_BF16 &&
                   (int)REPRO_PRECISION_FP16 == (int)REPRO_ROUND_FP16,
               "precision ids must match backend.h's rounding formats");

static long layer_out_numel(const repro_layer *l)
{
    return (long)l->out_c * l->out_h * l->out_w;
}

static long layer_in_numel(const repro_layer *l)
{
    return (long)l->in_c * l->in_h * l->in_w;
}

static repro_conv_shape conv_shape(const repro_layer *l, int B)
{
    repro_conv_shape s = {B, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad};
    return s;
}

/* Reduced precision: x is stored in it (no-op under fp32). */
static void round_to_precision(repro_model *m, float *x, long n)
{
    if (m->precision != REPRO_PRECISION_FP32)
        m->be->round_to(m->be_ctx, x, n, m->precision);
}

/* Reports one kernel output to the op observer, if any. Per-sample shape
 * (c, h, w) becomes (B, c, h, w), or (B, c) for 1 x 1 maps. */
void repro_model_report_op(repro_model *m, const char *name, float *data, int ndim,
                           const long *shape)
{
    if (m->on_op)
        m->on_op(m->on_op_ctx, name, data, ndim, shape);
}

static void report_op(repro_model *m, const char *phase, const char *layer, const char *what,
                      float *data, int B, int c, int h, int w)
{
    if (!m->on_op)
        return;
    char name[64];
    snprintf(name, sizeof name, "%s.%s%s%s", phase, layer, what[0] ? "." : "", what);
    long shape[4] = {B, c, h, w};
    m->on_op(m->on_op_ctx, name, data, h == 1 && w == 1 ? 2 : 4, shape);
}

static void report_param_grads(repro_model *m, const repro_layer *l)
{
    if (!m->on_op)
        return;
    for (int j = 0; j < 2; j++) {
        const repro_param *p = &m->params[l->param + j];
        char name[64];
        long shape[4];
        for (int i = 0; i < p->ndim; i++)
            shape[i] = p->shape[i];
        snprintf(name, sizeof name, "bwd.%s.%s", l->name, j ? "db" : "dw");
        m->on_op(m->on_op_ctx, name, p->grad, p->ndim, shape);
    }
}

/* The weights the kernels compute with: the cast working copy under
 * bf16/fp16, the fp32 master otherwise. */
static const float *weights(const repro_param *p)
{
    return p->work ? p->work : p->data;
}

/* The input batch on the backend: x itself for a host-memory backend under
 * fp32, else uploaded into xin (and, under bf16/fp16, autocast: the batch
 * and the weights are cast, into xin and the working copies; the fp32
 * masters stay). */
static void stage_inputs(repro_model *m, const float *x, int B)
{
    const repro_backend *be = m->be;
    int lp = m->precision != REPRO_PRECISION_FP32;
    m->act[0] = (float *)x;
    if (be->host_memory && !lp)
        return;
    size_t nx = (size_t)B * REPRO_IMG_PIXELS;
    be->copy_h2d(m->be_ctx, m->xin, x, nx * sizeof(float));
    m->act[0] = m->xin;
    if (!lp)
        return;
    round_to_precision(m, m->xin, (long)nx);
    for (int j = 0; j < m->nparams; j++) {
        repro_param *p = &m->params[j];
        be->copy_d2d(m->be_ctx, p->work, p->data, (size_t)p->numel * sizeof(float));
        round_to_precision(m, p->work, p->numel);
    }
}

/* One layer forward; -1 (error slot set) when no conv algorithm fits. */
static int layer_forward(repro_model *m, repro_layer *l, const float *in, float *out, int B,
                         int train, uint64_t seed, long step)
{
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    long n = (long)B * layer_out_numel(l);
    const repro_param *w = l->param >= 0 ? &m->params[l->param] : NULL;
    switch (l->kind) {
    case REPRO_LAYER_LINEAR:
        if (l->tp && train) /* split across the group; eval runs whole (weights are replicated) */
            return repro_tp_forward(m, l, in, out, B);
        be->linear_forward(ctx, m->var_linear_fwd, in, weights(w), weights(w + 1), out, B,
                           l->in_c, l->out_c, m->scratch);
        break;
    case REPRO_LAYER_CONV: {
        repro_conv_shape s = conv_shape(l, B);
        char site[48];
        snprintf(site, sizeof site, "%s.fwd", l->name);
        int a = repro_algo_choose(&m->algo, site, be, ctx, &s, in, weights(w), weights(w + 1),
                                  out, l->workspace, repro_model_conv_workspace(m, l));
        if (a < 0)
            return -1;
        be->conv2d_forward(ctx, (repro_conv_algo)a, &s, in, weights(w), weights(w + 1), out,
                           l->workspace);
        break;
    }
    case REPRO_LAYER_RELU:
        be->relu_forward(ctx, in, out, n);
        break;
    case REPRO_LAYER_MAXPOOL:
        be->maxpool2d_forward(ctx, B, l->in_c, l->in_h, l->in_w, l->k, in, out, l->argmax);
        break;
    case REPRO_LAYER_DROPOUT:
        if (train) {
            /* One stream per shard, keyed by its global index (the worker
             * slot of the derivation), so a sample's mask is the same on
             * any number of ranks; no shards: one stream, shard 0. */
            int rows = m->shard_rows ? m->shard_rows : B;
            long per = (long)rows * layer_out_numel(l);
            for (int q = 0; q * rows < B; q++) {
                uint32_t shard = m->shard_rows ? (uint32_t)(m->shard_first + q * m->shard_stride)
                                               : 0;
                uint64_t key = repro_seed_derive(seed, REPRO_PURPOSE_DROPOUT, (uint32_t)step, 0,
                                                 shard, (uint32_t)l->index);
                be->dropout_forward(ctx, in + q * per, out + q * per, l->mask + q * per, per,
                                    l->p, key);
            }
        } else {
            be->copy_d2d(ctx, out, in, (size_t)n * sizeof(float)); /* eval: identity */
        }
        break;
    }
    return 0;
}

/* A ReLU (layer i) and the pool after it, forward in one pass, when the
 * backend can and nothing watches the ops (the observer reports the ReLU's
 * output, which the fused pass does not store). Returns 1 when it did:
 * act[i + 2] holds the pool's output, bitwise the two ops'; the pool's
 * backward then runs fused too (pool_relu_fused). */
static int relu_pool_forward_fused(repro_model *m, int i, int B)
{
    const repro_backend *be = m->be;
    repro_layer *l = &m->layers[i], *pl = l + 1;
    if (l->kind != REPRO_LAYER_RELU || i + 1 >= m->nlayers || pl->kind != REPRO_LAYER_MAXPOOL)
        return 0;
    pl->relu_fused = be->maxpool2d_relu_forward && be->maxpool2d_relu_backward && !m->on_op;
    if (!pl->relu_fused)
        return 0;
    be->maxpool2d_relu_forward(m->be_ctx, B, pl->in_c, pl->in_h, pl->in_w, pl->k, m->act[i],
                               m->act[i + 2], pl->argmax);
    round_to_precision(m, m->act[i + 2], (long)B * layer_out_numel(pl));
    return 1;
}

const float *repro_model_forward(repro_model *m, const float *x, int B, int train, uint64_t seed,
                                 long step)
{
    stage_inputs(m, x, B);
    for (int i = 0; i < m->nlayers; i++) {
        repro_layer *l = &m->layers[i];
        if (relu_pool_forward_fused(m, i, B)) {
            i++; /* the pool is done too */
            continue;
        }
        float *out = m->act[i + 1];
        if (layer_forward(m, l, m->act[i], out, B, train, seed, step))
            return NULL;
        /* reduced precision: every op's output is stored in it */
        round_to_precision(m, out, (long)B * layer_out_numel(l));
        report_op(m, "fwd", l->name, "", out, B, l->out_c, l->out_h, l->out_w);
    }
    return m->act[m->nlayers];
}

void repro_model_backward(repro_model *m, const float *dlogits, int B)
{
    repro_model_backward_acc(m, dlogits, B, 0);
}

/* bf16/fp16, after a layer's parameter-gradient kernels wrote dw, db
 * (either the grads themselves or gscratch): round them to the precision
 * and, when accumulating, add them to the fp32 grads in float. */
static void finish_param_grads(repro_model *m, repro_param *w, float *dw, float *db,
                               int accumulate)
{
    round_to_precision(m, dw, w->numel);
    round_to_precision(m, db, w[1].numel);
    if (!accumulate)
        return;
    m->be->add(m->be_ctx, w->grad, dw, w->numel);
    m->be->add(m->be_ctx, w[1].grad, db, w[1].numel);
}

/* One process holds every shard: m->reduce is the local sum
 * (repro_model_set_shards), not a data-parallel one. */
static int one_process(const repro_model *m)
{
    return m->reduce_ctx == (const void *)m;
}

/* The shard rule for a linear layer in one process when the backend sums the
 * shards of dw itself (fp32, ordered variant): dw in one pass, the small
 * db through the partials. Bitwise the general path's result. */
static int shard_linear_fused(repro_model *m, const repro_layer *l, int i, int B, int accumulate)
{
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    repro_param *w = &m->params[l->param];
    if (!be->linear_backward_weight_sharded || !one_process(m) ||
        m->precision != REPRO_PRECISION_FP32 || m->var_linear_bwd_weight != REPRO_VARIANT_ORDERED)
        return 0;
    int S = m->shard_rows, nq = B / S;
    long nb = w[1].numel;
    const float *dout = m->dact[i + 1];
    be->linear_backward_weight_sharded(ctx, dout, m->act[i], w->grad, B, l->in_c, l->out_c, S,
                                       accumulate);
    float *first = accumulate ? m->shard_sum : w[1].grad;
    for (int q = 0; q < nq; q++)
        be->linear_backward_bias(ctx, m->var_linear_bwd_bias, dout + (long)q * S * l->out_c,
                                 q ? m->shard_slots + (q - 1) * nb : first, S, l->out_c, 0);
    for (int q = 1; q < nq; q++)
        be->add(ctx, first, m->shard_slots + (q - 1) * nb, nb);
    if (accumulate)
        be->add(ctx, w[1].grad, first, nb);
    return 1;
}

/* The same for a conv layer's dw and db (the backend may decline a shape). */
static int shard_conv_fused(repro_model *m, const repro_layer *l, int i, int B, int accumulate)
{
    const repro_backend *be = m->be;
    repro_param *w = &m->params[l->param];
    if (!be->conv2d_backward_filter_sharded || !one_process(m) ||
        m->precision != REPRO_PRECISION_FP32 || m->var_conv2d_bwd_filter != REPRO_VARIANT_ORDERED)
        return 0;
    int S = m->shard_rows;
    repro_conv_shape s = conv_shape(l, S);
    return be->conv2d_backward_filter_sharded(m->be_ctx, &s, B / S, m->dact[i + 1], m->act[i],
                                              w->grad, w[1].grad, accumulate) == 0;
}

/* The shard rule's parameter gradients of a linear or conv layer: each
 * shard's dw, db from +0 over its own rows (rounded to the precision under
 * bf16/fp16), the shards summed by m->reduce in shard order, the sum
 * written to the grads or, when accumulating, added to them in float. */
static void shard_param_grads(repro_model *m, const repro_layer *l, int i, int B, int accumulate)
{
    if (l->kind == REPRO_LAYER_LINEAR && shard_linear_fused(m, l, i, B, accumulate))
        return;
    if (l->kind == REPRO_LAYER_CONV && shard_conv_fused(m, l, i, B, accumulate))
        return;
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    repro_param *w = &m->params[l->param];
    long nw = w->numel, nb = w[1].numel, n = nw + nb;
    int S = m->shard_rows, nq = B / S;
    long in_per = (long)S * layer_in_numel(l), out_per = (long)S * layer_out_numel(l);
    /* One process writing the grads: shard 0 straight into them and the
     * others added after it, the same adds as the reduce, one copy less. */
    int direct = one_process(m) && !accumulate;
    for (int q = 0; q < nq; q++) {
        float *dw = m->shard_slots + q * n, *db = dw + nw;
        if (direct && q == 0)
            dw = w->grad, db = w[1].grad;
        const float *in = m->act[i] + q * in_per, *dout = m->dact[i + 1] + q * out_per;
        if (l->kind == REPRO_LAYER_LINEAR) {
            be->linear_backward_weight(ctx, m->var_linear_bwd_weight, dout, in, dw, S, l->in_c,
                                       l->out_c, 0);
            be->linear_backward_bias(ctx, m->var_linear_bwd_bias, dout, db, S, l->out_c, 0);
        } else {
            repro_conv_shape s = conv_shape(l, S);
            be->conv2d_backward_filter(ctx, m->var_conv2d_bwd_filter, &s, dout, in, dw, db, 0);
        }
        round_to_precision(m, dw, nw);
        round_to_precision(m, db, nb);
    }
    if (direct) {
        for (int q = 1; q < nq; q++) {
            be->add(ctx, w->grad, m->shard_slots + q * n, nw);
            be->add(ctx, w[1].grad, m->shard_slots + q * n + nw, nb);
        }
        return;
    }
    if (m->reduce(m->reduce_ctx, m->shard_slots, nq, n, m->shard_sum)) {
        m->reduce_failed = 1;
        return;
    }
    if (accumulate) {
        be->add(ctx, w->grad, m->shard_sum, nw);
        be->add(ctx, w[1].grad, m->shard_sum + nw, nb);
    } else {
        be->copy_d2d(ctx, w->grad, m->shard_sum, (size_t)nw * sizeof(float));
        be->copy_d2d(ctx, w[1].grad, m->shard_sum + nw, (size_t)nb * sizeof(float));
    }
}

/* One layer backward: parameter gradients (if any), then din (if not
 * NULL: there is no gradient for the input batch). */
static void layer_backward(repro_model *m, repro_layer *l, int i, float *din, int B,
                           int accumulate)
{
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    const float *in = m->act[i], *dout = m->dact[i + 1];
    int lp = m->precision != REPRO_PRECISION_FP32;
    /* fp32 accumulates inside the kernels; bf16/fp16 compute each batch's
     * gradient on its own (kernels overwrite) and add it after rounding. */
    int kacc = lp ? 0 : accumulate;
    repro_param *w = l->param >= 0 ? &m->params[l->param] : NULL;
    float *dw = w ? (lp && accumulate ? m->gscratch : w->grad) : NULL;
    float *db = w ? (lp && accumulate ? m->gscratch + w->numel : w[1].grad) : NULL;
    long n_in = (long)B * layer_in_numel(l);
    switch (l->kind) {
    case REPRO_LAYER_LINEAR:
        if (l->tp) {
            m->reduce_failed |= repro_tp_backward(m, l, i, din, B, accumulate) != 0;
            break;
        }
        if (m->shard_rows) {
            shard_param_grads(m, l, i, B, accumulate);
        } else {
            be->linear_backward_weight(ctx, m->var_linear_bwd_weight, dout, in, dw, B, l->in_c,
                                       l->out_c, kacc);
            be->linear_backward_bias(ctx, m->var_linear_bwd_bias, dout, db, B, l->out_c, kacc);
            if (lp)
                finish_param_grads(m, w, dw, db, accumulate);
        }
        if (din)
            be->linear_backward_data(ctx, dout, weights(w), din, B, l->in_c, l->out_c);
        break;
    case REPRO_LAYER_CONV: {
        repro_conv_shape s = conv_shape(l, B);
        if (m->shard_rows) {
            shard_param_grads(m, l, i, B, accumulate);
        } else {
            be->conv2d_backward_filter(ctx, m->var_conv2d_bwd_filter, &s, dout, in, dw, db, kacc);
            if (lp)
                finish_param_grads(m, w, dw, db, accumulate);
        }
        if (din)
            be->conv2d_backward_data(ctx, &s, dout, weights(w), din);
        break;
    }
    case REPRO_LAYER_RELU:
        if (din)
            be->relu_backward(ctx, m->act[i + 1], dout, din, n_in);
        break;
    case REPRO_LAYER_MAXPOOL:
        if (din)
            be->maxpool2d_backward(ctx, B, l->in_c, l->in_h, l->in_w, l->k, l->argmax, dout,
                                   din);
        break;
    case REPRO_LAYER_DROPOUT:
        if (din)
            be->dropout_backward(ctx, dout, l->mask, din, n_in, l->p);
        break;
    }
}

/* Layer i, a pool right after a ReLU (layer i - 1, whose input gradient
 * is wanted), runs both backward in one pass when its forward did (the
 * ReLU's output was not stored), or when the backend can and nothing
 * watches the ops (the observer reports the pool's dx, which the fused
 * pass does not write). Returns 1 when it did: dact[i - 1] is the ReLU's
 * dx, bitwise what the two ops give. */
static int pool_relu_fused(repro_model *m, int i, int B)
{
    const repro_layer *l = &m->layers[i];
    if (l->kind != REPRO_LAYER_MAXPOOL || i < 2 || m->layers[i - 1].kind != REPRO_LAYER_RELU ||
        !m->be->maxpool2d_relu_backward || (m->on_op && !l->relu_fused))
        return 0;
    m->be->maxpool2d_relu_backward(m->be_ctx, B, l->in_c, l->in_h, l->in_w, l->k, l->argmax,
                                   m->dact[i + 1], m->act[i + 1], m->dact[i - 1]);
    /* reduced precision: masking a stored value stores it again (a no-op),
     * kept for the rule's sake */
    round_to_precision(m, m->dact[i - 1], (long)B * layer_in_numel(&m->layers[i - 1]));
    return 1;
}

void repro_model_backward_acc(repro_model *m, const float *dlogits, int B, int accumulate)
{
    long nlog = (long)B * layer_out_numel(&m->layers[m->nlayers - 1]);
    m->be->copy_d2d(m->be_ctx, m->dact[m->nlayers], dlogits, (size_t)nlog * sizeof(float));
    /* the gradient arriving at the reduced-precision logits is in that precision */
    round_to_precision(m, m->dact[m->nlayers], nlog);
    for (int i = m->nlayers - 1; i >= 0; i--) {
        repro_layer *l = &m->layers[i];
        if (pool_relu_fused(m, i, B)) {
            i--; /* the ReLU's backward is done too */
            continue;
        }
        float *din = i > 0 ? m->dact[i] : NULL; /* no gradient for the input batch */
        layer_backward(m, l, i, din, B, accumulate);
        if (din) /* reduced precision: dx is stored in it */
            round_to_precision(m, din, (long)B * layer_in_numel(l));
        if (l->param >= 0)
            report_param_grads(m, l);
        if (din)
            report_op(m, "bwd", l->name, "dx", din, B, l->in_c, l->in_h, l->in_w);
    }
}
