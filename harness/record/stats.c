/* Tensor summary stats (stats.h). float32 has a four-lane loop, vectorized
 * (SSE2, or AVX2 on the wider vector paths of kernels/isa.h), and a pair
 * of tensors interleaved, because it runs every recorded step on the
 * hasher thread; the other dtypes are rare and small, so one plain loop
 * each. */
#include "record/stats.h"

#include "kernels/isa.h"

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
#include <immintrin.h>

/* The vector paths below keep lane l = element i with i % 4 == l, with the
 * same operations in the same order as lane_add (exact float -> double
 * widening, square, adds; the larger magnitude kept by maxpd, which is
 * exactly `m > mx ? m : mx`; magnitudes are never NaN since non-finite
 * elements become +0), so their bits are the scalar lanes'. They run on the
 * hasher thread for every recorded tensor, whose speed bounds a recorded
 * run's: the lanes' add chains are the floor, so nothing else may cost more.
 *
 * Non-finite elements are counted without popcount (a libgcc call per four
 * elements on the baseline ISA): the compare mask (-1 per non-finite lane)
 * is subtracted from four int32 counters, added into *nf every BLOCK groups
 * of four so a counter never overflows. */
enum { BLOCK = 1 << 28 };

/* -1 in each lane whose float is inf or NaN (exponent all ones). */
static inline __m128i nonfinite_mask(__m128 f)
{
    const __m128i expo = _mm_set1_epi32(0x7f800000);
    return _mm_cmpeq_epi32(_mm_and_si128(_mm_castps_si128(f), expo), expo);
}

static inline long count_sum(__m128i c)
{
    int32_t k[4];
    _mm_storeu_si128((__m128i *)(void *)k, c);
    return (long)k[0] + k[1] + k[2] + k[3];
}

/* Elements [0, n & ~3) into lanes (0, 1) and (2, 3) as two SSE2 double pairs;
 * returns how many it took. */
static size_t lanes_sse2(const float *x, size_t n, lane_acc *a, long *nf)
{
    __m128d q01 = _mm_setzero_pd(), q23 = q01, s01 = q01, s23 = q01, m01 = q01, m23 = q01;
    const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
    size_t i = 0;
    while (i + 4 <= n) {
        size_t groups = (n - i) / 4 < BLOCK ? (n - i) / 4 : BLOCK, end = i + 4 * groups;
        __m128i bad = _mm_setzero_si128();
        for (; i < end; i += 4) {
            __m128 f = _mm_loadu_ps(x + i);
            __m128i nonfin = nonfinite_mask(f);
            bad = _mm_sub_epi32(bad, nonfin);
            f = _mm_andnot_ps(_mm_castsi128_ps(nonfin), f); /* a non-finite element adds +0 */
            __m128d v01 = _mm_cvtps_pd(f), v23 = _mm_cvtps_pd(_mm_movehl_ps(f, f));
            q01 = _mm_add_pd(q01, _mm_mul_pd(v01, v01));
            q23 = _mm_add_pd(q23, _mm_mul_pd(v23, v23));
            s01 = _mm_add_pd(s01, v01);
            s23 = _mm_add_pd(s23, v23);
            m01 = _mm_max_pd(_mm_and_pd(v01, abs), m01);
            m23 = _mm_max_pd(_mm_and_pd(v23, abs), m23);
        }
        *nf += count_sum(bad);
    }
    double q[4], s[4], m[4];
    _mm_storeu_pd(q, q01), _mm_storeu_pd(q + 2, q23);
    _mm_storeu_pd(s, s01), _mm_storeu_pd(s + 2, s23);
    _mm_storeu_pd(m, m01), _mm_storeu_pd(m + 2, m23);
    for (int l = 0; l < 4; l++)
        a[l] = (lane_acc){q[l], s[l], m[l]};
    return i;
}

/* The same with all four lanes in one AVX register (4 doubles), in runs:
 * a run of up to RUN elements first goes without the non-finite mask, and
 * is redone with it only if its squares' sums come out inf or NaN, which
 * happens exactly when the run held an inf or NaN (a finite float's square
 * is at most ~1.2e77, so no sum of them overflows a double). Either way
 * every lane sees the same adds in the same order as lane_add. The max is
 * taken on the floats' magnitudes (widening is exact, so the larger float
 * is the larger double). target("avx2") enables no FMA, and the multiply
 * and add are written apart, so each square is rounded before its add.
 *
 * Four lanes of one tensor are one add chain each, so a single tensor runs
 * at one element per add latency; two tensors interleaved (the pair below)
 * overlap their chains, which is where the recorder's time goes. The loads
 * are prefetched a few KiB ahead: the recorder reads tensors the training
 * thread just wrote on the other core, and the add chains leave the loads
 * too few in flight to hide that latency. */
enum { RUN = 256, PREFETCH_BYTES = 4096 };

typedef struct {
    __m256d q, s;
    __m128 m; /* lane l's largest magnitude so far, as a float */
} vlanes;

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline vlanes vlanes_load(const lane_acc *a)
{
    vlanes v;
    v.q = _mm256_setr_pd(a[0].l2, a[1].l2, a[2].l2, a[3].l2);
    v.s = _mm256_setr_pd(a[0].sum, a[1].sum, a[2].sum, a[3].sum);
    /* Exact: every mx so far is a float's magnitude (or 0). */
    v.m = _mm_setr_ps((float)a[0].mx, (float)a[1].mx, (float)a[2].mx, (float)a[3].mx);
    return v;
}

AVX2 static inline void vlanes_store(vlanes v, lane_acc *a)
{
    double q[4], s[4];
    float m[4];
    _mm256_storeu_pd(q, v.q), _mm256_storeu_pd(s, v.s), _mm_storeu_ps(m, v.m);
    for (int l = 0; l < 4; l++)
        a[l] = (lane_acc){q[l], s[l], m[l]};
}

/* Elements x[0..3] into the lanes; they must be finite (or masked to +0). */
AVX2 static inline void vlanes_add(vlanes *a, __m128 f)
{
    const __m128 abs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m256d v = _mm256_cvtps_pd(f);
    a->q = _mm256_add_pd(a->q, _mm256_mul_pd(v, v));
    a->s = _mm256_add_pd(a->s, v);
    a->m = _mm_max_ps(a->m, _mm_and_ps(f, abs));
}

AVX2 static inline void prefetch_ahead(const float *x)
{
    _mm_prefetch((const char *)((uintptr_t)x + PREFETCH_BYTES), _MM_HINT_T0);
}

AVX2 static inline int vlanes_finite(const vlanes *a)
{
    __m256d z = _mm256_sub_pd(a->q, a->q); /* 0, or NaN where q is inf or NaN */
    return _mm256_movemask_pd(_mm256_cmp_pd(z, z, _CMP_EQ_OQ)) == 0xF;
}

/* A run (len a multiple of 4, at most RUN) with the mask: each non-finite
 * element adds +0 and is counted. */
AVX2 static void vlanes_run_masked(vlanes *a, const float *x, size_t len, long *nf)
{
    __m128i bad = _mm_setzero_si128();
    for (size_t i = 0; i < len; i += 4) {
        __m128 f = _mm_loadu_ps(x + i);
        __m128i nonfin = nonfinite_mask(f);
        bad = _mm_sub_epi32(bad, nonfin);
        vlanes_add(a, _mm_andnot_ps(_mm_castsi128_ps(nonfin), f));
    }
    *nf += count_sum(bad);
}

/* A run unmasked, redone masked if it held a non-finite element. */
AVX2 static inline void vlanes_run(vlanes *a, const float *x, size_t len, long *nf)
{
    vlanes before = *a;
    for (size_t i = 0; i < len; i += 4) {
        if ((i & 15) == 0)
            prefetch_ahead(x + i);
        vlanes_add(a, _mm_loadu_ps(x + i));
    }
    if (!vlanes_finite(a)) {
        *a = before;
        vlanes_run_masked(a, x, len, nf);
    }
}

/* Elements [0, n & ~3) into the lanes a (which hold the elements before,
 * if any); returns how many it took. */
AVX2 static size_t lanes_avx2(const float *x, size_t n, lane_acc *a, long *nf)
{
    vlanes v = vlanes_load(a);
    size_t i = 0, end = n & ~(size_t)3;
    while (i < end) {
        size_t len = end - i < RUN ? end - i : RUN;
        vlanes_run(&v, x + i, len, nf);
        i += len;
    }
    vlanes_store(v, a);
    return i;
}

/* Elements [0, n) of x and of y (n a multiple of 4), the two tensors' runs
 * interleaved: each tensor's lanes get exactly lanes_avx2's adds. */
AVX2 static void lanes_avx2_pair(const float *x, const float *y, size_t n, lane_acc *ax,
                                 lane_acc *ay, long *nfx, long *nfy)
{
    vlanes a = vlanes_load(ax), b = vlanes_load(ay);
    for (size_t i = 0; i < n;) {
        size_t len = n - i < RUN ? n - i : RUN;
        vlanes a0 = a, b0 = b;
        for (size_t j = i; j < i + len; j += 4) {
            if ((j & 15) == 0)
                prefetch_ahead(x + j), prefetch_ahead(y + j);
            vlanes_add(&a, _mm_loadu_ps(x + j));
            vlanes_add(&b, _mm_loadu_ps(y + j));
        }
        if (!vlanes_finite(&a)) {
            a = a0;
            vlanes_run_masked(&a, x + i, len, nfx);
        }
        if (!vlanes_finite(&b)) {
            b = b0;
            vlanes_run_masked(&b, y + i, len, nfy);
        }
        i += len;
    }
    vlanes_store(a, ax);
    vlanes_store(b, ay);
}

/* The kernels' vector path setting (kernels/isa.h: REPRO_ISA, or the best
 * the CPU has) decides here too, so one switch forces every vector path
 * and the tests can run each. The AVX2 loop also serves the AVX-512 path
 * (4 double lanes fill one 256-bit register; every AVX-512 CPU has AVX2),
 * checked rather than assumed. */
static int pair_path(void)
{
    return repro_isa_current() != REPRO_ISA_SSE2 && repro_isa_supported(REPRO_ISA_AVX2);
}

static size_t lanes_vector(const float *x, size_t n, lane_acc *a, long *nf)
{
    return pair_path() ? lanes_avx2(x, n, a, nf) : lanes_sse2(x, n, a, nf);
}
#endif

/* The elements [i, n) the vector lanes left (fewer than four after a
 * vector path, all of them without one) into the lanes a, then the lanes
 * combined. */
static void finish_f32(const float *x, size_t i, size_t n, const lane_acc *a, long nf,
                       repro_tensor_stats *out)
{
    /* Four named lanes (registers, not an indexed array: the compiler keeps
     * them apart and the four chains overlap). */
    lane_acc a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    for (; i + 4 <= n; i += 4) {
        lane_add(&a0, x[i], &nf);
        lane_add(&a1, x[i + 1], &nf);
        lane_add(&a2, x[i + 2], &nf);
        lane_add(&a3, x[i + 3], &nf);
    }
    lane_acc *tail[3] = {&a0, &a1, &a2};
    for (size_t j = 0; i < n; i++, j++)
        lane_add(tail[j], x[i], &nf);
    out->l2 = sqrt((a0.l2 + a1.l2) + (a2.l2 + a3.l2));
    out->sum = (a0.sum + a1.sum) + (a2.sum + a3.sum);
    double m01 = a0.mx > a1.mx ? a0.mx : a1.mx, m23 = a2.mx > a3.mx ? a2.mx : a3.mx;
    out->max_abs = m01 > m23 ? m01 : m23;
    out->nonfinite = nf;
}

static void stats_f32(const float *x, size_t n, repro_tensor_stats *out)
{
    lane_acc a[4] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    long nf = 0;
    size_t i = 0;
#if defined(__SSE2__)
    i = lanes_vector(x, n, a, &nf);
#endif
    finish_f32(x, i, n, a, nf, out);
}

void repro_tensor_stats_f32_pair(const float *x, size_t nx, repro_tensor_stats *sx,
                                 const float *y, size_t ny, repro_tensor_stats *sy)
{
#if defined(__SSE2__)
    if (pair_path()) {
        lane_acc a[4] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, b[4];
        memcpy(b, a, sizeof b);
        long nfx = 0, nfy = 0;
        size_t both = (nx < ny ? nx : ny) & ~(size_t)3; /* a multiple of 4: lanes line up */
        lanes_avx2_pair(x, y, both, a, b, &nfx, &nfy);
        size_t ix = both + lanes_avx2(x + both, nx - both, a, &nfx);
        size_t iy = both + lanes_avx2(y + both, ny - both, b, &nfy);
        finish_f32(x, ix, nx, a, nfx, sx);
        finish_f32(y, iy, ny, b, nfy, sy);
        return;
    }
#endif
    stats_f32(x, nx, sx);
    stats_f32(y, ny, sy);
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
        repro_tensor_stats st;
        stats_f32(data, nbytes / 4, &st);
        *l2 = st.l2, *sum = st.sum, *max_abs = st.max_abs, *nonfinite = (long)st.nonfinite;
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
