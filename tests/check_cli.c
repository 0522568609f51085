/* The command line as a user (or CI, or git bisect run) sees it: exit codes,
 * messages naming file:line, help that exists, and a run that is bitwise the
 * same in a fresh process. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static char out[65536], err[65536];

START_TEST(test_version_and_help)
{
    ck_assert_int_eq(tu_run_repro("--version", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "repro 0."));
    ck_assert_int_eq(tu_run_repro("help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "run "));
    ck_assert_int_eq(tu_run_repro("help run", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--workers W"));
    ck_assert_int_eq(tu_run_repro("run --help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: repro run"));
    ck_assert_int_eq(tu_run_repro("help config", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "augment_seed"));
}
END_TEST

START_TEST(test_usage_errors_exit_2)
{
    ck_assert_int_eq(tu_run_repro("", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "usage: repro"));
    ck_assert_int_eq(tu_run_repro("frobnicate", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "'frobnicate' is not a repro command"));
    ck_assert_int_eq(tu_run_repro("help frobnicate", out, sizeof out, err, sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "missing experiment"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --bogus", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "unknown option '--bogus'"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps x", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "'x' is not an integer"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --set nosuch=1", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run /nonexistent.ini", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.ini: cannot open"));
}
END_TEST

START_TEST(test_bad_experiment_names_file_line)
{
    char path[256], args[400], want[300];
    tu_write_temp(path, sizeof path, "x.ini", "[train]\nsteps = 5\nlearning_rate = 1\n");
    snprintf(args, sizeof args, "run %s", path);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    snprintf(want, sizeof want, "repro: %s:3: unknown key 'learning_rate'", path);
    ck_assert_msg(strstr(err, want) != NULL, "stderr: %s", err);
}
END_TEST

START_TEST(test_bad_idx_exits_2)
{
    char img[256], args[1200];
    tu_write_temp(img, sizeof img, "img.idx", "not an idx file at all");
    snprintf(args, sizeof args,
             "run experiments/mlp.ini --set dataset=idx --set train_images=%s "
             "--set train_labels=%s",
             img, img);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, img) != NULL, "stderr: %s", err);
}
END_TEST

START_TEST(test_run_prints_summary_and_is_reproducible)
{
    static char out2[65536];
    const char *args = "run experiments/cnn.ini --steps 6 --set log_every=3";
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "seed scheme repro-seed/v1"));
    ck_assert_ptr_nonnull(strstr(out, "held-out: loss"));
    ck_assert_ptr_nonnull(strstr(out, "steps/s"));
    ck_assert_ptr_nonnull(strstr(err, "step 3/6")); /* not a TTY: a line every log_every */
    ck_assert_ptr_nonnull(strstr(err, "step 6/6"));
    const char *bits = strstr(out, "float bits 0x");
    ck_assert_ptr_nonnull(bits);
    /* A fresh process, other thread and worker counts: the same loss bits. */
    ck_assert_int_eq(tu_run_repro("run experiments/cnn.ini --steps 6 --threads 2 --workers 3 -q",
                                  out2, sizeof out2, err, sizeof err),
                     0);
    const char *bits2 = strstr(out2, "float bits 0x");
    ck_assert_ptr_nonnull(bits2);
    ck_assert(strncmp(bits, bits2, 23) == 0);
    ck_assert_str_eq(err, ""); /* -q: no progress */
}
END_TEST

START_TEST(test_print_config)
{
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --print-config --seed 99", out,
                                  sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "[train]\nseed = 99\n"));
    ck_assert_ptr_nonnull(strstr(out, "hidden = 256,128\n"));
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_version_and_help);
    tcase_add_test(tc, test_usage_errors_exit_2);
    tcase_add_test(tc, test_bad_experiment_names_file_line);
    tcase_add_test(tc, test_bad_idx_exits_2);
    tcase_add_test(tc, test_run_prints_summary_and_is_reproducible);
    tcase_add_test(tc, test_print_config);
    suite_add_tcase(s, tc);
    return s;
}
