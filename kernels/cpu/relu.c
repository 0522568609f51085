/* ReLU forward and backward, elementwise. Determinism argument: each element
 * is a pure function of its own inputs (no sums at all), and chunks are fixed
 * ranges of 4096 elements, so neither thread count nor vector width can
 * change a bit. NaN inputs propagate (as torch.relu does); -0 maps to +0. The per-element
 * math is kernels/shared/pointwise.h, shared with the CUDA kernels; the
 * loops are the vector path's (simd.h: relu_fwd, relu_bwd, the same
 * expression per lane). */
#include "ops.h"
#include "simd.h"

enum { CHUNK = 4096 };

typedef struct {
    const repro_simd *simd;
    const float *x, *y, *dy;
    float *out;
    long n;
} relu_ctx;

static long chunk_len(const relu_ctx *c, long chunk)
{
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    return i1 - chunk * CHUNK;
}

static void fwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i0 = chunk * CHUNK;
    c->simd->relu_fwd(c->x + i0, c->out + i0, chunk_len(c, chunk));
}

static void bwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i0 = chunk * CHUNK;
    c->simd->relu_bwd(c->y + i0, c->dy + i0, c->out + i0, chunk_len(c, chunk));
}

void repro_relu_forward(repro_pool *pool, const float *x, float *y, long n)
{
    relu_ctx c = {.simd = repro_simd_get(), .x = x, .out = y, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, fwd_chunk, &c);
}

void repro_relu_backward(repro_pool *pool, const float *y, const float *dy, float *dx, long n)
{
    relu_ctx c = {.simd = repro_simd_get(), .y = y, .dy = dy, .out = dx, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, bwd_chunk, &c);
}
