/* Tests for the CPU kernels (kernels/cpu/ops.h): each kernel against a plain
 * reference, finite differences for every backward pass, thread-count
 * invariance by memcmp, and the RNG/tie/special-value rules. Where ops.h fixes
 * the summation order the reference loop is written in that order and the
 * comparison is bitwise (memcmp); elsewhere each check states its tolerance
 * and why. Tests may use libm (only the kernels must not). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/philox.h"
#include "kernels/shared/mathx.h"
#include "testutil.h"

/* ---- helpers -------------------------------------------------------------- */

/* Uniform in [lo, hi) from a seeded Philox stream (never libc rand()). */
static void fill(float *a, long n, uint64_t seed, float lo, float hi)
{
    repro_rng rng;
    repro_rng_init(&rng, seed);
    for (long i = 0; i < n; i++)
        a[i] = lo + (hi - lo) * repro_rng_unit(&rng);
}

static float *falloc(long n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *frand_new(long n, uint64_t seed)
{
    float *p = falloc(n);
    fill(p, n, seed, -1.0f, 1.0f);
    return p;
}

static float *fdup(const float *a, long n)
{
    float *p = falloc(n);
    memcpy(p, a, (size_t)n * sizeof *p);
    return p;
}

#define NPOOLS 3
/* pools[t] has t+1 threads */
static void pools_new(repro_pool *pools[NPOOLS])
{
    for (int t = 0; t < NPOOLS; t++)
        ck_assert_int_eq(repro_pool_new(&pools[t], t + 1), 0);
}

static void pools_free(repro_pool *pools[NPOOLS])
{
    for (int t = 0; t < NPOOLS; t++)
        repro_pool_free(pools[t]);
}

static void assert_same_bits(const void *a, const void *b, size_t bytes, const char *what)
{
    ck_assert_msg(memcmp(a, b, bytes) == 0, "%s: bits differ", what);
}

/* The finite-difference comparator: 1 when every analytic gradient entry is
 * within atol + rtol*|numeric| of the numeric one, else 0 (and the worst
 * offender's index in *bad). The negative-control test calls it with a
 * wrong gradient to prove it can fail. */
static int grad_close(const float *analytic, const double *numeric, long n, double atol,
                      double rtol, long *bad)
{
    for (long i = 0; i < n; i++) {
        double d = fabs((double)analytic[i] - numeric[i]);
        if (!(d <= atol + rtol * fabs(numeric[i]))) {
            if (bad)
                *bad = i;
            return 0;
        }
    }
    return 1;
}

/* Central differences of loss() with respect to every entry of param; the
 * step actually taken is measured in float ((float)(v+h) - (float)(v-h)), so
 * rounding of the perturbed value does not bias the quotient. */
typedef double (*loss_fn)(void *ctx);

static void numeric_grad(loss_fn loss, void *ctx, float *param, long n, float h, double *out)
{
    for (long j = 0; j < n; j++) {
        float v = param[j];
        float vp = v + h, vm = v - h;
        param[j] = vp;
        double lp = loss(ctx);
        param[j] = vm;
        double lm = loss(ctx);
        param[j] = v;
        out[j] = (lp - lm) / ((double)vp - (double)vm);
    }
}

/* L = sum_i r_i * y_i in double: its gradient with respect to y is r. */
static double project(const float *y, const float *r, long n)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += (double)r[i] * (double)y[i];
    return s;
}

static void expect_grad(const char *what, const float *analytic, const double *numeric, long n,
                        double atol, double rtol)
{
    long bad = -1;
    int ok = grad_close(analytic, numeric, n, atol, rtol, &bad);
    ck_assert_msg(ok, "%s: gradient[%ld] analytic %.9g vs numeric %.9g", what, bad,
                  bad >= 0 ? (double)analytic[bad] : 0.0, bad >= 0 ? numeric[bad] : 0.0);
}

/* ---- repro_exp / repro_log -------------------------------------------------- */

static double rel_err(double got, double want)
{
    if (got == want)
        return 0.0;
    return fabs(got - want) / fabs(want);
}

START_TEST(test_exp_vs_libm)
{
    /* Tolerance: relative error < 1e-14 (ops.h promise; measured ~3e-16)
     * over the range with normal results, grid plus random points. */
    double worst = 0.0;
    for (int i = 0; i <= 60000; i++) {
        double x = -708.3 + (709.78 + 708.3) * i / 60000.0;
        double e = rel_err(repro_exp(x), exp(x));
        if (e > worst)
            worst = e;
        ck_assert_msg(e < 1e-14, "exp(%.17g): %.17g vs libm %.17g", x, repro_exp(x), exp(x));
    }
    repro_rng rng;
    repro_rng_init(&rng, 99);
    for (int i = 0; i < 30000; i++) { /* small arguments, all scales */
        double x = (repro_rng_unit(&rng) - 0.5) * ldexp(1.0, (int)repro_rng_below(&rng, 60) - 55);
        ck_assert_msg(rel_err(repro_exp(x), exp(x)) < 1e-14, "exp(%.17g)", x);
    }
    const double pts[] = {0.0, -0.0, 1.0, -1.0, 0.5 * M_LN2, -0.5 * M_LN2, M_LN2, 1e-300,
                          -1e-300, 709.78, 709.782712893383973096, -708.39, 88.7, -87.3};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        ck_assert_msg(rel_err(repro_exp(pts[i]), exp(pts[i])) < 1e-14, "exp(%.17g)", pts[i]);
    ck_assert(worst < 1e-14);
}
END_TEST

START_TEST(test_exp_special_and_subnormal)
{
    ck_assert(isnan(repro_exp(NAN)));
    ck_assert(repro_exp(INFINITY) == INFINITY);
    ck_assert(repro_exp(-INFINITY) == 0.0);
    ck_assert(repro_exp(709.8) == INFINITY);
    ck_assert(repro_exp(1000.0) == INFINITY);
    ck_assert(repro_exp(-746.0) == 0.0);
    ck_assert(repro_exp(0.0) == 1.0);
    ck_assert(isfinite(repro_exp(709.782712893383973096)));
    /* Subnormal results are rounded once from an accurate value (gradual
     * underflow, not flushed): within one subnormal step of libm. */
    for (int i = 0; i <= 1000; i++) {
        double x = -745.0 + (745.0 - 708.4) * i / 1000.0;
        double d = fabs(repro_exp(x) - exp(x));
        ck_assert_msg(d <= 4.9406564584124654e-324, "exp(%.17g)", x);
    }
    ck_assert(repro_exp(-740.0) > 0.0);
}
END_TEST

START_TEST(test_log_vs_libm)
{
    /* Tolerance: relative error < 1e-14 (measured ~2e-16) on random
     * mantissas over every binade, subnormals included, and near 1. */
    repro_rng rng;
    repro_rng_init(&rng, 7);
    for (int e = -1074; e <= 1023; e++)
        for (int i = 0; i < 12; i++) {
            double m = 1.0 + repro_rng_unit(&rng) + repro_rng_unit(&rng) * 0x1p-24;
            double x = ldexp(m, e);
            if (x == 0.0 || isinf(x))
                continue;
            ck_assert_msg(rel_err(repro_log(x), log(x)) < 1e-14, "log(%.17g): %.17g vs %.17g",
                          x, repro_log(x), log(x));
        }
    for (int i = 1; i < 100000; i += 3) { /* near 1, where log is smallest */
        double x = 1.0 + (i - 50000) * 1e-9;
        ck_assert_msg(rel_err(repro_log(x), log(x)) < 1e-14, "log(%.17g)", x);
    }
    const double pts[] = {DBL_MIN, DBL_MAX, 4.9406564584124654e-324, 2.0, 0.5, M_SQRT2,
                          M_SQRT1_2, 1.0 + DBL_EPSILON, 1.0 - DBL_EPSILON / 2, 10.0, M_E};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        ck_assert_msg(rel_err(repro_log(pts[i]), log(pts[i])) < 1e-14, "log(%.17g)", pts[i]);
}
END_TEST

START_TEST(test_log_special)
{
    ck_assert(repro_log(1.0) == 0.0);
    ck_assert(repro_log(0.0) == -INFINITY);
    ck_assert(repro_log(-0.0) == -INFINITY);
    ck_assert(isnan(repro_log(-1.0)));
    ck_assert(isnan(repro_log(-INFINITY)));
    ck_assert(isnan(repro_log(NAN)));
    ck_assert(repro_log(INFINITY) == INFINITY);
    /* exp and log invert each other to within a few ulp */
    for (double x = -700; x < 700; x += 0.37)
        ck_assert(fabs(repro_log(repro_exp(x)) - x) <= 1e-13 * (fabs(x) > 1 ? fabs(x) : 1));
}
END_TEST

/* ---- GEMM ------------------------------------------------------------------ */

/* The contract's order, written plainly: init, then products in ascending k,
 * each product rounded before the add. */
static void gemm_ref(int M, int N, int K, const float *A, long a_rs, long a_cs, const float *B,
                     long ldb, float *C, long ldc, const float *bias, int accumulate)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float c = accumulate ? C[m * ldc + n] : (bias ? bias[n] : 0.0f);
            for (int k = 0; k < K; k++) {
                float p = A[m * a_rs + k * a_cs] * B[k * ldb + n];
                c = c + p;
            }
            C[m * ldc + n] = c;
        }
}

START_TEST(test_gemm_bitwise_vs_plain_loop)
{
    /* Bitwise: the plain loop in the stated order must give identical bits,
     * for every tail shape (M % 4, N % 8), every tile height (1 .. 12
     * rows), strided (transposed) A, bias, accumulate, K = 0 and ldc > N;
     * narrow C (N = 10, 3) computed as its transpose, across a K block;
     * and an M of many row panels (500: 84 avx2 panels of 6, more than one
     * group of packed or in-place panels in the serial engine, which
     * repro_gemm_serial reaches with all of M at once). */
    const int shapes[][3] = {{1, 1, 1},    {4, 8, 3},    {5, 9, 7},     {37, 29, 19},
                             {16, 256, 4}, {17, 263, 33}, {3, 7, 0},    {64, 70, 50},
                             {64, 10, 400}, {23, 3, 300}, {10, 128, 64}, {12, 40, 9},
                             {500, 50, 260}};
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        long ldc = N + 3;
        float *A = frand_new((long)M * K + 1, 1 + s);
        float *B = frand_new((long)K * N + 1, 100 + s);
        float *bias = frand_new(N, 200 + s);
        float *C0 = frand_new(M * ldc, 300 + s);
        for (int mode = 0; mode < 4; mode++) {
            /* mode: 0 plain, 1 bias, 2 accumulate, 3 A transposed (a_rs=1) */
            long a_rs = mode == 3 ? 1 : K, a_cs = mode == 3 ? M : 1;
            const float *bb = mode == 1 ? bias : NULL;
            int acc = mode == 2;
            float *want = fdup(C0, M * ldc);
            gemm_ref(M, N, K, A, a_rs, a_cs, B, N, want, ldc, bb, acc);
            for (int t = 0; t < NPOOLS; t++) {
                float *got = fdup(C0, M * ldc);
                repro_gemm(pools[t], M, N, K, A, a_rs, a_cs, B, N, got, ldc, bb, acc);
                ck_assert_msg(memcmp(got, want, (size_t)M * ldc * sizeof(float)) == 0,
                              "gemm %dx%dx%d mode %d threads %d differs", M, N, K, mode, t + 1);
                free(got);
            }
            { /* the serial engine on all of M at once */
                float *got = fdup(C0, M * ldc);
                repro_gemm_serial(M, N, K, A, a_rs, a_cs, B, N, got, ldc, bb, acc);
                ck_assert_msg(memcmp(got, want, (size_t)M * ldc * sizeof(float)) == 0,
                              "serial gemm %dx%dx%d mode %d differs", M, N, K, mode);
                free(got);
            }
            free(want);
        }
        free(A);
        free(B);
        free(bias);
        free(C0);
    }
    pools_free(pools);
}
END_TEST

/* The shard rule's GEMM equals computing each shard's GEMM into a buffer
 * of its own (from +0) and adding the buffers in shard order — which is
 * what the model does where the backend has no sharded GEMM and what the
 * data-parallel reduce does across ranks — bit for bit, with and without
 * accumulate, transposed A (the weight gradient's dy^T), tail tiles, any
 * thread count; and a K over one block falls back to the same order. */
START_TEST(test_gemm_sharded_equals_shard_buffers)
{
    const int shapes[][4] = {{256, 784, 64, 16}, {10, 128, 64, 4},  {37, 29, 48, 16},
                             {5, 9, 6, 1},        {17, 263, 32, 32}, {8, 8, 512, 16},
                             {256, 5, 64, 16},    {64, 10, 64, 16}};
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], S = shapes[s][3];
        float *A = frand_new((long)K * M, 11 + s); /* dy: K x M, read as A = dy^T */
        float *B = frand_new((long)K * N, 111 + s);
        float *C0 = frand_new((long)M * N, 211 + s);
        for (int acc = 0; acc < 2; acc++) {
            float *want = fdup(C0, (long)M * N), *part = falloc((long)M * N);
            float *sum = falloc((long)M * N);
            for (int k0 = 0; k0 < K; k0 += S) {
                gemm_ref(M, N, S, A + (long)k0 * M, 1, M, B + (long)k0 * N, N, part, N, NULL, 0);
                for (long e = 0; e < (long)M * N; e++)
                    sum[e] = k0 == 0 ? part[e] : sum[e] + part[e];
            }
            for (long e = 0; e < (long)M * N; e++)
                want[e] = acc ? want[e] + sum[e] : sum[e];
            if (s == 0 && !acc) { /* the test can fail: one running sum rounds otherwise */
                float *running = falloc((long)M * N);
                gemm_ref(M, N, K, A, 1, M, B, N, running, N, NULL, 0);
                ck_assert(memcmp(running, want, (size_t)M * N * sizeof(float)) != 0);
                free(running);
            }
            for (int t = 0; t < NPOOLS; t++) {
                float *got = fdup(C0, (long)M * N);
                repro_gemm_sharded(pools[t], M, N, K, S, A, 1, M, B, N, got, N, acc);
                ck_assert_msg(!memcmp(got, want, (size_t)M * N * sizeof(float)),
                              "sharded gemm %dx%dx%d S=%d acc %d threads %d differs", M, N, K, S,
                              acc, t + 1);
                free(got);
            }
            free(want);
            free(part);
            free(sum);
        }
        free(A);
        free(B);
        free(C0);
    }
    pools_free(pools);
}
END_TEST

START_TEST(test_gemm_vs_double_and_threads)
{
    /* Tolerance vs a double-precision product: |err| <= 1e-5 * sum|a*b|
     * (K=300 float additions, each off by at most 2^-24 relative). Thread
     * invariance on 7 x 3 = 21 chunks: memcmp. */
    int M = 100, N = 600, K = 300;
    float *A = frand_new((long)M * K, 11), *B = frand_new((long)K * N, 12);
    float *C[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        C[t] = falloc((long)M * N);
        repro_gemm(pools[t], M, N, K, A, K, 1, B, N, C[t], N, NULL, 0);
    }
    assert_same_bits(C[0], C[1], (size_t)M * N * sizeof(float), "gemm 1 vs 2 threads");
    assert_same_bits(C[0], C[2], (size_t)M * N * sizeof(float), "gemm 1 vs 3 threads");
    for (int m = 0; m < M; m += 7)
        for (int n = 0; n < N; n += 13) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                s += (double)A[m * K + k] * B[k * N + n];
                sa += fabs((double)A[m * K + k] * B[k * N + n]);
            }
            ck_assert(fabs(C[0][m * N + n] - s) <= 1e-5 * sa);
        }
    /* pool == NULL runs inline, same bits */
    float *cn = falloc((long)M * N);
    repro_gemm(NULL, M, N, K, A, K, 1, B, N, cn, N, NULL, 0);
    assert_same_bits(C[0], cn, (size_t)M * N * sizeof(float), "gemm NULL pool");
    pools_free(pools);
    for (int t = 0; t < NPOOLS; t++)
        free(C[t]);
    free(cn);
    free(A);
    free(B);
}
END_TEST

/* ---- linear ---------------------------------------------------------------- */

typedef struct {
    int B, in, out;
    float *x, *w, *b, *y, *r, *wt;
} lin_ctx;

static double lin_loss(void *v)
{
    lin_ctx *c = v;
    repro_linear_forward(NULL, c->x, c->w, c->b, c->y, c->B, c->in, c->out, c->wt);
    return project(c->y, c->r, (long)c->B * c->out);
}

static void lin_setup(lin_ctx *c, int B, int in, int out, uint64_t seed)
{
    c->B = B;
    c->in = in;
    c->out = out;
    c->x = frand_new((long)B * in, seed);
    c->w = frand_new((long)out * in, seed + 1);
    c->b = frand_new(out, seed + 2);
    c->r = frand_new((long)B * out, seed + 3);
    c->y = falloc((long)B * out);
    c->wt = falloc((long)in * out);
}

static void lin_free(lin_ctx *c)
{
    free(c->x);
    free(c->w);
    free(c->b);
    free(c->r);
    free(c->y);
    free(c->wt);
}

START_TEST(test_linear_forward_bitwise)
{
    /* Bitwise vs y[b][o] = b[o] + x[b][0]*w[o][0] + ... (ascending i). */
    lin_ctx c;
    lin_setup(&c, 13, 37, 11, 40);
    repro_linear_forward(NULL, c.x, c.w, c.b, c.y, c.B, c.in, c.out, c.wt);
    for (int b = 0; b < c.B; b++)
        for (int o = 0; o < c.out; o++) {
            float acc = c.b[o];
            for (int i = 0; i < c.in; i++) {
                float p = c.x[b * c.in + i] * c.w[o * c.in + i];
                acc = acc + p;
            }
            ck_assert_msg(memcmp(&acc, &c.y[b * c.out + o], sizeof acc) == 0, "y[%d][%d]", b,
                          o);
        }
    lin_free(&c);
}
END_TEST

START_TEST(test_linear_backward_finite_diff)
{
    /* Finite differences, h = 1e-2: the layer is linear in each input, so
     * the only error is float rounding of L divided by 2h (~1e-5 here);
     * tolerance 1e-3 + 1e-3*|g|. Also bitwise vs the stated order. */
    lin_ctx c;
    lin_setup(&c, 3, 5, 4, 50);
    float *dx = falloc(15), *dw = falloc(20), *db = falloc(4);
    double num[20];
    repro_linear_backward_data(NULL, c.r, c.w, dx, c.B, c.in, c.out);
    repro_linear_backward_weight(NULL, c.r, c.x, dw, c.B, c.in, c.out, 0);
    repro_linear_backward_bias(NULL, c.r, db, c.B, c.out, 0);
    numeric_grad(lin_loss, &c, c.x, 15, 1e-2f, num);
    expect_grad("linear dx", dx, num, 15, 1e-3, 1e-3);
    numeric_grad(lin_loss, &c, c.w, 20, 1e-2f, num);
    expect_grad("linear dw", dw, num, 20, 1e-3, 1e-3);
    numeric_grad(lin_loss, &c, c.b, 4, 1e-2f, num);
    expect_grad("linear db", db, num, 4, 1e-3, 1e-3);
    /* the stated orders, bitwise */
    for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.in; i++) {
            float acc = 0.0f;
            for (int o = 0; o < c.out; o++)
                acc = acc + c.r[b * c.out + o] * c.w[o * c.in + i];
            ck_assert(memcmp(&acc, &dx[b * c.in + i], 4) == 0);
        }
    for (int o = 0; o < c.out; o++) {
        float accb = 0.0f;
        for (int b = 0; b < c.B; b++)
            accb = accb + c.r[b * c.out + o];
        ck_assert(memcmp(&accb, &db[o], 4) == 0);
        for (int i = 0; i < c.in; i++) {
            float acc = 0.0f;
            for (int b = 0; b < c.B; b++)
                acc = acc + c.r[b * c.out + o] * c.x[b * c.in + i];
            ck_assert(memcmp(&acc, &dw[o * c.in + i], 4) == 0);
        }
    }
    free(dx);
    free(dw);
    free(db);
    lin_free(&c);
}
END_TEST

START_TEST(test_linear_threads_and_accumulate)
{
    /* All four linear ops: 1, 2, 3 threads give identical bits (sizes with
     * many chunks); "zero then accumulate" equals "overwrite" bitwise (the
     * optimizer's zero_grad modes rely on it); accumulate adds. */
    int B = 40, in = 300, out = 70;
    lin_ctx c;
    lin_setup(&c, B, in, out, 60);
    float *y[NPOOLS], *dx[NPOOLS], *dw[NPOOLS], *db[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        y[t] = falloc((long)B * out);
        dx[t] = falloc((long)B * in);
        dw[t] = falloc((long)out * in);
        db[t] = falloc(out);
        repro_linear_forward(pools[t], c.x, c.w, c.b, y[t], B, in, out, c.wt);
        repro_linear_backward_data(pools[t], c.r, c.w, dx[t], B, in, out);
        repro_linear_backward_weight(pools[t], c.r, c.x, dw[t], B, in, out, 0);
        repro_linear_backward_bias(pools[t], c.r, db[t], B, out, 0);
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(y[0], y[t], (size_t)B * out * 4, "linear forward threads");
        assert_same_bits(dx[0], dx[t], (size_t)B * in * 4, "linear bwd data threads");
        assert_same_bits(dw[0], dw[t], (size_t)out * in * 4, "linear bwd weight threads");
        assert_same_bits(db[0], db[t], (size_t)out * 4, "linear bwd bias threads");
    }
    /* zero + accumulate == overwrite */
    memset(dw[1], 0, (size_t)out * in * 4);
    memset(db[1], 0, (size_t)out * 4);
    repro_linear_backward_weight(pools[1], c.r, c.x, dw[1], B, in, out, 1);
    repro_linear_backward_bias(pools[1], c.r, db[1], B, out, 1);
    assert_same_bits(dw[0], dw[1], (size_t)out * in * 4, "dw zero+acc vs overwrite");
    assert_same_bits(db[0], db[1], (size_t)out * 4, "db zero+acc vs overwrite");
    /* accumulating twice doubles (exactly, up to rounding of each add):
     * within 1e-5 relative of 2x */
    repro_linear_backward_weight(pools[2], c.r, c.x, dw[1], B, in, out, 1);
    for (long i = 0; i < (long)out * in; i++)
        ck_assert(fabsf(dw[1][i] - 2 * dw[0][i]) <= 1e-5f * (1 + fabsf(dw[0][i])));
    for (int t = 0; t < NPOOLS; t++) {
        free(y[t]);
        free(dx[t]);
        free(dw[t]);
        free(db[t]);
    }
    pools_free(pools);
    lin_free(&c);
}
END_TEST

/* ---- conv2d ---------------------------------------------------------------- */

static float xat(const repro_conv_shape *s, const float *x, int b, int c, int iy, int ix)
{
    if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W)
        return 0.0f; /* zero padding */
    return x[(((long)b * s->C + c) * s->H + iy) * s->W + ix];
}

/* The 6-deep loop of ops.h: bias, then (c, ry, rx) lexicographic; padded
 * positions contribute w * 0 (zero padding taken literally). */
static void conv_fwd_ref(const repro_conv_shape *s, const float *x, const float *w,
                         const float *bias, float *y)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (int b = 0; b < s->B; b++)
        for (int k = 0; k < s->K; k++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    float acc = bias ? bias[k] : 0.0f;
                    for (int c = 0; c < s->C; c++)
                        for (int ry = 0; ry < s->R; ry++)
                            for (int rx = 0; rx < s->R; rx++) {
                                float wv = w[(((long)k * s->C + c) * s->R + ry) * s->R + rx];
                                float p = wv * xat(s, x, b, c, oy + ry - s->pad, ox + rx - s->pad);
                                acc = acc + p;
                            }
                    y[(((long)b * s->K + k) * OH + oy) * OW + ox] = acc;
                }
}

/* (k, ry, rx) lexicographic, out-of-range terms skipped, from +0. */
static void conv_bwd_data_ref(const repro_conv_shape *s, const float *dy, const float *w,
                              float *dx)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (int b = 0; b < s->B; b++)
        for (int c = 0; c < s->C; c++)
            for (int iy = 0; iy < s->H; iy++)
                for (int ix = 0; ix < s->W; ix++) {
                    float acc = 0.0f;
                    for (int k = 0; k < s->K; k++)
                        for (int ry = 0; ry < s->R; ry++)
                            for (int rx = 0; rx < s->R; rx++) {
                                int oy = iy - ry + s->pad, ox = ix - rx + s->pad;
                                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW)
                                    continue;
                                float p = w[(((long)k * s->C + c) * s->R + ry) * s->R + rx] *
                                          dy[(((long)b * s->K + k) * OH + oy) * OW + ox];
                                acc = acc + p;
                            }
                    dx[(((long)b * s->C + c) * s->H + iy) * s->W + ix] = acc;
                }
}

/* Per output column ox: +0 then (b, oy) ascending; then the column sums in
 * ascending ox onto the start value (old dw when accumulating, else +0). */
static void conv_bwd_filter_ref(const repro_conv_shape *s, const float *dy, const float *x,
                                float *dw, float *db, int accumulate)
{
    int OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (int k = 0; k < s->K; k++) {
        for (int c = 0; c < s->C; c++)
            for (int ry = 0; ry < s->R; ry++)
                for (int rx = 0; rx < s->R; rx++) {
                    float *d = &dw[(((long)k * s->C + c) * s->R + ry) * s->R + rx];
                    float acc = accumulate ? *d : 0.0f;
                    for (int ox = 0; ox < OW; ox++) {
                        float col = 0.0f;
                        for (int b = 0; b < s->B; b++)
                            for (int oy = 0; oy < OH; oy++) {
                                float p = dy[(((long)b * s->K + k) * OH + oy) * OW + ox] *
                                          xat(s, x, b, c, oy + ry - s->pad, ox + rx - s->pad);
                                col = col + p;
                            }
                        acc = acc + col;
                    }
                    *d = acc;
                }
        if (db) {
            float acc = accumulate ? db[k] : 0.0f;
            for (int ox = 0; ox < OW; ox++) {
                float col = 0.0f;
                for (int b = 0; b < s->B; b++)
                    for (int oy = 0; oy < OH; oy++)
                        col = col + dy[(((long)b * s->K + k) * OH + oy) * OW + ox];
                acc = acc + col;
            }
            db[k] = acc;
        }
    }
}

static long conv_xn(const repro_conv_shape *s) { return (long)s->B * s->C * s->H * s->W; }
static long conv_wn(const repro_conv_shape *s) { return (long)s->K * s->C * s->R * s->R; }
static long conv_yn(const repro_conv_shape *s)
{
    return (long)s->B * s->K * repro_conv_oh(s) * repro_conv_ow(s);
}

START_TEST(test_conv_bitwise_vs_plain_loops)
{
    /* Bitwise: all three passes vs the plain loops in the stated orders,
     * for pad 0, 1, 2 (pad >= R-1 too), non-square images, and a bias-less
     * forward; accumulate mode of backward filter too. */
    const repro_conv_shape shapes[] = {
        {2, 3, 6, 7, 4, 3, 1}, {1, 2, 5, 5, 3, 3, 0}, {2, 1, 4, 9, 2, 3, 2},
        {1, 2, 7, 5, 2, 5, 2}, {3, 2, 3, 3, 2, 1, 0}, {1, 1, 2, 3, 1, 2, 1},
        /* rows of 30 and 35 outputs: the bias sums in registers (up to 32)
         * with a two-float tail, and the stored column sums past them */
        {2, 1, 3, 32, 3, 3, 0}, {1, 2, 3, 37, 2, 3, 0},
        /* the models' two convolutions (tiles over the flattened plane:
         * rows of 26 and 11 outputs), and rows of 48, a whole number of
         * vectors on every path (tiles by rows) */
        {2, 1, 28, 28, 8, 3, 0}, {2, 8, 13, 13, 16, 3, 0}, {1, 2, 6, 50, 3, 3, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const repro_conv_shape *s = &shapes[i];
        float *x = frand_new(conv_xn(s), 70 + i), *w = frand_new(conv_wn(s), 80 + i);
        float *b = frand_new(s->K, 90 + i), *dy = frand_new(conv_yn(s), 100 + i);
        float *y = falloc(conv_yn(s)), *yr = falloc(conv_yn(s));
        repro_conv2d_forward(NULL, s, x, w, i % 2 ? NULL : b, y);
        conv_fwd_ref(s, x, w, i % 2 ? NULL : b, yr);
        ck_assert_msg(memcmp(y, yr, (size_t)conv_yn(s) * 4) == 0, "conv fwd shape %zu", i);
        float *dx = falloc(conv_xn(s)), *dxr = falloc(conv_xn(s));
        repro_conv2d_backward_data(NULL, s, dy, w, dx);
        conv_bwd_data_ref(s, dy, w, dxr);
        ck_assert_msg(memcmp(dx, dxr, (size_t)conv_xn(s) * 4) == 0, "conv bwd data %zu", i);
        for (int acc = 0; acc < 2; acc++) {
            float *dw = frand_new(conv_wn(s), 110 + i), *dwr = fdup(dw, conv_wn(s));
            float *db = frand_new(s->K, 120 + i), *dbr = fdup(db, s->K);
            repro_conv2d_backward_filter(NULL, s, dy, x, dw, db, acc);
            conv_bwd_filter_ref(s, dy, x, dwr, dbr, acc);
            ck_assert_msg(memcmp(dw, dwr, (size_t)conv_wn(s) * 4) == 0, "conv dw %zu", i);
            ck_assert_msg(memcmp(db, dbr, (size_t)s->K * 4) == 0, "conv db %zu", i);
            free(dw);
            free(dwr);
            free(db);
            free(dbr);
        }
        free(x);
        free(w);
        free(b);
        free(dy);
        free(y);
        free(yr);
        free(dx);
        free(dxr);
    }
}
END_TEST

typedef struct {
    repro_conv_shape s;
    float *x, *w, *b, *y, *r;
} conv_ctx_t;

static double conv_loss(void *v)
{
    conv_ctx_t *c = v;
    repro_conv2d_forward(NULL, &c->s, c->x, c->w, c->b, c->y);
    return project(c->y, c->r, conv_yn(&c->s));
}

START_TEST(test_conv_finite_diff)
{
    /* Finite differences, h = 1e-2; conv is linear in x, w and b, so the
     * error is float rounding only (measured < 1e-5); tolerance
     * 1e-3 + 1e-3*|g|. */
    conv_ctx_t c = {.s = {2, 2, 4, 5, 3, 3, 1}};
    const repro_conv_shape *s = &c.s;
    c.x = frand_new(conv_xn(s), 130);
    c.w = frand_new(conv_wn(s), 131);
    c.b = frand_new(s->K, 132);
    c.r = frand_new(conv_yn(s), 133);
    c.y = falloc(conv_yn(s));
    float *dx = falloc(conv_xn(s)), *dw = falloc(conv_wn(s)), *db = falloc(s->K);
    double *num = calloc((size_t)conv_xn(s) + (size_t)conv_wn(s), sizeof *num);
    repro_conv2d_backward_data(NULL, s, c.r, c.w, dx);
    repro_conv2d_backward_filter(NULL, s, c.r, c.x, dw, db, 0);
    numeric_grad(conv_loss, &c, c.x, conv_xn(s), 1e-2f, num);
    expect_grad("conv dx", dx, num, conv_xn(s), 1e-3, 1e-3);
    numeric_grad(conv_loss, &c, c.w, conv_wn(s), 1e-2f, num);
    expect_grad("conv dw", dw, num, conv_wn(s), 1e-3, 1e-3);
    numeric_grad(conv_loss, &c, c.b, s->K, 1e-2f, num);
    expect_grad("conv db", db, num, s->K, 1e-3, 1e-3);
    free(num);
    free(dx);
    free(dw);
    free(db);
    free(c.x);
    free(c.w);
    free(c.b);
    free(c.r);
    free(c.y);
}
END_TEST

START_TEST(test_conv_threads)
{
    /* 1, 2, 3 threads: identical bits for all three passes (forward 40
     * chunks, backward data 24, backward filter 5*6 = 30). */
    repro_conv_shape s = {4, 6, 13, 11, 10, 3, 1};
    float *x = frand_new(conv_xn(&s), 140), *w = frand_new(conv_wn(&s), 141);
    float *b = frand_new(s.K, 142), *dy = frand_new(conv_yn(&s), 143);
    float *y[NPOOLS], *dx[NPOOLS], *dw[NPOOLS], *db[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        y[t] = falloc(conv_yn(&s));
        dx[t] = falloc(conv_xn(&s));
        dw[t] = falloc(conv_wn(&s));
        db[t] = falloc(s.K);
        repro_conv2d_forward(pools[t], &s, x, w, b, y[t]);
        repro_conv2d_backward_data(pools[t], &s, dy, w, dx[t]);
        repro_conv2d_backward_filter(pools[t], &s, dy, x, dw[t], db[t], 0);
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(y[0], y[t], (size_t)conv_yn(&s) * 4, "conv forward threads");
        assert_same_bits(dx[0], dx[t], (size_t)conv_xn(&s) * 4, "conv bwd data threads");
        assert_same_bits(dw[0], dw[t], (size_t)conv_wn(&s) * 4, "conv bwd filter threads");
        assert_same_bits(db[0], db[t], (size_t)s.K * 4, "conv bwd bias threads");
    }
    /* zero + accumulate == overwrite */
    memset(dw[1], 0, (size_t)conv_wn(&s) * 4);
    memset(db[1], 0, (size_t)s.K * 4);
    repro_conv2d_backward_filter(pools[2], &s, dy, x, dw[1], db[1], 1);
    assert_same_bits(dw[0], dw[1], (size_t)conv_wn(&s) * 4, "conv dw zero+acc");
    assert_same_bits(db[0], db[1], (size_t)s.K * 4, "conv db zero+acc");
    for (int t = 0; t < NPOOLS; t++) {
        free(y[t]);
        free(dx[t]);
        free(dw[t]);
        free(db[t]);
    }
    pools_free(pools);
    free(x);
    free(w);
    free(b);
    free(dy);
}
END_TEST

/* The shard rule's filter and bias gradients in one pass equal each
 * shard's gradient into a buffer of its own (from +0) and the buffers added
 * in shard order (what the model does where the backend has no sharded
 * op), bit for bit: the models' two convolutions, odd K, padding, rows past
 * the registers' 32 columns, one shard, with and without accumulate, any
 * thread count. And the test can fail: one running sum over the whole
 * batch rounds otherwise. */
START_TEST(test_conv_filter_sharded_equals_shard_buffers)
{
    const struct {
        repro_conv_shape s; /* s.B: one shard's samples */
        int nq;
    } cases[] = {{{16, 1, 28, 28, 8, 3, 0}, 4}, {{16, 8, 13, 13, 16, 3, 0}, 4},
                 {{3, 2, 6, 7, 5, 3, 1}, 3},    {{2, 1, 4, 9, 2, 3, 2}, 2},
                 {{2, 1, 3, 32, 3, 3, 0}, 2},   {{1, 2, 3, 37, 2, 3, 0}, 3},
                 {{4, 3, 5, 5, 3, 3, 1}, 1},
                 /* 16 and 8 filters, padded, 9 and 8 columns: the lanes
                  * across filters (one or two vectors), their column
                  * groups' tails */
                 {{2, 3, 6, 9, 16, 3, 1}, 4},   {{2, 4, 5, 8, 8, 3, 1}, 2},
                 /* 7 filters of 26 columns: a group of four, then three */
                 {{4, 1, 28, 28, 7, 3, 0}, 2}};
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        repro_conv_shape s = cases[i].s, all = s;
        int nq = cases[i].nq;
        all.B = s.B * nq;
        long wn = conv_wn(&s), xq = conv_xn(&s), yq = conv_yn(&s);
        float *x = frand_new(conv_xn(&all), 300 + i), *dy = frand_new(conv_yn(&all), 310 + i);
        float *dw0 = frand_new(wn, 320 + i), *db0 = frand_new(s.K, 330 + i);
        float *pw = falloc(wn), *pb = falloc(s.K), *sw = falloc(wn), *sb = falloc(s.K);
        for (int q = 0; q < nq; q++) {
            repro_conv2d_backward_filter(NULL, &s, dy + q * yq, x + q * xq, pw, pb, 0);
            for (long e = 0; e < wn; e++)
                sw[e] = q == 0 ? pw[e] : sw[e] + pw[e];
            for (long k = 0; k < s.K; k++)
                sb[k] = q == 0 ? pb[k] : sb[k] + pb[k];
        }
        if (i == 0) { /* the running sum over all 64 samples differs */
            repro_conv2d_backward_filter(NULL, &all, dy, x, pw, pb, 0);
            ck_assert(memcmp(pw, sw, (size_t)wn * 4) != 0);
        }
        for (int acc = 0; acc < 2; acc++) {
            float *ww = fdup(dw0, wn), *wb = fdup(db0, s.K);
            for (long e = 0; e < wn; e++)
                ww[e] = acc ? ww[e] + sw[e] : sw[e];
            for (long k = 0; k < s.K; k++)
                wb[k] = acc ? wb[k] + sb[k] : sb[k];
            for (int t = 0; t < NPOOLS; t++) {
                float *gw = fdup(dw0, wn), *gb = fdup(db0, s.K);
                ck_assert_int_eq(
                    repro_conv2d_backward_filter_sharded(pools[t], &s, nq, dy, x, gw, gb, acc), 0);
                ck_assert_msg(!memcmp(gw, ww, (size_t)wn * 4) && !memcmp(gb, wb, (size_t)s.K * 4),
                              "sharded conv filter case %zu acc %d threads %d differs", i, acc,
                              t + 1);
                free(gw);
                free(gb);
            }
            free(ww);
            free(wb);
        }
        free(x);
        free(dy);
        free(dw0);
        free(db0);
        free(pw);
        free(pb);
        free(sw);
        free(sb);
    }
    pools_free(pools);
}
END_TEST

/* ---- ReLU ------------------------------------------------------------------ */

typedef struct {
    float *x, *y, *r;
    long n;
} ew_ctx;

static double relu_loss(void *v)
{
    ew_ctx *c = v;
    repro_relu_forward(NULL, c->x, c->y, c->n);
    return project(c->y, c->r, c->n);
}

START_TEST(test_relu)
{
    /* Forward: exact values (max(x, 0), NaN kept). Backward vs finite
     * differences, h = 1e-3, inputs kept >= 0.05 away from the kink so the
     * function is linear on the stencil: tolerance 1e-4 + 1e-4*|g|. */
    ew_ctx c = {.n = 40};
    c.x = frand_new(c.n, 150);
    for (long i = 0; i < c.n; i++)
        c.x[i] = c.x[i] < 0 ? c.x[i] - 0.05f : c.x[i] + 0.05f;
    c.y = falloc(c.n);
    c.r = frand_new(c.n, 151);
    repro_relu_forward(NULL, c.x, c.y, c.n);
    for (long i = 0; i < c.n; i++)
        ck_assert(c.y[i] == (c.x[i] > 0 ? c.x[i] : 0.0f));
    float *dx = falloc(c.n);
    double num[40];
    repro_relu_backward(NULL, c.y, c.r, dx, c.n);
    numeric_grad(relu_loss, &c, c.x, c.n, 1e-3f, num);
    expect_grad("relu dx", dx, num, c.n, 1e-4, 1e-4);
    float sp[3] = {NAN, -0.0f, -INFINITY}, so[3];
    repro_relu_forward(NULL, sp, so, 3);
    ck_assert(isnan(so[0]));
    ck_assert(so[1] == 0.0f && !signbit(so[1]));
    ck_assert(so[2] == 0.0f);
    free(dx);
    free(c.x);
    free(c.y);
    free(c.r);
}
END_TEST

START_TEST(test_relu_threads)
{
    long n = 100003; /* 7 chunks, ragged end */
    float *x = frand_new(n, 160), *dy = frand_new(n, 161);
    float *y[NPOOLS], *dx[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        y[t] = falloc(n);
        dx[t] = falloc(n);
        repro_relu_forward(pools[t], x, y[t], n);
        repro_relu_backward(pools[t], y[t], dy, dx[t], n);
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(y[0], y[t], (size_t)n * 4, "relu fwd threads");
        assert_same_bits(dx[0], dx[t], (size_t)n * 4, "relu bwd threads");
    }
    for (int t = 0; t < NPOOLS; t++) {
        free(y[t]);
        free(dx[t]);
    }
    pools_free(pools);
    free(x);
    free(dy);
}
END_TEST

/* ---- max pooling ------------------------------------------------------------ */

typedef struct {
    int B, C, H, W, k;
    float *x, *y, *r;
    int32_t *am;
} mp_ctx;

static double mp_loss(void *v)
{
    mp_ctx *c = v;
    repro_maxpool2d_forward(NULL, c->B, c->C, c->H, c->W, c->k, c->x, c->y, c->am);
    return project(c->y, c->r, (long)c->B * c->C * (c->H / c->k) * (c->W / c->k));
}

START_TEST(test_maxpool_finite_diff_and_floor)
{
    /* Odd H and W (floor: the last row and column are dropped and get zero
     * gradient). Values are a shuffled grid with spacing 0.01 > 2h, so the
     * argmax never changes on the stencil: finite differences with
     * h = 1e-3 must match to 1e-4 + 1e-4*|g|. */
    mp_ctx c = {1, 2, 5, 7, 2, NULL, NULL, NULL, NULL};
    long n = (long)c.B * c.C * c.H * c.W, m = (long)c.B * c.C * (c.H / 2) * (c.W / 2);
    ck_assert_int_eq(m, 12);
    c.x = falloc(n);
    repro_rng rng;
    repro_rng_init(&rng, 170);
    for (long i = 0; i < n; i++)
        c.x[i] = 0.01f * (float)i;
    for (long i = n - 1; i > 0; i--) { /* Fisher-Yates with the project RNG */
        long j = repro_rng_below(&rng, (uint32_t)(i + 1));
        float t = c.x[i];
        c.x[i] = c.x[j];
        c.x[j] = t;
    }
    c.y = falloc(m);
    c.r = frand_new(m, 171);
    c.am = calloc((size_t)m, sizeof *c.am);
    repro_maxpool2d_forward(NULL, c.B, c.C, c.H, c.W, c.k, c.x, c.y, c.am);
    float *dx = falloc(n);
    for (long i = 0; i < n; i++)
        dx[i] = 123.0f; /* must be fully overwritten */
    repro_maxpool2d_backward(NULL, c.B, c.C, c.H, c.W, c.k, c.am, c.r, dx);
    double num[70];
    numeric_grad(mp_loss, &c, c.x, n, 1e-3f, num);
    expect_grad("maxpool dx", dx, num, n, 1e-4, 1e-4);
    for (int p = 0; p < c.C; p++) { /* dropped row 4 and column 6 */
        for (int ix = 0; ix < c.W; ix++)
            ck_assert(dx[(p * c.H + 4) * c.W + ix] == 0.0f);
        for (int iy = 0; iy < c.H; iy++)
            ck_assert(dx[(p * c.H + iy) * c.W + 6] == 0.0f);
    }
    free(dx);
    free(c.x);
    free(c.y);
    free(c.r);
    free(c.am);
}
END_TEST

START_TEST(test_maxpool_ties_and_nan)
{
    /* 1 plane, 4x4, k=2: window 0 all equal -> offset 0 (first); window 1
     * has its max twice -> the first in row-major order; window 2 has a NaN
     * after a larger number -> NaN wins; window 3 has two NaNs -> the first. */
    float x[16] = {1, 1, 2, 5,
                   1, 1, 5, 3,
                   9, NAN, 0, NAN,
                   2, 1, NAN, 4};
    float y[4];
    int32_t am[4];
    repro_maxpool2d_forward(NULL, 1, 1, 4, 4, 2, x, y, am);
    ck_assert_int_eq(am[0], 0);
    ck_assert(y[0] == 1.0f);
    ck_assert_int_eq(am[1], 3);
    ck_assert(y[1] == 5.0f);
    ck_assert_int_eq(am[2], 9);
    ck_assert(isnan(y[2]));
    ck_assert_int_eq(am[3], 11);
    ck_assert(isnan(y[3]));
    /* negative values and -inf: the max is still found */
    float z[4] = {-INFINITY, -3, -2, -2}, zy[1];
    int32_t za[1];
    repro_maxpool2d_forward(NULL, 1, 1, 2, 2, 2, z, zy, za);
    ck_assert_int_eq(za[0], 2);
}
END_TEST

START_TEST(test_maxpool_threads)
{
    int B = 4, C = 5, H = 17, W = 15, k = 3;
    long n = (long)B * C * H * W, m = (long)B * C * (H / k) * (W / k);
    float *x = frand_new(n, 180), *dy = frand_new(m, 181);
    float *y[NPOOLS], *dx[NPOOLS];
    int32_t *am[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        y[t] = falloc(m);
        dx[t] = falloc(n);
        am[t] = calloc((size_t)m, sizeof(int32_t));
        repro_maxpool2d_forward(pools[t], B, C, H, W, k, x, y[t], am[t]);
        repro_maxpool2d_backward(pools[t], B, C, H, W, k, am[t], dy, dx[t]);
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(y[0], y[t], (size_t)m * 4, "maxpool fwd threads");
        assert_same_bits(am[0], am[t], (size_t)m * 4, "maxpool argmax threads");
        assert_same_bits(dx[0], dx[t], (size_t)n * 4, "maxpool bwd threads");
    }
    for (int t = 0; t < NPOOLS; t++) {
        free(y[t]);
        free(dx[t]);
        free(am[t]);
    }
    pools_free(pools);
    free(x);
    free(dy);
}
END_TEST

/* A ReLU and the pool after it in one pass each way equal the two ops, bit
 * for bit: forward, the pool's output (its argmax may differ only where
 * that output is +0); backward, the ReLU's dx after either forward. Inputs
 * with negatives, -0, NaN (propagated: no gradient, NaN > 0 being false),
 * pool gradients of -0 and NaN, floor-mode edges (rows and columns outside
 * every window), the models' two shapes, any thread count. And the test can
 * fail: the pool's gradient alone (the ReLU skipped) differs. */
/* The forward pass bit for bit against the scan it is defined by (the
 * first maximum in row-major window order wins, a NaN over any number),
 * under every vector path, for rows of 1 to 17 windows (the vector scans'
 * whole groups, their masked or scalar tails); values drawn from a few
 * levels so windows tie, with NaN and -0; fused with the ReLU too. */
START_TEST(test_maxpool_forward_vs_scan)
{
    repro_isa paths[REPRO_ISA_COUNT];
    int npaths = tu_isa_paths(paths);
    for (int W = 2; W <= 35; W += 3) {
        int B = 2, C = 3, H = 5, OH = H / 2, OW = W / 2;
        long n = (long)B * C * H * W, planes = (long)B * C, pm = (long)OH * OW, m = planes * pm;
        float *x = frand_new(n, 470 + W);
        for (long i = 0; i < n; i++)
            x[i] = i % 13 == 2 ? NAN : i % 11 == 1 ? -0.0f : (float)(int)(x[i] * 4.0f);
        float *want = falloc(m), *want_relu = falloc(m);
        int32_t *want_at = calloc((size_t)m, sizeof(int32_t));
        for (long p = 0; p < planes; p++)
            for (long o = 0; o < pm; o++) {
                int32_t first = (int32_t)(2 * (o / OW) * W + 2 * (o % OW)), at = first;
                const float *xp = x + p * H * W;
                for (int r = 0; r < 2; r++)
                    for (int c = 0; c < 2; c++) {
                        int32_t off = first + r * W + c;
                        if (xp[off] > xp[at] || (isnan(xp[off]) && !isnan(xp[at])))
                            at = off;
                    }
                want[p * pm + o] = xp[at];
                want_at[p * pm + o] = at;
            }
        repro_relu_forward(NULL, want, want_relu, m);
        for (int t = 0; t < npaths; t++) {
            ck_assert_int_eq(repro_isa_select(paths[t]), 0);
            float *y = frand_new(m, 480 + W);
            int32_t *at = calloc((size_t)m, sizeof(int32_t));
            repro_maxpool2d_forward(NULL, B, C, H, W, 2, x, y, at);
            assert_same_bits(y, want, (size_t)m * 4, "maxpool forward");
            assert_same_bits(at, want_at, (size_t)m * 4, "maxpool argmax");
            repro_maxpool2d_relu_forward(NULL, B, C, H, W, 2, x, y, at);
            assert_same_bits(y, want_relu, (size_t)m * 4, "relu+maxpool forward");
            assert_same_bits(at, want_at, (size_t)m * 4, "relu+maxpool argmax");
            free(y);
            free(at);
        }
        repro_isa_select(repro_isa_best());
        free(x);
        free(want);
        free(want_relu);
        free(want_at);
    }
}
END_TEST

/* The backward pass bit for bit against its definition: dx zeroed, then
 * each window's gradient (with the ReLU's, y > 0 ? dy : 0, when fused)
 * stored at its argmax, under every vector path. Rows of 13, 5 and 17
 * windows (the forward's eight-, four- and one-at-a-time scans); odd sizes
 * leave a row and a column no window covers; dy holds -0 and NaN. */
START_TEST(test_maxpool_backward_vs_scatter)
{
    const int shapes[][4] = {{2, 3, 26, 26}, {2, 3, 11, 11}, {1, 2, 7, 35}, {1, 1, 5, 4}};
    repro_isa paths[REPRO_ISA_COUNT];
    int npaths = tu_isa_paths(paths);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        int B = shapes[c][0], C = shapes[c][1], H = shapes[c][2], W = shapes[c][3];
        long n = (long)B * C * H * W, planes = (long)B * C, m = planes * (H / 2) * (W / 2);
        long pm = (H / 2) * (W / 2);
        float *x = frand_new(n, 440 + c), *dy = frand_new(m, 450 + c), *y = falloc(m);
        for (long i = 0; i < m; i++)
            dy[i] = i % 7 == 3 ? -0.0f : i % 11 == 5 ? NAN : dy[i];
        int32_t *am = calloc((size_t)m, sizeof(int32_t));
        repro_maxpool2d_relu_forward(NULL, B, C, H, W, 2, x, y, am);
        float *want = falloc(n), *want_relu = falloc(n);
        memset(want, 0, (size_t)n * 4);
        memset(want_relu, 0, (size_t)n * 4);
        for (long p = 0; p < planes; p++)
            for (long i = 0; i < pm; i++) {
                want[p * H * W + am[p * pm + i]] = dy[p * pm + i];
                want_relu[p * H * W + am[p * pm + i]] = y[p * pm + i] > 0.0f ? dy[p * pm + i] : 0.0f;
            }
        for (int t = 0; t < npaths; t++) {
            ck_assert_int_eq(repro_isa_select(paths[t]), 0);
            float *got = frand_new(n, 460 + c); /* overwritten */
            repro_maxpool2d_backward(NULL, B, C, H, W, 2, am, dy, got);
            assert_same_bits(got, want, (size_t)n * 4, "maxpool backward");
            repro_maxpool2d_relu_backward(NULL, B, C, H, W, 2, am, dy, y, got);
            assert_same_bits(got, want_relu, (size_t)n * 4, "maxpool+relu backward");
            free(got);
        }
        repro_isa_select(repro_isa_best());
        free(x);
        free(dy);
        free(y);
        free(am);
        free(want);
        free(want_relu);
    }
}
END_TEST

START_TEST(test_maxpool_relu_fused)
{
    const int shapes[][5] = {{64, 8, 26, 26, 2}, {64, 16, 11, 11, 2}, {3, 2, 7, 8, 3}};
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        int B = shapes[c][0], C = shapes[c][1], H = shapes[c][2], W = shapes[c][3];
        int k = shapes[c][4];
        long n = (long)B * C * H * W, m = (long)B * C * (H / k) * (W / k);
        float *x = frand_new(n, 400 + c), *dy = frand_new(m, 410 + c);
        for (long i = 0; i < n; i++) /* the conv's output: some -0 and NaN */
            x[i] = i % 97 == 5 ? NAN : i % 89 == 4 ? -0.0f : x[i];
        for (long i = 0; i < m; i++)
            dy[i] = i % 31 == 3 ? -0.0f : i % 53 == 7 ? NAN : dy[i];
        float *r = falloc(n), *y = falloc(m), *dpool = falloc(n), *want = falloc(n);
        int32_t *am = calloc((size_t)m, sizeof(int32_t));
        repro_relu_forward(NULL, x, r, n);
        repro_maxpool2d_forward(NULL, B, C, H, W, k, r, y, am);
        repro_maxpool2d_backward(NULL, B, C, H, W, k, am, dy, dpool);
        repro_relu_backward(NULL, r, dpool, want, n);
        ck_assert(memcmp(dpool, want, (size_t)n * 4) != 0);
        for (int t = 0; t < NPOOLS; t++) {
            float *y2 = frand_new(m, 430 + c), *got = frand_new(n, 420 + c); /* overwritten */
            int32_t *am2 = calloc((size_t)m, sizeof(int32_t));
            repro_maxpool2d_relu_forward(pools[t], B, C, H, W, k, x, y2, am2);
            assert_same_bits(y2, y, (size_t)m * 4, "relu+maxpool forward fused");
            repro_maxpool2d_relu_backward(pools[t], B, C, H, W, k, am2, dy, y2, got);
            assert_same_bits(got, want, (size_t)n * 4, "maxpool+relu backward after fused");
            repro_maxpool2d_relu_backward(pools[t], B, C, H, W, k, am, dy, y, got);
            assert_same_bits(got, want, (size_t)n * 4, "maxpool+relu backward after the ops");
            free(y2);
            free(got);
            free(am2);
        }
        free(x);
        free(dy);
        free(r);
        free(y);
        free(dpool);
        free(want);
        free(am);
    }
    pools_free(pools);
}
END_TEST

/* ---- dropout ---------------------------------------------------------------- */

typedef struct {
    float *x, *y, *r;
    uint8_t *mask;
    long n;
    float p;
    uint64_t key;
} drop_ctx_t;

static double drop_loss(void *v)
{
    drop_ctx_t *c = v;
    repro_dropout_forward(NULL, c->x, c->y, c->mask, c->n, c->p, c->key);
    return project(c->y, c->r, c->n);
}

START_TEST(test_dropout_finite_diff)
{
    /* For a fixed key dropout is linear in x: finite differences, h = 1e-2,
     * tolerance 1e-4 + 1e-4*|g| (only float rounding of x*scale). */
    drop_ctx_t c = {.n = 50, .p = 0.4f, .key = 0xfeedULL};
    c.x = frand_new(c.n, 190);
    c.y = falloc(c.n);
    c.r = frand_new(c.n, 191);
    c.mask = calloc((size_t)c.n, 1);
    repro_dropout_forward(NULL, c.x, c.y, c.mask, c.n, c.p, c.key);
    float *dx = falloc(c.n);
    repro_dropout_backward(NULL, c.r, c.mask, dx, c.n, c.p);
    double num[50];
    numeric_grad(drop_loss, &c, c.x, c.n, 1e-2f, num);
    expect_grad("dropout dx", dx, num, c.n, 1e-4, 1e-4);
    free(dx);
    free(c.x);
    free(c.y);
    free(c.r);
    free(c.mask);
}
END_TEST

START_TEST(test_dropout_mask_rule)
{
    /* The mask is exactly ops.h's function of (key, i): checked element by
     * element, on a prefix call (same prefix), across threads (memcmp), and
     * another key gives another mask. Keep fraction 1-p within 0.01 (5
     * standard deviations at n = 6e4). Kept values are exactly
     * x * (1/(1-p)); p = 0 copies x bit for bit. */
    long n = 60000;
    float p = 0.3f, scale = 1.0f / (1.0f - p);
    uint64_t key = 0x0123456789abcdefULL;
    float *x = frand_new(n, 200);
    float *y[NPOOLS];
    uint8_t *mask[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        y[t] = falloc(n);
        mask[t] = calloc((size_t)n, 1);
        repro_dropout_forward(pools[t], x, y[t], mask[t], n, p, key);
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(y[0], y[t], (size_t)n * 4, "dropout fwd threads");
        assert_same_bits(mask[0], mask[t], (size_t)n, "dropout mask threads");
    }
    long kept = 0;
    for (long i = 0; i < n; i++) {
        int want = repro_u32_to_unit(repro_philox_at(key, (uint64_t)i, 0).v[0]) >= p;
        ck_assert_int_eq(mask[0][i], want);
        kept += want;
        float wv = want ? x[i] * scale : x[i] * 0.0f;
        ck_assert(memcmp(&wv, &y[0][i], 4) == 0);
    }
    double frac = (double)kept / n;
    ck_assert_msg(fabs(frac - 0.7) < 0.01, "keep fraction %g", frac);
    /* a prefix (a sub-range of the same stream) has the same mask */
    long n2 = 40000;
    float *y2 = falloc(n2);
    uint8_t *m2 = calloc((size_t)n2, 1);
    repro_dropout_forward(pools[1], x, y2, m2, n2, p, key);
    assert_same_bits(m2, mask[0], (size_t)n2, "dropout prefix mask");
    assert_same_bits(y2, y[0], (size_t)n2 * 4, "dropout prefix values");
    /* another key: a different mask */
    repro_dropout_forward(pools[1], x, y2, m2, n2, p, key + 1);
    ck_assert(memcmp(m2, mask[0], (size_t)n2) != 0);
    /* backward: threads, and dx = dy*scale where kept */
    float *dx[NPOOLS];
    for (int t = 0; t < NPOOLS; t++) {
        dx[t] = falloc(n);
        repro_dropout_backward(pools[t], x, mask[0], dx[t], n, p);
    }
    for (int t = 1; t < NPOOLS; t++)
        assert_same_bits(dx[0], dx[t], (size_t)n * 4, "dropout bwd threads");
    /* p = 0: identity, bits included */
    x[5] = -0.0f;
    x[6] = NAN;
    repro_dropout_forward(pools[2], x, y[1], mask[1], n, 0.0f, key);
    assert_same_bits(y[1], x, (size_t)n * 4, "dropout p=0 forward");
    repro_dropout_backward(pools[2], x, mask[1], dx[1], n, 0.0f);
    assert_same_bits(dx[1], x, (size_t)n * 4, "dropout p=0 backward");
    for (long i = 0; i < n; i++)
        ck_assert_int_eq(mask[1][i], 1);
    for (int t = 0; t < NPOOLS; t++) {
        free(y[t]);
        free(mask[t]);
        free(dx[t]);
    }
    pools_free(pools);
    free(x);
    free(y2);
    free(m2);
}
END_TEST

/* ---- softmax cross-entropy ---------------------------------------------------- */

typedef struct {
    float *z, *probs;
    int32_t *labels;
    int B, C;
} sx_ctx;

static double sx_loss(void *v)
{
    sx_ctx *c = v;
    return repro_softmax_xent_forward(c->z, c->labels, c->probs, c->B, c->C);
}

START_TEST(test_softmax_xent)
{
    /* Forward vs a libm double reference: loss to 1e-12 relative, probs to
     * 1 float ulp (2^-24 relative); probs sum to 1 within 1e-6. Backward vs
     * finite differences of the double loss, h = 1e-3: truncation
     * ~h^2 * |L'''| < 1e-6, tolerance 1e-5 + 1e-4*|g|. */
    sx_ctx c = {.B = 3, .C = 5};
    c.z = frand_new(15, 210);
    for (int i = 0; i < 15; i++)
        c.z[i] *= 4.0f;
    c.probs = falloc(15);
    int32_t labels[3] = {0, 4, 2};
    c.labels = labels;
    double loss = repro_softmax_xent_forward(c.z, labels, c.probs, c.B, c.C);
    double want = 0;
    for (int b = 0; b < c.B; b++) {
        double mx = -INFINITY, s = 0, ps = 0;
        for (int j = 0; j < c.C; j++)
            mx = fmax(mx, c.z[b * c.C + j]);
        for (int j = 0; j < c.C; j++)
            s += exp((double)c.z[b * c.C + j] - mx);
        for (int j = 0; j < c.C; j++) {
            double pj = exp((double)c.z[b * c.C + j] - mx) / s;
            ck_assert(fabs(c.probs[b * c.C + j] - pj) <= pj * 0x1p-24);
            ps += c.probs[b * c.C + j];
        }
        ck_assert(fabs(ps - 1.0) < 1e-6);
        want += log(s) - ((double)c.z[b * c.C + labels[b]] - mx);
    }
    want /= c.B;
    ck_assert_msg(fabs(loss - want) <= 1e-12 * fabs(want), "loss %.17g vs %.17g", loss, want);
    float dz[15];
    repro_softmax_xent_backward(c.probs, labels, dz, c.B, c.C);
    double num[15];
    numeric_grad(sx_loss, &c, c.z, 15, 1e-3f, num);
    expect_grad("softmax-xent dlogits", dz, num, 15, 1e-5, 1e-4);
    /* huge logits stay finite (max subtraction) */
    float big[2] = {1000.0f, -1000.0f}, pb[2];
    int32_t l0 = 1;
    double lb = repro_softmax_xent_forward(big, &l0, pb, 1, 2);
    ck_assert(fabs(lb - 2000.0) < 1e-9);
    ck_assert(pb[0] == 1.0f && pb[1] == 0.0f);
    free(c.z);
    free(c.probs);
}
END_TEST

/* Rows longer than the 16 exps a row keeps (softmax.h) compute the rest
 * again: bit for bit the probabilities of repro_hd_exp's own formula. */
START_TEST(test_softmax_long_row)
{
    enum { C = 40 };
    float *z = frand_new(C, 211), probs[C];
    for (int j = 0; j < C; j++)
        z[j] *= 6.0f;
    int32_t label = 31;
    repro_softmax_xent_forward(z, &label, probs, 1, C);
    float mx = z[0];
    for (int j = 1; j < C; j++)
        mx = z[j] > mx ? z[j] : mx;
    double s = 0.0;
    for (int j = 0; j < C; j++)
        s += repro_hd_exp((double)z[j] - (double)mx);
    for (int j = 0; j < C; j++) {
        float want = (float)(repro_hd_exp((double)z[j] - (double)mx) / s);
        ck_assert_msg(memcmp(&probs[j], &want, sizeof want) == 0, "prob %d: %a vs %a", j,
                      probs[j], want);
    }
    free(z);
}
END_TEST

/* ---- optimizers --------------------------------------------------------------- */

START_TEST(test_sgd)
{
    /* Three steps (first_step, then momentum). Bitwise vs the float loop
     * of torch.optim.SGD's ops in order (d_p = g + wd*p; buf = m*buf + d_p;
     * p = p + (-lr)*buf); within 1e-5 relative of the same formula in double
     * (a few float roundings per step); thread invariance by memcmp. */
    long n = 70001;
    float lr = 0.05f, mom = 0.9f, wd = 1e-3f;
    float *p0 = frand_new(n, 220), *g = frand_new(n, 221);
    float *pr = fdup(p0, n), *br = falloc(n);
    double *pd = calloc((size_t)n, sizeof *pd), *bd = calloc((size_t)n, sizeof *bd);
    for (long i = 0; i < n; i++)
        pd[i] = p0[i];
    float *p[NPOOLS], *buf[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        p[t] = fdup(p0, n);
        buf[t] = falloc(n);
    }
    for (int step = 0; step < 3; step++) {
        for (int t = 0; t < NPOOLS; t++)
            repro_sgd_step(pools[t], p[t], g, buf[t], n, lr, mom, wd, step == 0);
        for (long i = 0; i < n; i++) {
            float d = g[i] + wd * pr[i];
            br[i] = step == 0 ? d : mom * br[i] + d;
            pr[i] = pr[i] - lr * br[i];
            double dd = g[i] + (double)wd * pd[i];
            bd[i] = step == 0 ? dd : (double)mom * bd[i] + dd;
            pd[i] -= (double)lr * bd[i];
        }
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(p[0], p[t], (size_t)n * 4, "sgd p threads");
        assert_same_bits(buf[0], buf[t], (size_t)n * 4, "sgd buf threads");
    }
    assert_same_bits(p[0], pr, (size_t)n * 4, "sgd vs float loop");
    assert_same_bits(buf[0], br, (size_t)n * 4, "sgd buf vs float loop");
    for (long i = 0; i < n; i++)
        ck_assert(fabs(p[0][i] - pd[i]) <= 1e-5 * (1 + fabs(pd[i])));
    for (int t = 0; t < NPOOLS; t++) {
        free(p[t]);
        free(buf[t]);
    }
    pools_free(pools);
    free(p0);
    free(g);
    free(pr);
    free(br);
    free(pd);
    free(bd);
}
END_TEST

START_TEST(test_adamw)
{
    /* Five steps with bc1/bc2 from repeated multiplication. Bitwise vs the
     * float loop of PyTorch's single-tensor ops using libm's sqrtf/sqrt
     * (IEEE-exact, so this also pins our own correctly rounded roots, over
     * gradients spanning 1e-30..1e8 so v covers ~140 binades); within
     * 1e-4 relative + 1e-6 absolute of the ops.h formula in double (the
     * float roundings of m, v, and the step); memcmp across threads. */
    long n = 50001;
    float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float *p0 = frand_new(n, 230), *g = frand_new(n, 231);
    repro_rng rng;
    repro_rng_init(&rng, 232);
    for (long i = 0; i < n; i += 3) /* wide magnitudes for the sqrt */
        g[i] = ldexpf(g[i], (int)repro_rng_below(&rng, 126) - 100);
    float *pr = fdup(p0, n), *mr = falloc(n), *vr = falloc(n);
    double *pd = calloc((size_t)n, sizeof *pd), *md = calloc((size_t)n, sizeof *md);
    double *vd = calloc((size_t)n, sizeof *vd);
    for (long i = 0; i < n; i++)
        pd[i] = p0[i];
    float *p[NPOOLS], *m[NPOOLS], *v[NPOOLS];
    repro_pool *pools[NPOOLS];
    pools_new(pools);
    for (int t = 0; t < NPOOLS; t++) {
        p[t] = fdup(p0, n);
        m[t] = falloc(n);
        v[t] = falloc(n);
    }
    double b1t = 1.0, b2t = 1.0;
    for (int step = 1; step <= 5; step++) {
        b1t *= b1;
        b2t *= b2;
        double bc1 = 1.0 - b1t, bc2 = 1.0 - b2t;
        for (int t = 0; t < NPOOLS; t++)
            repro_adamw_step(pools[t], p[t], g, m[t], v[t], n, lr, b1, b2, eps, wd, bc1, bc2);
        float decay = (float)(1.0 - (double)lr * wd), w = (float)(1.0 - (double)b1);
        float omb2 = (float)(1.0 - (double)b2), nstep = (float)(-((double)lr / bc1));
        float bc2s = (float)sqrt(bc2);
        for (long i = 0; i < n; i++) {
            pr[i] = pr[i] * decay;
            mr[i] = mr[i] + w * (g[i] - mr[i]);
            vr[i] = vr[i] * b2;
            vr[i] = vr[i] + omb2 * g[i] * g[i];
            float denom = sqrtf(vr[i]) / bc2s + eps;
            pr[i] = pr[i] + nstep * mr[i] / denom;
            pd[i] *= 1.0 - (double)lr * wd;
            md[i] += ((double)g[i] - md[i]) * (1.0 - (double)b1);
            vd[i] = vd[i] * b2 + (1.0 - (double)b2) * g[i] * g[i];
            pd[i] -= ((double)lr / bc1) * md[i] / (sqrt(vd[i]) / sqrt(bc2) + eps);
        }
    }
    for (int t = 1; t < NPOOLS; t++) {
        assert_same_bits(p[0], p[t], (size_t)n * 4, "adamw p threads");
        assert_same_bits(m[0], m[t], (size_t)n * 4, "adamw m threads");
        assert_same_bits(v[0], v[t], (size_t)n * 4, "adamw v threads");
    }
    assert_same_bits(m[0], mr, (size_t)n * 4, "adamw m vs float loop");
    assert_same_bits(v[0], vr, (size_t)n * 4, "adamw v vs float loop");
    assert_same_bits(p[0], pr, (size_t)n * 4, "adamw p vs float loop");
    for (long i = 0; i < n; i++)
        ck_assert_msg(fabs(p[0][i] - pd[i]) <= 1e-4 * fabs(pd[i]) + 1e-6, "p[%ld] %.9g vs %.9g",
                      i, p[0][i], pd[i]);
    for (int t = 0; t < NPOOLS; t++) {
        free(p[t]);
        free(m[t]);
        free(v[t]);
    }
    pools_free(pools);
    free(p0);
    free(g);
    free(pr);
    free(mr);
    free(vr);
    free(pd);
    free(md);
    free(vd);
}
END_TEST

/* ---- negative control ------------------------------------------------------------ */

START_TEST(test_negative_control_wrong_gradient_fails)
{
    /* The finite-difference checker must be able to fail: the true linear
     * dx passes, the same with one entry off by 1% fails, and a gradient of
     * the wrong layer (dx computed with w^T misread as w's layout, i.e.
     * transposed) fails too. */
    lin_ctx c;
    lin_setup(&c, 3, 4, 4, 240);
    float dx[12], bad[12];
    double num[12];
    repro_linear_backward_data(NULL, c.r, c.w, dx, c.B, c.in, c.out);
    numeric_grad(lin_loss, &c, c.x, 12, 1e-2f, num);
    ck_assert_int_eq(grad_close(dx, num, 12, 1e-3, 1e-3, NULL), 1);
    memcpy(bad, dx, sizeof bad);
    bad[7] *= 1.01f;
    bad[7] += 0.01f;
    ck_assert_int_eq(grad_close(bad, num, 12, 1e-3, 1e-3, NULL), 0);
    float wt[16];
    for (int o = 0; o < 4; o++)
        for (int i = 0; i < 4; i++)
            wt[i * 4 + o] = c.w[o * 4 + i];
    repro_linear_backward_data(NULL, c.r, wt, bad, c.B, c.in, c.out);
    ck_assert_int_eq(grad_close(bad, num, 12, 1e-3, 1e-3, NULL), 0);
    lin_free(&c);
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("mathx");
    tcase_add_test(tc, test_exp_vs_libm);
    tcase_add_test(tc, test_exp_special_and_subnormal);
    tcase_add_test(tc, test_log_vs_libm);
    tcase_add_test(tc, test_log_special);
    suite_add_tcase(s, tc);
    tc = tcase_create("gemm");
    tcase_add_test(tc, test_gemm_bitwise_vs_plain_loop);
    tcase_add_test(tc, test_gemm_sharded_equals_shard_buffers);
    tcase_add_test(tc, test_gemm_vs_double_and_threads);
    suite_add_tcase(s, tc);
    tc = tcase_create("linear");
    tcase_add_test(tc, test_linear_forward_bitwise);
    tcase_add_test(tc, test_linear_backward_finite_diff);
    tcase_add_test(tc, test_linear_threads_and_accumulate);
    suite_add_tcase(s, tc);
    tc = tcase_create("conv2d");
    tcase_add_test(tc, test_conv_bitwise_vs_plain_loops);
    tcase_add_test(tc, test_conv_finite_diff);
    tcase_add_test(tc, test_conv_threads);
    tcase_add_test(tc, test_conv_filter_sharded_equals_shard_buffers);
    suite_add_tcase(s, tc);
    tc = tcase_create("elementwise");
    tcase_add_test(tc, test_relu);
    tcase_add_test(tc, test_relu_threads);
    tcase_add_test(tc, test_maxpool_finite_diff_and_floor);
    tcase_add_test(tc, test_maxpool_ties_and_nan);
    tcase_add_test(tc, test_maxpool_threads);
    tcase_add_test(tc, test_maxpool_relu_fused);
    tcase_add_test(tc, test_maxpool_backward_vs_scatter);
    tcase_add_test(tc, test_maxpool_forward_vs_scan);
    tcase_add_test(tc, test_dropout_finite_diff);
    tcase_add_test(tc, test_dropout_mask_rule);
    tcase_add_test(tc, test_softmax_xent);
    tcase_add_test(tc, test_softmax_long_row);
    suite_add_tcase(s, tc);
    tc = tcase_create("optimizers");
    tcase_add_test(tc, test_sgd);
    tcase_add_test(tc, test_adamw);
    suite_add_tcase(s, tc);
    tc = tcase_create("negative_control");
    tcase_add_test(tc, test_negative_control_wrong_gradient_fails);
    suite_add_tcase(s, tc);
    return s;
}
