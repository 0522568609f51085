/* The cuda backend from the command line, on any machine: `repro run
 * --backend cuda` (and `--set backend=cuda`) either runs (a GPU machine
 * with a CUDA build) or exits 3 naming what is missing: this build has no
 * CUDA backend, or there is no usable driver / device. `repro env` says
 * whether this build's CUDA backend exists and was verified on hardware,
 * and `--backend cuda` gives the cuda class. The GPU checks themselves are
 * tests/gpu/run.sh (they need a GPU, and CUDA does not survive fork()). */
#include <check.h>
#include <string.h>

#include "kernels/backend.h"
#include "testutil.h"

static char out[1 << 16], err[1 << 14];

/* exit 0, or exit 3 with the message this build gives without a GPU */
static void expect_runs_or_no_gpu(const char *args)
{
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    if (rc == 0)
        return; /* a GPU machine with a CUDA build: it ran */
    ck_assert_msg(rc == 3, "%s: exit %d, stderr: %s", args, rc, err);
    if (repro_backend_have_cuda())
        ck_assert_msg(strstr(err, "cuda backend unavailable: no ") != NULL &&
                          (strstr(err, "CUDA driver") || strstr(err, "CUDA device")),
                      "%s: stderr: %s", args, err);
    else
        ck_assert_msg(strstr(err, "this build has no CUDA backend") != NULL, "%s: stderr: %s",
                      args, err);
}

START_TEST(test_run_backend_cuda_runs_or_exits_3)
{
    expect_runs_or_no_gpu("run experiments/cnn.ini --backend cuda --steps 2 --no-trace -q");
    expect_runs_or_no_gpu("run experiments/mlp.ini --set backend=cuda --steps 2 --no-trace -q");
}
END_TEST

START_TEST(test_backend_key_is_checked)
{
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --backend gpu --steps 1 --no-trace -q",
                                  out, sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "not one of cpu|cuda"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --backend", out, sizeof out, err,
                                  sizeof err),
                     2);
    /* cpu is the default and spelled out changes nothing */
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --backend cpu --print-config", out,
                                  sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "backend = cpu"));
}
END_TEST

START_TEST(test_env_says_what_the_cuda_backend_is)
{
    ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "cuda_backend:"));
    if (repro_backend_have_cuda())
        ck_assert_ptr_nonnull(strstr(out, "NOT verified on hardware"));
    else
        ck_assert_ptr_nonnull(strstr(out, "not compiled"));
    ck_assert_ptr_nonnull(strstr(out, "gpu_seen:"));
    ck_assert_ptr_nonnull(strstr(out, "\nclass:              cpu-"));
    ck_assert_int_eq(tu_run_repro("env --backend cuda", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "\nclass:              cuda-"));
    ck_assert_ptr_nonnull(strstr(out, "gpu_name:"));
    ck_assert_int_eq(tu_run_repro("env --backend tpu", out, sizeof out, err, sizeof err), 2);
}
END_TEST

Suite *cuda_cli_suite(void)
{
    Suite *s = suite_create("cuda_cli");
    TCase *tc = tcase_create("cuda_cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_run_backend_cuda_runs_or_exits_3);
    tcase_add_test(tc, test_backend_key_is_checked);
    tcase_add_test(tc, test_env_says_what_the_cuda_backend_is);
    suite_add_tcase(s, tc);
    return s;
}
