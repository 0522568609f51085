/* `repro bisect -- PROGRAM` and the starting state. At the first step the
 * state the step starts from is the program's initialization: a C program
 * that draws its initial weights unseeded and records only what it
 * computes makes its first op differ with nothing recorded before it
 * differing. That is not "identical inputs, a nondeterministic op": the
 * report says it cannot tell. With the weights recorded as the starting
 * state (repro_recorder_state: input.state.*), the report names them as
 * the inputs that differ. And the helper's own rules: the tensor's name,
 * only before the first step ends. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/trace.h"
#include "repro/repro.h"
#include "testutil.h"
#include "util/error.h"

static char dir[TU_TMP_LEN];

/* A linear model whose weights start from the clock (unseeded) unless
 * --set init=seeded; --set state=1 records them with repro_recorder_state.
 * Its one op, fwd.y = w . x, is deterministic: any difference between runs
 * comes from the initialization. */
static const char prog_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
    "#include <unistd.h>\n"
    "#include <repro/repro.h>\n"
    "enum { N = 8 };\n"
    "static int fail(const char *what)\n{\n"
    "    fprintf(stderr, \"initprog: %s: %s\\n\", what, repro_error_last());\n    return 3;\n}\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return fail(\"environment\");\n"
    "    const char *init = repro_run_env_setting(\"init\"), *st = repro_run_env_setting(\"state\");\n"
    "    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
    "    repro_generator g;\n"
    "    repro_generator_init(&g, init && !strcmp(init, \"seeded\") ? env.seed\n"
    "                                 : (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));\n"
    "    float w[N], x[N];\n"
    "    for (int i = 0; i < N; i++)\n        w[i] = repro_generator_unit(&g) - 0.5f;\n"
    "    repro_run_info info = {\"initprog\", env.seed, NULL};\n"
    "    repro_recorder_options o;\n    repro_recorder_options_init(&o);\n"
    "    repro_recorder_options_from_env(&o, &env);\n"
    "    repro_recorder *r;\n"
    "    if (repro_recorder_open_ex(&r, NULL, &info, &o))\n        return fail(\"open\");\n"
    "    int64_t shape[1] = {N}, one[1] = {1};\n"
    "    if (st && !strcmp(st, \"1\") && repro_recorder_state(r, \"w\", REPRO_F32, 1, shape, w))\n"
    "        return fail(\"state\");\n"
    "    repro_generator data;\n    repro_generator_init(&data, env.seed + 1);\n"
    "    for (long step = 1; step <= 3; step++) {\n"
    "        float y = 0.0f;\n"
    "        for (int i = 0; i < N; i++) {\n"
    "            x[i] = repro_generator_unit(&data);\n            y += w[i] * x[i];\n        }\n"
    "        for (int i = 0; i < N; i++)\n            w[i] -= 0.1f * y * x[i];\n"
    "        if (repro_recorder_op(r, \"fwd.y\", REPRO_F32, 1, one, &y) ||\n"
    "            repro_recorder_tensor(r, \"batch.x\", REPRO_F32, 1, shape, x) ||\n"
    "            repro_recorder_tensor(r, \"param.w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, (double)(y * y)))\n"
    "            return fail(\"record\");\n    }\n"
    "    return repro_recorder_close(r, NULL) ? fail(\"close\") : 0;\n}\n";

static void setup(void)
{
    tu_tmp_template(dir, sizeof dir, "bstate");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[TU_TMP_LEN + 16], cmd[8192];
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(prog_c, f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -o '%s/prog' '%s' %s", dir, path,
             tu_stage_flags());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
}

static void teardown(void)
{
    char cmd[TU_TMP_LEN + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char out[1 << 16], err[1 << 16];

static int bisect(const char *sets, int json)
{
    char args[1024];
    snprintf(args, sizeof args, "bisect %s %s -- '%s/prog'", sets, json ? "--json" : "", dir);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

/* Unseeded, unrecorded: the first op differs, nothing before it does, and
 * the report says it cannot tell why (it used to say "nondeterministic"). */
START_TEST(test_unrecorded_start_is_not_called_nondeterministic)
{
    int rc = bisect("--set init=unseeded", 0);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: fwd.y (op 1 of 1 recorded at step 1)"), "%s",
                  out);
    ck_assert_msg(strstr(out, "the program's starting state was not recorded: cannot tell "
                              "nondeterministic from changed input"),
                  "%s", out);
    ck_assert_msg(strstr(out, "repro_recorder_state"), "%s", out);
    ck_assert_msg(!strstr(out, "inputs were identical") && !strstr(out, "it is nondeterministic"),
                  "a verdict it cannot know:\n%s", out);

    rc = bisect("--set init=unseeded", 1);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc, "%s: %s", je.text, out);
    json_t *op = json_object_get(doc, "first_divergent_op");
    ck_assert_str_eq(json_string_value(json_object_get(op, "name")), "fwd.y");
    ck_assert(json_is_null(json_object_get(op, "inputs_identical")));
    ck_assert(json_is_false(json_object_get(op, "starting_state_recorded")));
    json_decref(doc);
}
END_TEST

/* The same program recording its starting state: the weights are named
 * as the inputs that differ, and the op is not blamed. */
START_TEST(test_recorded_start_names_the_changed_input)
{
    int rc = bisect("--set init=unseeded --set state=1", 0);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: fwd.y"), "%s", out);
    ck_assert_msg(strstr(out, "its inputs differ: input.state.w already differs at step 1"), "%s",
                  out);
    ck_assert_msg(!strstr(out, "starting state was not recorded"), "%s", out);
    rc = bisect("--set init=unseeded --set state=1", 1);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(rc == 1 && doc, "exit %d\n%s", rc, out);
    json_t *op = json_object_get(doc, "first_divergent_op");
    ck_assert(json_is_false(json_object_get(op, "inputs_identical")));
    ck_assert(json_is_true(json_object_get(op, "starting_state_recorded")));
    json_decref(doc);
    /* Seeded, the runs agree: nothing to bisect. */
    rc = bisect("--set init=seeded --set state=1", 0);
    ck_assert_msg(rc == 0 && strstr(out, "nothing to bisect"), "exit %d\n%s%s", rc, out, err);
}
END_TEST

/* repro_recorder_state: "input.state." + name, in the step digest of the
 * first step; refused after the first step ends, and for a name that would
 * not fit (at most 51 bytes). */
START_TEST(test_state_helper_rules)
{
    char path[TU_TMP_LEN + 16];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    repro_run_info info = {"state", 1, NULL};
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    o.every = 1;
    repro_recorder *r;
    ck_assert_int_eq(repro_recorder_open_ex(&r, path, &info, &o), 0);
    float w[2] = {1, 2};
    int64_t shape[1] = {2};
    char longname[53];
    memset(longname, 'a', 52);
    longname[52] = '\0';
    ck_assert_int_eq(repro_recorder_state(r, longname + 1, REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_state(r, "w", REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    repro_trace t;
    ck_assert_msg(repro_trace_read(&t, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(t.steps[0].ntensors, 2);
    ck_assert_str_eq(t.steps[0].tensors[1].name, "input.state.w");
    ck_assert_int_eq(strncmp(t.steps[0].tensors[0].name, "input.state.aaa", 15), 0);
    repro_trace_release(&t);

    ck_assert_int_eq(repro_recorder_open_ex(&r, NULL, &info, &o), 0);
    ck_assert_int_eq(repro_recorder_state(r, longname, REPRO_F32, 1, shape, w), REPRO_EINVAL);
    ck_assert_msg(strstr(repro_error_last(), "over 51 bytes"), "%s", repro_error_last());
    repro_recorder_abort(r);

    ck_assert_int_eq(repro_recorder_open_ex(&r, NULL, &info, &o), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_state(r, "w", REPRO_F32, 1, shape, w), REPRO_EINVAL);
    ck_assert_msg(strstr(repro_error_last(), "before the first step ends"), "%s",
                  repro_error_last());
    repro_recorder_abort(r);
}
END_TEST

Suite *bisect_state_suite(void);
Suite *bisect_state_suite(void)
{
    Suite *s = suite_create("bisect_state");
    TCase *tc = tcase_create("start");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_unrecorded_start_is_not_called_nondeterministic);
    tcase_add_test(tc, test_recorded_start_names_the_changed_input);
    tcase_add_test(tc, test_state_helper_rules);
    suite_add_tcase(s, tc);
    return s;
}
