/* `repro bisect EXP` (ops): it names the first divergent op and the
 * nondeterministic variant behind it — a planted atomic variant among
 * deterministic ones, and both of two planted ones; --quarantine lets a
 * later planted fault still be found; a reproducible experiment bisects to
 * "no divergence". */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char out[1 << 18], err[1 << 16];

START_TEST(test_planted_atomic_among_deterministic)
{
    /* linear.bwd_weight = atomic; conv, bias and index_add stay deterministic */
    int rc = tu_run_repro("bisect experiments/mlp-nondet.ini --steps 20 "
                          "--set index_add=ordered --set linear.bwd_bias=ordered",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%.2000s\n%.1000s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "(op linear.bwd_weight, variant atomic, NONdeterministic)"));
    ck_assert_ptr_nonnull(strstr(out, "culprit (minimal"));
    ck_assert_ptr_nonnull(strstr(out, "  variant.linear.bwd_weight = atomic\n"));
    ck_assert_ptr_null(strstr(out, "variant.index_add"));
}
END_TEST

START_TEST(test_two_nondeterministic_both_found)
{
    /* Each atomic variant differs only when its threads happen to contend; a
     * culprit test that sees no difference in --repeat runs clears it. Allow
     * three attempts at the whole bisect, never fewer than two culprits. */
    json_t *doc = NULL, *cul = NULL;
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = tu_run_repro("bisect experiments/mlp-nondet.ini --steps 20 --repeat 4 "
                              "--set index_add=atomic --json",
                              out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 1, "exit %d\n%.2000s\n%.1000s", rc, out, err);
        json_error_t je;
        json_decref(doc);
        doc = json_loads(out, 0, &je);
        ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
        cul = json_object_get(doc, "culprits");
        if (json_array_size(cul) == 2)
            break;
    }
    ck_assert_int_eq(json_array_size(cul), 2);
    int lin = 0, idx = 0;
    for (size_t i = 0; i < json_array_size(cul); i++) {
        const char *op = json_string_value(json_object_get(json_array_get(cul, i), "op"));
        lin |= !strcmp(op, "linear.bwd_weight");
        idx |= !strcmp(op, "index_add");
    }
    ck_assert(lin && idx);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "candidates")), 2);
    ck_assert_int_gt(json_integer_value(json_object_get(doc, "runs")), 4);
    json_decref(doc);
}
END_TEST

START_TEST(test_quarantine_finds_later_fault)
{
    /* Without quarantine the atomic op shows first; with it substituted
     * from the reference run, the fault planted at step 5 in run 2 is found. */
    setenv("REPRO_FAULT", "flip:step=5:tensor=param.fc2.weight:run=1", 1);
    int rc = tu_run_repro("bisect experiments/mlp-nondet.ini --steps 8 "
                          "--quarantine linear.bwd_weight",
                          out, sizeof out, err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 1, "exit %d\n%.2000s\n%.1000s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergence: step 5") != NULL, "%.2000s", out);
    ck_assert_ptr_nonnull(strstr(out, "param.fc2.weight"));
    ck_assert_ptr_nonnull(strstr(out, "besides the quarantined one"));
}
END_TEST

START_TEST(test_reproducible_bisects_to_nothing)
{
    ck_assert_int_eq(tu_run_repro("bisect experiments/cnn.ini --steps 4", out, sizeof out, err,
                                  sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "no divergence: two runs agree bit for bit over 4 steps"));
    ck_assert_int_eq(tu_run_repro("bisect experiments/cnn.ini --repeat 1", out, sizeof out, err,
                                  sizeof err),
                     2);
}
END_TEST

START_TEST(test_deterministic_mode_refuses)
{
    ck_assert_int_eq(tu_run_repro("run experiments/cnn-nondet.ini --steps 1 --set deterministic=on",
                                  out, sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "variant conv2d.bwd_filter = atomic is nondeterministic"));
    ck_assert_int_eq(tu_run_repro("run experiments/cnn-nondet.ini --steps 1 --no-trace "
                                  "--set deterministic=warn",
                                  out, sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(err, "warning: nondeterministic kernel variants in use: "
                                      "conv2d.bwd_filter = atomic"));
}
END_TEST

START_TEST(test_check_catches_nondet_experiments)
{
    /* The negative controls of `repro check`: the shipped nondet experiments
     * must fail it. Atomic nondeterminism needs contention, so allow a few
     * attempts, but never pass without seeing a difference. */
    const char *cmds[] = {"check experiments/mlp-nondet.ini --steps 10 --no-golden",
                          "check experiments/cnn-nondet.ini --steps 10 --no-golden"};
    for (int c = 0; c < 2; c++) {
        int rc = 0;
        for (int attempt = 0; attempt < 5 && rc != 1; attempt++)
            rc = tu_run_repro(cmds[c], out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 1, "%s never differed in 5 attempts", cmds[c]);
        ck_assert_ptr_nonnull(strstr(out, "NOT reproducible"));
    }
}
END_TEST

Suite *bisect_ops_suite(void)
{
    Suite *s = suite_create("bisect_ops");
    TCase *tc = tcase_create("bisect_ops");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_planted_atomic_among_deterministic);
    tcase_add_test(tc, test_two_nondeterministic_both_found);
    tcase_add_test(tc, test_quarantine_finds_later_fault);
    tcase_add_test(tc, test_reproducible_bisects_to_nothing);
    tcase_add_test(tc, test_deterministic_mode_refuses);
    tcase_add_test(tc, test_check_catches_nondet_experiments);
    suite_add_tcase(s, tc);
    return s;
}
