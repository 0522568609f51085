/* Inverted dropout with a counter-based mask. Determinism argument: element
 * i's keep decision is repro_u32_to_unit(philox_at(key, i, 0).v[0]) >= p, a
 * pure function of (key, i), so tiling, chunking (fixed 1024-element
 * ranges: small enough that two threads share one shard's 16 x 256
 * activation, which the model passes as one call) and
 * threads cannot change the mask, and the CUDA backend can draw the very
 * same bits. Forward draws a chunk's mask with repro_philox_keep (many
 * blocks at once, on the vector path in use), then applies it as backward
 * does. Values are x * noise with noise = 1/(1-p) (float) for kept elements
 * and 0 for dropped ones, PyTorch's formula (so a dropped NaN or inf still
 * yields NaN, and a dropped negative yields -0). The per-element math is
 * kernels/shared/pointwise.h, shared with the CUDA kernels (apply_mask
 * writes repro_hd_dropout_apply's product without its branch). */
#include "ops.h"

#include "kernels/philox.h"
#include "kernels/shared/pointwise.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { CHUNK = 1024 };

typedef struct {
    const float *in;
    float *out;
    uint8_t *mask;
    const uint8_t *mask_in;
    long n;
    float p, scale;
    uint64_t key;
} drop_ctx;

/* y[i] = repro_hd_dropout_apply(x[i], mask[i], scale) = x[i] * (mask[i] ?
 * scale : 0) for i in [i0, i1), the factor picked by a bit mask (four
 * lanes at a time) or from a table, never by a branch: the mask is
 * random, and a branch on it mispredicts. A lane is one element's own
 * product, and the factor is never a NaN (so which operand comes first
 * cannot matter): the bits are the scalar expression's. */
static void apply_mask(const float *x, const uint8_t *mask, float scale, float *y, long i0, long i1)
{
    long i = i0;
#if defined(__SSE2__)
    const __m128i vscale = _mm_castps_si128(_mm_set1_ps(scale)), zero = _mm_setzero_si128();
    for (; i + 4 <= i1; i += 4) {
        int bytes;
        memcpy(&bytes, mask + i, sizeof bytes);
        /* byte j to lane j, then -1 where it is 0 */
        __m128i m = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero), zero);
        __m128 f = _mm_castsi128_ps(_mm_andnot_si128(_mm_cmpeq_epi32(m, zero), vscale));
        _mm_storeu_ps(y + i, _mm_mul_ps(_mm_loadu_ps(x + i), f)); /* x * (scale or +0) */
    }
#endif
    const float factor[2] = {0.0f, scale};
    for (; i < i1; i++)
        y[i] = x[i] * factor[mask[i] != 0];
}

static void fwd_chunk(void *vctx, long chunk)
{
    const drop_ctx *c = vctx;
    long i0 = chunk * CHUNK, i1 = i0 + CHUNK < c->n ? i0 + CHUNK : c->n;
    /* repro_hd_dropout_keep's rule, many blocks at a time */
    repro_philox_keep(c->key, (uint64_t)i0, i1 - i0, c->p, c->mask + i0);
    apply_mask(c->in, c->mask, c->scale, c->out, i0, i1);
}

static void bwd_chunk(void *vctx, long chunk)
{
    const drop_ctx *c = vctx;
    long i0 = chunk * CHUNK, i1 = i0 + CHUNK < c->n ? i0 + CHUNK : c->n;
    apply_mask(c->in, c->mask_in, c->scale, c->out, i0, i1);
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
