/* `repro check` end to end, as CI uses it: shipped experiments reproduce
 * across fresh processes, thread counts and worker counts; the negative
 * control (a one-bit fault injected into one run) is caught and located;
 * the worker-seeding pitfall is reported in its scope; reports in JSON and
 * JUnit XML; runs at once (--jobs) give the same bits; bad options exit 2. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char out[1 << 20], err[1 << 16];

START_TEST(test_shipped_experiments_reproduce)
{
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --steps 30", out, sizeof out, err,
                                  sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 2 runs identical over 30 steps, chain "));
    ck_assert_int_eq(tu_run_repro("check experiments/cnn.ini --steps 12", out, sizeof out, err,
                                  sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 2 runs identical over 12 steps"));
}
END_TEST

START_TEST(test_thread_and_worker_counts_reproduce)
{
    ck_assert_int_eq(tu_run_repro("check experiments/cnn.ini --steps 8 --runs 1 --threads 1,2,3 "
                                  "--workers 0,3 --set shift=2 --set flip=on",
                                  out, sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 6 runs identical"));
}
END_TEST

START_TEST(test_negative_control_fault_is_located)
{
    /* One bit of one weight, at step 37, in the second run only. */
    char junit[TU_TMP_LEN + 8], args[TU_TMP_LEN + 80];
    tu_tmp_template(junit, sizeof junit, "junit");
    ck_assert_ptr_nonnull(mkdtemp(junit));
    strcat(junit, "/j.xml");
    snprintf(args, sizeof args, "check experiments/mlp.ini --steps 40 --jobs 2 --junit %s", junit);
    setenv("REPRO_FAULT", "flip:step=37:tensor=param.fc2.weight:element=77", 1);
    /* the runs at once here, one after another below: caught either way */
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(out, "DIVERGED at step 37"));
    ck_assert_ptr_nonnull(strstr(out, "param.fc2.weight"));
    ck_assert_ptr_nonnull(strstr(out, "likely origin"));
    ck_assert_ptr_nonnull(strstr(out, "scope: fresh-process run to run"));
    ck_assert_ptr_nonnull(strstr(out, "elements 77..77"));
    ck_assert_ptr_nonnull(strstr(out, "NOT reproducible"));
    FILE *f = fopen(junit, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = '\0';
    fclose(f);
    ck_assert_ptr_nonnull(strstr(err, "failures=\"1\""));
    ck_assert_ptr_nonnull(strstr(err, "diverged at step 37"));

    /* The same as JSON. */
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --steps 40 --jobs 1 --json", out,
                                  sizeof out, err, sizeof err),
                     1);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
    ck_assert(json_is_false(json_object_get(doc, "reproducible")));
    json_t *cmp = json_array_get(json_object_get(doc, "comparisons"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(cmp, "scope")), "fresh-process run to run");
    json_t *rep = json_object_get(cmp, "report");
    ck_assert_int_eq(json_integer_value(json_object_get(rep, "first_divergent_step")), 37);
    json_decref(doc);
    unsetenv("REPRO_FAULT");
}
END_TEST

/* One check's JSON: the chain of its runs and whether run 2 began
 * before run 1 ended (the runs' "started" and "seconds"). */
static void check_runs_json(const char *args, char chain[65], int *overlapped)
{
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
    json_t *runs = json_object_get(doc, "runs");
    ck_assert_int_eq(json_array_size(runs), 2);
    json_t *r1 = json_array_get(runs, 0), *r2 = json_array_get(runs, 1);
    double end1 = json_real_value(json_object_get(r1, "started")) +
                  json_real_value(json_object_get(r1, "seconds"));
    *overlapped = json_real_value(json_object_get(r2, "started")) < end1;
    snprintf(chain, 65, "%s", json_string_value(json_object_get(r1, "chain")));
    ck_assert_str_eq(chain, json_string_value(json_object_get(r2, "chain")));
    json_decref(doc);
}

/* --jobs 2 starts run 2 while run 1 is still going (each takes ~0.1 s or
 * more; the second starts within a millisecond), --jobs 1 after it ends,
 * and the traces are the same bits either way. */
START_TEST(test_runs_at_once_change_no_bit)
{
    char together[65], apart[65];
    int overlapped;
    check_runs_json("check experiments/mlp.ini --steps 30 --no-golden --jobs 2 --json", together,
                    &overlapped);
    ck_assert_msg(overlapped, "--jobs 2: run 2 began after run 1 ended");
    check_runs_json("check experiments/mlp.ini --steps 30 --no-golden --jobs 1 --json", apart,
                    &overlapped);
    ck_assert_msg(!overlapped, "--jobs 1: run 2 began before run 1 ended");
    ck_assert_str_eq(together, apart);
}
END_TEST

/* A fault naming a tensor the run does not record would flip nothing: the
 * negative control could not fail. Refused (exit 2) with the right name. */
START_TEST(test_fault_on_an_unknown_tensor_is_refused)
{
    setenv("REPRO_FAULT", "flip:step=5:tensor=fc1.weight", 1);
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps 6 -q --no-trace", out,
                                  sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "no tensor 'fc1.weight'"));
    ck_assert(strstr(err, "did you mean 'grad.fc1.weight'?") ||
              strstr(err, "did you mean 'param.fc1.weight'?"));
    setenv("REPRO_FAULT", "flip:step=5:tensor=param.fc1.weight", 1);
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps 6 -q --no-trace", out,
                                  sizeof out, err, sizeof err),
                     0);
    unsetenv("REPRO_FAULT");
}
END_TEST

START_TEST(test_worker_seeding_pitfall_has_its_scope)
{
    ck_assert_int_eq(tu_run_repro("check experiments/cnn.ini --steps 6 --runs 1 --workers 1,3 "
                                  "--set augment_seed=worker --set shift=2 --set noise=0.1",
                                  out, sizeof out, err, sizeof err),
                     1);
    /* Batch 1 goes to worker 0 (seeded base_seed + 0) for any worker count,
     * so the first step agrees; batch 2 goes to worker 1 with 2 or 3
     * workers but to worker 0 with 1: there the bits part. */
    ck_assert_ptr_nonnull(strstr(out, "scope: worker count"));
    ck_assert_ptr_nonnull(strstr(out, "DIVERGED at step 2"));
    ck_assert_ptr_nonnull(strstr(out, "batch.x  f32[64,1,28,28]   <- likely origin"));
}
END_TEST

START_TEST(test_bad_options_exit_2)
{
    ck_assert_int_eq(tu_run_repro("check", out, sizeof out, err, sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --runs 0", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --threads 1,x", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "'x' is not a count"));
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --set lr=fast", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --runs 1 --no-golden", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_int_eq(tu_run_repro("check /nonexistent.ini", out, sizeof out, err, sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --jobs 0", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "--jobs"));
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --batch-invariance --jobs 2", out,
                                  sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "--jobs does not combine"));
    ck_assert_int_eq(tu_run_repro("help check", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--workers LIST"));
}
END_TEST

/* A worker-count failure names its cause when augmentation draws from the
 * per-worker RNG; a setting with no effect (no augmentation) is said once. */
START_TEST(test_worker_count_cause_named)
{
    static char out[1 << 18], err[1 << 16];
    int rc = tu_run_repro("check experiments/cnn.ini --steps 4 --runs 1 --no-golden --workers 1,3 "
                          "--set augment_seed=worker",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "cause: augmentation draws from each loader worker's RNG"));
    ck_assert_ptr_nonnull(strstr(out, "augment_seed = sample"));
    rc = tu_run_repro("check experiments/mlp.ini --steps 3 --runs 1 --no-golden --workers 1,3", out,
                      sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "augment_seed has no effect here"));
}
END_TEST

/* Progress: one updating line with step and ETA on a terminal (faked with
 * script(1)), nothing of it when stderr is a file. The line is redrawn
 * every 0.2 s, so the terminal's runs must outlast that on a fast machine:
 * 300 cnn steps (~1 s a run here; 40 finished before the first redraw). */
START_TEST(test_progress_only_on_a_terminal)
{
    static char out[1 << 16], err[1 << 16];
    int rc = tu_run_repro("check experiments/cnn.ini --steps 40 --no-golden", out, sizeof out,
                          err, sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_null(strstr(err, "ETA"));
    ck_assert_ptr_null(strchr(err, '\r'));
    const char *bin = getenv("REPRO_BIN");
    char cmd[1024], log[TU_TMP_LEN];
    tu_tmp_template(log, sizeof log, "tty");
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "script -qec '%s check experiments/cnn.ini --steps 300 --no-golden' %s "
             ">/dev/null 2>&1",
             bin ? bin : "build/repro", log);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    remove(log);
    ck_assert_msg(strstr(out, "step ") && strstr(out, "/300, ETA "), "%s", out);
}
END_TEST

Suite *check_suite(void)
{
    Suite *s = suite_create("check");
    TCase *tc = tcase_create("check");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_progress_only_on_a_terminal);
    tcase_add_test(tc, test_worker_count_cause_named);
    tcase_add_test(tc, test_shipped_experiments_reproduce);
    tcase_add_test(tc, test_thread_and_worker_counts_reproduce);
    tcase_add_test(tc, test_negative_control_fault_is_located);
    tcase_add_test(tc, test_runs_at_once_change_no_bit);
    tcase_add_test(tc, test_fault_on_an_unknown_tensor_is_refused);
    tcase_add_test(tc, test_worker_seeding_pitfall_has_its_scope);
    tcase_add_test(tc, test_bad_options_exit_2);
    suite_add_tcase(s, tc);
    return s;
}
