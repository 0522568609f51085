/* Goldens of a user's own program, end to end, in a scratch repository of
 * a small C program built against the staged install (REPRO_STAGE), and
 * golden lookup from another working directory:
 * - the golden is named after the experiment the program records, by bless,
 *   check and log alike (log finds it by the program its header records);
 * - after a numerics commit (the order of an accumulation) and a later
 *   unrelated one, `check -- ./prog` names prog.c among the program's
 *   changed sources (not repro's kernels/ or harness/) and prints a bisect
 *   command that this test runs verbatim: it names the numerics commit;
 * - the same from another directory (`-- REPO/prog`): the golden is found
 *   and the printed command still runs in the repository;
 * - `check EXP` from another directory finds the golden of EXP's
 *   repository; without one it says which golden directory it searched;
 * - the bisect command's build follows the repository's build files. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "golden/golden_program.h"
#include "testutil.h"

static char base[256];     /* mkdtemp root, removed at the end */
static char repo[512];     /* base/repo: the user's repository */
static char elsewhere[512]; /* base/elsewhere: a working directory outside it */
static char bin[PATH_MAX]; /* absolute path of the repro under test */
static char id_I[41], id_N[41];

typedef struct {
    int rc;
    char out[1 << 17], err[1 << 16];
} result;
static result r;

/* x is drawn before the sum, so that ORDER changes nothing but the order
 * of the float accumulation: the planted numerics change. */
static const char prog_c[] =
    "/* tinysum: SGD whose gradient is a float sum, recorded through librepro. */\n"
    "#include <stdio.h>\n#include <stdlib.h>\n\n"
    "#include <repro/repro.h>\n\n"
    "#define ORDER(i) (i)\n"
    "enum { N = 64 };\n\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    repro_generator g;\n    repro_generator_init(&g, env.seed);\n"
    "    float w[N], target[N], x[N];\n"
    "    for (int i = 0; i < N; i++) {\n        w[i] = 0.0f;\n"
    "        target[i] = repro_generator_unit(&g) - 0.5f;\n    }\n"
    "    repro_run_info info = {\"tinysum\", env.seed, \"{}\"};\n"
    "    repro_recorder *r;\n"
    "    if (repro_recorder_open(&r, NULL, &info))\n        return 3;\n"
    "    int64_t shape[1] = {N};\n"
    "    for (long step = 1; step <= 6; step++) {\n"
    "        for (int i = 0; i < N; i++)\n            x[i] = repro_generator_unit(&g) * 3.7f;\n"
    "        float err = 0.0f;\n"
    "        for (int i = 0; i < N; i++)\n"
    "            err += (w[ORDER(i)] - target[ORDER(i)]) * x[ORDER(i)];\n"
    "        for (int i = 0; i < N; i++)\n            w[i] -= 0.01f * err * x[i];\n"
    "        if (repro_recorder_tensor(r, \"param.w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, (double)(err * err)))\n"
    "            return 3;\n    }\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

/* Runs a shell command line in dir, with the build's repro first on PATH
 * (the printed commands say `repro`) and a TMPDIR of the test's own. */
static void sh_in(const char *dir, const char *line)
{
    char cmd[32768], op[600], ep[600], bindir[PATH_MAX];
    snprintf(op, sizeof op, "%s/cmd.out", base);
    snprintf(ep, sizeof ep, "%s/cmd.err", base);
    snprintf(bindir, sizeof bindir, "%s", bin);
    *strrchr(bindir, '/') = '\0';
    snprintf(cmd, sizeof cmd,
             TU_GIT_ENV "cd '%s' && PATH='%s':\"$PATH\" TMPDIR='%s' %s >'%s' 2>'%s' </dev/null",
             base, dir, bindir, base, line, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_slurp(op, r.out, sizeof r.out);
    tu_slurp(ep, r.err, sizeof r.err);
}

static void repro_in(const char *dir, const char *args)
{
    char line[12288];
    snprintf(line, sizeof line, "'%s' %s", bin, args);
    sh_in(dir, line);
}

/* The history: I the program (blessed at I, the golden committed next), N the accumulation order
 * reversed (the answer), U and V unrelated docs commits. */
static void plant_history(void)
{
    tu_git_init(repo);
    tu_git_write(repo, "prog.c", "w", prog_c);
    tu_git_write_program_makefile(repo);
    tu_git_write(repo, ".gitignore", "w", "prog\nruns/\n");
    tu_git_write(repo, "README", "w", "tinysum\n");
    tu_git_commit_all(repo, "tinysum", id_I);
    tu_git_sh("cd '%s' && make >/dev/null 2>&1", repo);
    repro_in(repo, "bless -- ./prog");
    ck_assert_msg(r.rc == 0, "bless: rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "blessed golden/tinysum/"), "%s", r.out);
    tu_git_commit_all(repo, "bless tinysum", NULL);
    tu_git_sh("cd '%s' && sed -i 's/^#define ORDER(i) (i)$/#define ORDER(i) (N - 1 - (i))/' "
              "prog.c && grep -q 'N - 1 - (i)' prog.c",
              repo);
    tu_git_commit_all(repo, "prog: sum the gradient from the end", id_N);
    tu_git_write(repo, "README", "a", "notes\n");
    tu_git_commit_all(repo, "docs: notes", NULL);
    tu_git_write(repo, "NEWS", "w", "nothing yet\n");
    tu_git_commit_all(repo, "docs: news", NULL);
    tu_git_sh("cd '%s' && make >/dev/null 2>&1", repo);
}

static void suite_setup(void)
{
    tu_git_scratch(base, sizeof base, "golden-prog", bin);
    snprintf(repo, sizeof repo, "%s/repo", base);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", base);
    ck_assert_int_eq(mkdir(elsewhere, 0777), 0);
    plant_history();
}

static void suite_teardown(void)
{
    tu_git_scratch_remove(base);
}

/* The line of r.out after `tag`, without its newline, into buf. */
static void line_after(const char *tag, char *buf, size_t len)
{
    const char *p = strstr(r.out, tag);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s\n%s", tag, r.out, r.err);
    p += strlen(tag);
    snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* Runs the printed bisect command as printed, in the repository, and
 * checks that it names the numerics commit. */
static void run_printed_bisect(const char *printed)
{
    char want[300];
    sh_in(repo, printed);
    ck_assert_msg(r.rc == 0, "`%s`: rc %d\n%s\n%s", printed, r.rc, r.out, r.err);
    snprintf(want, sizeof want, "first bad commit: %s\n", id_N);
    ck_assert_msg(strstr(r.out, want), "`%s` did not name %s:\n%s", printed, id_N, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "  paths it changed:\n    prog.c\n"));
}

START_TEST(test_mismatch_names_sources_and_bisects)
{
    repro_in(repo, "check -- ./prog");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "golden: MISMATCH with golden/tinysum/"), "%s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "the program's sources changed since the golden"));
    char want[300];
    snprintf(want, sizeof want, "    prog.c (1 commit): %.7s prog: sum the gradient", id_N);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "    README (1 commit)"));
    /* repro's own numerics paths are not the program's */
    ck_assert_ptr_null(strstr(r.out, "kernels/"));
    ck_assert_ptr_null(strstr(r.out, "numerics paths"));
    ck_assert_ptr_null(strstr(r.out, "    golden/")); /* the golden is no source */
    char printed[2048], expect[300];
    line_after("  to find the commit: ", printed, sizeof printed);
    snprintf(expect, sizeof expect, "repro bisect --commits %.12s..HEAD --build make -- ./prog",
             id_I);
    ck_assert_str_eq(printed, expect);
    run_printed_bisect(printed);
}
END_TEST

/* From another directory, with the program named by a path into the
 * repository: the golden is found, and the printed command (for the
 * repository's top, where bisect runs) names the commit too. */
START_TEST(test_from_another_directory)
{
    char args[1024];
    snprintf(args, sizeof args, "check --json -- '%s/prog'", repo);
    repro_in(elsewhere, args);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "\"status\": \"mismatch\""), "%s", r.out);
    char printed[2048], expect[300];
    line_after("\"bisect_command\": \"", printed, sizeof printed);
    printed[strcspn(printed, "\"")] = '\0';
    snprintf(expect, sizeof expect, "repro bisect --commits %.12s..HEAD --build make -- ./prog",
             id_I);
    ck_assert_str_eq(printed, expect);
    run_printed_bisect(printed);
}
END_TEST

/* A program outside any repository is checked against the golden of the
 * current directory's repository. */
START_TEST(test_program_outside_the_repository)
{
    tu_git_sh("cp '%s/prog' '%s/prog2'", repo, elsewhere);
    repro_in(repo, "check ../elsewhere/prog2");
    ck_assert_int_eq(r.rc, 2); /* without '--': an experiment file, refused */
    repro_in(repo, "check -- ../elsewhere/prog2");
    tu_git_sh("rm '%s/prog2'", elsewhere);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "golden: MISMATCH with golden/tinysum/"), "%s", r.out);
}
END_TEST

/* log follows the same name rule without running the program; a program
 * no golden records is an error that says where it looked. */
START_TEST(test_log_uses_the_recorded_name)
{
    repro_in(repo, "log -- ./prog");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "golden history of tinysum (1 commit changed golden/tinysum/)"),
                  "%s", r.out);
    /* the same file by another path, from another directory */
    repro_in(elsewhere, "log -- ../repo/prog");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "golden history of tinysum (1 commit"));
    repro_in(repo, "log --name tinysum -- ./prog");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "golden history of tinysum (1 commit"));
    tu_git_sh("cd '%s' && cp prog other", repo);
    /* check under a name no golden has: where it looked, how to bless it */
    repro_in(repo, "check --require-golden --name zzz -- ./prog");
    ck_assert_int_eq(r.rc, 1);
    char want[900];
    snprintf(want, sizeof want, " in %s/golden/zzz/ (and none for any other class)", repo);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_msg(strstr(r.out, "bless it with `repro bless --name zzz -- ./prog`"), "%s", r.out);
    repro_in(repo, "log -- ./other");
    tu_git_sh("rm '%s/other'", repo);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_msg(strstr(r.err, "no golden in ") && strstr(r.err, "/golden/ records the program"),
                  "%s", r.err);
}
END_TEST

static const char tiny_ini[] = "[model]\ntype = mlp\nhidden = 16\n"
                               "[data]\ntrain_size = 256\ntest_size = 64\n"
                               "[train]\nseed = 5\nsteps = 4\nlr = 0.05\n";

/* `check EXP` from a directory outside EXP's repository finds its golden;
 * without one, it names the golden directory it searched. */
START_TEST(test_experiment_golden_from_elsewhere)
{
    char exprepo[600], args[1400];
    snprintf(exprepo, sizeof exprepo, "%s/exprepo", base);
    tu_git_init(exprepo);
    tu_git_write(exprepo, "experiments/tiny.ini", "w", tiny_ini);
    tu_git_write(exprepo, ".gitignore", "w", "runs/\n");
    tu_git_commit_all(exprepo, "tiny", NULL);
    snprintf(args, sizeof args, "check '%s/experiments/tiny.ini' --runs 1", exprepo);
    repro_in(elsewhere, args); /* the negative control: no golden yet */
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    char want[900];
    snprintf(want, sizeof want, " in %s/golden/tiny/ (and none for any other class)", exprepo);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    repro_in(exprepo, "bless experiments/tiny.ini");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    tu_git_commit_all(exprepo, "bless tiny", NULL);
    repro_in(elsewhere, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.out, "golden: matches golden/tiny/"), "%s", r.out);
}
END_TEST

/* This checkout's own experiments/mlp.ini, checked from another directory:
 * its committed golden directory is the one searched (a match on this
 * class, or the classes it holds listed). */
START_TEST(test_checkout_mlp_from_elsewhere)
{
    char root[PATH_MAX], args[PATH_MAX + 100];
    snprintf(root, sizeof root, "%s", bin); /* <root>/build/repro */
    *strrchr(root, '/') = '\0';
    *strrchr(root, '/') = '\0';
    snprintf(args, sizeof args, "check '%s/experiments/mlp.ini' --steps 2 --runs 1", root);
    repro_in(elsewhere, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    int matched = strstr(r.out, "golden: matches golden/mlp/") != NULL;
    int listed = strstr(r.out, "/golden/mlp/; goldens exist for: ") != NULL;
    ck_assert_msg(matched || listed, "mlp's golden not found from %s:\n%s", elsewhere, r.out);
    ck_assert_ptr_null(strstr(r.out, "and none for any other class"));
}
END_TEST

/* The suggested build follows the repository: make, cmake, or nothing
 * (`true`: bisect's default, make, would fail every probe); words that
 * need quoting are quoted. */
START_TEST(test_bisect_command_build)
{
    char dir[600], cmd[2048];
    snprintf(dir, sizeof dir, "%s/builds", base);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    char *const prog[] = {"python3", "train.py", "--tag", "a b", NULL};
    repro_golden_bisect_command(dir, "0123456789abcdef", prog, cmd, sizeof cmd);
    ck_assert_str_eq(cmd, "repro bisect --commits 0123456789ab..HEAD --build true -- python3 "
                          "train.py --tag 'a b'");
    tu_git_write(dir, "CMakeLists.txt", "w", "project(x)\n");
    repro_golden_bisect_command(dir, "0123456789abcdef", prog, cmd, sizeof cmd);
    ck_assert_str_eq(cmd, "repro bisect --commits 0123456789ab..HEAD --build 'cmake -S . -B "
                          "build && cmake --build build' -- python3 train.py --tag 'a b'");
    tu_git_write(dir, "Makefile", "w", "all:\n");
    ck_assert_str_eq(repro_golden_build_command(dir), "make");
}
END_TEST

Suite *golden_program_suite(void)
{
    Suite *s = suite_create("golden_program");
    TCase *tc = tcase_create("user repository");
    tcase_set_timeout(tc, 180);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_mismatch_names_sources_and_bisects);
    tcase_add_test(tc, test_from_another_directory);
    tcase_add_test(tc, test_log_uses_the_recorded_name);
    tcase_add_test(tc, test_program_outside_the_repository);
    tcase_add_test(tc, test_experiment_golden_from_elsewhere);
    tcase_add_test(tc, test_checkout_mlp_from_elsewhere);
    tcase_add_test(tc, test_bisect_command_build);
    suite_add_tcase(s, tc);
    return s;
}
