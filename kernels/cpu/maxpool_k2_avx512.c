/* maxpool_k2.h on AVX-512F. No arithmetic: compares, blends and moves,
 * so the bits are those of maxpool.c's scan on every path.
 *
 * Sixteen windows a vector: the two input rows under them, 32 floats each
 * (two vectors, masked past what the windows use), go through two-table
 * permutes that pick each window's four candidates, scanned in take()'s
 * order. A row of up to 16 windows is one vector (the CNN's 13), and
 * short rows go several to a vector where their input rows fit in the 32
 * floats (the CNN's 11-wide plane: two rows of 5), where the AVX2 path
 * ran eight windows a call, the tail masked: the pooling took 94 and 52
 * us a step of the CNN's two pools before, 59 and 27 after (Xeon, 1
 * thread). The CNN's backward stays maxpool.c's: a zeroed plane and one
 * store a window were as fast as vector variants, dx's writes the cost. */
#include "maxpool_k2.h"

#include <string.h>

#include "kernels/isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

int repro_maxpool_k2_avx512_on(void)
{
    return repro_isa_current() == REPRO_ISA_AVX512;
}

/* The first n of 16 lanes (n may be <= 0 or >= 16). */
static inline __mmask16 first_lanes(int n)
{
    return n <= 0 ? 0 : n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

/* take() (maxpool.c) for sixteen windows; `ordered`: no NaN in any lane. */
AVX512 static inline void take16(__m512 v, __m512i off, __m512 *best, __m512i *at, int ordered)
{
    __mmask16 win = _mm512_cmp_ps_mask(v, *best, _CMP_GT_OQ);
    if (!ordered)
        win |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) &
               _mm512_cmp_ps_mask(*best, *best, _CMP_ORD_Q);
    *best = _mm512_mask_blend_ps(win, *best, v);
    *at = _mm512_mask_blend_epi32(win, *at, off);
}

/* nw <= 16 windows whose first cells are r0[even[l]] (l < nw; their
 * offsets in the plane first + even[l]), nf <= 32 floats read from each of
 * the two rows r0 and r0 + W (masked past them: a masked load never
 * faults); the maxima and argmaxes stored at y[l], a[l]. */
AVX512 static void fwd_windows(const float *r0, int W, float *y, int32_t *a, int32_t first,
                               __m512i even, int nw, int nf, int relu)
{
    const float *r1 = r0 + W;
    __mmask16 m0 = first_lanes(nf), m1 = first_lanes(nf - 16);
    __m512 t0 = _mm512_maskz_loadu_ps(m0, r0), t1 = _mm512_maskz_loadu_ps(m1, r0 + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(m0, r1), b1 = _mm512_maskz_loadu_ps(m1, r1 + 16);
    __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    int ordered = (_mm512_cmp_ps_mask(t0, t1, _CMP_UNORD_Q) |
                   _mm512_cmp_ps_mask(b0, b1, _CMP_UNORD_Q)) == 0;
    /* the candidates in take()'s order: (0,0) (0,1) (1,0) (1,1) */
    __m512 best = _mm512_permutex2var_ps(t0, even, t1);
    __m512i base = _mm512_add_epi32(_mm512_set1_epi32(first), even), at = base;
    take16(_mm512_permutex2var_ps(t0, odd, t1), _mm512_add_epi32(base, _mm512_set1_epi32(1)),
           &best, &at, ordered);
    take16(_mm512_permutex2var_ps(b0, even, b1), _mm512_add_epi32(base, _mm512_set1_epi32(W)),
           &best, &at, ordered);
    take16(_mm512_permutex2var_ps(b0, odd, b1), _mm512_add_epi32(base, _mm512_set1_epi32(W + 1)),
           &best, &at, ordered);
    if (relu) { /* repro_hd_relu: kept where > 0 or NaN, else +0 */
        __mmask16 keep = _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ) |
                         _mm512_cmp_ps_mask(best, best, _CMP_UNORD_Q);
        best = _mm512_maskz_mov_ps(keep, best);
    }
    __mmask16 mo = first_lanes(nw);
    _mm512_mask_storeu_ps(y, mo, best);
    _mm512_mask_storeu_epi32(a, mo, at);
}

/* How many output rows one vector takes: each row's windows and the rows
 * between them within the 32 floats two vectors hold (the CNN's 11-wide
 * plane: two rows of 5 windows), else 1. */
static int rows_at_once(int W, int OW)
{
    int q = 1;
    while ((q + 1) * OW <= 16 && q * 2 * W + 2 * OW <= 32)
        q++;
    return q;
}

AVX512 void repro_maxpool_k2_avx512_fwd(const float *x, long planes, int H, int W, float *y,
                                        int32_t *argmax, int relu)
{
    int OH = H / 2, OW = W / 2, q = OW <= 16 ? rows_at_once(W, OW) : 1;
    int32_t first[16]; /* lane l: window l % OW of row l / OW, from the group's first cell */
    for (int l = 0; l < 16; l++)
        first[l] = l < q * OW ? l / OW * 2 * W + l % OW * 2 : 2 * l;
    const __m512i even = _mm512_loadu_si512(first);
    for (long plane = 0; plane < planes; plane++) {
        const float *xp = x + plane * H * W;
        float *yp = y + plane * OH * OW;
        int32_t *ap = argmax + plane * OH * OW;
        for (int oy = 0; oy < OH; oy += q) {
            int rows = OH - oy < q ? OH - oy : q;
            int32_t at = 2 * oy * W;
            for (int ox = 0; ox < OW; ox += 16) { /* one pass unless OW > 16 */
                int nw = q > 1 ? rows * OW : OW - ox < 16 ? OW - ox : 16;
                fwd_windows(xp + at + 2 * ox, W, yp + oy * OW + ox, ap + oy * OW + ox,
                            at + 2 * ox, even, nw, (rows - 1) * 2 * W + 2 * (nw - (rows - 1) * OW),
                            relu);
            }
        }
    }
}
#else
int repro_maxpool_k2_avx512_on(void)
{
    return 0;
}

void repro_maxpool_k2_avx512_fwd(const float *x, long planes, int H, int W, float *y,
                                 int32_t *argmax, int relu)
{
    (void)x, (void)planes, (void)H, (void)W, (void)y, (void)argmax, (void)relu;
}
#endif
