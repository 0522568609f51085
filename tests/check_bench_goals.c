/* make bench's goal verdicts (bench/goals.h): a floor is met at or above
 * its bound, a ceiling at or below it, a figure not measured (no PyTorch
 * here) is neither passed nor missed, and the summary lists every goal
 * with its verdict and counts them. Its ceiling table's parts: the
 * products a step runs and their FLOPs (bench/shapes.h), and the peak
 * loops computing what they count (bench/peak.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench/goals.h"
#include "../bench/peak.h"
#include "../bench/shapes.h"
#include "core/config.h"

START_TEST(test_floors_and_ceilings)
{
    ngoals = 0;
    ck_assert_str_eq(goal_note("floor met exactly", 0.90, 0.90, 0), ">=0.90 PASS");
    ck_assert_str_eq(goal_note("floor missed", 0.899, 0.90, 0), ">=0.90 MISS");
    ck_assert_str_eq(goal_note("ceiling met", 1.71, 2.1, 1), "<=2.10 PASS");
    ck_assert_str_eq(goal_note("ceiling missed", 2.2, 2.1, 1), "<=2.10 MISS");
    ck_assert_str_eq(goal_note("not measured", 0, 1.3, 0), ">=1.30 n/a");
    ck_assert_int_eq(ngoals, 5);
}
END_TEST

START_TEST(test_percent_floors)
{
    ngoals = 0;
    ck_assert_str_eq(goal_note_pct("shape at its bound", 0.75, 0.75), ">=75% PASS");
    ck_assert_str_eq(goal_note_pct("shape below", 0.7499, 0.75), ">=75% MISS");
    ck_assert_str_eq(goal_note_pct("not measured", 0, 0.65), ">=65% n/a");
    ck_assert_int_eq(ngoals, 3);
    ck_assert_int_eq(goals[0].percent, 1);
}
END_TEST

/* Runs goals_summary with stdout in a file; returns its text (static). */
static const char *summary_text(void)
{
    static char text[8192];
    char path[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/check-bench-goals-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stdout);
    int saved = dup(1);
    ck_assert_int_eq(dup2(fd, 1), 1);
    goals_summary();
    fflush(stdout);
    ck_assert_int_eq(dup2(saved, 1), 1);
    close(saved);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    return text;
}

START_TEST(test_summary_lists_and_counts)
{
    ngoals = 0;
    goal_note("mlp hashed / unhashed, 1 thread", 0.95, 0.90, 0);
    goal_note("mlp hashed / PyTorch at its best, 1 thread", 1.1, 1.3, 0);
    goal_note("cnn hashed / PyTorch at its best, 1 thread", 0, 2.5, 0);
    goal_note_pct("mlp fc1 fwd of the avx2 mul+add peak", 0.8123, 0.75);
    const char *text = summary_text();
    ck_assert_ptr_nonnull(strstr(text, "PASS mlp fc1 fwd of the avx2 mul+add peak"));
    ck_assert_ptr_nonnull(strstr(text, "81.2%  goal >=75%"));
    ck_assert_ptr_nonnull(strstr(text, "PASS mlp hashed / unhashed, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "0.95x  goal >=0.90x"));
    ck_assert_ptr_nonnull(strstr(text, "MISS mlp hashed / PyTorch at its best, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "n/a  cnn hashed / PyTorch at its best, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "2 PASS, 1 MISS, 1 not measured"));
}
END_TEST

/* The products of a step, read off the model the config builds. */
static int model_shapes(const char *exp, bench_shape *out, int *gemms)
{
    static repro_config cfg;
    ck_assert_int_eq(repro_config_load(&cfg, exp), 0);
    static repro_model m;
    ck_assert_int_eq(repro_model_init(&m, &cfg, cfg.train_batch_size, &repro_backend_cpu), 0);
    int n = bench_shapes(&m, cfg.train_batch_size, out);
    repro_model_release(&m);
    *gemms = 0;
    for (int i = 0; i < n; i++)
        *gemms += out[i].gemm;
    return n;
}

/* mlp 784-256-128-10, batch 64: 3 forwards, 3 weight gradients, 2 data
 * gradients (not the input's), 2 x 64 x multiply-adds each: the issue's
 * 64.45 MFLOP. */
START_TEST(test_mlp_products)
{
    bench_shape s[SHAPES_MAX];
    int gemms, n = model_shapes("experiments/mlp.ini", s, &gemms);
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(gemms, 8);
    double per = 784.0 * 256 + 256.0 * 128 + 128.0 * 10;
    double want = 2 * 64 * (2 * per + (256.0 * 128 + 128.0 * 10));
    ck_assert_double_eq(shapes_flops(s, n), want);
    ck_assert_str_eq(s[0].what, "fc1 fwd 64x256x784");
    ck_assert_int_eq(s[3].pass, PASS_BWD_DATA);
    ck_assert_str_eq(s[3].what, "fc2 bwd data 64x256x128");
    ck_assert_str_eq(s[5].what, "fc1 bwd weight 256x784x64");
}
END_TEST

/* cnn: conv 1->8 and 8->16 3x3 (26x26 and 11x11 outputs), fc 400->10;
 * the convolutions are products without a GEMM's goal. */
START_TEST(test_cnn_products)
{
    bench_shape s[SHAPES_MAX];
    int gemms, n = model_shapes("experiments/cnn.ini", s, &gemms);
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(gemms, 3);
    double c1 = 26.0 * 26 * 8 * 9, c2 = 11.0 * 11 * 16 * 8 * 9, fc = 400.0 * 10;
    ck_assert_double_eq(shapes_flops(s, n), 2 * 64 * (2 * c1 + 3 * c2 + 3 * fc));
}
END_TEST

/* Each peak loop does what it counts: every lane of a mul chain is the
 * start times the multiplier `iters` times, rounded each time, of an add
 * chain the start plus the addend; of an FMA chain fmaf each time. */
START_TEST(test_peak_loops_compute_what_they_count)
{
    static const repro_isa isas[] = {REPRO_ISA_AVX2, REPRO_ISA_AVX512};
    static const int chains[] = {PEAK_CHAINS_AVX2, PEAK_CHAINS_AVX512}, lanes[] = {8, 16};
    long iters = 1000;
    for (int p = 0; p < 2; p++) {
        if (!repro_isa_supported(isas[p]) || !peak_loop(isas[p], 0))
            continue;
        double want = 0, want_fma = 0;
        for (int i = 0; i < chains[p]; i++) {
            float m = 1.0f + (float)i, a = (float)i;
            for (long t = 0; t < iters; t++)
                m = m * (1.0f - 0x1p-24f), a = a + 0x1p-20f;
            want += lanes[p] * (double)(m + a);
        }
        for (int i = 0; i < 2 * chains[p]; i++) {
            float f = 1.0f + (float)i;
            for (long t = 0; t < iters; t++)
                f = fmaf(f, 1.0f - 0x1p-24f, 0x1p-20f);
            want_fma += lanes[p] * (double)f;
        }
        peak_result r = peak_loop(isas[p], 0)(iters), rf = peak_loop(isas[p], 1)(iters);
        ck_assert_double_eq(r.checksum, want);
        ck_assert_double_eq(r.flops, 2.0 * chains[p] * lanes[p] * iters);
        ck_assert_double_eq(rf.checksum, want_fma);
        ck_assert_double_eq(rf.flops, 4.0 * chains[p] * lanes[p] * iters);
        ck_assert_double_gt(peak_gflops(isas[p], 0, 1, 0.001), 0);
    }
}
END_TEST

Suite *bench_goals_suite(void)
{
    Suite *s = suite_create("bench_goals");
    TCase *tc = tcase_create("bench_goals");
    tcase_add_test(tc, test_floors_and_ceilings);
    tcase_add_test(tc, test_percent_floors);
    tcase_add_test(tc, test_summary_lists_and_counts);
    tcase_add_test(tc, test_mlp_products);
    tcase_add_test(tc, test_cnn_products);
    tcase_add_test(tc, test_peak_loops_compute_what_they_count);
    suite_add_tcase(s, tc);
    return s;
}
