/* The vector paths (kernels/isa.h): selection rules, and the promise that
 * every path the CPU has gives the same bits -- the GEMM (tails, strided A,
 * bias, accumulate, K past one cache block), the three convolution passes
 * against plain loops in their stated orders (including the non-finite
 * weight that backward data must skip, not multiply by zero), the sharded
 * GEMM, dropout against its mask rule, the elementwise kernels and the
 * bias sum against their per-element expressions, and short MLP and CNN
 * training runs whose step digests must agree bit for bit
 * across paths and thread counts. The CLI's REPRO_ISA: unknown name exit 2,
 * a path the CPU lacks exit 3, and `repro env` names the path in use. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/train.h"
#include "core/train_record.h"
#include "kernels/cpu/conv_algos.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/ops.h"
#include "kernels/isa.h"
#include "kernels/philox.h"
#include "kernels/shared/optim.h"
#include "kernels/shared/pointwise.h"
#include "testutil.h"

static float *rand_floats(long n, uint64_t seed)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    repro_rng r;
    repro_rng_init(&r, seed);
    for (long i = 0; i < n; i++)
        p[i] = 2.0f * repro_rng_unit(&r) - 1.0f;
    return p;
}

static float *dup(const float *a, long n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    memcpy(p, a, (size_t)n * sizeof *p);
    return p;
}

START_TEST(test_names_and_selection)
{
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        ck_assert_int_eq(repro_isa_from_name(repro_isa_name((repro_isa)i)), i);
    ck_assert_int_eq(repro_isa_from_name("avx3"), -1);
    ck_assert_int_eq(repro_isa_from_name(NULL), -1);
    ck_assert(repro_isa_supported(REPRO_ISA_SSE2));
    ck_assert(repro_isa_supported(repro_isa_best()));
    ck_assert_int_eq(repro_isa_select(REPRO_ISA_SSE2), 0);
    ck_assert_int_eq(repro_isa_current(), REPRO_ISA_SSE2);
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        if (!repro_isa_supported((repro_isa)i)) { /* refused, nothing changes */
            ck_assert_int_eq(repro_isa_select((repro_isa)i), -1);
            ck_assert_int_eq(repro_isa_current(), REPRO_ISA_SSE2);
        }
    ck_assert_int_eq(repro_isa_select((repro_isa)REPRO_ISA_COUNT), -1);
    ck_assert_int_eq(repro_isa_select(repro_isa_best()), 0);
}
END_TEST

/* ---- GEMM ------------------------------------------------------------------- */

static void gemm_ref(int M, int N, int K, const float *A, long a_rs, long a_cs, const float *B,
                     long ldb, float *C, long ldc, const float *bias, int acc)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float c = acc ? C[m * ldc + n] : bias ? bias[n] : 0.0f;
            for (int k = 0; k < K; k++) {
                float p = A[m * a_rs + k * a_cs] * B[k * ldb + n];
                c = c + p;
            }
            C[m * ldc + n] = c;
        }
}

START_TEST(test_gemm_every_path)
{
    /* K = 600 crosses the 256-deep cache blocks; 13 x 37 leaves tails on
     * every tile shape (4, 6, 8 rows; 8, 16, 32 columns); K = 10 runs
     * panels as strips of whole tiles (40: with a tail after them). */
    const int shapes[][3] = {{13, 37, 600}, {64, 256, 97}, {7, 3, 5},    {33, 70, 257},
                             {1, 1, 1},     {64, 10, 400}, {10, 128, 64}, {64, 128, 10},
                             {13, 40, 10},  {64, 400, 10}};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    repro_pool *pool2;
    ck_assert_int_eq(repro_pool_new(&pool2, 2), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        long ldc = N + 5;
        float *A = rand_floats((long)M * K, 10 + s), *B = rand_floats((long)K * N, 20 + s);
        float *bias = rand_floats(N, 30 + s), *C0 = rand_floats(M * ldc, 40 + s);
        A[0] = -0.0f; /* signed zeros travel through the splat */
        for (int mode = 0; mode < 4; mode++) {
            long a_rs = mode == 3 ? 1 : K, a_cs = mode == 3 ? M : 1;
            const float *bb = mode == 1 ? bias : NULL;
            float *want = dup(C0, M * ldc);
            gemm_ref(M, N, K, A, a_rs, a_cs, B, N, want, ldc, bb, mode == 2);
            for (int i = 0; i < np; i++) {
                ck_assert_int_eq(repro_isa_select(p[i]), 0);
                float *got = dup(C0, M * ldc);
                repro_gemm(pool2, M, N, K, A, a_rs, a_cs, B, N, got, ldc, bb, mode == 2);
                ck_assert_msg(!memcmp(got, want, (size_t)(M * ldc) * sizeof(float)),
                              "gemm %dx%dx%d mode %d differs on %s", M, N, K, mode,
                              repro_isa_name(p[i]));
                free(got);
            }
            free(want);
        }
        free(A), free(B), free(bias), free(C0);
    }
    repro_pool_free(pool2);
    repro_isa_select(repro_isa_best());
}
END_TEST

/* The linear forward (B = w^T, read transposed and packed four columns by
 * four k at a time) on every path: K past one cache block and with a tail,
 * column counts with tails on every panel width. */
START_TEST(test_linear_forward_every_path)
{
    const int shapes[][3] = {{64, 256, 784}, {13, 37, 601}, {7, 3, 5},
                             {6, 16, 4},     {64, 10, 128}, {64, 10, 400}};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    repro_pool *pool2;
    ck_assert_int_eq(repro_pool_new(&pool2, 2), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], out = shapes[s][1], in = shapes[s][2];
        float *x = rand_floats((long)B * in, 80 + s), *w = rand_floats((long)out * in, 90 + s);
        float *bias = rand_floats(out, 100 + s), *want = rand_floats((long)B * out, 1);
        for (int b = 0; b < B; b++)
            for (int o = 0; o < out; o++) {
                float a = bias[o];
                for (int i = 0; i < in; i++) {
                    float pr = x[(long)b * in + i] * w[(long)o * in + i];
                    a = a + pr;
                }
                want[(long)b * out + o] = a;
            }
        for (int i = 0; i < np; i++) {
            ck_assert_int_eq(repro_isa_select(p[i]), 0);
            float *got = rand_floats((long)B * out, 2);
            repro_linear_forward(pool2, x, w, bias, got, B, in, out, NULL);
            ck_assert_msg(!memcmp(got, want, (size_t)B * out * sizeof(float)),
                          "linear forward %dx%dx%d differs on %s", B, out, in,
                          repro_isa_name(p[i]));
            free(got);
        }
        free(x), free(w), free(bias), free(want);
    }
    repro_pool_free(pool2);
    repro_isa_select(repro_isa_best());
}
END_TEST

/* The shard rule's GEMM (the weight gradient: A = dy^T) on every path:
 * each shard summed from +0 in ascending k, the partials added in shard
 * order, then C = total or C + total; full tiles, edge tiles, a short last
 * shard's fallback and K over one block (the reference order). */
START_TEST(test_gemm_sharded_every_path)
{
    const int shapes[][4] = {{256, 784, 64, 16}, {13, 37, 48, 16}, {7, 3, 6, 3},
                             {33, 70, 256, 32}, {20, 40, 300, 4}, {6, 16, 16, 1},
                             {10, 400, 64, 16}, {256, 5, 64, 16}, {10, 128, 64, 16}};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    repro_pool *pool2;
    ck_assert_int_eq(repro_pool_new(&pool2, 2), 0);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], S = shapes[s][3];
        long ldc = N + 3;
        float *A = rand_floats((long)K * M, 50 + s), *B = rand_floats((long)K * N, 60 + s);
        float *C0 = rand_floats(M * ldc, 70 + s), *part = rand_floats(M * ldc, 1);
        A[0] = -0.0f;
        for (int acc = 0; acc < 2; acc++) {
            float *want = dup(C0, M * ldc), *total = dup(C0, M * ldc);
            for (int k0 = 0; k0 < K; k0 += S) {
                gemm_ref(M, N, S, A + (long)k0 * M, 1, M, B + (long)k0 * N, N, part, ldc, NULL,
                         0);
                for (long e = 0; e < M * ldc; e++)
                    total[e] = k0 == 0 ? part[e] : total[e] + part[e];
            }
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++)
                    want[m * ldc + n] = acc ? want[m * ldc + n] + total[m * ldc + n]
                                            : total[m * ldc + n];
            for (int i = 0; i < np; i++) {
                ck_assert_int_eq(repro_isa_select(p[i]), 0);
                float *got = dup(C0, M * ldc);
                repro_gemm_sharded(pool2, M, N, K, S, A, 1, M, B, N, got, ldc, acc);
                ck_assert_msg(!memcmp(got, want, (size_t)(M * ldc) * sizeof(float)),
                              "sharded gemm %dx%dx%d S=%d acc %d differs on %s", M, N, K, S, acc,
                              repro_isa_name(p[i]));
                free(got);
            }
            free(want), free(total);
        }
        free(A), free(B), free(C0), free(part);
    }
    repro_pool_free(pool2);
    repro_isa_select(repro_isa_best());
}
END_TEST

/* ---- convolution ------------------------------------------------------------- */

static float xat(const repro_conv_shape *s, const float *x, long b, long c, long iy, long ix)
{
    if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W)
        return 0.0f;
    return x[((b * s->C + c) * s->H + iy) * s->W + ix];
}

/* ops.h's orders, written as plain loops. */
static void conv_fwd_ref(const repro_conv_shape *s, const float *x, const float *w,
                         const float *bias, float *y)
{
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s), R = s->R;
    for (long b = 0; b < s->B; b++)
        for (long k = 0; k < s->K; k++)
            for (long oy = 0; oy < OH; oy++)
                for (long ox = 0; ox < OW; ox++) {
                    float a = bias ? bias[k] : 0.0f;
                    for (long c = 0; c < s->C; c++)
                        for (long ry = 0; ry < R; ry++)
                            for (long rx = 0; rx < R; rx++) {
                                float p = w[((k * s->C + c) * R + ry) * R + rx] *
                                          xat(s, x, b, c, oy + ry - s->pad, ox + rx - s->pad);
                                a = a + p;
                            }
                    y[((b * s->K + k) * OH + oy) * OW + ox] = a;
                }
}

static void conv_bwd_data_ref(const repro_conv_shape *s, const float *dy, const float *w,
                              float *dx)
{
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s), R = s->R;
    for (long b = 0; b < s->B; b++)
        for (long c = 0; c < s->C; c++)
            for (long iy = 0; iy < s->H; iy++)
                for (long ix = 0; ix < s->W; ix++) {
                    float a = 0.0f;
                    for (long k = 0; k < s->K; k++)
                        for (long ry = 0; ry < R; ry++)
                            for (long rx = 0; rx < R; rx++) {
                                long oy = iy - ry + s->pad, ox = ix - rx + s->pad;
                                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW)
                                    continue; /* skipped, not multiplied by 0 */
                                float p = w[((k * s->C + c) * R + ry) * R + rx] *
                                          dy[((b * s->K + k) * OH + oy) * OW + ox];
                                a = a + p;
                            }
                    dx[((b * s->C + c) * s->H + iy) * s->W + ix] = a;
                }
}

static void conv_bwd_filter_ref(const repro_conv_shape *s, const float *dy, const float *x,
                                float *dw, int acc)
{
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s), R = s->R;
    for (long k = 0; k < s->K; k++)
        for (long c = 0; c < s->C; c++)
            for (long ry = 0; ry < R; ry++)
                for (long rx = 0; rx < R; rx++) {
                    float *out = &dw[((k * s->C + c) * R + ry) * R + rx];
                    float a = acc ? *out : 0.0f;
                    for (long ox = 0; ox < OW; ox++) {
                        float col = 0.0f;
                        for (long b = 0; b < s->B; b++)
                            for (long oy = 0; oy < OH; oy++) {
                                float p = dy[((b * s->K + k) * OH + oy) * OW + ox] *
                                          xat(s, x, b, c, oy + ry - s->pad, ox + rx - s->pad);
                                col = col + p;
                            }
                        a = a + col;
                    }
                    *out = a;
                }
}

static void check_conv_shape(const repro_conv_shape *s, repro_pool *pool, int inf_weight)
{
    long nx = (long)s->B * s->C * s->H * s->W, nw = (long)s->K * s->C * s->R * s->R;
    long ny = (long)s->B * s->K * repro_conv_oh(s) * repro_conv_ow(s);
    float *x = rand_floats(nx, 1), *w = rand_floats(nw, 2), *bias = rand_floats(s->K, 3);
    float *dy = rand_floats(ny, 4), *dw0 = rand_floats(nw, 5);
    if (inf_weight)
        w[nw / 2] = INFINITY;
    float *y_want = malloc((size_t)ny * 4), *dx_want = malloc((size_t)nx * 4);
    float *dw_want = dup(dw0, nw);
    conv_fwd_ref(s, x, w, bias, y_want);
    conv_bwd_data_ref(s, dy, w, dx_want);
    conv_bwd_filter_ref(s, dy, x, dw_want, 1);
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(repro_isa_select(p[i]), 0);
        const char *name = repro_isa_name(p[i]);
        float *y = malloc((size_t)ny * 4), *dx = malloc((size_t)nx * 4), *dw = dup(dw0, nw);
        repro_conv2d_forward(pool, s, x, w, bias, y);
        repro_conv2d_backward_data(pool, s, dy, w, dx);
        repro_conv2d_backward_filter(pool, s, dy, x, dw, NULL, 1);
        ck_assert_msg(!memcmp(y, y_want, (size_t)ny * 4), "conv fwd differs on %s", name);
        ck_assert_msg(!memcmp(dx, dx_want, (size_t)nx * 4), "conv bwd data differs on %s (inf %d)",
                      name, inf_weight);
        ck_assert_msg(!memcmp(dw, dw_want, (size_t)nw * 4), "conv bwd filter differs on %s",
                      name);
        free(y), free(dx), free(dw);
    }
    repro_isa_select(repro_isa_best());
    free(x), free(w), free(bias), free(dy), free(dw0), free(y_want), free(dx_want), free(dw_want);
}

START_TEST(test_conv_every_path)
{
    /* The CNN's two shapes, padding, a 5x5 kernel and odd widths that leave
     * partial vectors in every strip; 7 filters of 26 columns: AVX-512's
     * group of four filters, then the rest two and one at a time. */
    const repro_conv_shape shapes[] = {{3, 1, 28, 28, 8, 3, 0}, {2, 8, 13, 13, 16, 3, 0},
                                       {2, 3, 9, 11, 5, 3, 1},  {2, 2, 12, 37, 3, 5, 2},
                                       {1, 2, 4, 4, 2, 3, 2},   {2, 2, 28, 28, 7, 3, 0}};
    repro_pool *pool;
    ck_assert_int_eq(repro_pool_new(&pool, 2), 0);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int inf = 0; inf < 2; inf++)
            check_conv_shape(&shapes[i], inf ? pool : NULL, inf);
    repro_pool_free(pool);
}
END_TEST

START_TEST(test_conv_algos_same_bits_every_path)
{
    /* im2col and Winograd have their own orders: each must be the same on
     * every path (compared with the baseline's bits). */
    repro_conv_shape s = {4, 8, 13, 13, 16, 3, 1};
    long nx = (long)s.B * s.C * s.H * s.W, nw = (long)s.K * s.C * 9;
    long ny = (long)s.B * s.K * repro_conv_oh(&s) * repro_conv_ow(&s);
    float *x = rand_floats(nx, 7), *w = rand_floats(nw, 8), *bias = rand_floats(s.K, 9);
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
        size_t ws = repro_conv_workspace_floats((repro_conv_algo)a, &s) + 1;
        float *work = malloc(ws * 4), *base = malloc((size_t)ny * 4), *y = malloc((size_t)ny * 4);
        for (int i = 0; i < np; i++) {
            ck_assert_int_eq(repro_isa_select(p[i]), 0);
            repro_conv2d_forward_algo(NULL, (repro_conv_algo)a, &s, x, w, bias, i ? y : base,
                                      work);
            if (i)
                ck_assert_msg(!memcmp(y, base, (size_t)ny * 4), "%s on %s differs from sse2",
                              repro_conv_algo_name((repro_conv_algo)a), repro_isa_name(p[i]));
        }
        free(work), free(base), free(y);
    }
    repro_isa_select(repro_isa_best());
    free(x), free(w), free(bias);
}
END_TEST

/* ---- max pooling ------------------------------------------------------------------ */

/* maxpool backward's rule for any argmax: zero the plane, then store each
 * window's dy at its argmax, windows in order. */
static void maxpool_bwd_ref(int planes, int H, int W, int OH, int OW, const int32_t *am,
                            const float *dy, float *dx)
{
    for (long pl = 0; pl < planes; pl++) {
        for (long i = 0; i < (long)H * W; i++)
            dx[pl * H * W + i] = 0.0f;
        for (long i = 0; i < (long)OH * OW; i++)
            dx[pl * H * W + am[pl * OH * OW + i]] = dy[pl * OH * OW + i];
    }
}

/* One plane size of test_maxpool_wide_planes on the current vector path;
 * nan_every = 0 leaves the NaNs out (the vector paths' NaN-free branch). */
static void check_maxpool_planes(int H, int W, size_t d, long nan_every);

START_TEST(test_maxpool_wide_planes)
{
    /* 2x2 windows sixteen (AVX-512), eight (AVX2) and four at a time:
     * wide planes (26 -> 13 is 8 + 4 + one window, or one vector; 40 -> 20
     * is 8 + 8 + 4, or 16 + 4; 34 -> 17 is 8 + 8 + one, or 16 + one),
     * short rows several to a vector on AVX-512 (11 x 11 -> two rows of 5
     * and a last one alone; 10 x 6 -> three rows of 3, then two; 8 x 9,
     * 7 x 5, 2 x 2), ties, NaNs and signed zeros against the scan rule,
     * with and without NaNs; backward against zero-and-scatter, also with
     * an argmax outside its window, and odd sizes whose last row and
     * column are in no window. Every vector path the CPU has. */
    const int dims[][2] = {{26, 26}, {11, 13}, {8, 9},  {7, 5},   {5, 17},
                           {2, 2},   {4, 40},  {6, 34}, {11, 11}, {10, 6}};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(repro_isa_select(p[i]), 0);
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
            check_maxpool_planes(dims[d][0], dims[d][1], d, 29);
            check_maxpool_planes(dims[d][0], dims[d][1], d, 0);
        }
    }
    repro_isa_select(repro_isa_best());
}
END_TEST

static void check_maxpool_planes(int H, int W, size_t d, long nan_every)
{
    {
        int B = 2, C = 3, OH = H / 2, OW = W / 2;
        long nx = (long)B * C * H * W, ny = (long)B * C * OH * OW;
        float *x = rand_floats(nx, 50 + d);
        for (long i = 0; i < nx; i += 7)
            x[i] = x[i + 1 < nx ? i + 1 : i]; /* ties */
        for (long i = 3; nan_every > 0 && i < nx; i += nan_every)
            x[i] = NAN;
        for (long i = 5; i < nx; i += 31)
            x[i] = -0.0f;
        float *y = malloc((size_t)ny * 4), *yw = malloc((size_t)ny * 4);
        int32_t *am = malloc((size_t)ny * 4), *amw = malloc((size_t)ny * 4);
        for (long pl = 0; pl < (long)B * C; pl++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    const float *xp = x + pl * H * W;
                    int32_t at = 2 * oy * W + 2 * ox;
                    float best = xp[at];
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            int32_t off = (2 * oy + dy) * W + 2 * ox + dx;
                            if (xp[off] > best || (isnan(xp[off]) && !isnan(best))) {
                                best = xp[off];
                                at = off;
                            }
                        }
                    yw[(pl * OH + oy) * OW + ox] = best;
                    amw[(pl * OH + oy) * OW + ox] = at;
                }
        repro_maxpool2d_forward(NULL, B, C, H, W, 2, x, y, am);
        ck_assert_msg(!memcmp(y, yw, (size_t)ny * 4), "maxpool values %dx%d on %s", H, W,
                      repro_isa_name(repro_isa_current()));
        ck_assert_msg(!memcmp(am, amw, (size_t)ny * 4), "maxpool argmax %dx%d on %s", H, W,
                      repro_isa_name(repro_isa_current()));
        float *dy = rand_floats(ny, 60 + d), *dx = malloc((size_t)nx * 4);
        float *dxw = malloc((size_t)nx * 4);
        dy[0] = -0.0f, dy[ny - 1] = NAN;
        for (int bad = 0; bad < 3; bad++) {
            /* 1: the last plane's last window points at its first cell
             * (another window's); 2: the first window at a cell past every
             * window (H*W - 1: the floor's last cell when H or W is odd) */
            if (bad == 1)
                am[ny - 1] = 0;
            if (bad == 2)
                am[0] = H * W - 1;
            memset(dx, 0x55, (size_t)nx * 4);
            repro_maxpool2d_backward(NULL, B, C, H, W, 2, am, dy, dx);
            maxpool_bwd_ref(B * C, H, W, OH, OW, am, dy, dxw);
            ck_assert_msg(!memcmp(dx, dxw, (size_t)nx * 4), "maxpool backward %dx%d, case %d",
                          H, W, bad);
        }
        free(dy), free(dx), free(dxw);
        free(x), free(y), free(yw), free(am), free(amw);
    }
}

/* ---- dropout ------------------------------------------------------------------ */

START_TEST(test_dropout_every_path)
{
    /* The mask drawn many blocks at a time (repro_philox_keep) against the
     * rule element by element, and forward's and backward's values against
     * repro_hd_dropout_apply on the bits; lengths with tails on every step
     * width and around the 1024-element chunks, one and two threads. NaN,
     * inf and signed zeros travel through both multiplies. */
    const size_t lens[] = {1, 5, 17, 1023, 1024, 1025, 4096, 16384 + 13, 60001};
    const float ps[] = {0.1f, 0.5f, 0.95f};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    repro_pool *pool2;
    ck_assert_int_eq(repro_pool_new(&pool2, 2), 0);
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
            long n = (long)lens[li];
            float *x = rand_floats(n, 60 + li), scale = repro_hd_dropout_scale(ps[pi]);
            for (long i = 0; i < n; i += 11)
                x[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? NAN : -INFINITY;
            uint8_t *want_m = malloc(lens[li]), *got_m = malloc(lens[li]);
            float *want = malloc(lens[li] * 4), *got = malloc(lens[li] * 4);
            uint64_t key = 0xD209 + li;
            for (long i = 0; i < n; i++) {
                want_m[i] = (uint8_t)repro_hd_dropout_keep(key, (uint64_t)i, ps[pi]);
                want[i] = repro_hd_dropout_apply(x[i], want_m[i], scale);
            }
            for (int i = 0; i < np; i++)
                for (int threads = 1; threads <= 2; threads++) {
                    ck_assert_int_eq(repro_isa_select(p[i]), 0);
                    memset(got_m, 0xAB, (size_t)n);
                    repro_pool *pool = threads == 2 ? pool2 : NULL;
                    repro_dropout_forward(pool, x, got, got_m, n, ps[pi], key);
                    ck_assert_msg(!memcmp(got_m, want_m, (size_t)n) &&
                                      !memcmp(got, want, (size_t)n * 4),
                                  "dropout n %ld p %g differs on %s, %d thread(s)", n,
                                  (double)ps[pi], repro_isa_name(p[i]), threads);
                    /* backward with x as dy: the same products */
                    repro_dropout_backward(pool, x, want_m, got, n, ps[pi]);
                    ck_assert_msg(!memcmp(got, want, (size_t)n * 4),
                                  "dropout backward n %ld p %g differs on %s, %d thread(s)", n,
                                  (double)ps[pi], repro_isa_name(p[i]), threads);
                }
            free(x), free(want_m), free(got_m), free(want), free(got);
        }
    repro_pool_free(pool2);
    repro_isa_select(repro_isa_best());
}
END_TEST

/* ---- elementwise kernels (simd.h: relu .. unscale_check) ------------------------ */

/* Random float bits, either sign, magnitudes 2^-30..2^30, and with
 * specials one in eight special: SPECIALS_ALL quiet and signalling NaN,
 * inf, 0 and denormals; SPECIALS_FINITE only 0 and denormals. */
enum { SPECIALS_NONE, SPECIALS_ALL, SPECIALS_FINITE };

static void fill_special(float *x, long n, uint64_t seed, int specials)
{
    static const uint32_t sp[] = {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0x7f800000u,
                                  0x00000000u, 0x00000001u, 0x007fffffu, 0x00400000u};
    uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (long i = 0; i < n; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17; /* xorshift64 */
        uint32_t r = (uint32_t)(st >> 32), sign = r & 0x80000000u, bits;
        if (specials != SPECIALS_NONE && (r & 7) == 0)
            bits = sign | sp[specials == SPECIALS_ALL ? (r >> 3) % 8 : 4 + (r >> 3) % 4];
        else
            bits = sign | (((r >> 3) % 60 + 97) << 23) | ((uint32_t)st & 0x7fffffu);
        memcpy(&x[i], &bits, 4);
    }
}

static int is_nan_bits(uint32_t u)
{
    return (u & 0x7fffffffu) > 0x7f800000u;
}

/* Bit for bit; with any_nan, a lane where both are NaN passes whatever
 * their payloads: where two NaN operands meet, which one an x86
 * instruction returns depends on the operand order the compiler picked,
 * which C leaves open (gcc and clang pick differently, for the scalar
 * expression too). The finite-input runs check every NaN exactly. */
static void same_bits(const float *got, const float *want, long n, const char *what, long len,
                      repro_isa isa, int any_nan)
{
    for (long i = 0; i < n; i++) {
        uint32_t g, w; /* memcpy: reading a float's bits through a uint32_t * is UB */
        memcpy(&g, &got[i], 4), memcpy(&w, &want[i], 4);
        if (g != w && !(any_nan && is_nan_bits(g) && is_nan_bits(w)))
            ck_abort_msg("%s, %ld elements: %s differs at %ld: %08x, want %08x", what, len,
                         repro_isa_name(isa), i, g, w);
    }
}

/* y + x as add_into promises it: where both are NaN, y's (quieted) wins,
 * as x86 answers with y as the first operand (C leaves the order of a
 * commutative + to the compiler, so it is written out here). */
static float add_ref(float y, float x)
{
    if (y != y) {
        uint32_t u;
        memcpy(&u, &y, 4);
        u |= 0x00400000u;
        memcpy(&y, &u, 4);
        return y;
    }
    return y + x;
}

/* One length on the selected path: each kernel (through its public entry,
 * so the dispatch is tested too) against the scalar expression it
 * promises (kernels/shared: repro_hd_*), on inputs a..d. With nan_inputs
 * (some inputs NaN) the optimizers' lanes where NaNs meet may differ in
 * payload (same_bits); relu, the scaling and add_into have one NaN
 * operand at most, or pin the choice, and are always exact. */
static void elementwise_case(repro_isa isa, repro_pool *pool, long n, const float *a,
                             const float *b, const float *c, const float *d, const float *clean,
                             int nan_inputs)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * 4;
    float *got = malloc(bytes), *want = malloc(bytes), *g2 = malloc(bytes), *w2 = malloc(bytes);
    float *g3 = malloc(bytes), *w3 = malloc(bytes);
    ck_assert(got && want && g2 && w2 && g3 && w3);

    repro_relu_forward(pool, a, got, n);
    for (long i = 0; i < n; i++)
        want[i] = repro_hd_relu(a[i]);
    same_bits(got, want, n, "relu forward", n, isa, 0);
    repro_relu_backward(pool, a, b, got, n);
    for (long i = 0; i < n; i++)
        want[i] = repro_hd_relu_grad(a[i], b[i]);
    same_bits(got, want, n, "relu backward", n, isa, 0);

    for (int first = 0; first <= 1; first++) { /* p = a, g = b, buf = c */
        memcpy(got, a, (size_t)n * 4), memcpy(want, a, (size_t)n * 4);
        memcpy(g2, c, (size_t)n * 4), memcpy(w2, c, (size_t)n * 4);
        repro_sgd_step(pool, got, b, g2, n, 0.05f, 0.9f, 1e-4f, first);
        for (long i = 0; i < n; i++)
            repro_hd_sgd(&want[i], b[i], &w2[i], 0.05f, 0.9f, 1e-4f, first);
        same_bits(got, want, n, first ? "sgd p, first step" : "sgd p", n, isa, nan_inputs);
        same_bits(g2, w2, n, first ? "sgd buf, first step" : "sgd buf", n, isa, nan_inputs);
    }

    /* beta1 0.9: lerp weight 0.1 (m + w*(g - m)); 0.3: 0.7 (the form from
     * the end). v = d: negative states make some sqrt operands negative. */
    for (int form = 0; form < 2; form++) {
        double beta1 = form ? 0.3 : 0.9, beta2 = 0.999, lr = 1e-3, wd = 0.01;
        double bc1 = 1.0 - beta1 * beta1 * beta1, bc2 = 1.0 - beta2 * beta2 * beta2;
        repro_adamw_consts k;
        repro_adamw_constants(&k, lr, beta1, beta2, 1e-8f, wd, bc1, bc2);
        ck_assert_int_eq(k.lerp_from_end, form);
        memcpy(got, a, (size_t)n * 4), memcpy(want, a, (size_t)n * 4);
        memcpy(g2, c, (size_t)n * 4), memcpy(w2, c, (size_t)n * 4);
        memcpy(g3, d, (size_t)n * 4), memcpy(w3, d, (size_t)n * 4);
        repro_adamw_step(pool, got, b, g2, g3, n, lr, beta1, beta2, 1e-8f, wd, bc1, bc2);
        for (long i = 0; i < n; i++)
            repro_hd_adamw(&k, b[i], &want[i], &w2[i], &w3[i]);
        same_bits(got, want, n, form ? "adamw p (lerp from the end)" : "adamw p", n, isa,
                  nan_inputs);
        same_bits(g2, w2, n, "adamw m", n, isa, nan_inputs);
        same_bits(g3, w3, n, "adamw v", n, isa, nan_inputs);
    }

    memcpy(got, a, (size_t)n * 4);
    repro_div_scalar(got, n, 3.0f);
    for (long i = 0; i < n; i++)
        want[i] = a[i] / 3.0f;
    same_bits(got, want, n, "div_scalar", n, isa, 0);
    memcpy(got, a, (size_t)n * 4);
    repro_mul_scalar(got, n, 0.1f);
    for (long i = 0; i < n; i++)
        want[i] = a[i] * 0.1f;
    same_bits(got, want, n, "mul_scalar", n, isa, 0);
    memcpy(got, a, (size_t)n * 4);
    repro_add_into(got, b, n);
    for (long i = 0; i < n; i++)
        want[i] = add_ref(a[i], b[i]);
    same_bits(got, want, n, "add_into", n, isa, 0);

    /* found on data with and without non-finite values; inv 1 leaves g */
    const float *src[2] = {a, clean};
    const float invs[3] = {1.0f, 0.5f, 1.0f / 3.0f};
    for (int si = 0; si < 2; si++)
        for (int ii = 0; ii < 3; ii++) {
            memcpy(got, src[si], (size_t)n * 4), memcpy(want, src[si], (size_t)n * 4);
            int found = repro_unscale_check(got, n, invs[ii]), wfound = 0;
            for (long i = 0; i < n; i++) /* repro_hd_unscale, its inv == 1 case written out */
                if (invs[ii] == 1.0f)
                    wfound |= !repro_hd_isfinite(want[i]);
                else
                    want[i] = repro_hd_unscale(want[i], invs[ii], &wfound);
            same_bits(got, want, n, "unscale_check", n, isa, 0);
            ck_assert_msg(found == wfound, "unscale_check found %d, want %d (%ld, %s)", found,
                          wfound, n, repro_isa_name(isa));
        }
    free(got), free(want), free(g2), free(w2), free(g3), free(w3);
}

/* Every path against the scalar expressions: every length 0..67 (each
 * tail of 4, 8 and 16 lanes, odd ones at an odd address), then three
 * 16384-element chunks and a tail on two threads; on inputs with NaN, inf,
 * 0 and denormals, and on finite ones (0, denormals, negative AdamW
 * states: the only NaN is then sqrt's of a negative v, exact). */
START_TEST(test_elementwise_every_path)
{
    enum { BIG = 2 * 16384 + 45 };
    float *in[2][5];
    for (int set = 0; set < 2; set++)
        for (int j = 0; j < 5; j++) {
            in[set][j] = malloc((BIG + 1) * sizeof(float));
            ck_assert_ptr_nonnull(in[set][j]);
            fill_special(in[set][j], BIG + 1, 70 + 5 * set + j,
                         j == 4 ? SPECIALS_NONE : set == 0 ? SPECIALS_ALL : SPECIALS_FINITE);
        }
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    repro_pool *pool2;
    ck_assert_int_eq(repro_pool_new(&pool2, 2), 0);
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(repro_isa_select(p[i]), 0);
        for (int set = 0; set < 2; set++)
            for (long n = 0; n <= 68; n++) {
                long len = n < 68 ? n : BIG, off = n % 2;
                float **x = in[set];
                elementwise_case(p[i], n < 68 ? NULL : pool2, len, x[0] + off, x[1] + off,
                                 x[2] + off, x[3] + off, x[4] + off, set == 0);
            }
    }
    repro_pool_free(pool2);
    repro_isa_select(repro_isa_best());
    for (int set = 0; set < 2; set++)
        for (int j = 0; j < 5; j++)
            free(in[set][j]);
}
END_TEST

/* The bias gradient (linear.c): each column summed over the batch in
 * ascending order, from +0 or from db, on every path. */
START_TEST(test_linear_bias_every_path)
{
    const int shapes[][2] = {{16, 10}, {5, 256}, {3, 300}, {64, 7}, {1, 1}};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int B = shapes[s][0], out = shapes[s][1];
        float *dy = malloc((size_t)B * out * 4), *db0 = malloc((size_t)out * 4);
        float *want = malloc((size_t)out * 4), *got = malloc((size_t)out * 4);
        ck_assert(dy && db0 && want && got);
        fill_special(dy, (long)B * out, 90 + s, SPECIALS_ALL);
        fill_special(db0, out, 95 + s, SPECIALS_ALL);
        for (int acc = 0; acc <= 1; acc++) {
            for (int o = 0; o < out; o++) {
                float a = acc ? db0[o] : 0.0f;
                for (int b = 0; b < B; b++)
                    a = add_ref(a, dy[(long)b * out + o]);
                want[o] = a;
            }
            for (int i = 0; i < np; i++) {
                ck_assert_int_eq(repro_isa_select(p[i]), 0);
                memcpy(got, db0, (size_t)out * 4);
                repro_linear_backward_bias(NULL, dy, got, B, out, acc);
                same_bits(got, want, out, acc ? "bias, accumulate" : "bias", (long)B * out, p[i],
                          0);
            }
        }
        free(dy), free(db0), free(want), free(got);
    }
    repro_isa_select(repro_isa_best());
}
END_TEST

/* ---- training ------------------------------------------------------------------ */

/* The chain digest after `steps` recorded steps (digests only, no file). */
static repro_digest train_chain(const char *path, int threads, long steps)
{
    static repro_config cfg;
    char set[32];
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
    snprintf(set, sizeof set, "threads=%d", threads);
    ck_assert_int_eq(repro_config_set(&cfg, set), 0);
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    repro_train_recorder *rec;
    repro_train_recorder_opts o = {.trace_path = NULL, .level = 1, .every = 1,
                                   .total_steps = steps};
    ck_assert_int_eq(repro_train_recorder_new(&rec, &t, &o, NULL), 0);
    for (long s = 0; s < steps; s++)
        ck_assert_int_eq(repro_trainer_step(&t), 0);
    repro_digest chain;
    ck_assert_int_eq(repro_train_recorder_finish(rec, &chain, NULL), 0);
    repro_train_recorder_free(rec);
    repro_trainer_release(&t);
    return chain;
}

static void same_training_every_path(const char *path, long steps)
{
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    ck_assert_int_eq(repro_isa_select(REPRO_ISA_SSE2), 0);
    repro_digest base = train_chain(path, 1, steps);
    for (int i = 0; i < np; i++)
        for (int threads = 1; threads <= 2; threads++) {
            if (i == 0 && threads == 1)
                continue;
            ck_assert_int_eq(repro_isa_select(p[i]), 0);
            repro_digest d = train_chain(path, threads, steps);
            ck_assert_msg(repro_digest_eq(&d, &base), "%s: %s with %d threads differs from sse2",
                          path, repro_isa_name(p[i]), threads);
        }
    repro_isa_select(repro_isa_best());
}

START_TEST(test_mlp_training_every_path) { same_training_every_path("experiments/mlp.ini", 12); }
END_TEST

START_TEST(test_cnn_training_every_path) { same_training_every_path("experiments/cnn.ini", 6); }
END_TEST

/* ---- the CLI ---------------------------------------------------------------------- */

START_TEST(test_cli_repro_isa)
{
    char out[8192], err[2048];
    ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, repro_isa_name(repro_isa_best())));
    setenv("REPRO_ISA", "sse2", 1);
    int rc = tu_run_repro("env", out, sizeof out, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(strstr(out, "sse2 kernels") != NULL, "repro env: %s", out);
    setenv("REPRO_ISA", "avx3", 1);
    ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "REPRO_ISA"));
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        if (!repro_isa_supported((repro_isa)i)) {
            setenv("REPRO_ISA", repro_isa_name((repro_isa)i), 1);
            ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 3);
            ck_assert_ptr_nonnull(strstr(err, "does not support"));
        }
    unsetenv("REPRO_ISA");
}
END_TEST

/* REPRO_SHA: `openssl` hashes every leaf with OpenSSL and changes no
 * digest (the chain of a short run is the default's); `repro env` says
 * which path runs; anything but auto/openssl is a usage error. */
START_TEST(test_cli_repro_sha)
{
    char out[8192], err[4096], chain[2][80] = {"", ""};
    const char *run = "run experiments/mlp.ini --steps 3 -q --no-trace";
    for (int forced = 0; forced < 2; forced++) {
        if (forced)
            setenv("REPRO_SHA", "openssl", 1);
        ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 0);
        const char *at = strstr(out, "leaf_sha:");
        ck_assert_ptr_nonnull(at);
        char line[128];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(at, "\n"), at);
        if (forced)
            ck_assert_msg(strstr(line, "openssl (REPRO_SHA)") != NULL, "repro env: %s", line);
        ck_assert_int_eq(tu_run_repro(run, out, sizeof out, err, sizeof err), 0);
        const char *c = strstr(out, "chain ");
        ck_assert_ptr_nonnull(c);
        snprintf(chain[forced], sizeof chain[forced], "%.70s", c);
    }
    ck_assert_str_eq(chain[0], chain[1]);
    setenv("REPRO_SHA", "sha1", 1);
    ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "REPRO_SHA=sha1"));
    unsetenv("REPRO_SHA");
}
END_TEST

Suite *isa_suite(void)
{
    Suite *s = suite_create("isa");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_names_and_selection);
    tcase_add_test(tc, test_gemm_every_path);
    tcase_add_test(tc, test_linear_forward_every_path);
    tcase_add_test(tc, test_gemm_sharded_every_path);
    tcase_add_test(tc, test_conv_every_path);
    tcase_add_test(tc, test_conv_algos_same_bits_every_path);
    tcase_add_test(tc, test_maxpool_wide_planes);
    tcase_add_test(tc, test_dropout_every_path);
    tcase_add_test(tc, test_elementwise_every_path);
    tcase_add_test(tc, test_linear_bias_every_path);
    tcase_add_test(tc, test_mlp_training_every_path);
    tcase_add_test(tc, test_cnn_training_every_path);
    tcase_add_test(tc, test_cli_repro_isa);
    tcase_add_test(tc, test_cli_repro_sha);
    suite_add_tcase(s, tc);
    return s;
}
