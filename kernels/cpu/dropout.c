/* Inverted dropout with a counter-based mask. Determinism argument: element
 * i's keep decision is repro_u32_to_unit(philox_at(key, i, 0).v[0]) >= p, a
 * pure function of (key, i), so tiling, chunking (fixed 16384-element
 * ranges) and threads cannot change the mask, and the CUDA backend can draw
 * the very same bits. Values are x * noise with noise = 1/(1-p) (float) for
 * kept elements and 0 for dropped ones, PyTorch's formula (so a dropped NaN
 * or inf still yields NaN, and a dropped negative yields -0). The per-element
 * math is kernels/shared/pointwise.h, shared with the CUDA kernels. */
#include "ops.h"

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

/* v[0] of repro_philox_at(key, i + l, 0) for l = 0..3: the same rounds,
 * four counters interleaved so their multiply chains overlap. */
static inline void philox_v0_x4(uint64_t key, uint64_t i, uint32_t out[4])
{
    uint32_t c0[4], c1[4], c2[4] = {0, 0, 0, 0}, c3[4] = {0, 0, 0, 0};
    for (int l = 0; l < 4; l++) {
        c0[l] = (uint32_t)(i + (uint64_t)l);
        c1[l] = (uint32_t)((i + (uint64_t)l) >> 32);
    }
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int round = 0; round < 10; round++) {
#pragma GCC unroll 4
        for (int l = 0; l < 4; l++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c0[l], p1 = (uint64_t)0xCD9E8D57u * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < 4; l++)
        out[l] = c0[l];
}

static void fwd_chunk(void *vctx, long chunk)
{
    const drop_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    long i = chunk * CHUNK;
    for (; i + 4 <= i1; i += 4) {
        uint32_t r[4];
        philox_v0_x4(c->key, (uint64_t)i, r);
        for (int l = 0; l < 4; l++) {
            int keep = repro_u32_to_unit(r[l]) >= c->p; /* repro_hd_dropout_keep's rule */
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
