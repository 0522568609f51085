/* ReLU forward and backward, elementwise. Determinism argument: each element
 * is a pure function of its own inputs (no sums at all), and chunks are fixed
 * ranges of 16384 elements, so neither thread count nor vector width can
 * change a bit. NaN inputs propagate (as torch.relu does); -0 maps to +0. The per-element
 * math is kernels/shared/pointwise.h, shared with the CUDA kernels. */
#include "ops.h"

#include "kernels/shared/pointwise.h"

enum { CHUNK = 16384 };

typedef struct {
    const float *x, *y, *dy;
    float *out;
    long n;
} relu_ctx;

static void fwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    for (long i = chunk * CHUNK; i < i1; i++)
        c->out[i] = repro_hd_relu(c->x[i]);
}

static void bwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    for (long i = chunk * CHUNK; i < i1; i++)
        c->out[i] = repro_hd_relu_grad(c->y[i], c->dy[i]);
}

void repro_relu_forward(repro_pool *pool, const float *x, float *y, long n)
{
    relu_ctx c = {.x = x, .out = y, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, fwd_chunk, &c);
}

void repro_relu_backward(repro_pool *pool, const float *y, const float *dy, float *dx, long n)
{
    relu_ctx c = {.y = y, .dy = dy, .out = dx, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, bwd_chunk, &c);
}
