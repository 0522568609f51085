/* `repro bisect --commits GOOD..BAD --build make -- ./prog` end to end, in
 * a user's repository: a scratch git repository holding a tiny C program
 * that records through librepro (built against the staged install that
 * `make check` makes, REPRO_STAGE), with a history of 8 commits: the
 * program, its golden, docs, a learning-rate change (the answer), a build
 * break right after it, its fix, and docs. The bisect builds every probed
 * commit in its own temporary worktree and runs that commit's ./prog. */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"

static char base[256];      /* mkdtemp root, removed at the end */
static char repo[512];      /* base/repo: the user's repository */
static char tmp_dir[512];   /* base/tmp: TMPDIR of the bisect, must end empty */
static char bin[PATH_MAX];  /* absolute path of the repro under test */

/* The history, oldest first:
 *   I  the program (LR 0.05)      G  its golden (blessed at I)
 *   A  docs                       L  LR 0.05 -> 0.06   <- the answer
 *   B  build break                F  its fix
 *   D1 docs                       D2 docs (BAD)
 * G..D2 has 6 candidates: the first probe after BAD is B (the midpoint),
 * skipped; its neighbour F is bad, then L bad, then A good. The user's
 * own checkout keeps the build of I: a bisect that ran it instead of each
 * worktree's would find BAD good. */
static char id_I[41], id_G[41], id_A[41], id_L[41], id_B[41];

/* Linear regression by SGD: a few steps, milliseconds. LR is the line the
 * planted numerics change edits; N's line the one the build break edits. */
static const char prog_c[] =
    "/* tinyprog: linear regression by SGD, recorded through librepro. */\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    "#include <repro/repro.h>\n\n"
    "#define LR 0.05f\n"
    "enum { N = 8 };\n\n"
    "static int fail(const char *what)\n{\n"
    "    fprintf(stderr, \"tinyprog: %s: %s\\n\", what, repro_error_last());\n"
    "    return 3;\n}\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return fail(\"environment\");\n"
    "    long steps = 5;\n"
    "    const char *s = repro_run_env_setting(\"steps\");\n"
    "    if (s)\n        steps = strtol(s, NULL, 10);\n"
    "    for (int i = 1; i + 1 < argc; i++)\n"
    "        if (!strcmp(argv[i], \"--steps\"))\n            steps = strtol(argv[++i], NULL, 10);\n"
    "    repro_generator g;\n    repro_generator_init(&g, env.seed);\n"
    "    float w[N], target[N], x[N];\n"
    "    for (int i = 0; i < N; i++) {\n        w[i] = 0.0f;\n"
    "        target[i] = repro_generator_unit(&g) - 0.5f;\n    }\n"
    "    repro_run_info info = {\"tinyprog\", env.seed, \"{\\\"model\\\": \\\"linear\\\"}\"};\n"
    "    repro_recorder *r;\n"
    "    if (repro_recorder_open(&r, NULL, &info))\n        return fail(\"open\");\n"
    "    int64_t shape[1] = {N};\n"
    "    for (long step = 1; step <= steps; step++) {\n"
    "        float err = 0.0f;\n"
    "        for (int i = 0; i < N; i++) {\n"
    "            x[i] = repro_generator_unit(&g);\n"
    "            err += (w[i] - target[i]) * x[i];\n        }\n"
    "        for (int i = 0; i < N; i++)\n            w[i] -= LR * err * x[i];\n"
    "        if (repro_recorder_tensor(r, \"param.w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, (double)(err * err)))\n"
    "            return fail(\"record\");\n    }\n"
    "    if (repro_recorder_close(r, NULL))\n        return fail(\"close\");\n"
    "    return 0;\n}\n";

static void plant_history(void)
{
    tu_git_init(repo);
    tu_git_write(repo, "prog.c", "w", prog_c);
    tu_git_write_program_makefile(repo);
    tu_git_write(repo, ".gitignore", "w", "prog\nruns/\n");
    tu_git_write(repo, "README", "w", "tinyprog\n");
    tu_git_commit_all(repo, "tinyprog", id_I);
    /* Built and blessed in the user's checkout, as a user would. */
    tu_git_sh("cd '%s' && make >/dev/null 2>&1 && '%s' bless -- ./prog >/dev/null 2>&1", repo, bin);
    tu_git_commit_all(repo, "bless tinyprog", id_G);
    tu_git_write(repo, "README", "a", "a\n");
    tu_git_commit_all(repo, "docs: a", id_A);
    tu_git_sh("cd '%s' && sed -i 's/#define LR 0.05f/#define LR 0.06f/' prog.c && "
       "grep -q 'LR 0.06f' prog.c",
       repo);
    tu_git_commit_all(repo, "prog: learning rate 0.06", id_L);
    tu_git_sh("cd '%s' && sed -i 's/^enum { N = 8 };$/enum { N = 8 }/' prog.c", repo);
    tu_git_commit_all(repo, "prog: planted build break", id_B);
    tu_git_sh("cd '%s' && sed -i 's/^enum { N = 8 }$/enum { N = 8 };/' prog.c", repo);
    char ignored[41];
    tu_git_commit_all(repo, "prog: fix the build", ignored);
    tu_git_write(repo, "README", "a", "d1\n");
    tu_git_commit_all(repo, "docs: d1", ignored);
    tu_git_write(repo, "README", "a", "d2\n");
    tu_git_commit_all(repo, "docs: d2", ignored);
}

static void suite_setup(void)
{
    tu_git_scratch(base, sizeof base, "bisect-prog", bin);
    snprintf(repo, sizeof repo, "%s/repo", base);
    snprintf(tmp_dir, sizeof tmp_dir, "%s/tmp", base);
    ck_assert_int_eq(mkdir(tmp_dir, 0777), 0);
    plant_history();
}

static void suite_teardown(void)
{
    tu_git_scratch_remove(base);
}

typedef struct {
    int rc;
    char out[65536], err[65536];
} result;

/* Runs `repro bisect ARGS` in the repository with TMPDIR=base/tmp. */
static void bisect(result *r, const char *args)
{
    char cmd[8192], op[600], ep[600];
    snprintf(op, sizeof op, "%s/bisect.out", base);
    snprintf(ep, sizeof ep, "%s/bisect.err", base);
    snprintf(cmd, sizeof cmd,
             TU_GIT_ENV "cd '%s' && TMPDIR='%s' '%s' bisect %s >'%s' 2>'%s' </dev/null", base, repo,
             tmp_dir, bin, args, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_slurp(op, r->out, sizeof r->out);
    tu_slurp(ep, r->err, sizeof r->err);
}

/* No worktree, branch or temporary directory is left behind, and the
 * user's checkout is as it was. */
static void assert_clean(void)
{
    char out[4096];
    tu_git_capture(out, sizeof out, "git -C '%s' worktree list | wc -l", repo);
    ck_assert_int_eq(atoi(out), 1);
    tu_git_capture(out, sizeof out, "git -C '%s' branch --list 'repro-bisect-*'", repo);
    ck_assert_str_eq(out, "");
    tu_git_capture(out, sizeof out, "ls -A '%s'", tmp_dir);
    ck_assert_str_eq(out, "");
    tu_git_capture(out, sizeof out, "git -C '%s' status --porcelain", repo);
    ck_assert_str_eq(out, "");
}

START_TEST(test_finds_the_numerics_commit)
{
    static result r;
    char args[1024], want[300];
    snprintf(args, sizeof args, "--commits %.12s..HEAD --build make -- ./prog", id_G);
    bisect(&r, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    snprintf(want, sizeof want, "first bad commit: %s\n", id_L);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s\n%s", want, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "  subject:     prog: learning rate 0.06\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "  paths it changed:\n    prog.c\n"));
    /* The broken commit was probed (the midpoint) and skipped. */
    snprintf(want, sizeof want,
             "%.7s prog: planted build break \xe2\x80\x94 skip (build failed (exit 2))", id_B);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    snprintf(want, sizeof want, "skipped (did not build or run): 1 commit\n  %.7s", id_B);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_ptr_nonnull(
        strstr(r.out, "(GOOD) \xe2\x80\x94 good (2 runs agree, match GOOD's golden)"));
    ck_assert_ptr_nonnull(strstr(r.out, "(BAD) \xe2\x80\x94 bad (differs from GOOD's golden at "
                                        "step 1)"));
    snprintf(want, sizeof want, "%.7s docs: a \xe2\x80\x94 good", id_A);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "reference: GOOD's golden golden/tinyprog/"));
    assert_clean();
}
END_TEST

/* From I, which has no golden: GOOD's own run is the reference; the
 * program's arguments reach every run; the JSON names the answer. */
START_TEST(test_json_without_golden)
{
    static result r;
    char args[1024];
    snprintf(args, sizeof args, "--commits %s..HEAD --json -q --build make -- ./prog --steps 3",
             id_I);
    bisect(&r, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    ck_assert_msg(doc != NULL, "not JSON (%s):\n%s", e.text, r.out);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "outcome")), "found");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "experiment")), "tinyprog");
    json_t *prog = json_object_get(doc, "program");
    ck_assert_int_eq(json_array_size(prog), 3);
    ck_assert_str_eq(json_string_value(json_array_get(prog, 2)), "3");
    ck_assert_msg(!strncmp(json_string_value(json_object_get(doc, "reference")),
                           "GOOD's run 1 (GOOD has no golden/tinyprog/", 41),
                  "%s", json_string_value(json_object_get(doc, "reference")));
    json_t *fb = json_object_get(doc, "first_bad");
    ck_assert_str_eq(json_string_value(json_object_get(fb, "commit")), id_L);
    json_t *paths = json_object_get(fb, "paths");
    ck_assert_int_eq(json_array_size(paths), 1);
    ck_assert_str_eq(json_string_value(json_array_get(paths, 0)), "prog.c");
    json_t *first = json_array_get(json_object_get(doc, "steps"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "role")), "GOOD");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "candidates")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "runs")),
                     2 * (int)json_array_size(json_object_get(doc, "steps")));
    json_decref(doc);
    assert_clean();
}
END_TEST

START_TEST(test_bad_reproduces)
{
    static result r;
    char args[1024];
    snprintf(args, sizeof args, "--commits %s..%s -- ./prog", id_G, id_A);
    bisect(&r, args);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "BAD reproduces: nothing to bisect"));
    assert_clean();
}
END_TEST

/* A program that cannot be started at GOOD: GOOD cannot be tested, which
 * is an input error, and the message says why (it used to be garbled:
 * the runner formatted the error slot into itself). */
START_TEST(test_good_cannot_be_tested)
{
    static result r;
    char args[1024], want[300];
    snprintf(args, sizeof args, "--commits %s..HEAD -- ./no-such-prog", id_G);
    bisect(&r, args);
    ck_assert_msg(r.rc == 2, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    snprintf(want, sizeof want, "GOOD %.7s is not good: it cannot be tested (run 1 of "
                                "`./no-such-prog` could not be tested: cannot start "
                                "./no-such-prog: No such file or directory)", id_G);
    ck_assert_msg(strstr(r.err, want), "want %s in:\n%s", want, r.err);
    assert_clean();
}
END_TEST

/* SIGTERM while the program runs: the program gets it too, the worktree
 * and the temporary directory are removed, and the exit status is 128 + 15,
 * as a shell reports a command a signal stopped (it used to be 2). */
START_TEST(test_interrupted)
{
    char range[100], errp[600], pidp[600], script[2048], buf[4096];
    snprintf(range, sizeof range, "%s..HEAD", id_G);
    snprintf(errp, sizeof errp, "%s/interrupted.err", base);
    snprintf(pidp, sizeof pidp, "%s/sleep.pid", base);
    snprintf(script, sizeof script, "echo $$ > '%s.tmp' && mv '%s.tmp' '%s' && exec sleep 60",
             pidp, pidp, pidp);
    unlink(pidp);
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        setenv("HOME", base, 1);
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        setenv("TMPDIR", tmp_dir, 1);
        unsetenv("GIT_DIR");
        unsetenv("MAKEFLAGS");
        if (chdir(repo) || !freopen("/dev/null", "w", stdout) || !freopen(errp, "w", stderr))
            _exit(127);
        execl(bin, bin, "bisect", "--commits", range, "--", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    long sleeper = 0;
    for (int i = 0; i < 600 && sleeper <= 0; i++) { /* up to 60 s under load */
        usleep(100000);
        tu_slurp(pidp, buf, sizeof buf);
        sleeper = atol(buf);
    }
    ck_assert_msg(sleeper > 0, "the program never started");
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    tu_slurp(errp, buf, sizeof buf);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %d:\n%s", st, buf);
    ck_assert_msg(strstr(buf, "bisect: interrupted (signal 15)"), "%s", buf);
    ck_assert_msg(kill((pid_t)sleeper, 0) == -1, "the program was left running");
    assert_clean();
}
END_TEST

START_TEST(test_usage)
{
    static result r;
    char args[1024];
    /* The checkout's own build would be every commit's. */
    snprintf(args, sizeof args, "--commits HEAD~1..HEAD -- '%s/prog'", repo);
    bisect(&r, args);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_msg(strstr(r.err, "is in your checkout") && strstr(r.err, "(e.g. ./prog)"), "%s",
                  r.err);
    bisect(&r, "--commits HEAD~1..HEAD x.ini -- ./prog");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "give one or the other"));
    bisect(&r, "--commits HEAD~1..HEAD --name x x.ini");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "are for a program after '--'"));
    bisect(&r, "--commits HEAD~1..HEAD --timeout 0 -- ./prog");
    ck_assert_int_eq(r.rc, 2);
    bisect(&r, "--commits HEAD~1..HEAD --name ../x -- ./prog");
    ck_assert_int_eq(r.rc, 2);
    bisect(&r, "--commits HEAD..HEAD -- ./prog");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "same commit"));
    bisect(&r, "--help");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "-- PROGRAM [ARGS...]\n"));
    assert_clean();
}
END_TEST

Suite *bisect_program_suite(void)
{
    Suite *s = suite_create("bisect_program");
    TCase *tc = tcase_create("user repository");
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_finds_the_numerics_commit);
    tcase_add_test(tc, test_json_without_golden);
    tcase_add_test(tc, test_bad_reproduces);
    tcase_add_test(tc, test_good_cannot_be_tested);
    tcase_add_test(tc, test_interrupted);
    tcase_add_test(tc, test_usage);
    suite_add_tcase(s, tc);
    return s;
}
