/* The size of a program's proof, with no flags: the public recorder and
 * the Python client keep detail on the first step and every 10th and the
 * loss on every step, as the built-in experiments do but for the first
 * step (check_trace_size.c), so a trace
 * stays under 1,000 bytes a step: a 30,000-step run within 30 MB. Measured
 * at 300 steps (the line sizes depend on the number of tensors, not the
 * step count; the header is counted in, so the ratio errs high) on the C
 * example charlm (14 tensors a step) and on a NumPy program recording a
 * two-layer MLP's parameters, gradients and batch (10 tensors). The
 * negative control: the same programs with detail on every step are far
 * over the bound. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/trace.h"
#include "testutil.h"
#include "util/error.h"

#define STEPS 300
#define TRACE_BYTES_PER_STEP 1000 /* 30 MB / 30,000 steps */

/* A two-layer MLP trained by SGD on seeded data, recorded through the
 * client with no options: repro.Recorder(experiment, seed). */
static const char mlp_py[] =
    "import sys\n"
    "import numpy as np\n"
    "import repro\n"
    "env = repro.RunEnv.read(3)\n"
    "rng = np.random.default_rng(env.seed)\n"
    "w1 = (rng.standard_normal((32, 16)) * 0.1).astype(np.float32)\n"
    "b1 = np.zeros(32, np.float32)\n"
    "w2 = (rng.standard_normal((4, 32)) * 0.1).astype(np.float32)\n"
    "b2 = np.zeros(4, np.float32)\n"
    "steps = int(sys.argv[1])\n"
    "with repro.Recorder('mlp-np', env.seed, total_steps=steps) as rec:\n"
    "    for step in range(1, steps + 1):\n"
    "        x = rng.standard_normal((8, 16)).astype(np.float32)\n"
    "        t = rng.standard_normal((8, 4)).astype(np.float32)\n"
    "        h = np.maximum(x @ w1.T + b1, 0)\n"
    "        d = (h @ w2.T + b2 - t) / np.float32(8)\n"
    "        gw2, gb2 = d.T @ h, d.sum(0)\n"
    "        dh = (d @ w2) * (h > 0)\n"
    "        gw1, gb1 = dh.T @ x, dh.sum(0)\n"
    "        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):\n"
    "            p -= np.float32(0.05) * g.astype(np.float32)\n"
    "        rec.tensor('batch.x', x)\n"
    "        rec.tensor('batch.t', t)\n"
    "        for n, g in (('fc1.weight', gw1), ('fc1.bias', gb1), ('fc2.weight', gw2),\n"
    "                     ('fc2.bias', gb2)):\n"
    "            rec.tensor('grad.' + n, g.astype(np.float32))\n"
    "        for n, p in (('fc1.weight', w1), ('fc1.bias', b1), ('fc2.weight', w2),\n"
    "                     ('fc2.bias', b2)):\n"
    "            rec.tensor('param.' + n, p)\n"
    "        rec.step(step, float((d * d).sum()))\n";

static char dir[TU_TMP_LEN];

static void setup(void)
{
    tu_tmp_template(dir, sizeof dir, "progsize");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[TU_TMP_LEN + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Runs `cmd` (a shell command line) with REPRO_TRACE=dir/name and only the
 * protocol variables in `env` ("" or "REPRO_SET_TRACE_EVERY=1"); returns
 * the trace's size, its path in path. */
static long trace_size(const char *name, const char *env, const char *cmd, char *path,
                       size_t len)
{
    char line[4096];
    snprintf(path, len, "%s/%s", dir, name);
    snprintf(line, sizeof line,
             "env -u REPRO_SET_TRACE_EVERY -u REPRO_SET_TRACE_DIGEST -u REPRO_TRACE_LEVEL %s "
             "REPRO_TRACE='%s' %s >'%s/out.txt' 2>&1",
             env, path, cmd, dir);
    int st = system(line);
    char out[4096];
    snprintf(line, sizeof line, "%s/out.txt", dir);
    tu_slurp(line, out, sizeof out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed:\n%s", cmd, out);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    return (long)sb.st_size;
}

/* Every step has its loss; detail on the first and every 10th (and the
 * last), none else. */
static void expect_shape(const char *path)
{
    repro_trace t;
    ck_assert_msg(repro_trace_read(&t, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(t.every, 10);
    ck_assert_int_eq(t.nsteps, STEPS);
    long detail = 0;
    for (long i = 0; i < t.nsteps; i++) {
        ck_assert_int_eq(t.steps[i].has_loss, 1);
        ck_assert_int_eq(t.steps[i].has_detail,
                         t.steps[i].step % 10 == 0 || t.steps[i].step == 1);
        detail += t.steps[i].has_detail;
    }
    ck_assert_int_eq(detail, STEPS / 10 + 1);
    repro_trace_release(&t);
}

static void expect_bounded(const char *what, const char *cmd)
{
    char path[TU_TMP_LEN + 32];
    long size = trace_size("default.jsonl", "", cmd, path, sizeof path);
    ck_assert_msg(size / STEPS <= TRACE_BYTES_PER_STEP,
                  "%s with no flags writes %ld bytes a step (bound %d: 30 MB for 30,000 steps)",
                  what, size / STEPS, TRACE_BYTES_PER_STEP);
    expect_shape(path);
    /* The negative control: detail on every step is far over the bound. */
    size = trace_size("every1.jsonl", "REPRO_SET_TRACE_EVERY=1", cmd, path, sizeof path);
    ck_assert_msg(size / STEPS > 2 * TRACE_BYTES_PER_STEP,
                  "%s with detail on every step writes only %ld bytes a step: the measure "
                  "sees nothing",
                  what, size / STEPS);
}

START_TEST(test_c_program_trace_bounded)
{
    const char *examples = getenv("REPRO_EXAMPLES");
    ck_assert_msg(examples && *examples, "REPRO_EXAMPLES is not set: run through `make check`");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/charlm' --steps %d", examples, STEPS);
    expect_bounded("charlm (C)", cmd);
}
END_TEST

START_TEST(test_python_program_trace_bounded)
{
    const char *why = tu_no_python("numpy");
    if (*why) {
        tu_skip("program_size", "%s", why);
        return;
    }
    char script[TU_TMP_LEN + 16], cwd[2048], cmd[4096];
    snprintf(script, sizeof script, "%s/mlp.py", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs(mlp_py, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(cmd, sizeof cmd, "PYTHONPATH='%s/python' /usr/bin/python3 '%s' %d", cwd, script,
             STEPS);
    expect_bounded("a NumPy program through the Python client", cmd);
}
END_TEST

Suite *program_size_suite(void);
Suite *program_size_suite(void)
{
    Suite *s = suite_create("program_size");
    TCase *tc = tcase_create("size");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_c_program_trace_bounded);
    tcase_add_test(tc, test_python_program_trace_bounded);
    suite_add_tcase(s, tc);
    return s;
}
