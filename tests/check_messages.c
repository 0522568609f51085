/* What repro says about a user's own program (issue 34, item 6): only
 * what the program recorded (no accuracy it never recorded, a divergence
 * curve over its own tensors when none is named param.*), a program given
 * without '--' gets told to add it, and option values are refused before
 * any run starts. A small C program built against the staged install
 * records "w" and "batch.x" (no param.*, no eval accuracy) and reads its
 * learning rate from --set lr=... */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256]; /* mkdtemp: the program, its traces */

static const char prog_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <repro/repro.h>\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    const char *lr_set = repro_run_env_setting(\"lr\");\n"
    "    float lr = lr_set ? strtof(lr_set, NULL) : 0.5f;\n"
    "    repro_run_info info = {\"msgprog\", env.seed, NULL};\n"
    "    repro_recorder *r;\n"
    "    repro_recorder_options o;\n    repro_recorder_options_init(&o);\n"
    "    o.every = 1; /* a curve point on each of its 4 steps */\n"
    "    if (repro_recorder_open_ex(&r, NULL, &info, &o))\n        return 3;\n"
    "    float w[4] = {1, 2, 3, 4}, x[4] = {1, 1, 1, 1};\n    int64_t shape[1] = {4};\n"
    "    for (int step = 1; step <= 4; step++) {\n"
    "        for (int i = 0; i < 4; i++)\n            w[i] -= lr * w[i] * 0.5f;\n"
    "        if (repro_recorder_tensor(r, \"batch.x\", REPRO_F32, 1, shape, x) ||\n"
    "            repro_recorder_tensor(r, \"w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, (double)w[0]))\n            return 3;\n    }\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

static void setup(void)
{
    const char *stage = getenv("REPRO_STAGE");
    ck_assert_msg(stage && *stage, "REPRO_STAGE is not set: run the suite through `make check`");
    tu_tmp_template(dir, sizeof dir, "messages");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(prog_c, f);
    fclose(f);
#if defined(__SANITIZE_ADDRESS__)
    const char *san = " -fsanitize=address,undefined";
#else
    const char *san = "";
#endif
    snprintf(cmd, sizeof cmd,
             "cc -std=c11 -O1%s -o '%s/prog' '%s' -I'%s/include' -L'%s/lib' -Wl,-rpath,'%s/lib' "
             "-lrepro",
             san, dir, path, stage, stage, stage);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Reads a whole file into buf. */
static void slurp_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s", path);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

START_TEST(test_compare_shows_only_what_was_recorded)
{
    static char out[32768], err[16384], svg[65536];
    char args[1024];
    snprintf(args, sizeof args,
             "compare -q --runs 1 --vary lr=0.5,0.25 --plot '%s/p.svg' -- '%s/prog'", dir, dir);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(!strstr(out, "0.00%"), "an accuracy the program never recorded:\n%s", out);
    ck_assert_msg(strstr(out, "0.25 "), "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/p.svg", dir);
    slurp_file(path, svg, sizeof svg);
    ck_assert_msg(strstr(svg, "norm gap of all recorded tensors"), "%.600s", svg);
    snprintf(args, sizeof args, "compare -q --json --runs 1 --vary lr=0.5,0.25 -- '%s/prog'",
             dir);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(doc, "%s", out);
    json_t *v1 = json_array_get(json_object_get(doc, "values"), 1);
    ck_assert_msg(json_is_null(json_object_get(v1, "accuracy")), "%s", out);
    /* The curve over "w" and "batch.x" is not flat: the runs differ. */
    ck_assert_msg(json_real_value(json_object_get(v1, "final_rel_l2_vs_first")) > 0, "%s", out);
    json_decref(doc);
}
END_TEST

/* `repro diff` of two traces of the program: the curve measures all its
 * tensors and says so; the built-in's traces keep ||params||. */
START_TEST(test_curve_over_all_tensors_without_params)
{
    static char out[65536], err[16384];
    char cmd[2048], args[1024];
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "REPRO_TRACE='%s/t%d.jsonl' REPRO_SET_LR=%s '%s/prog'", dir, i,
                 i ? "0.25" : "0.5", dir);
        ck_assert_int_eq(system(cmd), 0);
    }
    snprintf(args, sizeof args, "diff '%s/t0.jsonl' '%s/t1.jsonl'", dir, dir);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "relative difference of ||all recorded tensors||"), "%s", out);
    snprintf(args, sizeof args, "diff --json '%s/t0.jsonl' '%s/t1.jsonl'", dir, dir);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(doc, "%s", out);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "curve_measure")), "tensors");
    json_t *curve = json_object_get(doc, "curve");
    ck_assert_int_eq((int)json_array_size(curve), 4);
    double last = json_real_value(json_object_get(json_array_get(curve, 3), "rel_l2"));
    ck_assert_msg(last > 0, "a flat curve for runs that differ: %s", out);
    json_decref(doc);
}
END_TEST

START_TEST(test_program_without_dashes_is_told)
{
    char out[8192], err[8192], args[1024];
    snprintf(args, sizeof args, "check '%s/prog'", dir);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "is a program, not an experiment file: put '--' before it"), "%s",
                  err);
    ck_assert_msg(!strstr(err, "NUL byte"), "%s", err);
    /* A script alike; an experiment file is still read as one. */
    snprintf(args, sizeof args, "%s/train.sh", dir);
    FILE *f = fopen(args, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(args, 0755), 0);
    char cargs[1100];
    snprintf(cargs, sizeof cargs, "check '%s'", args);
    ck_assert_int_eq(tu_run_repro(cargs, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "put '--' before it"), "%s", err);
    snprintf(args, sizeof args, "%s/notes.ini", dir);
    f = fopen(args, "w");
    ck_assert_ptr_nonnull(f);
    fputs("[train]\nsteps = x\n", f);
    fclose(f);
    snprintf(cargs, sizeof cargs, "check '%s'", args);
    ck_assert_int_eq(tu_run_repro(cargs, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(!strstr(err, "put '--'") && strstr(err, "notes.ini:2"), "%s", err);
}
END_TEST

START_TEST(test_option_values_refused_before_any_run)
{
    static const char *const cases[][2] = {
        {"check --no-golden --threads 0 -- '%s/prog'", "--threads 0"},
        {"check --no-golden --threads 1,0 -- '%s/prog'", "--threads 1,0"},
        {"check experiments/mlp.ini --no-golden --steps 2 --threads 0", "--threads 0"},
        {"check experiments/mlp.ini --no-golden --steps 2 --workers 1,65", "num_workers: 65"},
        {"run --threads 0 -- '%s/prog'", "--threads 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[1024], out[8192], err[8192];
        snprintf(args, sizeof args, cases[i][0], dir);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d\n%s%s", args, rc, out, err);
        ck_assert_msg(strstr(err, cases[i][1]), "%s: %s", args, err);
        /* no run started: no progress line, no run's failure */
        ck_assert_msg(!strstr(err, "(1/") && !strstr(err, "failed (exit"), "%s: %s", args, err);
    }
}
END_TEST

Suite *messages_suite(void)
{
    Suite *s = suite_create("messages");
    TCase *tc = tcase_create("messages");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_compare_shows_only_what_was_recorded);
    tcase_add_test(tc, test_curve_over_all_tensors_without_params);
    tcase_add_test(tc, test_program_without_dashes_is_told);
    tcase_add_test(tc, test_option_values_refused_before_any_run);
    suite_add_tcase(s, tc);
    return s;
}
