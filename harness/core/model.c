/* Builds the layer list from the config and runs it forward and backward
 * over the CPU kernels (see model.h). */
#include "core/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dataset.h"
#include "kernels/cpu/atomic.h"
#include "util/error.h"
#include "kernels/philox.h"
#include "kernels/cpu/precision.h"
#include "util/seeds.h"

static repro_layer *add_layer(repro_model *m, repro_layer_kind kind, const char *name, int num)
{
    repro_layer *l = &m->layers[m->nlayers];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->index = m->nlayers++;
    l->param = -1;
    snprintf(l->name, sizeof l->name, "%s%d", name, num);
    if (m->nlayers > 1) {
        const repro_layer *prev = &m->layers[m->nlayers - 2];
        l->in_c = prev->out_c;
        l->in_h = prev->out_h;
        l->in_w = prev->out_w;
    } else {
        l->in_c = 1;
        l->in_h = REPRO_IMG_ROWS;
        l->in_w = REPRO_IMG_COLS;
    }
    l->out_c = l->in_c;
    l->out_h = l->in_h;
    l->out_w = l->in_w;
    return l;
}

static void add_param(repro_model *m, repro_layer *l, const char *what, int ndim, const int *shape)
{
    repro_param *p = &m->params[m->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s.%s", l->name, what);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->numel *= shape[i];
    }
}

static void add_linear(repro_model *m, int num, int out)
{
    repro_layer *l = add_layer(m, REPRO_LAYER_LINEAR, "fc", num);
    l->in_c = l->in_c * l->in_h * l->in_w; /* flatten: NCHW is already contiguous */
    l->in_h = l->in_w = 1;
    l->out_c = out;
    l->out_h = l->out_w = 1;
    l->param = m->nparams;
    add_param(m, l, "weight", 2, (int[]){out, l->in_c});
    add_param(m, l, "bias", 1, (int[]){out});
}

static void add_relu_dropout(repro_model *m, int num, double p)
{
    add_layer(m, REPRO_LAYER_RELU, "relu", num);
    if (p > 0) {
        repro_layer *d = add_layer(m, REPRO_LAYER_DROPOUT, "drop", num);
        d->p = (float)p;
    }
}

static long layer_out_numel(const repro_layer *l)
{
    return (long)l->out_c * l->out_h * l->out_w;
}

static long layer_in_numel(const repro_layer *l)
{
    return (long)l->in_c * l->in_h * l->in_w;
}

int repro_model_init(repro_model *m, const repro_config *cfg, int capacity)
{
    memset(m, 0, sizeof *m);
    m->capacity = capacity;
    m->optimizer = cfg->train_optimizer;
    m->precision = cfg->train_precision;
    m->var_linear_bwd_weight = cfg->variant_linear_bwd_weight;
    m->var_linear_bwd_bias = cfg->variant_linear_bwd_bias;
    m->var_conv2d_bwd_filter = cfg->variant_conv2d_bwd_filter;
    m->algo.benchmark = cfg->train_benchmark;
    m->algo.deterministic_only = cfg->train_deterministic == REPRO_DETERMINISTIC_ON;
    if (cfg->model_type == REPRO_MODEL_MLP) {
        int n = cfg->model_hidden_n;
        for (int i = 0; i < n; i++) {
            add_linear(m, i + 1, cfg->model_hidden[i]);
            add_relu_dropout(m, i + 1, cfg->model_dropout);
        }
        add_linear(m, n + 1, REPRO_CLASSES);
    } else {
        int n = cfg->model_conv_channels_n;
        for (int i = 0; i < n; i++) {
            repro_layer *c = add_layer(m, REPRO_LAYER_CONV, "conv", i + 1);
            int r = cfg->model_kernel_size, pad = cfg->model_padding;
            c->out_c = cfg->model_conv_channels[i];
            c->out_h = c->in_h + 2 * pad - r + 1;
            c->out_w = c->in_w + 2 * pad - r + 1;
            c->k = r;
            c->pad = pad;
            c->param = m->nparams;
            add_param(m, c, "weight", 4, (int[]){c->out_c, c->in_c, r, r});
            add_param(m, c, "bias", 1, (int[]){c->out_c});
            add_relu_dropout(m, i + 1, cfg->model_dropout);
            repro_layer *pl = add_layer(m, REPRO_LAYER_MAXPOOL, "pool", i + 1);
            pl->k = 2;
            pl->out_h = pl->in_h / 2;
            pl->out_w = pl->in_w / 2;
            if (pl->out_h < 1 || c->out_h < 1)
                return repro_error_set(REPRO_EINVAL, "%s: conv blocks shrink 28x28 to nothing",
                                       cfg->path);
        }
        add_linear(m, 1, REPRO_CLASSES);
    }
    long max_w = 0;
    for (int i = 0; i < m->nparams; i++) {
        repro_param *p = &m->params[i];
        p->data = calloc((size_t)p->numel, sizeof(float));
        p->grad = calloc((size_t)p->numel, sizeof(float));
        p->state1 = calloc((size_t)p->numel, sizeof(float));
        if (m->optimizer == REPRO_OPT_ADAMW)
            p->state2 = calloc((size_t)p->numel, sizeof(float));
        if (!p->data || !p->grad || !p->state1 || (m->optimizer == REPRO_OPT_ADAMW && !p->state2))
            goto oom;
        if (p->ndim == 2 && p->numel > max_w)
            max_w = p->numel;
    }
    m->scratch = malloc((size_t)(max_w ? max_w : 1) * sizeof(float));
    if (!m->scratch)
        goto oom;
    if (m->precision != REPRO_PRECISION_FP32) {
        long max_p = 1;
        for (int i = 0; i < m->nparams; i++) {
            repro_param *p = &m->params[i];
            if (!(p->work = malloc((size_t)p->numel * sizeof(float))))
                goto oom;
            if (p->numel > max_p)
                max_p = p->numel;
        }
        /* a layer's dw and db side by side (db is never larger than dw) */
        m->xin = malloc((size_t)capacity * REPRO_IMG_PIXELS * sizeof(float));
        if (cfg->train_accumulation_steps > 1)
            m->gscratch = malloc(2 * (size_t)max_p * sizeof(float));
        if (!m->xin || (cfg->train_accumulation_steps > 1 && !m->gscratch))
            goto oom;
    }
    for (int i = 0; i < m->nlayers; i++) {
        repro_layer *l = &m->layers[i];
        size_t out = (size_t)capacity * (size_t)layer_out_numel(l);
        m->act[i + 1] = malloc(out * sizeof(float));
        m->dact[i + 1] = malloc(out * sizeof(float));
        if (!m->act[i + 1] || !m->dact[i + 1])
            goto oom;
        if (l->kind == REPRO_LAYER_MAXPOOL && !(l->argmax = malloc(out * sizeof(int32_t))))
            goto oom;
        if (l->kind == REPRO_LAYER_CONV) {
            repro_conv_shape cs = {capacity, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad};
            size_t ws = 1;
            for (int a = 0; a < REPRO_CONV_NALGOS; a++)
                if (repro_conv_algo_eligible((repro_conv_algo)a, &cs) &&
                    repro_conv_workspace_floats((repro_conv_algo)a, &cs) > ws)
                    ws = repro_conv_workspace_floats((repro_conv_algo)a, &cs);
            if (!(l->workspace = malloc(ws * sizeof(float))))
                goto oom;
        }
        if (l->kind == REPRO_LAYER_DROPOUT && !(l->mask = malloc(out)))
            goto oom;
    }
    return 0;
oom:
    repro_model_release(m);
    return repro_error_set(REPRO_ENOMEM, "out of memory building the model");
}

void repro_model_release(repro_model *m)
{
    for (int i = 0; i < m->nparams; i++) {
        free(m->params[i].data);
        free(m->params[i].grad);
        free(m->params[i].state1);
        free(m->params[i].state2);
        free(m->params[i].work);
    }
    for (int i = 0; i < m->nlayers; i++) {
        free(m->act[i + 1]);
        free(m->dact[i + 1]);
        free(m->layers[i].argmax);
        free(m->layers[i].mask);
        free(m->layers[i].workspace);
    }
    free(m->scratch);
    free(m->xin);
    free(m->gscratch);
    memset(m, 0, sizeof *m);
}

void repro_model_init_params(repro_model *m, uint64_t seed)
{
    for (int j = 0; j < m->nparams; j++) {
        repro_param *p = &m->params[j];
        /* fan_in: weight [out][in...] -> product of all but the first dim;
         * a bias shares its weight's fan_in (PyTorch's Linear/Conv init). */
        const repro_param *w = p->ndim == 1 ? p - 1 : p;
        long fan_in = w->numel / w->shape[0];
        float bound = (float)(1.0 / sqrt((double)fan_in)); /* sqrt is correctly rounded */
        uint64_t key = repro_seed_derive(seed, REPRO_PURPOSE_INIT, 0, 0, 0, (uint32_t)j);
        for (long i = 0; i < p->numel; i++) {
            float u = repro_u32_to_unit(repro_philox_at(key, (uint64_t)i, 0).v[0]);
            p->data[i] = (2.0f * u - 1.0f) * bound;
        }
        memset(p->state1, 0, (size_t)p->numel * sizeof(float));
        if (p->state2)
            memset(p->state2, 0, (size_t)p->numel * sizeof(float));
    }
}

static repro_conv_shape conv_shape(const repro_layer *l, int B)
{
    repro_conv_shape s = {B, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad};
    return s;
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

const float *repro_model_forward(repro_model *m, repro_pool *pool, const float *x, int B,
                                 int train, uint64_t seed, long step)
{
    m->act[0] = (float *)x;
    if (m->precision != REPRO_PRECISION_FP32) {
        /* autocast: the GEMM/conv inputs are cast, i.e. the batch and the
         * weights (into their working copies; the fp32 masters stay). */
        size_t nx = (size_t)B * REPRO_IMG_PIXELS;
        memcpy(m->xin, x, nx * sizeof(float));
        repro_round_buffer(m->xin, (long)nx, m->precision);
        m->act[0] = m->xin;
        for (int j = 0; j < m->nparams; j++) {
            repro_param *p = &m->params[j];
            memcpy(p->work, p->data, (size_t)p->numel * sizeof(float));
            repro_round_buffer(p->work, p->numel, m->precision);
        }
    }
    for (int i = 0; i < m->nlayers; i++) {
        repro_layer *l = &m->layers[i];
        const float *in = m->act[i];
        float *out = m->act[i + 1];
        long n = (long)B * layer_out_numel(l);
        switch (l->kind) {
        case REPRO_LAYER_LINEAR: {
            const repro_param *w = &m->params[l->param];
            repro_linear_forward(pool, in, weights(w), weights(w + 1), out, B, l->in_c, l->out_c,
                                 m->scratch);
            break;
        }
        case REPRO_LAYER_CONV: {
            const repro_param *w = &m->params[l->param];
            repro_conv_shape s = conv_shape(l, B);
            char site[48];
            snprintf(site, sizeof site, "%s.fwd", l->name);
            int a = repro_algo_choose(&m->algo, site, pool, &s, in, weights(w), weights(w + 1),
                                      out, l->workspace);
            if (a < 0)
                return NULL;
            repro_conv2d_forward_algo(pool, (repro_conv_algo)a, &s, in, weights(w),
                                      weights(w + 1), out, l->workspace);
            break;
        }
        case REPRO_LAYER_RELU:
            repro_relu_forward(pool, in, out, n);
            break;
        case REPRO_LAYER_MAXPOOL:
            repro_maxpool2d_forward(pool, B, l->in_c, l->in_h, l->in_w, l->k, in, out, l->argmax);
            break;
        case REPRO_LAYER_DROPOUT:
            if (train) {
                uint64_t key = repro_seed_derive(seed, REPRO_PURPOSE_DROPOUT, (uint32_t)step, 0, 0,
                                                 (uint32_t)l->index);
                repro_dropout_forward(pool, in, out, l->mask, n, l->p, key);
            } else {
                memcpy(out, in, (size_t)n * sizeof(float)); /* eval: identity */
            }
            break;
        }
        /* reduced precision: every op's output is stored in it */
        repro_round_buffer(out, n, m->precision);
        report_op(m, "fwd", l->name, "", out, B, l->out_c, l->out_h, l->out_w);
    }
    return m->act[m->nlayers];
}

void repro_model_backward(repro_model *m, repro_pool *pool, const float *dlogits, int B)
{
    repro_model_backward_acc(m, pool, dlogits, B, 0);
}

/* bf16/fp16, after a layer's parameter-gradient kernels wrote dw, db
 * (either the grads themselves or gscratch): round them to the precision
 * and, when accumulating, add them to the fp32 grads in float. */
static void finish_param_grads(repro_model *m, repro_param *w, float *dw, float *db,
                               int accumulate)
{
    repro_round_buffer(dw, w->numel, m->precision);
    repro_round_buffer(db, w[1].numel, m->precision);
    if (!accumulate)
        return;
    for (long i = 0; i < w->numel; i++)
        w->grad[i] = w->grad[i] + dw[i];
    for (long i = 0; i < w[1].numel; i++)
        w[1].grad[i] = w[1].grad[i] + db[i];
}

void repro_model_backward_acc(repro_model *m, repro_pool *pool, const float *dlogits, int B,
                              int accumulate)
{
    long nlog = (long)B * layer_out_numel(&m->layers[m->nlayers - 1]);
    memcpy(m->dact[m->nlayers], dlogits, (size_t)nlog * sizeof(float));
    /* the gradient arriving at the reduced-precision logits is in that precision */
    repro_round_buffer(m->dact[m->nlayers], nlog, m->precision);
    int lp = m->precision != REPRO_PRECISION_FP32;
    /* fp32 accumulates inside the kernels; bf16/fp16 compute each batch's
     * gradient on its own (kernels overwrite) and add it after rounding. */
    int kacc = lp ? 0 : accumulate;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        repro_layer *l = &m->layers[i];
        const float *in = m->act[i];
        const float *dout = m->dact[i + 1];
        float *din = i > 0 ? m->dact[i] : NULL; /* no gradient for the input batch */
        long n_in = (long)B * layer_in_numel(l);
        switch (l->kind) {
        case REPRO_LAYER_LINEAR: {
            repro_param *w = &m->params[l->param];
            float *dw = lp && accumulate ? m->gscratch : w->grad;
            float *db = lp && accumulate ? m->gscratch + w->numel : w[1].grad;
            if (m->var_linear_bwd_weight)
                repro_linear_backward_weight_atomic(pool, dout, in, dw, B, l->in_c, l->out_c,
                                                    kacc);
            else
                repro_linear_backward_weight(pool, dout, in, dw, B, l->in_c, l->out_c, kacc);
            if (m->var_linear_bwd_bias)
                repro_linear_backward_bias_atomic(pool, dout, db, B, l->out_c, kacc);
            else
                repro_linear_backward_bias(pool, dout, db, B, l->out_c, kacc);
            if (lp)
                finish_param_grads(m, w, dw, db, accumulate);
            if (din)
                repro_linear_backward_data(pool, dout, weights(w), din, B, l->in_c, l->out_c);
            break;
        }
        case REPRO_LAYER_CONV: {
            repro_param *w = &m->params[l->param];
            repro_conv_shape s = conv_shape(l, B);
            float *dw = lp && accumulate ? m->gscratch : w->grad;
            float *db = lp && accumulate ? m->gscratch + w->numel : w[1].grad;
            if (m->var_conv2d_bwd_filter)
                repro_conv2d_backward_filter_atomic(pool, &s, dout, in, dw, db, kacc);
            else
                repro_conv2d_backward_filter(pool, &s, dout, in, dw, db, kacc);
            if (lp)
                finish_param_grads(m, w, dw, db, accumulate);
            if (din)
                repro_conv2d_backward_data(pool, &s, dout, weights(w), din);
            break;
        }
        case REPRO_LAYER_RELU:
            if (din)
                repro_relu_backward(pool, m->act[i + 1], dout, din, n_in);
            break;
        case REPRO_LAYER_MAXPOOL:
            if (din)
                repro_maxpool2d_backward(pool, B, l->in_c, l->in_h, l->in_w, l->k, l->argmax, dout,
                                         din);
            break;
        case REPRO_LAYER_DROPOUT:
            if (din)
                repro_dropout_backward(pool, dout, l->mask, din, n_in, l->p);
            break;
        }
        if (din) /* reduced precision: dx is stored in it */
            repro_round_buffer(din, n_in, m->precision);
        if (l->param >= 0)
            report_param_grads(m, l);
        if (din)
            report_op(m, "bwd", l->name, "dx", din, B, l->in_c, l->in_h, l->in_w);
    }
}

int repro_model_out_features(const repro_model *m)
{
    return m->layers[m->nlayers - 1].out_c;
}

long repro_model_param_count(const repro_model *m)
{
    long n = 0;
    for (int i = 0; i < m->nparams; i++)
        n += m->params[i].numel;
    return n;
}
