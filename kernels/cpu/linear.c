/* The fully connected layer (PyTorch layout: w is [out][in]) in terms of
 * repro_gemm, plus the bias gradient. Determinism argument: every sum is one
 * GEMM element (fixed ascending-k order, see gemm.c) or a bias column summed
 * in ascending batch order by the single chunk that owns it. Chunks depend
 * only on the shapes, so thread count changes no bit. */
#include "ops.h"
#include "simd.h"

#include <stddef.h>

enum { BIAS_COLS = 256 };

/* y[b][o] = b[o] + sum_i x[b][i] * w[o][i]: a GEMM with M=B, K=in, N=out,
 * whose per-element order (bias, then ascending i) is the one ops.h states. */
void repro_linear_forward(repro_pool *pool, const float *x, const float *w, const float *b,
                          float *y, int B, int in, int out, float *wt_scratch)
{
    (void)wt_scratch; /* B(k = i, n = o) = w[o][i]: read in place, packed by the GEMM */
    repro_gemm_ex(pool, B, out, in, x, in, 1, w, 1, in, y, out, b, 0);
}

/* dx[b][i] = 0 + sum over o ascending of dy[b][o] * w[o][i]: w is already
 * the [K=out][N=in] matrix GEMM wants. */
void repro_linear_backward_data(repro_pool *pool, const float *dy, const float *w, float *dx,
                                int B, int in, int out)
{
    repro_gemm(pool, B, in, out, dy, out, 1, w, in, dx, in, NULL, 0);
}

/* dw[o][i] (+)= sum over b ascending of dy[b][o] * x[b][i]: A = dy^T, read
 * in place with row stride 1 and column stride out. With accumulate the old
 * dw is the starting value of the sum (gemm's init rule); without it the sum
 * starts from +0, so "zero then accumulate" equals "overwrite" bitwise. */
void repro_linear_backward_weight(repro_pool *pool, const float *dy, const float *x, float *dw,
                                  int B, int in, int out, int accumulate)
{
    repro_gemm(pool, out, in, B, dy, 1, out, x, in, dw, in, NULL, accumulate);
}

/* The shard rule's dw (ops.h, repro_gemm_sharded): the same GEMM with K
 * (the batch) cut into shards of S. */
void repro_linear_backward_weight_sharded(repro_pool *pool, const float *dy, const float *x,
                                          float *dw, int B, int in, int out, int S,
                                          int accumulate)
{
    repro_gemm_sharded(pool, out, in, B, S, dy, 1, out, x, in, dw, in, accumulate);
}

typedef struct {
    const float *dy;
    float *db;
    int B, out, accumulate;
} bias_ctx;

/* Chunk = 256 output columns; each db[o] starts from db[o] (accumulate) or
 * +0 and adds dy[b][o] for b = 0, 1, ... The inner loop runs across o, i.e.
 * across independent sums. */
static void bias_chunk(void *vctx, long chunk)
{
    const bias_ctx *c = vctx;
    long o0 = chunk * BIAS_COLS;
    long o1 = o0 + BIAS_COLS < c->out ? o0 + BIAS_COLS : c->out;
    float acc[BIAS_COLS];
    for (long o = o0; o < o1; o++)
        acc[o - o0] = c->accumulate ? c->db[o] : 0.0f;
    const repro_simd *s = repro_simd_get(); /* add_into: a lane per column's sum */
    for (long b = 0; b < c->B; b++)
        s->add_into(acc, c->dy + b * (long)c->out + o0, o1 - o0);
    for (long o = o0; o < o1; o++)
        c->db[o] = acc[o - o0];
}

void repro_linear_backward_bias(repro_pool *pool, const float *dy, float *db, int B, int out,
                                int accumulate)
{
    bias_ctx c = {dy, db, B, out, accumulate};
    repro_pool_run(pool, (out + BIAS_COLS - 1) / BIAS_COLS, bias_chunk, &c);
}
