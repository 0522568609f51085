/* The cuda backend from the command line, on any machine: `repro run
 * --backend cuda` (and `--set backend=cuda`) either runs (a GPU machine
 * with a CUDA build) or exits 3 naming what is missing: this build has no
 * CUDA backend, or there is no usable driver / device. `repro env` says
 * whether this build's CUDA backend exists and was verified on hardware,
 * and `--backend cuda` gives the cuda class. The GPU checks themselves are
 * tests/gpu/run.sh (they need a GPU, and CUDA does not survive fork()). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "kernels/backend.h"
#include "record/trace.h"
#include "testutil.h"
#include "util/error.h"

/* check_trace_read.c's fixture generator (see check_compare.c) */
#define TRF_OTHER_CONFIG 8u
char *tr_fixture(const char *exp, long nsteps, long diverge_at, unsigned flags, int every);

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

static void load_fixture(repro_trace *t, const char *name, long diverge_at, unsigned flags)
{
    char path[256];
    char *text = tr_fixture("mlp", 6, diverge_at, flags, 1);
    tu_write_temp(path, sizeof path, name, text);
    free(text);
    ck_assert_msg(repro_trace_read(t, path) == 0, "%s", repro_error_message());
}

/* What a GPU trace's header says against a CPU one's: backend = cuda, and
 * so another numerics digest. */
static void make_gpu_trace(repro_trace *t)
{
    json_t *train = json_object_get(json_object_get(t->header_json, "config"), "train");
    ck_assert_ptr_nonnull(train);
    json_object_set_new(train, "backend", json_string("cuda"));
    t->numerics_digest.b[0] ^= 1;
}

/* repro diff compares a CPU and a GPU trace of one experiment (configs
 * equal but for the backend), and still refuses any other difference. */
START_TEST(test_diff_across_backends)
{
    static repro_trace a, b;
    static repro_divergence dv;
    load_fixture(&a, "cpu.jsonl", 0, 0);
    load_fixture(&b, "gpu.jsonl", 4, 0);
    make_gpu_trace(&b);
    ck_assert_msg(repro_compare_traces(&a, &b, &dv) == 0, "%s", repro_error_message());
    ck_assert_int_eq(dv.first_step, 4);
    repro_divergence_release(&dv);
    repro_trace_release(&b);
    load_fixture(&b, "gpu2.jsonl", 0, TRF_OTHER_CONFIG); /* lr differs too */
    make_gpu_trace(&b);
    ck_assert_int_eq(repro_compare_traces(&a, &b, &dv), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "have different configs"));
    repro_trace_release(&a);
    repro_trace_release(&b);
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
    tcase_add_test(tc, test_diff_across_backends);
    suite_add_tcase(s, tc);
    return s;
}
