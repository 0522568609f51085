/* Max pooling, k x k window, stride k, floor mode, with the argmax kept for
 * the backward pass. Determinism argument: no arithmetic at all, only
 * comparisons with a fixed tie rule (the first maximum in row-major window
 * order wins; the first NaN wins over everything), and each (b, c) plane is
 * owned by one chunk, so any thread count gives the same y, argmax and dx.
 *
 * A chunk is a run of whole planes, at least PLANE_FLOATS input floats
 * (the count a function of the shape only): the CNN's second pool has 1,024
 * planes of 11 x 11, and a chunk per plane made the chunks' claims cost
 * more than their work on 2 threads. */
#include "ops.h"

#include "kernels/isa.h"
#include "kernels/shared/pointwise.h"
#include "maxpool_k2.h"
#include "simd.h"

enum { PLANE_FLOATS = 4096 };

typedef struct {
    int H, W, k, OH, OW;
    int avx2;               /* 2x2 windows eight at a time (kernels/isa.h) */
    int avx512;             /* 2x2 planes on the AVX-512 path (maxpool_k2.h) */
    long planes, per_chunk; /* B * C planes, planes_per_chunk of them a chunk */
    const float *x, *dy;
    const float *pool_y; /* backward: the pool's output, for the ReLU before it (fused), or NULL */
    const repro_simd *relu; /* forward: the ReLU before it, applied to each window's
                               maximum (the vector path's relu_fwd), or NULL */
    float *y, *dx;
    int32_t *argmax;
    const int32_t *argmax_in;
} pool_ctx;

/* The first maximum of a window in row-major order, a NaN winning (see
 * fwd_chunk): one step of the scan. */
static inline void take(float v, int32_t off, float *best, int32_t *at)
{
    /* selects, not a branch: which element wins is data, and unpredictable */
    int win = (v > *best) | ((v != v) & (*best == *best));
    *best = win ? v : *best;
    *at = win ? off : *at;
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* take() for four windows at once (lane = window): the same rule by masks. */
static inline void take4(__m128 v, __m128i off, __m128 *best, __m128i *at)
{
    __m128 win = _mm_or_ps(_mm_cmpgt_ps(v, *best),
                           _mm_and_ps(_mm_cmpunord_ps(v, v), _mm_cmpord_ps(*best, *best)));
    __m128i w = _mm_castps_si128(win);
    *best = _mm_or_ps(_mm_and_ps(win, v), _mm_andnot_ps(win, *best));
    *at = _mm_or_si128(_mm_and_si128(w, off), _mm_andnot_si128(w, *at));
}

/* take4() where no lane of v or best is a NaN: the NaN terms are false. */
static inline void take4_ordered(__m128 v, __m128i off, __m128 *best, __m128i *at)
{
    __m128 win = _mm_cmpgt_ps(v, *best);
    __m128i w = _mm_castps_si128(win);
    *best = _mm_or_ps(_mm_and_ps(win, v), _mm_andnot_ps(win, *best));
    *at = _mm_or_si128(_mm_and_si128(w, off), _mm_andnot_si128(w, *at));
}

/* Windows ox .. ox+3 of output row oy: even and odd columns of the two
 * input rows split out of 8 consecutive floats each. Returns how many
 * windows it did (0 when fewer than 4 are left). */
static int row4_k2(const pool_ctx *p, const float *xp, float *yrow, int32_t *arow, int oy, int ox)
{
    if (ox + 4 > p->OW)
        return 0;
    int32_t first = 2 * oy * p->W + 2 * ox;
    const float *r0 = xp + first, *r1 = r0 + p->W;
    __m128 a = _mm_loadu_ps(r0), b = _mm_loadu_ps(r0 + 4);
    __m128 c = _mm_loadu_ps(r1), d = _mm_loadu_ps(r1 + 4);
    __m128 e0 = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* (0,0) of each window */
    __m128 o0 = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); /* (0,1) */
    __m128 e1 = _mm_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)); /* (1,0) */
    __m128 o1 = _mm_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1)); /* (1,1) */
    /* each candidate's offset from the window's first element, fixed */
    __m128i base = _mm_add_epi32(_mm_set1_epi32(first), _mm_set_epi32(6, 4, 2, 0)), at = base;
    __m128 best = e0;
    __m128i off1 = _mm_add_epi32(base, _mm_set1_epi32(1));
    __m128i off2 = _mm_add_epi32(base, _mm_set1_epi32(p->W));
    __m128i off3 = _mm_add_epi32(base, _mm_set1_epi32(p->W + 1));
    if (_mm_movemask_ps(_mm_or_ps(_mm_cmpunord_ps(a, b), _mm_cmpunord_ps(c, d))) == 0) {
        /* no NaN among the 16 inputs: take()'s rule is v > best alone */
        take4_ordered(o0, off1, &best, &at);
        take4_ordered(e1, off2, &best, &at);
        take4_ordered(o1, off3, &best, &at);
    } else {
        take4(o0, off1, &best, &at);
        take4(e1, off2, &best, &at);
        take4(o1, off3, &best, &at);
    }
    _mm_storeu_ps(yrow + ox, best);
    _mm_storeu_si128((__m128i *)(void *)(arow + ox), at);
    return 4;
}
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))

/* take4() for eight windows; `ordered`: no lane of v or best is a NaN. The
 * masks are all ones or all zeros, so blendv picks exactly as and/andnot. */
AVX2 static inline void take8(__m256 v, __m256i off, __m256 *best, __m256i *at, int ordered)
{
    __m256 win = _mm256_cmp_ps(v, *best, _CMP_GT_OQ);
    if (!ordered)
        win = _mm256_or_ps(win, _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),
                                              _mm256_cmp_ps(*best, *best, _CMP_ORD_Q)));
    *best = _mm256_blendv_ps(*best, v, win);
    *at = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*at), _mm256_castsi256_ps(off), win));
}

/* Windows ox .. ox + nw - 1 (nw <= 8) of output row oy (AVX2). The in-lane
 * shuffles leave the windows in the order 0 1 4 5 2 3 6 7; each lane's
 * window is scanned as it lies (its offsets follow that order) and the
 * results are put in order once, at the end. Fewer than eight windows (a
 * row's tail; the CNN's second pool has rows of 5) are read and written
 * through masks: the lanes past nw load +0, take part in nothing that is
 * stored, and touch no memory. */
AVX2 static void row8_k2(const pool_ctx *p, const float *xp, float *yrow, int32_t *arow, int oy,
                         int ox, int nw)
{
    int32_t first = 2 * oy * p->W + 2 * ox;
    const float *r0 = xp + first, *r1 = r0 + p->W;
    __m256 a, b, c, d;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    if (nw == 8) {
        a = _mm256_loadu_ps(r0), b = _mm256_loadu_ps(r0 + 8);
        c = _mm256_loadu_ps(r1), d = _mm256_loadu_ps(r1 + 8);
    } else { /* input float j of a row's 16 belongs to window j / 2 */
        __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * nw), lane);
        __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * nw - 8), lane);
        a = _mm256_maskload_ps(r0, m0), b = _mm256_maskload_ps(r0 + 8, m1);
        c = _mm256_maskload_ps(r1, m0), d = _mm256_maskload_ps(r1 + 8, m1);
    }
    __m256 e0 = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* (0,0) of each window */
    __m256 o0 = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); /* (0,1) */
    __m256 e1 = _mm256_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)); /* (1,0) */
    __m256 o1 = _mm256_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1)); /* (1,1) */
    __m256i base = _mm256_add_epi32(_mm256_set1_epi32(first),
                                    _mm256_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14));
    __m256i at = base;
    __m256 best = e0;
    __m256i off1 = _mm256_add_epi32(base, _mm256_set1_epi32(1));
    __m256i off2 = _mm256_add_epi32(base, _mm256_set1_epi32(p->W));
    __m256i off3 = _mm256_add_epi32(base, _mm256_set1_epi32(p->W + 1));
    int ordered = _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q),
                                                  _mm256_cmp_ps(c, d, _CMP_UNORD_Q))) == 0;
    take8(o0, off1, &best, &at, ordered);
    take8(e1, off2, &best, &at, ordered);
    take8(o1, off3, &best, &at, ordered);
    /* 64-bit pairs (w0 w1)(w4 w5)(w2 w3)(w6 w7) -> w0 .. w7 */
    best = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), _MM_SHUFFLE(3, 1, 2, 0)));
    at = _mm256_permute4x64_epi64(at, _MM_SHUFFLE(3, 1, 2, 0));
    if (nw == 8) {
        _mm256_storeu_ps(yrow + ox, best);
        _mm256_storeu_si256((__m256i *)(void *)(arow + ox), at);
        return;
    }
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(nw), lane);
    _mm256_maskstore_ps(yrow + ox, m, best);
    _mm256_maskstore_epi32(arow + ox, m, at);
}

/* Output row oy of a 2x2 plane, eight windows at a time, the tail masked.
 * Returns the windows done (all of them). */
AVX2 static int rows8_k2(const pool_ctx *p, const float *xp, float *yrow, int32_t *arow, int oy)
{
    for (int ox = 0; ox < p->OW; ox += 8)
        row8_k2(p, xp, yrow, arow, oy, ox, p->OW - ox < 8 ? p->OW - ox : 8);
    return p->OW;
}
#define HAVE_AVX2_POOL 1
#endif

/* k = 2 (the CNN's pool): the same scan written out for the 2 x 2 window,
 * eight windows at a time on the AVX2 path, else four at a time where SSE2
 * is there and one at a time for the rest. */
static void fwd_plane_k2(const pool_ctx *p, const float *xp, float *yp, int32_t *ap)
{
    for (int oy = 0; oy < p->OH; oy++) {
        int ox = 0;
#if HAVE_AVX2_POOL
        if (p->avx2)
            ox = rows8_k2(p, xp, yp + oy * p->OW, ap + oy * p->OW, oy);
#endif
        for (; ox < p->OW; ox++) {
#if defined(__SSE2__)
            int done = row4_k2(p, xp, yp + oy * p->OW, ap + oy * p->OW, oy, ox);
            if (done) {
                ox += done - 1;
                continue;
            }
#endif
            int32_t first = 2 * oy * p->W + 2 * ox, at = first;
            float best = xp[first];
            take(xp[first + 1], first + 1, &best, &at);
            take(xp[first + p->W], first + p->W, &best, &at);
            take(xp[first + p->W + 1], first + p->W + 1, &best, &at);
            yp[oy * p->OW + ox] = best;
            ap[oy * p->OW + ox] = at;
        }
    }
}

static void fwd_plane(const pool_ctx *p, long plane)
{
    if (p->k == 2) {
        fwd_plane_k2(p, p->x + plane * p->H * p->W, p->y + plane * p->OH * p->OW,
                     p->argmax + plane * p->OH * p->OW);
        return;
    }
    const float *xp = p->x + plane * p->H * p->W;
    float *yp = p->y + plane * p->OH * p->OW;
    int32_t *ap = p->argmax + plane * p->OH * p->OW;
    for (int oy = 0; oy < p->OH; oy++)
        for (int ox = 0; ox < p->OW; ox++) {
            int first = oy * p->k * p->W + ox * p->k;
            float best = xp[first];
            int32_t at = first;
            for (int dy = 0; dy < p->k; dy++)
                for (int dx = 0; dx < p->k; dx++) {
                    int off = (oy * p->k + dy) * p->W + ox * p->k + dx;
                    float v = xp[off];
                    /* strictly greater keeps the first of equal maxima; a
                     * NaN replaces a non-NaN best and is never replaced */
                    if (v > best || (v != v && best == best)) {
                        best = v;
                        at = off;
                    }
                }
            yp[oy * p->OW + ox] = best;
            ap[oy * p->OW + ox] = at;
        }
}

static void bwd_plane(const pool_ctx *p, long plane)
{
    float *dxp = p->dx + plane * p->H * p->W;
    const float *dyp = p->dy + plane * p->OH * p->OW;
    const int32_t *ap = p->argmax_in + plane * p->OH * p->OW;
    for (long i = 0; i < (long)p->H * p->W; i++)
        dxp[i] = 0.0f;
    if (p->pool_y) { /* the ReLU's gradient too, where the pool put one */
        const float *yp = p->pool_y + plane * p->OH * p->OW;
        for (long i = 0; i < (long)p->OH * p->OW; i++)
            dxp[ap[i]] = repro_hd_relu_grad(yp[i], dyp[i]);
        return;
    }
    for (long i = 0; i < (long)p->OH * p->OW; i++)
        dxp[ap[i]] = dyp[i]; /* windows are disjoint: a store, not a sum */
}

static void fwd_chunk(void *vctx, long chunk)
{
    const pool_ctx *p = vctx;
    long end = (chunk + 1) * p->per_chunk < p->planes ? (chunk + 1) * p->per_chunk : p->planes;
    long start = chunk * p->per_chunk, out = (long)p->OH * p->OW;
    if (p->avx512) { /* the ReLU applied as each maximum is stored */
        repro_maxpool_k2_avx512_fwd(p->x + start * p->H * p->W, end - start, p->H, p->W,
                                    p->y + start * out, p->argmax + start * out, !!p->relu);
        return;
    }
    for (long plane = start; plane < end; plane++)
        fwd_plane(p, plane);
    if (p->relu) /* in place, the chunk's planes at once (a branch per element mispredicts) */
        p->relu->relu_fwd(p->y + start * out, p->y + start * out, (end - start) * out);
}

static void bwd_chunk(void *vctx, long chunk)
{
    const pool_ctx *p = vctx;
    long end = (chunk + 1) * p->per_chunk < p->planes ? (chunk + 1) * p->per_chunk : p->planes;
    for (long plane = chunk * p->per_chunk; plane < end; plane++)
        bwd_plane(p, plane);
}

/* Sets the chunking; returns the chunk count. */
static long chunking(pool_ctx *p, int B, int C)
{
    long plane = (long)p->H * p->W;
    p->planes = (long)B * C;
    p->per_chunk = plane >= PLANE_FLOATS ? 1 : (PLANE_FLOATS + plane - 1) / (plane > 0 ? plane : 1);
    return (p->planes + p->per_chunk - 1) / p->per_chunk;
}

/* Forward, the ReLU before it applied to each maximum when `relu`. */
static void pool_forward(repro_pool *pool, int B, int C, int H, int W, int k, const float *x,
                         float *y, int32_t *argmax, int relu)
{
    pool_ctx p = {.H = H, .W = W, .k = k, .OH = H / k, .OW = W / k,
                  .x = x, .y = y, .argmax = argmax, .relu = relu ? repro_simd_get() : NULL};
    /* the AVX-512 path too: eight windows fill one 256-bit register */
    p.avx2 = repro_isa_current() != REPRO_ISA_SSE2 && repro_isa_supported(REPRO_ISA_AVX2);
    p.avx512 = k == 2 && repro_maxpool_k2_avx512_on();
    repro_pool_run(pool, chunking(&p, B, C), fwd_chunk, &p);
}

/* Backward, the ReLU's gradient too when pool_y (the pool's output) is given. */
static void pool_backward(repro_pool *pool, int B, int C, int H, int W, int k,
                          const int32_t *argmax, const float *dy, const float *pool_y, float *dx)
{
    pool_ctx p = {.H = H, .W = W, .k = k, .OH = H / k, .OW = W / k,
                  .dy = dy, .dx = dx, .argmax_in = argmax, .pool_y = pool_y};
    repro_pool_run(pool, chunking(&p, B, C), bwd_chunk, &p);
}

void repro_maxpool2d_forward(repro_pool *pool, int B, int C, int H, int W, int k,
                             const float *x, float *y, int32_t *argmax)
{
    pool_forward(pool, B, C, H, W, k, x, y, argmax, 0);
}

void repro_maxpool2d_backward(repro_pool *pool, int B, int C, int H, int W, int k,
                              const int32_t *argmax, const float *dy, float *dx)
{
    pool_backward(pool, B, C, H, W, k, argmax, dy, NULL, dx);
}

void repro_maxpool2d_relu_forward(repro_pool *pool, int B, int C, int H, int W, int k,
                                  const float *x, float *y, int32_t *argmax)
{
    pool_forward(pool, B, C, H, W, k, x, y, argmax, 1);
}

void repro_maxpool2d_relu_backward(repro_pool *pool, int B, int C, int H, int W, int k,
                                   const int32_t *argmax, const float *dy, const float *pool_y,
                                   float *dx)
{
    pool_backward(pool, B, C, H, W, k, argmax, dy, pool_y, dx);
}
