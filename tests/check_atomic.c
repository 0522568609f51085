/* Tests for the unordered-accumulation variants (kernels/cpu/atomic.h), the
 * variant registry (variants.h) and `repro kernels`. Three kinds of check:
 *  - correctness: each atomic variant agrees with its ordered counterpart to
 *    within 1e-5 of the sum of |terms| per element (float addition reordered
 *    over at most a few hundred terms moves a result by a few ulps of that
 *    magnitude; 1e-5 is ~170 ulps of it, far above reordering noise and far
 *    below any real bug such as a lost or doubled term);
 *  - with a 1-thread pool the atomic variants are deterministic by accident;
 *  - NEGATIVE CONTROL: with 4 threads on contended sizes they must actually
 *    produce different bits between runs, or they would be useless for
 *    demonstrating and bisecting nondeterminism. That test FAILS, not skips,
 *    when no two runs differ. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/atomic.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/philox.h"
#include "testutil.h"
#include "kernels/variants.h"

/* ---- helpers -------------------------------------------------------------- */

static float *frand(long n, uint64_t seed)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    ck_assert_ptr_nonnull(p);
    repro_rng rng;
    repro_rng_init(&rng, seed);
    for (long i = 0; i < n; i++)
        p[i] = -1.0f + 2.0f * repro_rng_unit(&rng);
    return p;
}

static float *fzero(long n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static double *dzero(long n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *fdup(const float *a, long n)
{
    float *p = fzero(n);
    memcpy(p, a, (size_t)n * sizeof *p);
    return p;
}

enum { NTHREADS = 3 };
static const int thread_counts[NTHREADS] = {1, 2, 4};

#define REL_TOL 1e-5

/* |got - want| <= REL_TOL * mag[i], mag being the sum of |terms| (start
 * value included) of element i. */
static void assert_close(const float *got, const float *want, const double *mag, long n,
                         const char *what, int threads)
{
    for (long i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(d <= REL_TOL * mag[i], "%s, %d threads: element %ld: %.9g vs %.9g "
                      "(sum |terms| %.6g)", what, threads, i, got[i], want[i], mag[i]);
    }
}

static int verbose(void)
{
    return getenv("ATOMIC_VERBOSE") != NULL;
}

/* ---- the float atomic add -------------------------------------------------- */

typedef struct {
    float *target;
} hammer_ctx;

enum { HAMMER_CHUNKS = 400, HAMMER_ADDS = 100 };

static void hammer_chunk(void *vctx, long chunk)
{
    (void)chunk;
    hammer_ctx *h = vctx;
    for (int i = 0; i < HAMMER_ADDS; i++)
        repro_atomic_add_f32(h->target, 1.0f);
}

START_TEST(test_atomic_add_f32)
{
    float f = 1.5f;
    repro_atomic_add_f32(&f, 2.25f);
    ck_assert(f == 3.75f);
    /* the add is an IEEE add: -0 + -0 stays -0, and NaN does not hang the
     * compare-exchange loop (bits are compared, not values) */
    f = -0.0f;
    repro_atomic_add_f32(&f, -0.0f);
    ck_assert(f == 0.0f && signbit(f));
    f = NAN;
    repro_atomic_add_f32(&f, 1.0f);
    ck_assert(isnan(f));
    /* no update is lost under contention: integers below 2^24 add exactly */
    repro_pool *pool;
    ck_assert_int_eq(repro_pool_new(&pool, 4), 0);
    float total = 0.0f;
    hammer_ctx h = {&total};
    repro_pool_run(pool, HAMMER_CHUNKS, hammer_chunk, &h);
    repro_pool_free(pool);
    ck_assert_msg(total == (float)(HAMMER_CHUNKS * HAMMER_ADDS), "total %.1f", total);
}
END_TEST

/* ---- correctness vs the ordered kernels ------------------------------------- */

static void check_linear(int B, int in, int out, uint64_t seed)
{
    float *dy = frand((long)B * out, seed), *x = frand((long)B * in, seed + 1);
    float *start = frand((long)out * in, seed + 2), *bstart = frand(out, seed + 3);
    long nw = (long)out * in;
    double *magw = dzero(nw), *magb = dzero(out);
    for (int acc = 0; acc <= 1; acc++) {
        for (long o = 0; o < out; o++) {
            for (long i = 0; i < in; i++) {
                double m = acc ? fabs(start[o * in + i]) : 0.0;
                for (long b = 0; b < B; b++)
                    m += fabs((double)dy[b * out + o] * x[b * in + i]);
                magw[o * in + i] = m;
            }
            double m = acc ? fabs(bstart[o]) : 0.0;
            for (long b = 0; b < B; b++)
                m += fabs(dy[b * out + o]);
            magb[o] = m;
        }
        float *want = fdup(start, nw), *bwant = fdup(bstart, out);
        repro_linear_backward_weight(NULL, dy, x, want, B, in, out, acc);
        repro_linear_backward_bias(NULL, dy, bwant, B, out, acc);
        for (int t = 0; t < NTHREADS; t++) {
            repro_pool *pool;
            ck_assert_int_eq(repro_pool_new(&pool, thread_counts[t]), 0);
            float *got = fdup(start, nw), *bgot = fdup(bstart, out);
            repro_linear_backward_weight_atomic(pool, dy, x, got, B, in, out, acc);
            repro_linear_backward_bias_atomic(pool, dy, bgot, B, out, acc);
            assert_close(got, want, magw, nw, acc ? "linear dw (accumulate)" : "linear dw",
                         thread_counts[t]);
            assert_close(bgot, bwant, magb, out, acc ? "linear db (accumulate)" : "linear db",
                         thread_counts[t]);
            free(got);
            free(bgot);
            repro_pool_free(pool);
        }
        free(want);
        free(bwant);
    }
    free(dy);
    free(x);
    free(start);
    free(bstart);
    free(magw);
    free(magb);
}

START_TEST(test_linear_atomic_vs_ordered)
{
    check_linear(37, 300, 20, 11);  /* B not a multiple of 4; dw tiles of 13 rows */
    check_linear(9, 5000, 3, 21);   /* in > the 4096-float tile: column tiles */
    check_linear(6, 7, 5000, 31);   /* out > tile for the bias */
    check_linear(2, 16, 8, 41);     /* a single chunk */
}
END_TEST

static void check_conv(repro_conv_shape s, uint64_t seed)
{
    long OH = repro_conv_oh(&s), OW = repro_conv_ow(&s);
    long nx = (long)s.B * s.C * s.H * s.W, ndy = (long)s.B * s.K * OH * OW;
    long nw = (long)s.K * s.C * s.R * s.R;
    float *x = frand(nx, seed), *dy = frand(ndy, seed + 1);
    float *start = frand(nw, seed + 2), *bstart = frand(s.K, seed + 3);
    double *magw = dzero(nw), *magb = dzero(s.K);
    for (int acc = 0; acc <= 1; acc++) {
        for (long k = 0; k < s.K; k++) {
            double mb = acc ? fabs(bstart[k]) : 0.0;
            for (long b = 0; b < s.B; b++)
                for (long i = 0; i < OH * OW; i++)
                    mb += fabs(dy[(b * s.K + k) * OH * OW + i]);
            magb[k] = mb;
            for (long c = 0; c < s.C; c++)
                for (long ry = 0; ry < s.R; ry++)
                    for (long rx = 0; rx < s.R; rx++) {
                        long wi = ((k * s.C + c) * s.R + ry) * s.R + rx;
                        double m = acc ? fabs(start[wi]) : 0.0;
                        for (long b = 0; b < s.B; b++)
                            for (long oy = 0; oy < OH; oy++)
                                for (long ox = 0; ox < OW; ox++) {
                                    long iy = oy + ry - s.pad, ix = ox + rx - s.pad;
                                    if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W)
                                        continue;
                                    m += fabs((double)dy[((b * s.K + k) * OH + oy) * OW + ox] *
                                              x[((b * s.C + c) * s.H + iy) * s.W + ix]);
                                }
                        magw[wi] = m;
                    }
        }
        float *want = fdup(start, nw), *bwant = fdup(bstart, s.K);
        repro_conv2d_backward_filter(NULL, &s, dy, x, want, bwant, acc);
        for (int t = 0; t < NTHREADS; t++) {
            repro_pool *pool;
            ck_assert_int_eq(repro_pool_new(&pool, thread_counts[t]), 0);
            float *got = fdup(start, nw), *bgot = fdup(bstart, s.K);
            repro_conv2d_backward_filter_atomic(pool, &s, dy, x, got, bgot, acc);
            assert_close(got, want, magw, nw, "conv dw", thread_counts[t]);
            assert_close(bgot, bwant, magb, s.K, "conv db", thread_counts[t]);
            /* db may be NULL */
            float *got2 = fdup(start, nw);
            repro_conv2d_backward_filter_atomic(pool, &s, dy, x, got2, NULL, acc);
            assert_close(got2, want, magw, nw, "conv dw (no db)", thread_counts[t]);
            free(got);
            free(got2);
            free(bgot);
            repro_pool_free(pool);
        }
        free(want);
        free(bwant);
    }
    free(x);
    free(dy);
    free(start);
    free(bstart);
    free(magw);
    free(magb);
}

START_TEST(test_conv_atomic_vs_ordered)
{
    check_conv((repro_conv_shape){7, 3, 9, 11, 4, 3, 1}, 51);
    check_conv((repro_conv_shape){5, 2, 6, 6, 3, 5, 0}, 61);
    /* a filter wider than the stack tile: the scalar path, padded and not */
    check_conv((repro_conv_shape){3, 2, 34, 35, 2, 33, 0}, 71);
    check_conv((repro_conv_shape){2, 1, 33, 33, 2, 33, 1}, 81);
}
END_TEST

START_TEST(test_conv_atomic_no_terms)
{
    /* filter larger than the padded input: no terms, sums are start values */
    repro_conv_shape s = {2, 1, 2, 2, 1, 5, 0};
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dw[25], db[1] = {7.0f};
    for (int i = 0; i < 25; i++)
        dw[i] = 3.0f;
    repro_conv2d_backward_filter_atomic(NULL, &s, NULL, x, dw, db, 1);
    ck_assert(dw[0] == 3.0f && dw[24] == 3.0f && db[0] == 7.0f);
    repro_conv2d_backward_filter_atomic(NULL, &s, NULL, x, dw, db, 0);
    ck_assert(dw[0] == 0.0f && dw[24] == 0.0f && db[0] == 0.0f);
}
END_TEST

static int32_t *irand(long n, int nrows, uint64_t seed)
{
    int32_t *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    ck_assert_ptr_nonnull(p);
    repro_rng rng;
    repro_rng_init(&rng, seed);
    for (long i = 0; i < n; i++)
        p[i] = (int32_t)repro_rng_below(&rng, (uint32_t)nrows);
    return p;
}

static void check_index_add(int nrows, long n, int width, uint64_t seed)
{
    long nout = (long)nrows * width;
    int32_t *index = irand(n, nrows, seed);
    float *src = frand(n * width, seed + 1), *start = frand(nout, seed + 2);
    /* the plain loop, in the order the ordered variant promises */
    float *want = fdup(start, nout);
    double *mag = dzero(nout);
    for (long j = 0; j < nout; j++)
        mag[j] = fabs(start[j]);
    for (long i = 0; i < n; i++)
        for (long j = 0; j < width; j++) {
            long o = (long)index[i] * width + j;
            want[o] = want[o] + src[i * width + j];
            mag[o] += fabs(src[i * width + j]);
        }
    for (int t = 0; t < NTHREADS; t++) {
        repro_pool *pool;
        ck_assert_int_eq(repro_pool_new(&pool, thread_counts[t]), 0);
        float *got = fdup(start, nout);
        repro_index_add(pool, got, nrows, index, src, n, width);
        ck_assert_msg(memcmp(got, want, (size_t)nout * sizeof *got) == 0,
                      "index_add ordered, %d threads: bits differ from the plain loop",
                      thread_counts[t]);
        memcpy(got, start, (size_t)nout * sizeof *got);
        repro_index_add_atomic(pool, got, nrows, index, src, n, width);
        assert_close(got, want, mag, nout, "index_add atomic", thread_counts[t]);
        free(got);
        repro_pool_free(pool);
    }
    free(index);
    free(src);
    free(start);
    free(want);
    free(mag);
}

START_TEST(test_index_add)
{
    check_index_add(10, 500, 150, 91); /* 3 column chunks for the ordered variant */
    check_index_add(7, 64, 1, 101);    /* width 1: one column chunk */
    check_index_add(1000, 300, 3, 111); /* more rows than inputs: many rows untouched */
    check_index_add(4, 0, 5, 121);      /* no inputs: out unchanged */
}
END_TEST

/* ---- the problems the determinism tests run ------------------------------------ */
/* Sizes where threads really contend: many chunks, all adding into the same
 * few thousand (or few) outputs. */
enum { VAR_LIN_W, VAR_LIN_B, VAR_CONV, VAR_INDEX, NVARS };
static const char *const var_names[NVARS] = {"linear.bwd_weight", "linear.bwd_bias",
                                             "conv2d.bwd_filter", "index_add"};

enum { LB = 64, LIN = 256, LOUT = 64, BOUT = 8192 };
static const repro_conv_shape conv_s = {64, 4, 8, 8, 8, 3, 1};
enum { IN_N = 4096, IN_ROWS = 10, IN_W = 128 };

typedef struct {
    float *dy, *x;   /* linear */
    float *bdy;      /* bias: LB x BOUT */
    float *cdy, *cx; /* conv */
    int32_t *index;
    float *src;
} problems;

static void problems_new(problems *p)
{
    long OH = repro_conv_oh(&conv_s), OW = repro_conv_ow(&conv_s);
    p->dy = frand((long)LB * LOUT, 201);
    p->x = frand((long)LB * LIN, 202);
    p->bdy = frand((long)LB * BOUT, 203);
    p->cdy = frand((long)conv_s.B * conv_s.K * OH * OW, 204);
    p->cx = frand((long)conv_s.B * conv_s.C * conv_s.H * conv_s.W, 205);
    p->index = irand(IN_N, IN_ROWS, 206);
    p->src = frand((long)IN_N * IN_W, 207);
}

static void problems_free(problems *p)
{
    free(p->dy);
    free(p->x);
    free(p->bdy);
    free(p->cdy);
    free(p->cx);
    free(p->index);
    free(p->src);
}

static long var_size(int v)
{
    switch (v) {
    case VAR_LIN_W:
        return (long)LOUT * LIN;
    case VAR_LIN_B:
        return BOUT;
    case VAR_CONV:
        return (long)conv_s.K * conv_s.C * conv_s.R * conv_s.R + conv_s.K; /* dw then db */
    default:
        return (long)IN_ROWS * IN_W;
    }
}

static void var_run(int v, const problems *p, repro_pool *pool, float *out)
{
    switch (v) {
    case VAR_LIN_W:
        repro_linear_backward_weight_atomic(pool, p->dy, p->x, out, LB, LIN, LOUT, 0);
        break;
    case VAR_LIN_B:
        repro_linear_backward_bias_atomic(pool, p->bdy, out, LB, BOUT, 0);
        break;
    case VAR_CONV: {
        long nw = (long)conv_s.K * conv_s.C * conv_s.R * conv_s.R;
        repro_conv2d_backward_filter_atomic(pool, &conv_s, p->cdy, p->cx, out, out + nw, 0);
        break;
    }
    default:
        memset(out, 0, (size_t)var_size(v) * sizeof *out); /* index_add accumulates */
        repro_index_add_atomic(pool, out, IN_ROWS, p->index, p->src, IN_N, IN_W);
        break;
    }
}

START_TEST(test_one_thread_is_deterministic)
{
    problems p;
    problems_new(&p);
    repro_pool *pool;
    ck_assert_int_eq(repro_pool_new(&pool, 1), 0);
    for (int v = 0; v < NVARS; v++) {
        long n = var_size(v);
        float *a = fzero(n), *b = fzero(n);
        var_run(v, &p, pool, a);
        for (int r = 0; r < 3; r++) {
            var_run(v, &p, pool, b);
            ck_assert_msg(memcmp(a, b, (size_t)n * sizeof *a) == 0,
                          "%s atomic with 1 thread: run %d differs", var_names[v], r + 1);
        }
        free(a);
        free(b);
    }
    repro_pool_free(pool);
    problems_free(&p);
}
END_TEST

/* NEGATIVE CONTROL. 4 threads (more than the 2 cores of the machines this
 * was tuned on, so the scheduler interleaves them), up to RUNS runs compared
 * with the first, stopping at the first difference; the test fails when all
 * are bitwise identical: then the "nondeterministic" variants would not be,
 * and repro's detection of them would go untested. Sizes make each run a few
 * milliseconds, long enough for the pool's sleeping workers to wake and join
 * (index_add with width 16 was often over before they did). Measured: the
 * first difference is usually at run 1; with both cores saturated by other
 * work it came as late as run 14, hence 100 (a few ms each). */
enum { RUNS = 100 };

static void negative_control(int v)
{
    problems p;
    problems_new(&p);
    repro_pool *pool;
    ck_assert_int_eq(repro_pool_new(&pool, 4), 0);
    long n = var_size(v);
    float *first = fzero(n), *again = fzero(n);
    var_run(v, &p, pool, first);
    int differed_at = 0;
    for (int r = 1; r < RUNS && !differed_at; r++) {
        var_run(v, &p, pool, again);
        if (memcmp(first, again, (size_t)n * sizeof *first) != 0)
            differed_at = r;
    }
    if (verbose())
        fprintf(stderr, "atomic negative control %s: %s%d\n", var_names[v],
                differed_at ? "first difference at run " : "no difference in runs: ",
                differed_at ? differed_at : RUNS);
    ck_assert_msg(differed_at, "%s atomic: %d runs with 4 threads were bitwise identical; "
                  "the nondeterministic variant did not show nondeterminism", var_names[v], RUNS);
    free(first);
    free(again);
    repro_pool_free(pool);
    problems_free(&p);
}

START_TEST(test_negative_control_linear_weight) { negative_control(VAR_LIN_W); }
END_TEST
START_TEST(test_negative_control_linear_bias) { negative_control(VAR_LIN_B); }
END_TEST
START_TEST(test_negative_control_conv_filter) { negative_control(VAR_CONV); }
END_TEST
START_TEST(test_negative_control_index_add) { negative_control(VAR_INDEX); }
END_TEST

/* ---- the registry ---------------------------------------------------------------- */

START_TEST(test_registry)
{
    /* every op the model and trainer run has a deterministic variant */
    static const char *const model_ops[] = {
        "linear.fwd", "linear.bwd_data", "linear.bwd_weight", "linear.bwd_bias",
        "conv2d.fwd", "conv2d.bwd_data", "conv2d.bwd_filter", "relu",
        "maxpool.fwd", "maxpool.bwd", "dropout", "softmax_xent", "sgd", "adamw"};
    for (size_t i = 0; i < sizeof model_ops / sizeof model_ops[0]; i++) {
        int det = 0;
        for (const repro_variant_info *v = repro_variants; v->op; v++)
            if (!strcmp(v->op, model_ops[i]) && v->deterministic)
                det = 1;
        ck_assert_msg(det, "op %s has no deterministic variant", model_ops[i]);
    }
    const repro_variant_info *v = repro_variant_find("linear.bwd_weight", "atomic");
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->deterministic, 0);
    v = repro_variant_find("linear.bwd_weight", "ordered");
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->deterministic, 1);
    v = repro_variant_find("maxpool.bwd", "ordered");
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(v->why, "windows do not overlap: no two terms meet");
    ck_assert_ptr_null(repro_variant_find("linear.bwd_weight", "winograd"));
    ck_assert_ptr_null(repro_variant_find("nope", "ordered"));
    ck_assert_ptr_null(repro_variant_find(NULL, "ordered"));
    ck_assert_ptr_null(repro_variant_find("relu", NULL));
    /* every atomic entry is nondeterministic; every entry is explained, and
     * (op, variant) is a key */
    int atomics = 0;
    for (const repro_variant_info *a = repro_variants; a->op; a++) {
        ck_assert_msg(a->variant && a->variant[0] && a->why && a->why[0], "%s: empty field",
                      a->op);
        ck_assert_ptr_null(strchr(a->why, '\n'));
        if (!strcmp(a->variant, "atomic")) {
            atomics++;
            ck_assert_msg(!a->deterministic, "%s/atomic marked deterministic", a->op);
        }
        ck_assert_ptr_eq(repro_variant_find(a->op, a->variant), a);
    }
    ck_assert_int_eq(atomics, 4);
}
END_TEST

/* ---- `repro kernels` -------------------------------------------------------------- */

static char out[65536], err[65536];

START_TEST(test_cli_kernels)
{
    ck_assert_int_eq(tu_run_repro("kernels", out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "linear.bwd_weight") && strstr(out, "atomic"), "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "det"));
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    int rows = 0;
    for (const repro_variant_info *v = repro_variants; v->op; v++)
        rows++;
    ck_assert_int_eq(lines, rows + 1); /* header + one line per variant */

    ck_assert_int_eq(tu_run_repro("kernels --json", out, sizeof out, err, sizeof err), 0);
    json_error_t jerr;
    json_t *a = json_loads(out, 0, &jerr);
    ck_assert_msg(a != NULL, "JSON does not parse: %s", jerr.text);
    ck_assert(json_is_array(a));
    ck_assert_int_eq((int)json_array_size(a), rows);
    int found = 0;
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o) {
        const char *op = json_string_value(json_object_get(o, "op"));
        const char *var = json_string_value(json_object_get(o, "variant"));
        json_t *det = json_object_get(o, "deterministic");
        ck_assert(op && var && json_is_boolean(det));
        ck_assert_ptr_nonnull(json_string_value(json_object_get(o, "why")));
        if (!strcmp(op, "linear.bwd_weight") && !strcmp(var, "atomic")) {
            found = 1;
            ck_assert(json_is_false(det));
        }
    }
    ck_assert(found);
    json_decref(a);

    ck_assert_int_eq(tu_run_repro("kernels --help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: repro kernels"));
    ck_assert_int_eq(tu_run_repro("help kernels", out, sizeof out, err, sizeof err), 0);
    ck_assert_int_eq(tu_run_repro("kernels --bogus", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--bogus"));
}
END_TEST

Suite *atomic_suite(void)
{
    Suite *s = suite_create("atomic");
    TCase *tc = tcase_create("correctness");
    tcase_add_test(tc, test_atomic_add_f32);
    tcase_add_test(tc, test_linear_atomic_vs_ordered);
    tcase_add_test(tc, test_conv_atomic_vs_ordered);
    tcase_add_test(tc, test_conv_atomic_no_terms);
    tcase_add_test(tc, test_index_add);
    tcase_add_test(tc, test_one_thread_is_deterministic);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("negative_control");
    tcase_add_test(tc, test_negative_control_linear_weight);
    tcase_add_test(tc, test_negative_control_linear_bias);
    tcase_add_test(tc, test_negative_control_conv_filter);
    tcase_add_test(tc, test_negative_control_index_add);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("registry");
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_cli_kernels);
    suite_add_tcase(s, tc);
    return s;
}
