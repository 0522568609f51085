/* `repro bisect --commits` end to end: a clone of this repository (its
 * commits only, never the uncommitted state of the checkout the suite runs
 * in) with commits planted on top — a tiny experiment and its golden,
 * harmless docs changes, one numerics change in the SGD kernel, a build
 * break right after it and its fix — bisected by the binary under test,
 * which builds each probed commit in its own temporary worktree. */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"

static char base[256];          /* mkdtemp root, removed at the end */
static char clone_dir[512];     /* base/clone */
static char tmp_dir[512];       /* base/tmp: TMPDIR of the bisect, must end empty */
static char bin[PATH_MAX];      /* absolute path of the repro under test */

/* The planted history, oldest first (G..BAD is the main range):
 *   T  tiny experiment + docs   G  golden of tiny (blessed at T)
 *   A  docs                     P  numerics change (sgd.c)   <- the answer
 *   B  build break              F  fix of the break
 *   D1, D2, D3 docs (D3 = BAD)
 * For the main search the first probe after BAD is B (the midpoint), which
 * is skipped; its neighbour F is bad, then P bad, then A good. A side
 * branch off G holds X (a build break) then Y (the same numerics change,
 * and the fix): between G and Y only a skipped commit is left. */
static char id_T[41], id_G[41], id_A[41], id_P[41], id_B[41], id_F[41], id_BAD[41];
static char id_X[41], id_Y[41];

static const char tiny_ini[] =
    "; A tiny MLP for the bisect tests: a run takes milliseconds.\n"
    "[model]\ntype = mlp\nhidden = 16\n\n"
    "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
    "[train]\noptimizer = sgd\nsteps = 4\n";

static void plant_history(void)
{
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    /* --no-local: a real clone of what is committed here, not hard links. */
    tu_git_sh("git clone -q --no-local '%s' '%s'", cwd, clone_dir);
    tu_git_sh("mkdir -p '%s/docs'", clone_dir);
    tu_git_write(clone_dir, "experiments/tiny.ini", "w", tiny_ini);
    tu_git_write(clone_dir, "docs/notes.txt", "w", "notes\n");
    tu_git_commit_all(clone_dir, "tiny experiment for the bisect test", id_T);
    /* The golden is blessed by the clone's own build, as a user would. */
    /* CPU-only builds (NVCC=): the planted history is about CPU numerics,
     * and a CUDA build of every probed commit would not fit the timeout. */
    tu_git_sh(
        "cd '%s' && make -j2 NVCC= repro >/dev/null 2>&1 && ./repro bless experiments/tiny.ini "
        ">/dev/null 2>&1",
        clone_dir);
    tu_git_commit_all(clone_dir, "bless tiny", id_G);
    tu_git_write(clone_dir, "docs/notes.txt", "a", "a\n");
    tu_git_commit_all(clone_dir, "docs: a", id_A);
    /* Scaling the learning rate by 1 + 2^-23 changes bits and keeps building. */
    tu_git_sh("cd '%s' && sed -i 's/c->lr, c->momentum/c->lr * 1.0000001f, c->momentum/' "
       "kernels/cpu/sgd.c && grep -q '1.0000001f' kernels/cpu/sgd.c",
       clone_dir);
    tu_git_commit_all(clone_dir, "sgd: scale the step (planted numerics change)", id_P);
    tu_git_write(clone_dir, "harness/cli/cmd_env.c", "a", "#error \"planted build break\"\n");
    tu_git_commit_all(clone_dir, "env: planted build break", id_B);
    tu_git_sh("cd '%s' && git show HEAD~1:harness/cli/cmd_env.c > harness/cli/cmd_env.c",
              clone_dir);
    tu_git_commit_all(clone_dir, "env: fix the build", id_F);
    char ignored[41];
    tu_git_write(clone_dir, "docs/notes.txt", "a", "d1\n");
    tu_git_commit_all(clone_dir, "docs: d1", ignored);
    tu_git_write(clone_dir, "docs/notes.txt", "a", "d2\n");
    tu_git_commit_all(clone_dir, "docs: d2", ignored);
    tu_git_write(clone_dir, "docs/notes.txt", "a", "d3\n");
    tu_git_commit_all(clone_dir, "docs: d3", id_BAD);
    tu_git_sh("cd '%s' && git checkout -q -b side %s", clone_dir, id_G);
    tu_git_write(clone_dir, "harness/cli/cmd_env.c", "a", "#error \"planted build break\"\n");
    tu_git_commit_all(clone_dir, "side: build break", id_X);
    tu_git_sh("cd '%s' && git show %s:harness/cli/cmd_env.c > harness/cli/cmd_env.c && "
       "git show %s:kernels/cpu/sgd.c > kernels/cpu/sgd.c",
       clone_dir, id_G, id_P);
    tu_git_commit_all(clone_dir, "side: numerics change and the fix", id_Y);
    tu_git_sh("cd '%s' && git checkout -q -", clone_dir);
}

static void suite_setup(void)
{
    tu_git_scratch(base, sizeof base, "bisect-test", bin);
    snprintf(clone_dir, sizeof clone_dir, "%s/clone", base);
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

/* Runs `repro bisect ARGS` in dir with TMPDIR=base/tmp. */
static void bisect(result *r, const char *dir, const char *args)
{
    char cmd[8192], op[600], ep[600];
    snprintf(op, sizeof op, "%s/bisect.out", base);
    snprintf(ep, sizeof ep, "%s/bisect.err", base);
    snprintf(cmd, sizeof cmd,
             TU_GIT_ENV "cd '%s' && TMPDIR='%s' '%s' bisect %s >'%s' 2>'%s' </dev/null", base, dir,
             tmp_dir, bin, args, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_slurp(op, r->out, sizeof r->out);
    tu_slurp(ep, r->err, sizeof r->err);
}

#define BUILD "--build 'make -j2 NVCC= repro >/dev/null'"

/* No worktree, branch or temporary directory is left behind. */
static void assert_clean(void)
{
    char out[4096];
    tu_git_capture(out, sizeof out, "git -C '%s' worktree list | wc -l", clone_dir);
    ck_assert_int_eq(atoi(out), 1);
    tu_git_capture(out, sizeof out, "git -C '%s' branch --list 'repro-bisect-*'", clone_dir);
    ck_assert_str_eq(out, "");
    tu_git_capture(out, sizeof out, "ls -A '%s'", tmp_dir);
    ck_assert_str_eq(out, "");
}

START_TEST(test_finds_planted_commit)
{
    static result r;
    char args[1024], want[200];
    snprintf(args, sizeof args, "--commits %.12s..HEAD experiments/tiny.ini " BUILD, id_G);
    bisect(&r, clone_dir, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    snprintf(want, sizeof want, "first bad commit: %s\n", id_P);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "subject:     sgd: scale the step"));
    ck_assert_ptr_nonnull(strstr(r.out, "    kernels/cpu/sgd.c\n"));
    /* The broken commit was probed (it is the midpoint) and skipped. */
    snprintf(want, sizeof want, "%.7s env: planted build break \xe2\x80\x94 skip (build failed",
             id_B);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    snprintf(want, sizeof want, "skipped (did not build or run): 1 commit\n  %.7s", id_B);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "(BAD) \xe2\x80\x94 bad (differs from GOOD's golden"));
    ck_assert_ptr_nonnull(strstr(r.out, "reference: GOOD's golden golden/tiny/"));
    assert_clean();
}
END_TEST

START_TEST(test_json_report)
{
    static result r;
    char args[1024];
    snprintf(args, sizeof args, "--commits %s..%s experiments/tiny.ini --json -q " BUILD, id_G,
             id_BAD);
    bisect(&r, clone_dir, args);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    ck_assert_msg(doc != NULL, "not JSON (%s):\n%s", e.text, r.out);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "outcome")), "found");
    json_t *fb = json_object_get(doc, "first_bad");
    ck_assert_str_eq(json_string_value(json_object_get(fb, "commit")), id_P);
    ck_assert_str_eq(json_string_value(json_object_get(fb, "parent")), id_A);
    json_t *paths = json_object_get(fb, "numerics_paths");
    ck_assert_int_eq(json_array_size(paths), 1);
    ck_assert_str_eq(json_string_value(json_array_get(paths, 0)), "kernels/cpu/sgd.c");
    json_t *skipped = json_object_get(doc, "skipped");
    ck_assert_int_eq(json_array_size(skipped), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(skipped, 0), "commit")),
                     id_B);
    json_t *steps = json_object_get(doc, "steps");
    ck_assert_int_ge(json_array_size(steps), 3);
    json_t *first = json_array_get(steps, 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "role")), "BAD");
    ck_assert_str_eq(json_string_value(json_object_get(first, "verdict")), "bad");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "candidates")), 7);
    ck_assert_int_ge(json_integer_value(json_object_get(doc, "builds")), 4);
    json_decref(doc);
    assert_clean();
}
END_TEST

/* T has no golden, so T itself is built and run for the reference; A only
 * changed docs, so BAD = A reproduces it. */
START_TEST(test_bad_is_good)
{
    static result r;
    char args[1024];
    snprintf(args, sizeof args, "--commits %s..%s experiments/tiny.ini " BUILD, id_T, id_A);
    bisect(&r, clone_dir, args);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "(GOOD) \xe2\x80\x94 good (2 runs agree)"));
    ck_assert_ptr_nonnull(strstr(r.out, "BAD reproduces: nothing to bisect"));
    ck_assert_ptr_nonnull(strstr(r.out, "reference: GOOD's run 1"));
    assert_clean();
}
END_TEST

/* G..Y on the side branch: X is skipped and Y is bad, so only a skipped
 * commit is left and no first bad commit can be named. */
START_TEST(test_only_skipped_left)
{
    static result r;
    char args[1024], want[200];
    snprintf(args, sizeof args, "--commits %s..%s experiments/tiny.ini " BUILD, id_G, id_Y);
    bisect(&r, clone_dir, args);
    ck_assert_msg(r.rc == 125, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "cannot name the first bad commit"));
    snprintf(want, sizeof want, "  %.7s side: build break (skip: build failed", id_X);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    snprintf(want, sizeof want, "  %.7s side: numerics change and the fix (bad: ", id_Y);
    ck_assert_msg(strstr(r.out, want), "want %s in:\n%s", want, r.out);
    assert_clean();
}
END_TEST

/* A carries G's golden, but P changed the kernels since: with GOOD = P the
 * golden no longer describes GOOD, so GOOD is built, differs, and is not
 * good (rather than every later commit looking bad). */
START_TEST(test_good_off_its_golden)
{
    static result r;
    char args[1024];
    snprintf(args, sizeof args, "--commits %s..%s experiments/tiny.ini " BUILD, id_P, id_F);
    bisect(&r, clone_dir, args);
    ck_assert_msg(r.rc == 2, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "(GOOD) \xe2\x80\x94 bad (differs from GOOD's golden"));
    ck_assert_msg(strstr(r.err, "is not good: differs from GOOD's golden at step 1 (kernels "
                                "changed between the golden's bless at"),
                  "%s", r.err);
    assert_clean();
}
END_TEST

START_TEST(test_bad_ranges)
{
    static result r;
    char args[1024];
    bisect(&r, clone_dir, "--commits nodots experiments/tiny.ini");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "expected GOOD..BAD"));
    bisect(&r, clone_dir, "--commits HEAD~2...HEAD experiments/tiny.ini");
    ck_assert_int_eq(r.rc, 2);
    snprintf(args, sizeof args, "--commits %s..%s experiments/tiny.ini", id_BAD, id_G);
    bisect(&r, clone_dir, args);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_msg(strstr(r.err, "is not an ancestor of BAD"), "%s", r.err);
    bisect(&r, clone_dir, "--commits HEAD..HEAD experiments/tiny.ini");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "same commit"));
    bisect(&r, clone_dir, "--commits nosuchrev..HEAD experiments/tiny.ini");
    ck_assert_int_eq(r.rc, 2);
    /* GOOD from before the experiment existed: no reference possible. */
    bisect(&r, clone_dir, "--commits HEAD~9..HEAD experiments/tiny.ini");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_msg(strstr(r.err, "is not a file in GOOD"), "%s", r.err);
    bisect(&r, clone_dir, "--commits HEAD~1..HEAD experiments/tiny.ini --repeat 0");
    ck_assert_int_eq(r.rc, 2);
    assert_clean();
}
END_TEST

START_TEST(test_outside_repository)
{
    static result r;
    bisect(&r, tmp_dir, "--commits HEAD~1..HEAD tiny.ini");
    ck_assert_msg(r.rc == 3, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "not in a git repository"));
}
END_TEST

Suite *bisect_commits_suite(void)
{
    Suite *s = suite_create("bisect_commits");
    TCase *tc = tcase_create("planted history");
    /* Each search builds the project in a fresh worktree (a few seconds
     * with -j2, most of a search), then incrementally per probe. */
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_finds_planted_commit);
    tcase_add_test(tc, test_json_report);
    tcase_add_test(tc, test_bad_is_good);
    tcase_add_test(tc, test_only_skipped_left);
    tcase_add_test(tc, test_good_off_its_golden);
    tcase_add_test(tc, test_bad_ranges);
    tcase_add_test(tc, test_outside_repository);
    suite_add_tcase(s, tc);
    return s;
}
