/* make bench's goal verdicts (bench/goals.h): a floor is met at or above
 * its bound, a ceiling at or below it, a figure not measured (no PyTorch
 * here) is neither passed nor missed, and the summary lists every goal
 * with its verdict and counts them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench/goals.h"

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

START_TEST(test_summary_lists_and_counts)
{
    ngoals = 0;
    goal_note("mlp hashed / unhashed, 1 thread", 0.95, 0.90, 0);
    goal_note("mlp hashed / PyTorch at its best, 1 thread", 1.1, 1.3, 0);
    goal_note("cnn hashed / PyTorch at its best, 1 thread", 0, 2.5, 0);
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
    char text[4096] = "";
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    ck_assert_ptr_nonnull(strstr(text, "PASS mlp hashed / unhashed, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "0.95x  goal >=0.90x"));
    ck_assert_ptr_nonnull(strstr(text, "MISS mlp hashed / PyTorch at its best, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "n/a  cnn hashed / PyTorch at its best, 1 thread"));
    ck_assert_ptr_nonnull(strstr(text, "1 PASS, 1 MISS, 1 not measured"));
}
END_TEST

Suite *bench_goals_suite(void)
{
    Suite *s = suite_create("bench_goals");
    TCase *tc = tcase_create("bench_goals");
    tcase_add_test(tc, test_floors_and_ceilings);
    tcase_add_test(tc, test_summary_lists_and_counts);
    suite_add_tcase(s, tc);
    return s;
}
