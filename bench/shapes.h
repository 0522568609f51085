/* The products a training step runs, for `make bench`'s ceiling table:
 * every linear layer's forward, backward data and backward weight (GEMMs,
 * kernels/cpu/gemm.c) and every convolution's three passes (direct
 * tiles: a GEMM's arithmetic, not its code), read off the model the config
 * builds, each with its multiply-add count, and timed one at a time
 * through the backend exactly as the step calls it (the shard rule's
 * weight gradient where the model has shards, the rule's convolution
 * algorithm).
 *
 * FLOPs are 2 per multiply-add: a layer's forward, its backward data and
 * its backward weight each do batch x (the layer's multiply-adds per
 * sample); the first layer has no backward data (nothing wants the input's
 * gradient). Header-only: included by bench/train.c, and by
 * tests/check_bench_goals.c, which checks the counts. */
#ifndef REPRO_BENCH_SHAPES_H
#define REPRO_BENCH_SHAPES_H

#include <stdio.h>

#include "core/algo_select.h"
#include "core/model.h"
#include "util/progress.h"

typedef enum { PASS_FWD, PASS_BWD_DATA, PASS_BWD_WEIGHT } shape_pass;

typedef struct {
    char what[48]; /* "fc1 fwd  64x256x784" */
    int layer;     /* index into the model's layers */
    shape_pass pass;
    int gemm;      /* 1: a linear layer's GEMM; 0: a direct convolution */
    double flops;  /* 2 x multiply-adds */
} bench_shape;

enum { SHAPES_MAX = 3 * 2 * (REPRO_CONFIG_LIST_MAX + 1) };

/* Multiply-adds of one pass of layer l over a batch of B. */
static double shape_macs(const repro_layer *l, int B)
{
    if (l->kind == REPRO_LAYER_LINEAR)
        return (double)B * l->in_c * l->out_c;
    return (double)B * l->out_h * l->out_w * l->out_c * l->in_c * l->k * l->k;
}

/* Every product of a training step of batch B, in execution order of the
 * forward, then each layer's backward weight and data. Returns the count. */
static int bench_shapes(const repro_model *m, int B, bench_shape *out)
{
    static const char *const pass_name[] = {"fwd", "bwd data", "bwd weight"};
    int n = 0;
    for (int p = PASS_FWD; p <= PASS_BWD_WEIGHT; p++)
        for (int i = 0; i < m->nlayers; i++) {
            const repro_layer *l = &m->layers[i];
            if (l->kind != REPRO_LAYER_LINEAR && l->kind != REPRO_LAYER_CONV)
                continue;
            if (p == PASS_BWD_DATA && i == 0)
                continue;
            bench_shape *s = &out[n++];
            s->layer = i, s->pass = (shape_pass)p, s->gemm = l->kind == REPRO_LAYER_LINEAR;
            s->flops = 2 * shape_macs(l, B);
            /* the GEMM's M x N x K as gemm.c sees it */
            int M = B, N = l->out_c, K = l->in_c;
            if (p == PASS_BWD_DATA)
                N = l->in_c, K = l->out_c;
            if (p == PASS_BWD_WEIGHT)
                M = l->out_c, N = l->in_c, K = B;
            if (s->gemm)
                snprintf(s->what, sizeof s->what, "%s %s %dx%dx%d", l->name, pass_name[p], M, N,
                         K);
            else
                snprintf(s->what, sizeof s->what, "%s %s %dx%dx%d conv", l->name, pass_name[p],
                         B * l->out_h * l->out_w, l->out_c, l->in_c * l->k * l->k);
        }
    return n;
}

static double shapes_flops(const bench_shape *s, int n)
{
    double f = 0;
    for (int i = 0; i < n; i++)
        f += s[i].flops;
    return f;
}

/* One call of the shape's kernel on the model's own buffers, through its
 * backend, as model_pass.c calls it (the bias gradient, a separate kernel,
 * is not part of a linear layer's product; a convolution's backward
 * filter computes its bias gradient in the same pass). */
static inline void shape_call(repro_model *m, const bench_shape *sh, int B)
{
    const repro_backend *be = m->be;
    void *ctx = m->be_ctx;
    const repro_layer *l = &m->layers[sh->layer];
    repro_param *w = &m->params[l->param];
    float *in = m->act[sh->layer], *out = m->act[sh->layer + 1];
    float *din = m->dact[sh->layer], *dout = m->dact[sh->layer + 1];
    int S = m->shard_rows && B % m->shard_rows == 0 ? m->shard_rows : 0;
    if (sh->gemm) {
        if (sh->pass == PASS_FWD)
            be->linear_forward(ctx, 0, in, w->data, w[1].data, out, B, l->in_c, l->out_c,
                               m->scratch);
        else if (sh->pass == PASS_BWD_DATA)
            be->linear_backward_data(ctx, dout, w->data, din, B, l->in_c, l->out_c);
        else if (S && be->linear_backward_weight_sharded)
            be->linear_backward_weight_sharded(ctx, dout, in, w->grad, B, l->in_c, l->out_c, S, 0);
        else
            be->linear_backward_weight(ctx, 0, dout, in, w->grad, B, l->in_c, l->out_c, 0);
        return;
    }
    repro_conv_shape s = {B, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad};
    if (sh->pass == PASS_FWD) {
        be->conv2d_forward(ctx, repro_algo_rule(&s), &s, in, w->data, w[1].data, out,
                           l->workspace);
    } else if (sh->pass == PASS_BWD_DATA) {
        be->conv2d_backward_data(ctx, &s, dout, w->data, din);
    } else {
        repro_conv_shape q = s;
        q.B = S ? S : B;
        if (!S || !be->conv2d_backward_filter_sharded ||
            be->conv2d_backward_filter_sharded(ctx, &q, B / q.B, dout, in, w->grad, w[1].grad, 0))
            be->conv2d_backward_filter(ctx, 0, &s, dout, in, w->grad, w[1].grad, 0);
    }
}

/* Seconds of one call: the best over calls repeated for ~`seconds` (the
 * operands stay in cache, as within a step). */
static inline double shape_seconds(repro_model *m, const bench_shape *sh, int B, double seconds)
{
    double best = 1e30, start = repro_now();
    do {
        double t0 = repro_now();
        shape_call(m, sh, B);
        double t = repro_now() - t0;
        if (t < best)
            best = t;
    } while (repro_now() - start < seconds);
    return best;
}

#endif
