/* Tensor summary stats (stats.h). float32 has a four-lane loop because it
 * runs every recorded step on the hasher thread; the other dtypes are rare
 * and small, so one plain loop each. */
#include "record/stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Element i goes to accumulator lane i % 4, lanes are combined as
 * (0+1)+(2+3). Four independent chains instead of one make this several
 * times faster while the order stays written in the code. A non-finite
 * element adds 0 to its lane: the same as skipping it. */
typedef struct {
    double l2, sum, mx;
} lane_acc;

static inline void lane_add(lane_acc *a, float f, long *nonfinite)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    int finite = (bits & 0x7f800000u) != 0x7f800000u;
    double v = finite ? (double)f : 0.0;
    *nonfinite += !finite;
    a->l2 += v * v;
    a->sum += v;
    double m = fabs(v);
    a->mx = m > a->mx ? m : a->mx;
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* Lanes (0, 1) and (2, 3) as two SSE2 double pairs: lane l still gets
 * element i with i % 4 == l, with the same operations in the same order
 * (exact float -> double widening, square, adds; max of magnitudes, which
 * are never NaN since non-finite elements become +0), so the bits are the
 * scalar lanes'. Several times faster on the hasher thread, whose speed
 * bounds a recorded run's. */
static size_t lanes_sse2(const float *x, size_t n, lane_acc *a, long *nf)
{
    __m128d q01 = _mm_setzero_pd(), q23 = q01, s01 = q01, s23 = q01, m01 = q01, m23 = q01;
    const __m128 expo = _mm_castsi128_ps(_mm_set1_epi32(0x7f800000));
    const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
    long bad = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m128 f = _mm_loadu_ps(x + i);
        __m128 nonfin = _mm_castsi128_ps(
            _mm_cmpeq_epi32(_mm_castps_si128(_mm_and_ps(f, expo)), _mm_castps_si128(expo)));
        bad += __builtin_popcount((unsigned)_mm_movemask_ps(nonfin));
        f = _mm_andnot_ps(nonfin, f); /* a non-finite element adds +0 */
        __m128d v01 = _mm_cvtps_pd(f), v23 = _mm_cvtps_pd(_mm_movehl_ps(f, f));
        q01 = _mm_add_pd(q01, _mm_mul_pd(v01, v01));
        q23 = _mm_add_pd(q23, _mm_mul_pd(v23, v23));
        s01 = _mm_add_pd(s01, v01);
        s23 = _mm_add_pd(s23, v23);
        __m128d a01 = _mm_and_pd(v01, abs), a23 = _mm_and_pd(v23, abs);
        /* m > mx ? m : mx, as lane_add: take the new one only if larger */
        __m128d g01 = _mm_cmpgt_pd(a01, m01), g23 = _mm_cmpgt_pd(a23, m23);
        m01 = _mm_or_pd(_mm_and_pd(g01, a01), _mm_andnot_pd(g01, m01));
        m23 = _mm_or_pd(_mm_and_pd(g23, a23), _mm_andnot_pd(g23, m23));
    }
    double q[4], s[4], m[4];
    _mm_storeu_pd(q, q01), _mm_storeu_pd(q + 2, q23);
    _mm_storeu_pd(s, s01), _mm_storeu_pd(s + 2, s23);
    _mm_storeu_pd(m, m01), _mm_storeu_pd(m + 2, m23);
    for (int l = 0; l < 4; l++)
        a[l] = (lane_acc){q[l], s[l], m[l]};
    *nf += bad;
    return i;
}
#endif

static void stats_f32(const float *x, size_t n, double *l2, double *sum, double *max_abs,
                      long *nonfinite)
{
    /* Four named lanes (registers, not an indexed array: the compiler keeps
     * them apart and the four chains overlap). */
    lane_acc a0 = {0, 0, 0}, a1 = {0, 0, 0}, a2 = {0, 0, 0}, a3 = {0, 0, 0};
    long nf = 0;
    size_t i = 0;
#if defined(__SSE2__)
    lane_acc a[4];
    i = lanes_sse2(x, n, a, &nf);
    a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#endif
    for (; i + 4 <= n; i += 4) {
        lane_add(&a0, x[i], &nf);
        lane_add(&a1, x[i + 1], &nf);
        lane_add(&a2, x[i + 2], &nf);
        lane_add(&a3, x[i + 3], &nf);
    }
    lane_acc *tail[3] = {&a0, &a1, &a2};
    for (size_t j = 0; i < n; i++, j++)
        lane_add(tail[j], x[i], &nf);
    *l2 = sqrt((a0.l2 + a1.l2) + (a2.l2 + a3.l2));
    *sum = (a0.sum + a1.sum) + (a2.sum + a3.sum);
    double m01 = a0.mx > a1.mx ? a0.mx : a1.mx, m23 = a2.mx > a3.mx ? a2.mx : a3.mx;
    *max_abs = m01 > m23 ? m01 : m23;
    *nonfinite = nf;
}

/* Half-precision values widened exactly to float. */
static float from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    float f;
    if (exp == 31) {
        uint32_t bits = sign | 0x7f800000u | man << 13;
        memcpy(&f, &bits, 4);
        return f;
    }
    f = exp ? ldexpf((float)(man | 1024), (int)exp - 25) : ldexpf((float)man, -24);
    return sign ? -f : f;
}

static float from_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* One element as a double; *finite = 0 for inf and NaN. */
static double element(const char *dtype, const unsigned char *p, size_t i, int *finite)
{
    double v;
    *finite = 1;
    if (!strcmp(dtype, "f64")) {
        memcpy(&v, p + 8 * i, 8);
        *finite = isfinite(v);
        return v;
    }
    if (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16")) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        float f = dtype[0] == 'f' ? from_f16(h) : from_bf16(h);
        *finite = isfinite(f);
        return f;
    }
    if (!strcmp(dtype, "i32")) {
        int32_t x;
        memcpy(&x, p + 4 * i, 4);
        return x;
    }
    if (!strcmp(dtype, "u32")) {
        uint32_t x;
        memcpy(&x, p + 4 * i, 4);
        return x;
    }
    if (!strcmp(dtype, "i64")) {
        int64_t x;
        memcpy(&x, p + 8 * i, 8);
        return (double)x;
    }
    return p[i]; /* u8 */
}

static size_t elem_size(const char *dtype)
{
    if (!strcmp(dtype, "f64") || !strcmp(dtype, "i64"))
        return 8;
    if (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16"))
        return 2;
    if (!strcmp(dtype, "u8"))
        return 1;
    if (!strcmp(dtype, "i32") || !strcmp(dtype, "u32"))
        return 4;
    return 0;
}

void repro_tensor_stats_compute(const char *dtype, const void *data, size_t nbytes, double *l2,
                                double *sum, double *max_abs, long *nonfinite)
{
    if (!strcmp(dtype, "f32")) {
        stats_f32(data, nbytes / 4, l2, sum, max_abs, nonfinite);
        return;
    }
    double q = 0, s = 0, mx = 0;
    long nf = 0;
    size_t es = elem_size(dtype), n = es ? nbytes / es : 0;
    for (size_t i = 0; i < n; i++) {
        int finite;
        double v = element(dtype, data, i, &finite);
        if (!finite) {
            nf++;
            continue;
        }
        q += v * v;
        s += v;
        mx = fabs(v) > mx ? fabs(v) : mx;
    }
    *l2 = sqrt(q);
    *sum = s;
    *max_abs = mx;
    *nonfinite = nf;
}
