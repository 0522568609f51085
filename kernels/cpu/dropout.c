/* Inverted dropout with a counter-based mask. Determinism argument: element
 * i's keep decision is repro_u32_to_unit(philox_at(key, i, 0).v[0]) >= p, a
 * pure function of (key, i), so tiling, chunking (fixed 16384-element
 * ranges) and threads cannot change the mask, and the CUDA backend can draw
 * the very same bits. Values are x * noise with noise = 1/(1-p) (float) for
 * kept elements and 0 for dropped ones, PyTorch's formula (so a dropped NaN
 * or inf still yields NaN, and a dropped negative yields -0). The per-element
 * math is kernels/shared/pointwise.h, shared with the CUDA kernels. */
#include "ops.h"

#include "kernels/philox.h"
#include "kernels/shared/pointwise.h"

#include <string.h>

enum { CHUNK = 16384 };

typedef struct {
    const float *in;
    float *out;
    uint8_t *mask;
    const uint8_t *mask_in;
    long n;
    float p, scale;
    uint64_t key;
} drop_ctx;

static void fwd_chunk(void *vctx, long chunk)
{
    const drop_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    long i = chunk * CHUNK;
    for (; i + 4 <= i1; i += 4) {
        uint32_t r[16]; /* word 0 of philox_at(key, i + l, 0) is r[4 * l] */
        repro_philox_blocks4(c->key, (uint64_t)i, r);
        for (int l = 0; l < 4; l++) {
            int keep = repro_u32_to_unit(r[4 * l]) >= c->p; /* repro_hd_dropout_keep's rule */
            c->mask[i + l] = (uint8_t)keep;
            c->out[i + l] = repro_hd_dropout_apply(c->in[i + l], keep, c->scale);
        }
    }
    for (; i < i1; i++) {
        int keep = repro_hd_dropout_keep(c->key, (uint64_t)i, c->p);
        c->mask[i] = (uint8_t)keep;
        c->out[i] = repro_hd_dropout_apply(c->in[i], keep, c->scale);
    }
}

static void bwd_chunk(void *vctx, long chunk)
{
    const drop_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    for (long i = chunk * CHUNK; i < i1; i++)
        c->out[i] = repro_hd_dropout_apply(c->in[i], c->mask_in[i], c->scale);
}

void repro_dropout_forward(repro_pool *pool, const float *x, float *y, uint8_t *mask, long n,
                           float p, uint64_t key)
{
    if (n <= 0)
        return;
    if (p == 0.0f) { /* ops.h: p = 0 copies x (bit for bit, NaN payloads too) */
        memmove(y, x, (size_t)n * sizeof *y);
        memset(mask, 1, (size_t)n);
        return;
    }
    drop_ctx c = {.in = x, .out = y, .mask = mask, .n = n, .p = p,
                  .scale = repro_hd_dropout_scale(p), .key = key};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, fwd_chunk, &c);
}

void repro_dropout_backward(repro_pool *pool, const float *dy, const uint8_t *mask, float *dx,
                            long n, float p)
{
    if (n <= 0)
        return;
    if (p == 0.0f) {
        memmove(dx, dy, (size_t)n * sizeof *dx);
        return;
    }
    drop_ctx c = {.in = dy, .out = dx, .mask_in = mask, .n = n, .p = p,
                  .scale = repro_hd_dropout_scale(p)};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, bwd_chunk, &c);
}
