/* Tests for the convolution algorithms (kernels/cpu/conv_algos.h): each one
 * agrees with direct within a stated rounding bound, really rounds
 * differently from direct (else benchmark mode would show nothing), is
 * deterministic and thread-count invariant bit for bit, and the
 * name/eligibility/workspace table holds. Workspaces are allocated at exactly
 * the advertised size (so ASan catches an overrun) and filled with NaN before
 * each call (so a result that read stale scratch would show). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/conv_algos.h"
#include "kernels/cpu/philox.h"

static float *falloc(long n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* Uniform in [-1, 1) from a seeded Philox stream. */
static float *frand_new(long n, uint64_t seed)
{
    float *p = falloc(n);
    repro_rng rng;
    repro_rng_init(&rng, seed);
    for (long i = 0; i < n; i++)
        p[i] = -1.0f + 2.0f * repro_rng_unit(&rng);
    return p;
}

static long conv_xn(const repro_conv_shape *s) { return (long)s->B * s->C * s->H * s->W; }
static long conv_wn(const repro_conv_shape *s) { return (long)s->K * s->C * s->R * s->R; }
static long conv_yn(const repro_conv_shape *s)
{
    return (long)s->B * s->K * repro_conv_oh(s) * repro_conv_ow(s);
}

/* Runs algorithm a with a fresh, NaN-filled workspace of exactly the
 * advertised size. */
static void run_algo(repro_pool *pool, repro_conv_algo a, const repro_conv_shape *s,
                     const float *x, const float *w, const float *b, float *y)
{
    long n = (long)repro_conv_workspace_floats(a, s);
    float *ws = falloc(n);
    for (long i = 0; i < n; i++)
        ws[i] = NAN;
    repro_conv2d_forward_algo(pool, a, s, x, w, b, y, n > 0 ? ws : NULL);
    free(ws);
}

/* bound[i] = |b[k]| + sum over all (c, ry, rx) of |w * x| (padded x = 0),
 * in double: the scale of the rounding error of any summation order. */
static void abs_bound(const repro_conv_shape *s, const float *x, const float *w, const float *b,
                      double *bound)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (int n = 0; n < s->B; n++)
        for (int k = 0; k < s->K; k++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    double acc = b ? fabs((double)b[k]) : 0.0;
                    for (int c = 0; c < s->C; c++)
                        for (int ry = 0; ry < s->R; ry++)
                            for (int rx = 0; rx < s->R; rx++) {
                                int iy = oy + ry - s->pad, ix = ox + rx - s->pad;
                                if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W)
                                    continue;
                                double wv = w[((k * s->C + c) * s->R + ry) * s->R + rx];
                                double xv = x[((n * s->C + c) * s->H + iy) * s->W + ix];
                                acc += fabs(wv * xv);
                            }
                    bound[((n * s->K + k) * OH + oy) * OW + ox] = acc;
                }
}

/* Agreement shapes: the CNN's two conv shapes at pad 0 and 1, and odd ones:
 * odd output sizes (partial Winograd tiles on both edges), K not a multiple
 * of 4 and OH*OW not of 8 (GEMM tails), C*R*R not a multiple of 16 and over
 * several blocks, wide padding, R = 1 and R = 5 (im2col only). */
static const repro_conv_shape shapes[] = {
    {.B = 3, .C = 1, .H = 28, .W = 28, .K = 8, .R = 3, .pad = 0},
    {.B = 3, .C = 1, .H = 28, .W = 28, .K = 8, .R = 3, .pad = 1},
    {.B = 3, .C = 8, .H = 13, .W = 13, .K = 16, .R = 3, .pad = 0},
    {.B = 3, .C = 8, .H = 13, .W = 13, .K = 16, .R = 3, .pad = 1},
    {.B = 3, .C = 3, .H = 7, .W = 9, .K = 5, .R = 3, .pad = 2},
    {.B = 2, .C = 5, .H = 6, .W = 5, .K = 3, .R = 3, .pad = 0},
    {.B = 3, .C = 20, .H = 9, .W = 11, .K = 6, .R = 3, .pad = 1},
    {.B = 1, .C = 2, .H = 3, .W = 3, .K = 2, .R = 3, .pad = 0},
    {.B = 2, .C = 4, .H = 10, .W = 8, .K = 7, .R = 5, .pad = 2},
    {.B = 2, .C = 17, .H = 5, .W = 6, .K = 9, .R = 1, .pad = 0},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Tolerance: |algo - direct| <= 1e-5 * (sum |w*x| + |b|) per element. Any
 * float summation order of n terms is within about n * 2^-24 of the exact
 * sum relative to that scale, and Winograd's transforms add a small constant
 * factor (each transformed value is a sum of at most 4 inputs / 3 weights);
 * with n <= 180 here the worst case stays below 1e-5 while a wrong term,
 * index or transform (error ~ |w*x| ~ the scale itself) exceeds it by far. */
START_TEST(test_agrees_with_direct)
{
    for (size_t i = 0; i < NSHAPES; i++) {
        const repro_conv_shape *s = &shapes[i];
        float *x = frand_new(conv_xn(s), 10 + i), *w = frand_new(conv_wn(s), 20 + i);
        float *b = frand_new(s->K, 30 + i);
        const float *bias = i % 3 == 2 ? NULL : b;
        float *yd = falloc(conv_yn(s)), *ya = falloc(conv_yn(s));
        double *bound = malloc((size_t)conv_yn(s) * sizeof *bound);
        ck_assert_ptr_nonnull(bound);
        repro_conv2d_forward(NULL, s, x, w, bias, yd);
        abs_bound(s, x, w, bias, bound);
        for (int a = REPRO_CONV_IM2COL; a < REPRO_CONV_NALGOS; a++) {
            if (!repro_conv_algo_eligible((repro_conv_algo)a, s))
                continue;
            run_algo(NULL, (repro_conv_algo)a, s, x, w, bias, ya);
            for (long j = 0; j < conv_yn(s); j++) {
                double d = fabs((double)ya[j] - (double)yd[j]);
                ck_assert_msg(d <= 1e-5 * bound[j],
                              "%s, shape %zu, element %ld: %.9g vs direct %.9g (bound %.3g)",
                              repro_conv_algo_name((repro_conv_algo)a), i, j, (double)ya[j],
                              (double)yd[j], 1e-5 * bound[j]);
            }
        }
        free(x), free(w), free(b), free(yd), free(ya), free(bound);
    }
}
END_TEST

/* ---- the documented orders, as plain scalar loops ---------------------- */

static float xval(const repro_conv_shape *s, const float *x, int n, int c, int iy, int ix)
{
    if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W)
        return 0.0f;
    return x[((n * s->C + c) * s->H + iy) * s->W + ix];
}

/* im2col as conv_algos.c states it: acc = b[k]; per block of 16 q's,
 * t = +0 plus the products in ascending q; acc += t. */
static void im2col_ref(const repro_conv_shape *s, const float *x, const float *w, const float *b,
                       float *y)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s), R = s->R, Q = s->C * R * R;
    for (int n = 0; n < s->B; n++)
        for (int k = 0; k < s->K; k++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    float acc = b ? b[k] : 0.0f;
                    for (int q0 = 0; q0 < Q; q0 += 16) {
                        float t = 0.0f;
                        for (int q = q0; q < Q && q < q0 + 16; q++) {
                            int c = q / (R * R), ry = q / R % R, rx = q % R;
                            float prod = w[k * Q + q] *
                                         xval(s, x, n, c, oy + ry - s->pad, ox + rx - s->pad);
                            t = t + prod;
                        }
                        acc = acc + t;
                    }
                    y[((n * s->K + k) * OH + oy) * OW + ox] = acc;
                }
}

/* Winograd F(2x2, 3x3) as conv_algos.c states it, one tile at a time. */
static void wino_ref(const repro_conv_shape *s, const float *x, const float *w, const float *b,
                     float *y)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (int n = 0; n < s->B; n++)
        for (int k = 0; k < s->K; k++)
            for (int ty = 0; 2 * ty < OH; ty++)
                for (int tx = 0; 2 * tx < OW; tx++) {
                    float m[16] = {0};
                    for (int c = 0; c < s->C; c++) {
                        const float *g = w + (k * s->C + c) * 9;
                        float gt[4][3], u[4][4], d[4][4], dt[4][4], v[4][4];
                        for (int j = 0; j < 3; j++) { /* G g */
                            gt[0][j] = g[j];
                            gt[1][j] = ((g[j] + g[3 + j]) + g[6 + j]) * 0.5f;
                            gt[2][j] = ((g[j] - g[3 + j]) + g[6 + j]) * 0.5f;
                            gt[3][j] = g[6 + j];
                        }
                        for (int i = 0; i < 4; i++) { /* (G g) G^T */
                            u[i][0] = gt[i][0];
                            u[i][1] = ((gt[i][0] + gt[i][1]) + gt[i][2]) * 0.5f;
                            u[i][2] = ((gt[i][0] - gt[i][1]) + gt[i][2]) * 0.5f;
                            u[i][3] = gt[i][2];
                        }
                        for (int i = 0; i < 4; i++)
                            for (int j = 0; j < 4; j++)
                                d[i][j] = xval(s, x, n, c, 2 * ty - s->pad + i,
                                               2 * tx - s->pad + j);
                        for (int j = 0; j < 4; j++) { /* B^T d */
                            dt[0][j] = d[0][j] - d[2][j];
                            dt[1][j] = d[1][j] + d[2][j];
                            dt[2][j] = d[2][j] - d[1][j];
                            dt[3][j] = d[1][j] - d[3][j];
                        }
                        for (int i = 0; i < 4; i++) { /* (B^T d) B */
                            v[i][0] = dt[i][0] - dt[i][2];
                            v[i][1] = dt[i][1] + dt[i][2];
                            v[i][2] = dt[i][2] - dt[i][1];
                            v[i][3] = dt[i][1] - dt[i][3];
                        }
                        for (int e = 0; e < 16; e++) {
                            float prod = u[e / 4][e % 4] * v[e / 4][e % 4];
                            m[e] = m[e] + prod;
                        }
                    }
                    float at[2][4], o[2][2];
                    for (int j = 0; j < 4; j++) { /* A^T M */
                        at[0][j] = (m[j] + m[4 + j]) + m[8 + j];
                        at[1][j] = (m[4 + j] - m[8 + j]) - m[12 + j];
                    }
                    for (int i = 0; i < 2; i++) { /* (A^T M) A */
                        o[i][0] = (at[i][0] + at[i][1]) + at[i][2];
                        o[i][1] = (at[i][1] - at[i][2]) - at[i][3];
                    }
                    float init = b ? b[k] : 0.0f;
                    for (int i = 0; i < 2 && 2 * ty + i < OH; i++)
                        for (int j = 0; j < 2 && 2 * tx + j < OW; j++)
                            y[((n * s->K + k) * OH + 2 * ty + i) * OW + 2 * tx + j] =
                                init + o[i][j];
                }
}

/* The vectorized kernels give exactly the bits of the documented order
 * (so that order, not an accident of the vector code, is the contract). */
START_TEST(test_bitwise_vs_documented_order)
{
    for (size_t i = 0; i < NSHAPES; i++) {
        const repro_conv_shape *s = &shapes[i];
        float *x = frand_new(conv_xn(s), 110 + i), *w = frand_new(conv_wn(s), 120 + i);
        float *b = frand_new(s->K, 130 + i);
        const float *bias = i % 3 == 1 ? NULL : b;
        float *ya = falloc(conv_yn(s)), *yr = falloc(conv_yn(s));
        run_algo(NULL, REPRO_CONV_IM2COL, s, x, w, bias, ya);
        im2col_ref(s, x, w, bias, yr);
        ck_assert_msg(memcmp(ya, yr, (size_t)conv_yn(s) * sizeof *ya) == 0, "im2col shape %zu", i);
        if (repro_conv_algo_eligible(REPRO_CONV_WINOGRAD, s)) {
            run_algo(NULL, REPRO_CONV_WINOGRAD, s, x, w, bias, ya);
            wino_ref(s, x, w, bias, yr);
            ck_assert_msg(memcmp(ya, yr, (size_t)conv_yn(s) * sizeof *ya) == 0,
                          "winograd shape %zu", i);
        }
        free(x), free(w), free(b), free(ya), free(yr);
    }
}
END_TEST

/* Benchmark mode is only worth demonstrating if the algorithms' bits really
 * differ: on random data some elements of each must differ from direct. */
START_TEST(test_rounds_differently)
{
    const repro_conv_shape s = {.B = 3, .C = 8, .H = 13, .W = 13, .K = 16, .R = 3, .pad = 1};
    float *x = frand_new(conv_xn(&s), 41), *w = frand_new(conv_wn(&s), 42), *b = frand_new(s.K, 43);
    float *yd = falloc(conv_yn(&s)), *ya = falloc(conv_yn(&s));
    repro_conv2d_forward(NULL, &s, x, w, b, yd);
    for (int a = REPRO_CONV_IM2COL; a < REPRO_CONV_NALGOS; a++) {
        run_algo(NULL, (repro_conv_algo)a, &s, x, w, b, ya);
        long differ = 0;
        for (long j = 0; j < conv_yn(&s); j++)
            differ += memcmp(&ya[j], &yd[j], sizeof ya[j]) != 0;
        ck_assert_msg(differ > 0, "%s gives direct's bits everywhere",
                      repro_conv_algo_name((repro_conv_algo)a));
    }
    /* and from each other */
    float *yi = falloc(conv_yn(&s));
    run_algo(NULL, REPRO_CONV_IM2COL, &s, x, w, b, yi);
    ck_assert(memcmp(yi, ya, (size_t)conv_yn(&s) * sizeof *yi) != 0);
    free(x), free(w), free(b), free(yd), free(ya), free(yi);
}
END_TEST

/* 1, 2 and 3 threads and a repeated call: memcmp-identical, per algorithm. */
START_TEST(test_deterministic_and_thread_invariant)
{
    static const repro_conv_shape tshapes[] = {
        {.B = 3, .C = 8, .H = 13, .W = 13, .K = 16, .R = 3, .pad = 1},
        {.B = 5, .C = 3, .H = 7, .W = 9, .K = 5, .R = 3, .pad = 2},
    };
    repro_pool *pools[3];
    for (int t = 0; t < 3; t++)
        ck_assert_int_eq(repro_pool_new(&pools[t], t + 1), 0);
    for (size_t i = 0; i < sizeof tshapes / sizeof tshapes[0]; i++) {
        const repro_conv_shape *s = &tshapes[i];
        float *x = frand_new(conv_xn(s), 50 + i), *w = frand_new(conv_wn(s), 60 + i);
        float *b = frand_new(s->K, 70 + i);
        float *ref = falloc(conv_yn(s)), *y = falloc(conv_yn(s));
        for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
            const char *name = repro_conv_algo_name((repro_conv_algo)a);
            run_algo(pools[0], (repro_conv_algo)a, s, x, w, b, ref);
            for (int t = 0; t < 3; t++) {
                memset(y, 0xA5, (size_t)conv_yn(s) * sizeof *y);
                run_algo(pools[t], (repro_conv_algo)a, s, x, w, b, y);
                ck_assert_msg(memcmp(y, ref, (size_t)conv_yn(s) * sizeof *y) == 0,
                              "%s, shape %zu, %d threads: bits differ", name, i, t + 1);
            }
        }
        free(x), free(w), free(b), free(ref), free(y);
    }
    for (int t = 0; t < 3; t++)
        repro_pool_free(pools[t]);
}
END_TEST

START_TEST(test_eligibility_names_workspace)
{
    repro_conv_shape s = {.B = 2, .C = 3, .H = 9, .W = 9, .K = 4, .R = 3, .pad = 1};
    for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
        ck_assert(repro_conv_algo_eligible((repro_conv_algo)a, &s));
        ck_assert_int_eq(repro_conv_algo_from_name(repro_conv_algo_name((repro_conv_algo)a)), a);
    }
    ck_assert_str_eq(repro_conv_algo_name(REPRO_CONV_DIRECT), "direct");
    ck_assert_str_eq(repro_conv_algo_name(REPRO_CONV_IM2COL), "im2col");
    ck_assert_str_eq(repro_conv_algo_name(REPRO_CONV_WINOGRAD), "winograd");
    ck_assert_str_eq(repro_conv_algo_name(REPRO_CONV_NALGOS), "?");
    ck_assert_int_eq(repro_conv_algo_from_name("fft"), -1);
    ck_assert_int_eq(repro_conv_algo_from_name(""), -1);
    ck_assert_int_eq(repro_conv_algo_from_name(NULL), -1);
    ck_assert(!repro_conv_algo_eligible(REPRO_CONV_NALGOS, &s));
    ck_assert_uint_eq(repro_conv_workspace_floats(REPRO_CONV_DIRECT, &s), 0);
    ck_assert_uint_eq(repro_conv_workspace_floats(REPRO_CONV_IM2COL, &s), 2 * 27 * 81);
    /* K*C*16 filters + B * (C+1) * 16 * 5*5 tiles */
    ck_assert_uint_eq(repro_conv_workspace_floats(REPRO_CONV_WINOGRAD, &s),
                      4 * 3 * 16 + 2 * 4 * 16 * 25);
    for (int r = 1; r <= 7; r += 2) {
        s.R = r;
        s.pad = r / 2;
        ck_assert(repro_conv_algo_eligible(REPRO_CONV_DIRECT, &s));
        ck_assert(repro_conv_algo_eligible(REPRO_CONV_IM2COL, &s));
        ck_assert_int_eq(repro_conv_algo_eligible(REPRO_CONV_WINOGRAD, &s), r == 3);
    }
    /* an ineligible pick computes direct rather than leaving y unwritten */
    s.R = 5;
    s.pad = 2;
    float *x = frand_new(conv_xn(&s), 81), *w = frand_new(conv_wn(&s), 82);
    float *yd = falloc(conv_yn(&s)), *ya = falloc(conv_yn(&s));
    repro_conv2d_forward(NULL, &s, x, w, NULL, yd);
    repro_conv2d_forward_algo(NULL, REPRO_CONV_WINOGRAD, &s, x, w, NULL, ya, NULL);
    ck_assert(memcmp(ya, yd, (size_t)conv_yn(&s) * sizeof *ya) == 0);
    free(x), free(w), free(yd), free(ya);
}
END_TEST

Suite *conv_algos_suite(void)
{
    Suite *s = suite_create("conv_algos");
    TCase *tc = tcase_create("conv_algos");
    tcase_add_test(tc, test_agrees_with_direct);
    tcase_add_test(tc, test_bitwise_vs_documented_order);
    tcase_add_test(tc, test_rounds_differently);
    tcase_add_test(tc, test_deterministic_and_thread_invariant);
    tcase_add_test(tc, test_eligibility_names_workspace);
    suite_add_tcase(s, tc);
    return s;
}
