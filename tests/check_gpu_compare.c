/* The GPU check's judgements, on the CPU (issue 47): the comparisons of
 * tests/gpu/check_cuda_ops.c (tests/gpu/ops_compare.h), its verdict on a
 * chooser's pick, and the rule that admits cuDNN's results
 * (kernels/cuda/cudnn_admit.h). Each must be able to fail: a NaN where the
 * CPU has a number, an element left unwritten (the poison), a value
 * outside the tolerance, a pick slower than another timed one, and a list
 * whose first results are all TF32. The whole program against a fake
 * device, fault by fault, is tests/gpu/selftest.sh's part. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cuda/cudnn_admit.h"
#include "gpu/ops_compare.h"

static const double bound1[4] = {1, 1, 1, 1};

START_TEST(test_close_accepts_within_tolerance)
{
    float want[4] = {1.0f, -2.0f, INFINITY, NAN};
    float got[4] = {1.0f + 1e-7f, -2.0f, INFINITY, NAN};
    gpu_compare_result r = gpu_compare_close(want, got, bound1, 4, 1e-5);
    ck_assert_uint_eq(r.differ, 0);
    ck_assert(r.worst > 0 && r.worst < 1e-5);
}
END_TEST

/* A kernel that returns NaN fails wherever the CPU's value is a number:
 * |want - NaN| is NaN, and NaN > limit is false, so a test written as
 * "d > lim" would pass it. */
START_TEST(test_close_nan_fails)
{
    float want[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    float got[4] = {1.0f, NAN, 3.0f, 4.0f};
    gpu_compare_result r = gpu_compare_close(want, got, bound1, 4, 1e-5);
    ck_assert_uint_eq(r.differ, 1);
    ck_assert_uint_eq(r.first, 1);
    ck_assert_uint_eq(r.nan_vs_finite, 1);
    /* and the other way: a number where the CPU has NaN, an infinity it has not */
    float want2[2] = {NAN, 1.0f}, got2[2] = {0.0f, INFINITY};
    r = gpu_compare_close(want2, got2, bound1, 2, 1e-5);
    ck_assert_uint_eq(r.differ, 2);
    ck_assert_uint_eq(r.nan_vs_finite, 0);
}
END_TEST

START_TEST(test_close_outside_tolerance_fails)
{
    float want[2] = {1.0f, 1.0f}, got[2] = {1.0f, 1.001f};
    double bound[2] = {1, 10};
    ck_assert_uint_eq(gpu_compare_close(want, got, bound, 2, 1e-5).differ, 1);
    ck_assert_uint_eq(gpu_compare_close(want, got, bound, 2, 1e-3).differ, 0);
}
END_TEST

/* An output the kernel never wrote still holds the poison: a failure in
 * both comparisons, counted as unwritten, even where the CPU's value is a
 * NaN (which "any NaN = any NaN" would otherwise excuse). */
START_TEST(test_unwritten_fails)
{
    float want[4] = {1.0f, NAN, 3.0f, 4.0f}, got[4];
    gpu_poison_fill(got, 4);
    gpu_compare_result r = gpu_compare_close(want, got, bound1, 4, 1e-5);
    ck_assert_uint_eq(r.differ, 4);
    ck_assert_uint_eq(r.unwritten, 4);
    r = gpu_compare_words(want, got, 4, 1);
    ck_assert_uint_eq(r.differ, 4);
    ck_assert_uint_eq(r.unwritten, 4);
    /* written: a canonical NaN for the CPU's payload NaN passes (not promised) */
    uint32_t canon = 0x7fffffffu;
    memcpy(&got[1], &canon, 4);
    got[0] = 1.0f, got[2] = 3.0f, got[3] = 4.0f;
    r = gpu_compare_words(want, got, 4, 1);
    ck_assert_uint_eq(r.differ, 0);
    ck_assert_uint_eq(r.nan_payloads, 1); /* NAN is 0x7fc00000 */
    /* as integers, the same NaN words differ */
    ck_assert_uint_eq(gpu_compare_words(want, got, 4, 0).differ, 1);
}
END_TEST

enum { N = REPRO_CONV_ALGO_LIMIT, BASE = REPRO_CONV_CUDNN_BASE };

/* cudnnFind's pick: each part of the verdict fails on its own fault. */
START_TEST(test_pick_verdict)
{
    double t[N];
    int elig[N] = {0}, det[N] = {0};
    char why[160];
    for (int a = 0; a < N; a++)
        t[a] = -1;
    elig[0] = det[0] = 1;
    elig[BASE] = det[BASE] = 1; /* gemm: deterministic */
    elig[BASE + 1] = 1;         /* precomp: nondeterministic */
    t[BASE] = 20, t[BASE + 1] = 10;
    ck_assert(gpu_pick_sound(BASE + 1, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    /* the slower one picked */
    ck_assert(!gpu_pick_sound(BASE, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "timed faster"));
    /* a nondeterministic pick where only deterministic ones may run */
    ck_assert(!gpu_pick_sound(BASE + 1, 1, 1, t, elig, det, N, BASE, why, sizeof why));
    /* a timed algorithm that is not eligible */
    t[BASE + 6] = 30;
    ck_assert(!gpu_pick_sound(BASE + 1, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "not admissible"));
    t[BASE + 6] = -1;
    /* our own direct while cuDNN's were timed: not the timed pick */
    ck_assert(!gpu_pick_sound(0, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    /* nothing timed: direct is sound, a cuDNN id is not */
    t[BASE] = t[BASE + 1] = -1;
    ck_assert(gpu_pick_sound(0, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    ck_assert(!gpu_pick_sound(BASE, 1, 0, t, elig, det, N, BASE, why, sizeof why));
    /* the heuristic times nothing */
    ck_assert(gpu_pick_sound(BASE, 0, 1, t, elig, det, N, BASE, why, sizeof why));
    t[BASE] = 5;
    ck_assert(!gpu_pick_sound(BASE, 0, 1, t, elig, det, N, BASE, why, sizeof why));
    /* an ineligible pick */
    ck_assert(!gpu_pick_sound(BASE + 2, 0, 0, t, elig, det, N, BASE, why, sizeof why));
}
END_TEST

/* cuDNN lists one result per (algorithm, math type): with TF32 entries
 * first, the FMA ones come after them, so every result must be read. The
 * rule drops the TF32, unsupported and size-less ones, saying why. */
START_TEST(test_cudnn_admission)
{
    repro_cudnn_result res[12];
    for (int i = 0; i < 8; i++) /* every algorithm first with tensor-op math */
        res[i] = (repro_cudnn_result){i, 1, 0, 1};
    res[8] = (repro_cudnn_result){1, 1, 1, 1};  /* precomp gemm, FMA: admitted */
    res[9] = (repro_cudnn_result){0, 1, 1, 0};  /* no workspace size */
    res[10] = (repro_cudnn_result){6, 0, 1, 1}; /* unsupported */
    res[11] = (repro_cudnn_result){1, 1, 1, 1}; /* a repeat */
    ck_assert_int_eq(repro_cudnn_admitted(res, 8), 0); /* the first 8 alone: nothing */
    ck_assert_int_eq(repro_cudnn_admitted(res, 12), 1);
    ck_assert_ptr_null(repro_cudnn_drop_reason(res, 8));
    ck_assert_ptr_nonnull(strstr(repro_cudnn_drop_reason(res, 0), "not FMA math"));
    ck_assert_ptr_nonnull(strstr(repro_cudnn_drop_reason(res, 9), "workspace"));
    ck_assert_ptr_nonnull(strstr(repro_cudnn_drop_reason(res, 10), "not supported"));
    ck_assert_ptr_nonnull(strstr(repro_cudnn_drop_reason(res, 11), "repeat"));
}
END_TEST

Suite *gpu_compare_suite(void)
{
    Suite *s = suite_create("gpu_compare");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_close_accepts_within_tolerance);
    tcase_add_test(tc, test_close_nan_fails);
    tcase_add_test(tc, test_close_outside_tolerance_fails);
    tcase_add_test(tc, test_unwritten_fails);
    tcase_add_test(tc, test_pick_verdict);
    tcase_add_test(tc, test_cudnn_admission);
    suite_add_tcase(s, tc);
    return s;
}
