/* Builds the layer list from the config, allocates every buffer through
 * the backend (parameters, gradients, optimizer state and working weights
 * as one arena each: model.h) and initializes the parameters. The forward
 * and backward passes are model_pass.c. */
#include "core/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dataset.h"
#include "kernels/philox.h"
#include "util/error.h"
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

/* The layer list of cfg's network. Returns 0 or -1 (error slot). */
static int build_layers(repro_model *m, const repro_config *cfg)
{
    if (cfg->model_type == REPRO_MODEL_MLP) {
        int n = cfg->model_hidden_n;
        for (int i = 0; i < n; i++) {
            add_linear(m, i + 1, cfg->model_hidden[i]);
            add_relu_dropout(m, i + 1, cfg->model_dropout);
        }
        add_linear(m, n + 1, REPRO_CLASSES);
        return 0;
    }
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
    return 0;
}

static void *be_alloc(repro_model *m, size_t bytes)
{
    return m->be->alloc(m->be_ctx, bytes ? bytes : 1);
}

/* Lays the parameters out (offsets rounded up to REPRO_ARENA_ALIGN floats)
 * and allocates the arenas, zeroed (as calloc'd buffers were: grads are
 * read by nothing before the first backward, but padding must be zero
 * for a whole-arena hash or unscale). Returns 0 or -1 (out of memory). */
static int alloc_arenas(repro_model *m)
{
    size_t at = 0;
    for (int i = 0; i < m->nparams; i++) {
        m->params[i].offset = at;
        at += ((size_t)m->params[i].numel + REPRO_ARENA_ALIGN - 1) / REPRO_ARENA_ALIGN *
              REPRO_ARENA_ALIGN;
    }
    m->layout_floats = at;
    size_t one = at * sizeof(float);
    m->arena_bytes[REPRO_ARENA_PARAMS] = one;
    m->arena_bytes[REPRO_ARENA_GRADS] = one;
    m->arena_bytes[REPRO_ARENA_OPTIMIZER] = m->optimizer == REPRO_OPT_ADAMW ? 2 * one : one;
    m->arena_bytes[REPRO_ARENA_WORK] = m->precision != REPRO_PRECISION_FP32 ? one : 0;
    for (int k = 0; k < REPRO_NARENAS; k++) {
        if (!m->arena_bytes[k])
            continue;
        if (!(m->arena[k] = be_alloc(m, m->arena_bytes[k])))
            return -1;
        m->be->zero(m->be_ctx, m->arena[k], m->arena_bytes[k]);
    }
    float *data = m->arena[REPRO_ARENA_PARAMS], *grad = m->arena[REPRO_ARENA_GRADS];
    float *opt = m->arena[REPRO_ARENA_OPTIMIZER], *work = m->arena[REPRO_ARENA_WORK];
    for (int i = 0; i < m->nparams; i++) {
        repro_param *p = &m->params[i];
        p->data = data + p->offset;
        p->grad = grad + p->offset;
        p->state1 = opt + p->offset;
        p->state2 = m->optimizer == REPRO_OPT_ADAMW ? opt + at + p->offset : NULL;
        p->work = work ? work + p->offset : NULL;
    }
    return 0;
}

size_t repro_model_conv_workspace(const repro_model *m, const repro_layer *l)
{
    repro_conv_shape cs = {m->capacity, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad};
    size_t ws = sizeof(float);
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++) {
        if (!m->be->conv_algo_eligible(m->be_ctx, (repro_conv_algo)a, &cs))
            continue;
        size_t b = m->be->conv_workspace_bytes(m->be_ctx, (repro_conv_algo)a, &cs);
        if (b > ws)
            ws = b;
    }
    return ws;
}

/* Per-layer buffers: activations and their gradients, maxpool argmax,
 * dropout masks, conv workspace (at capacity, for any eligible algorithm). */
static int alloc_layer_buffers(repro_model *m, int capacity)
{
    for (int i = 0; i < m->nlayers; i++) {
        repro_layer *l = &m->layers[i];
        size_t out = (size_t)capacity * (size_t)layer_out_numel(l);
        m->act[i + 1] = be_alloc(m, out * sizeof(float));
        m->dact[i + 1] = be_alloc(m, out * sizeof(float));
        if (!m->act[i + 1] || !m->dact[i + 1])
            return -1;
        if (l->kind == REPRO_LAYER_MAXPOOL && !(l->argmax = be_alloc(m, out * sizeof(int32_t))))
            return -1;
        if (l->kind == REPRO_LAYER_CONV &&
            !(l->workspace = be_alloc(m, repro_model_conv_workspace(m, l))))
            return -1;
        if (l->kind == REPRO_LAYER_DROPOUT && !(l->mask = be_alloc(m, out)))
            return -1;
    }
    return 0;
}

/* The model-wide buffers: linear workspace, the input batch, and under
 * bf16/fp16 with accumulation one layer's dw and db side by side. */
static int alloc_buffers(repro_model *m, int capacity, int accumulation_steps)
{
    size_t ws = sizeof(float), max_p = 1;
    for (int i = 0; i < m->nlayers; i++) {
        const repro_layer *l = &m->layers[i];
        size_t b = l->kind == REPRO_LAYER_LINEAR
                       ? m->be->linear_workspace_bytes(m->be_ctx, capacity, l->in_c, l->out_c)
                       : 0;
        if (b > ws)
            ws = b;
    }
    for (int i = 0; i < m->nparams; i++)
        if ((size_t)m->params[i].numel > max_p)
            max_p = (size_t)m->params[i].numel;
    m->scratch = be_alloc(m, ws);
    m->xin = be_alloc(m, (size_t)capacity * REPRO_IMG_PIXELS * sizeof(float));
    if (!m->scratch || !m->xin)
        return -1;
    /* db is never larger than dw */
    if (m->precision != REPRO_PRECISION_FP32 && accumulation_steps > 1 &&
        !(m->gscratch = be_alloc(m, 2 * max_p * sizeof(float))))
        return -1;
    return 0;
}

int repro_model_init(repro_model *m, const repro_config *cfg, int capacity,
                     const repro_backend *be)
{
    memset(m, 0, sizeof *m);
    m->capacity = capacity;
    m->optimizer = cfg->train_optimizer;
    m->precision = cfg->train_precision;
    m->var_linear_fwd = cfg->variant_linear_fwd;
    m->var_linear_bwd_weight = cfg->variant_linear_bwd_weight;
    m->var_linear_bwd_bias = cfg->variant_linear_bwd_bias;
    m->var_conv2d_bwd_filter = cfg->variant_conv2d_bwd_filter;
    m->algo.benchmark = cfg->train_benchmark;
    m->algo.deterministic_only = cfg->train_deterministic == REPRO_DETERMINISTIC_ON;
    if (!be)
        return repro_error_set(REPRO_EINVAL, "no kernel backend");
    if (build_layers(m, cfg))
        return -1;
    char why[256] = "";
    repro_backend_options o = {.threads = cfg->train_threads, .device = 0};
    if (be->create(&m->be_ctx, &o, why, sizeof why))
        return repro_error_set(REPRO_EUNSUPPORTED, "%s backend unavailable: %s", be->name, why);
    m->be = be;
    if (alloc_arenas(m) || alloc_buffers(m, capacity, cfg->train_accumulation_steps) ||
        alloc_layer_buffers(m, capacity)) {
        repro_model_release(m);
        return repro_error_set(REPRO_ENOMEM, "out of memory building the model");
    }
    return 0;
}

void repro_model_release(repro_model *m)
{
    if (m->be) {
        void *ctx = m->be_ctx;
        for (int k = 0; k < REPRO_NARENAS; k++)
            m->be->free(ctx, m->arena[k]);
        for (int i = 0; i < m->nlayers; i++) {
            m->be->free(ctx, m->act[i + 1]);
            m->be->free(ctx, m->dact[i + 1]);
            m->be->free(ctx, m->layers[i].argmax);
            m->be->free(ctx, m->layers[i].mask);
            m->be->free(ctx, m->layers[i].workspace);
        }
        m->be->free(ctx, m->scratch);
        m->be->free(ctx, m->xin);
        m->be->free(ctx, m->gscratch);
        m->be->free(ctx, m->shard_slots);
        m->be->free(ctx, m->shard_sum);
        m->be->destroy(ctx);
    }
    memset(m, 0, sizeof *m);
}

void *repro_model_arena(const repro_model *m, repro_arena_kind k, size_t *bytes)
{
    int ok = (int)k >= 0 && k < REPRO_NARENAS;
    if (bytes)
        *bytes = ok ? m->arena_bytes[k] : 0;
    return ok ? m->arena[k] : NULL;
}

int repro_model_init_params(repro_model *m, uint64_t seed)
{
    size_t bytes = m->arena_bytes[REPRO_ARENA_PARAMS];
    float *host = calloc(bytes ? bytes : 1, 1); /* the arena's image; padding stays 0 */
    if (!host)
        return repro_error_set(REPRO_ENOMEM, "out of memory initializing parameters");
    for (int j = 0; j < m->nparams; j++) {
        repro_param *p = &m->params[j];
        float *d = host + p->offset;
        /* fan_in: weight [out][in...] -> product of all but the first dim;
         * a bias shares its weight's fan_in (PyTorch's Linear/Conv init). */
        const repro_param *w = p->ndim == 1 ? p - 1 : p;
        long fan_in = w->numel / w->shape[0];
        float bound = (float)(1.0 / sqrt((double)fan_in)); /* sqrt is correctly rounded */
        uint64_t key = repro_seed_derive(seed, REPRO_PURPOSE_INIT, 0, 0, 0, (uint32_t)j);
        for (long i = 0; i < p->numel; i++) {
            float u = repro_u32_to_unit(repro_philox_at(key, (uint64_t)i, 0).v[0]);
            d[i] = (2.0f * u - 1.0f) * bound;
        }
    }
    if (bytes)
        m->be->copy_h2d(m->be_ctx, m->arena[REPRO_ARENA_PARAMS], host, bytes);
    free(host);
    if (m->arena_bytes[REPRO_ARENA_OPTIMIZER])
        m->be->zero(m->be_ctx, m->arena[REPRO_ARENA_OPTIMIZER],
                    m->arena_bytes[REPRO_ARENA_OPTIMIZER]);
    return 0;
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
