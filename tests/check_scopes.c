/* Scopes that are really exercised (`repro check --threads 1,2`): the
 * thread counts a run used are in its trace ("threads_used"), repro sets
 * OMP_NUM_THREADS and friends for the program, and a scope whose runs did
 * not differ in the count, or do not say, is a warning (exit 3 with
 * --strict-scopes) instead of a silent pass. A small C program built
 * against the staged install plays the user's program, once silent about
 * its threads, once saying them, once saying a fixed count. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256];     /* mkdtemp: the program's sources and builds */

/* Records one parameter for 3 steps; THREADS says what it tells the
 * recorder: unset nothing, 0 what REPRO_THREADS asked, N a fixed N. */
static const char prog_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <repro/repro.h>\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    repro_run_info info = {\"scopeprog\", env.seed, NULL};\n"
    "    repro_recorder *r;\n"
    "    if (repro_recorder_open(&r, NULL, &info))\n        return 3;\n"
    "#ifdef THREADS\n"
    "    if (repro_recorder_set_threads(r, THREADS ? THREADS : env.threads, env.workers))\n"
    "        return 3;\n"
    "#endif\n"
    "    float w[4] = {1, 2, 3, 4};\n    int64_t shape[1] = {4};\n"
    "    for (int step = 1; step <= 3; step++) {\n"
    "        for (int i = 0; i < 4; i++)\n            w[i] *= 0.5f;\n"
    "        if (repro_recorder_tensor(r, \"param.w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, 0.0))\n            return 3;\n    }\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

/* Builds prog.c with cflags into dir/name. */
static void build(const char *name, const char *cflags)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cc -std=c11 -O1 %s -o '%s/%s' '%s/prog.c' %s", cflags, dir, name,
             dir, tu_stage_flags());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
}

static void setup(void)
{
    tu_tmp_template(dir, sizeof dir, "scopes");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(prog_c, f);
    fclose(f);
    build("silent", "");
    build("says", "-DTHREADS=0");
    build("fixed", "-DTHREADS=4");
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int check_prog(const char *opts, const char *prog, char *out, size_t outlen, char *err,
                      size_t errlen)
{
    char args[1024];
    snprintf(args, sizeof args, "check --no-golden %s -- '%s/%s'", opts, dir, prog);
    return tu_run_repro(args, out, outlen, err, errlen);
}

START_TEST(test_silent_program_gets_the_warning)
{
    static char out[16384], err[16384];
    int rc = check_prog("--threads 1,2", "silent", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 4 runs identical"));
    ck_assert_msg(strstr(err, "repro: warning: --threads scope not exercised: run 1 does not "
                              "record how many threads it used"),
                  "%s", err);
    ck_assert_msg(!strstr(err, "--workers scope"), "%s", err); /* not asked for */
    rc = check_prog("--strict-scopes --threads 1,2", "silent", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 3, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(err, "repro: --threads scope not exercised") &&
                      !strstr(err, "warning:"),
                  "%s", err);
    /* The worker scope alike, and --json says it. */
    rc = check_prog("--json --workers 0,2", "silent", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc, "%s: %s", je.text, out);
    const char *said = json_string_value(json_object_get(doc, "scopes_not_exercised"));
    ck_assert_msg(said && strstr(said, "--workers scope not exercised"), "%s", out);
    json_decref(doc);
}
END_TEST

START_TEST(test_program_that_says_its_threads_passes)
{
    /* The negative control: the same program saying what REPRO_THREADS
     * asked for is exercised, with and without --strict-scopes. */
    static char out[16384], err[16384];
    int rc = check_prog("--strict-scopes --threads 1,2 --workers 0,2", "says", out, sizeof out,
                        err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(!strstr(err, "not exercised"), "%s", err);
    /* A program that uses 4 threads whatever it is asked. */
    rc = check_prog("--strict-scopes --threads 1,2", "fixed", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 3, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(err, "every run used 4 threads (does the program ignore REPRO_THREADS?)"),
                  "%s", err);
}
END_TEST

START_TEST(test_builtin_mlp_is_exercised)
{
    static char out[16384], err[16384];
    int rc = tu_run_repro("check experiments/mlp.ini --no-golden --steps 3 --threads 1,2 "
                          "--workers 0,2 --strict-scopes",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(!strstr(err, "not exercised"), "%s", err);
}
END_TEST

/* Reads "threads_used" from a trace header (-1 absent). */
static int threads_used(const char *trace)
{
    FILE *f = fopen(trace, "r");
    ck_assert_msg(f != NULL, "%s", trace);
    char line[65536];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    json_t *h = json_loads(line, 0, NULL);
    ck_assert_ptr_nonnull(h);
    json_t *v = json_object_get(h, "threads_used");
    int n = json_is_integer(v) ? (int)json_integer_value(v) : -1;
    json_decref(h);
    return n;
}

START_TEST(test_python_script_follows_omp_num_threads)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("scopes", "%s", why);
        return;
    }
    /* A script that never reads REPRO_THREADS: torch follows OMP_NUM_THREADS. */
    char script[512], cwd[1024], args[2048];
    snprintf(script, sizeof script, "%s/train.py", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs("import numpy as np\nimport torch\nimport repro\n"
          "w = torch.ones(4)\n"
          "with repro.Recorder('pyscope', 7) as rec:\n"
          "    for step in range(1, 3):\n"
          "        w = w * 0.5\n"
          "        rec.tensor('param.w', w.numpy())\n"
          "        rec.step(step)\n",
          f);
    fclose(f);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    static char out[16384], err[16384];
    snprintf(args, sizeof args,
             "check --no-golden --keep --json --threads 1,2 -- /usr/bin/env "
             "PYTHONPATH='%s/python' /usr/bin/python3 '%s'",
             cwd, script);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(doc, "%s", out);
    const char *root = json_string_value(json_object_get(doc, "directory"));
    ck_assert_ptr_nonnull(root);
    /* Runs 3 and 4 are threads=1 and threads=2. */
    for (int run = 3; run <= 4; run++) {
        char trace[1200];
        snprintf(trace, sizeof trace, "%s/run-%d/trace.jsonl", root, run);
        ck_assert_int_eq(threads_used(trace), run - 2);
    }
    const char *said = json_string_value(json_object_get(doc, "scopes_not_exercised"));
    ck_assert_msg(said && !*said, "%s", out);
    char rm[1300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", root);
    ck_assert_int_eq(system(rm), 0);
    json_decref(doc);
    /* Recorder.set_threads says the loader workers too (the client builds
     * no DataLoader, so only the program can), and replaces torch's count. */
    char trace[512], py[2048];
    snprintf(trace, sizeof trace, "%s/said.jsonl", dir);
    snprintf(py, sizeof py,
             "PYTHONPATH='%s/python' /usr/bin/python3 -c \"import torch, numpy, repro\n"
             "r = repro.Recorder('said', 1, trace_path='%s')\nr.set_threads(3, 2)\n"
             "r.tensor('w', numpy.ones(2, dtype=numpy.float32))\nr.step(1)\nr.close()\"",
             cwd, trace);
    ck_assert_int_eq(system(py), 0);
    ck_assert_int_eq(threads_used(trace), 3);
    FILE *f2 = fopen(trace, "r");
    ck_assert_ptr_nonnull(f2);
    char line[65536];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f2));
    fclose(f2);
    ck_assert_msg(strstr(line, "\"workers_used\":2"), "%.300s", line);
}
END_TEST

Suite *scopes_suite(void)
{
    Suite *s = suite_create("scopes");
    TCase *tc = tcase_create("scopes");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_silent_program_gets_the_warning);
    tcase_add_test(tc, test_program_that_says_its_threads_passes);
    tcase_add_test(tc, test_builtin_mlp_is_exercised);
    tcase_add_test(tc, test_python_script_follows_omp_num_threads);
    suite_add_tcase(s, tc);
    return s;
}
