/* Golden records end to end, in temporary git repositories made here:
 * bless -> check round trip; dirty refusal and --allow-dirty; atomicity
 * (an injected failure between write and rename leaves the old golden and
 * no lock); the changed-paths report names the right commits; log; a golden
 * of another experiment or a corrupted one -> exit 2; no golden for this
 * class -> the closest class; outside a repository -> exit 3; a shallow
 * clone works. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"

static char out[1 << 18], err[1 << 16];
static char bin[PATH_MAX];
static char repo[256];

static const char tiny_ini[] = "[model]\ntype = mlp\nhidden = 16\n"
                               "[data]\ntrain_size = 256\ntest_size = 64\n"
                               "[train]\nseed = 5\nsteps = 6\nlr = 0.05\n";

/* Runs repro with `dir` as the working directory; returns its exit code. */
static int repro_in(const char *dir, const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s >%s/.out 2>%s/.err </dev/null", dir, bin, args, repo,
             repo);
    int st = system(cmd);
    char p[300];
    snprintf(p, sizeof p, "%s/.out", repo);
    tu_slurp(p, out, sizeof out);
    snprintf(p, sizeof p, "%s/.err", repo);
    tu_slurp(p, err, sizeof err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A repository with an experiment and stand-ins for the numerics paths. */
static void make_repo(void)
{
    const char *b = getenv("REPRO_BIN");
    ck_assert_ptr_nonnull(realpath(b ? b : "build/repro", bin));
    tu_tmp_template(repo, sizeof repo, "golden");
    ck_assert_ptr_nonnull(mkdtemp(repo));
    /* git runs with the repository as its HOME: no user config there. */
    tu_git_home(repo);
    tu_git_init(repo);
    tu_git_sh("cd %s && mkdir -p experiments kernels harness docs", repo);
    FILE *f;
    char p[300];
    snprintf(p, sizeof p, "%s/experiments/tiny.ini", repo);
    f = fopen(p, "w");
    fputs(tiny_ini, f);
    fclose(f);
    tu_git_sh("cd %s && echo k > kernels/k.c && echo h > harness/h.c && echo all: > Makefile && "
              "printf 'runs/\\n.out\\n.err\\n' > .gitignore && git add -A && "
              "git commit -q -m 'initial'",
              repo);
}

static void golden_file(char *buf, size_t len)
{
    /* the single golden of tiny: golden/tiny/<class>.jsonl */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s/golden/tiny/*.jsonl 2>/dev/null | head -n 1", repo);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(buf, (int)len, p));
    pclose(p);
    buf[strcspn(buf, "\n")] = '\0';
}

START_TEST(test_bless_check_round_trip_and_log)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    ck_assert_ptr_nonnull(strstr(out, "blessed golden/tiny/cpu-"));
    char g[512], text[1 << 16];
    golden_file(g, sizeof g);
    tu_slurp(g, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "\"golden\":{"));
    ck_assert_ptr_nonnull(strstr(text, "\"summary\":\"initial\""));
    ck_assert_ptr_nonnull(strstr(text, "\"dirty\":false"));
    ck_assert_ptr_nonnull(strstr(text, "\"experiments/tiny.ini\":\""));
    tu_git_sh("cd %s && git add golden && git commit -q -m 'bless tiny'", repo);

    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 0);
    ck_assert_msg(strstr(out, "golden: matches golden/tiny/") || strstr(out, "golden: matches /"),
                  "%.2000s", out);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini --steps 3 --runs 1"), 0);
    ck_assert_ptr_nonnull(strstr(out, "over 3 steps")); /* a prefix of the golden matches */

    /* A second bless after a config change, then the log shows both. */
    tu_git_sh("cd %s && sed -i 's/lr = 0.05/lr = 0.07/' experiments/tiny.ini && git add -A && "
              "git commit -q -m 'raise lr'",
              repo);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 1);
    ck_assert_ptr_nonnull(strstr(out, "different config"));
    ck_assert_ptr_nonnull(strstr(out, "experiments/tiny.ini (1 commit): "));
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    tu_git_sh("cd %s && git add golden && git commit -q -m 'rebless tiny'", repo);
    ck_assert_int_eq(repro_in(repo, "log experiments/tiny.ini"), 0);
    ck_assert_ptr_nonnull(strstr(out, "2 commits changed golden/tiny/"));
    ck_assert_ptr_nonnull(strstr(out, "rebless tiny"));
    ck_assert_ptr_nonnull(strstr(out, "bless tiny"));
    ck_assert_ptr_nonnull(strstr(out, "chain "));
    ck_assert_int_eq(repro_in(repo, "log experiments/tiny.ini --json"), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"commits\""));
}
END_TEST

START_TEST(test_dirty_refusal_and_allow_dirty)
{
    make_repo();
    tu_git_sh("cd %s && echo changed >> kernels/k.c && echo new > docs/new.txt", repo);
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 2);
    ck_assert_ptr_nonnull(strstr(err, "M kernels/k.c"));
    /* an untracked file outside the numerics paths changes no bits */
    ck_assert_ptr_null(strstr(err, "docs/new.txt"));
    ck_assert_ptr_nonnull(strstr(err, "--allow-dirty"));
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini --allow-dirty"), 0);
    ck_assert_ptr_nonnull(strstr(out, "+ uncommitted changes"));
    char g[512], text[1 << 16];
    golden_file(g, sizeof g);
    tu_slurp(g, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "\"dirty\":true"));
    ck_assert_ptr_nonnull(strstr(text, "\"allow_dirty\":true"));
    ck_assert_ptr_nonnull(strstr(text, "kernels/k.c"));
}
END_TEST

/* An untracked file unrelated to the numerics does not make the tree
 * "dirty" for a golden; an untracked file under a numerics path does. A
 * fault-injected environment is refused outright. */
START_TEST(test_bless_untracked_bystander_and_fault)
{
    make_repo();
    tu_git_sh("cd %s && echo notes > notes.txt && echo n > docs/todo.md", repo);
    ck_assert_msg(repro_in(repo, "bless experiments/tiny.ini") == 0, "%s%s", out, err);
    char g[512], text[1 << 16];
    golden_file(g, sizeof g);
    tu_slurp(g, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "\"dirty\":false"));
    tu_git_sh("cd %s && echo x > kernels/new.c", repo);
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 2);
    ck_assert_ptr_nonnull(strstr(err, "? kernels/new.c"));
    tu_git_sh("cd %s && rm kernels/new.c", repo);
    setenv("REPRO_FAULT", "flip:step=2:tensor=param.fc1.weight", 1);
    int rc = repro_in(repo, "bless experiments/tiny.ini");
    unsetenv("REPRO_FAULT");
    ck_assert_int_eq(rc, 2);
    ck_assert_ptr_nonnull(strstr(err, "fault-injected"));
}
END_TEST

START_TEST(test_atomic_install)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    char g[512], before[1 << 16], after[1 << 16], lock[600];
    golden_file(g, sizeof g);
    tu_slurp(g, before, sizeof before);
    tu_git_sh("cd %s && git add golden && git commit -q -m 'bless'", repo);
    /* Fail between fsync and rename: the old golden stays, no lock remains. */
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini --every 1"), 0 + 0 * 0);
    tu_slurp(g, after, sizeof after); /* (that bless succeeded: new content) */
    ck_assert_str_ne(before, after);
    tu_git_sh("cd %s && git checkout -q -- golden", repo);
    setenv("REPRO_FAULT", "bless-before-rename", 1);
    int rc = repro_in(repo, "bless experiments/tiny.ini --every 1");
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 3, "exit %d: %.300s", rc, err);
    ck_assert_ptr_nonnull(strstr(err, "injected failure before rename"));
    tu_slurp(g, after, sizeof after);
    ck_assert_str_eq(before, after);
    snprintf(lock, sizeof lock, "%s.lock", g);
    ck_assert_int_ne(access(lock, F_OK), 0);
}
END_TEST

/* A bless killed with SIGKILL in the middle of writing a golden blocks no
 * one: its lock (flock) died with it, its temporary is removed by the next
 * bless, and git never sees either (golden/.gitignore). An O_EXCL lock file
 * used to survive the kill, so every later bless waited 10 s and exited 3
 * until someone removed it by hand, and `git add golden` committed it. */
START_TEST(test_killed_bless_blocks_nothing)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    char g[512], before[1 << 16], after[1 << 16];
    golden_file(g, sizeof g);
    tu_slurp(g, before, sizeof before);
    tu_git_sh("cd %s && git add golden && git commit -q -m 'bless'", repo);

    /* REPRO_FAULT=bless-stall (test-only) stops the install for good after
     * the header line of the new golden: kill it there. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char o[300], e[300];
        snprintf(o, sizeof o, "%s/.out", repo);
        snprintf(e, sizeof e, "%s/.err", repo);
        if (chdir(repo) != 0 || !freopen(o, "w", stdout) || !freopen(e, "w", stderr))
            _exit(127);
        setenv("REPRO_FAULT", "bless-stall", 1);
        execl(bin, "repro", "bless", "experiments/tiny.ini", "--every", "1", (char *)NULL);
        _exit(127);
    }
    /* Wait (up to 60 s) until the stalled bless holds the lock and has
     * begun its temporary file. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "test -e %s.lock && ls %s.*.tmp >/dev/null 2>&1", g, g);
    int ready = 0;
    for (int i = 0; i < 600 && !ready; i++) {
        ready = system(cmd) == 0;
        if (!ready)
            usleep(100000);
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(ready, "the bless never reached its write");
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    tu_slurp(g, after, sizeof after);
    ck_assert_str_eq(before, after); /* the old golden is untouched */
    char lock[600];
    snprintf(lock, sizeof lock, "%s.lock", g);
    ck_assert_int_eq(access(lock, F_OK), 0); /* left behind, as after any kill -9 */

    /* git sees neither the lock nor the half-written temporary */
    tu_git_sh("cd %s && git status --porcelain --untracked-files=all > %s.status", repo, repo);
    char status[4096], p[300];
    snprintf(p, sizeof p, "%s.status", repo);
    tu_slurp(p, status, sizeof status);
    ck_assert_msg(!strstr(status, ".lock") && !strstr(status, ".tmp"), "git status: %s", status);

    /* The next bless goes through at once, without manual cleanup. */
    int rc = repro_in(repo, "bless experiments/tiny.ini --every 1");
    ck_assert_msg(rc == 0, "exit %d: %.500s", rc, err);
    tu_slurp(g, after, sizeof after);
    ck_assert_str_ne(before, after);
    snprintf(cmd, sizeof cmd, "ls -a %s/golden/tiny | grep -E '\\.(lock|tmp)$'", repo);
    ck_assert_msg(system(cmd) != 0, "a lock or temporary file remains in golden/tiny");
    snprintf(p, sizeof p, "%s/golden/.gitignore", repo);
    ck_assert_int_eq(access(p, F_OK), 0);
}
END_TEST

START_TEST(test_mismatch_names_commits)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    tu_git_sh("cd %s && git add golden && git commit -q -m 'bless' && "
              "echo a >> kernels/k.c && git add -A && git commit -q -m 'kernel tweak one' && "
              "echo b >> kernels/k.c && git add -A && git commit -q -m 'kernel tweak two' && "
              "echo c >> harness/h.c && git add -A && git commit -q -m 'harness tweak' && "
              "echo d >> docs/readme && git add -A && git commit -q -m 'docs only'",
              repo);
    /* A one-bit fault in run 1 stands in for a kernel change that moved the bits. */
    setenv("REPRO_FAULT", "flip:step=4:tensor=param.fc1.weight:run=0", 1);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 1);
    unsetenv("REPRO_FAULT");
    ck_assert_ptr_nonnull(strstr(out, "golden: MISMATCH"));
    /* closest to the numerics first: the kernel before the harness */
    char *k = strstr(out, "kernels/k.c (2 commits): "), *h = strstr(out, "harness/h.c (1 commit)");
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(h);
    ck_assert(k < h);
    ck_assert_ptr_nonnull(strstr(out, "kernel tweak two"));
    ck_assert_ptr_null(strstr(out, "docs only"));
    ck_assert_ptr_nonnull(strstr(out, "to find the commit: repro bisect --commits "));
    ck_assert_ptr_nonnull(strstr(out, "..HEAD experiments/tiny.ini"));
    /* An uncommitted kernel edit is named first, before any commit, and
     * the JUnit file carries the golden's failure. */
    tu_git_sh("cd %s && echo e >> kernels/k.c && echo f >> harness/h.c", repo);
    char junit[300];
    snprintf(junit, sizeof junit, "check experiments/tiny.ini --junit %s/r.xml", repo);
    setenv("REPRO_FAULT", "flip:step=4:tensor=param.fc1.weight:run=0", 1);
    ck_assert_int_eq(repro_in(repo, junit), 1);
    unsetenv("REPRO_FAULT");
    char *u = strstr(out, "uncommitted changes to the numerics paths");
    ck_assert_ptr_nonnull(u);
    ck_assert_ptr_nonnull(strstr(u, "M kernels/k.c"));
    ck_assert(strstr(u, "M kernels/k.c") < strstr(u, "M harness/h.c"));
    ck_assert(u < strstr(out, "committed changes since"));
    char xml[1 << 16], path[320];
    snprintf(path, sizeof path, "%s/r.xml", repo);
    tu_slurp(path, xml, sizeof xml);
    ck_assert_ptr_nonnull(strstr(xml, "run 1 vs golden"));
    ck_assert_ptr_nonnull(strstr(xml, "<failure message=\"golden mismatch\""));
}
END_TEST

START_TEST(test_bad_goldens_exit_2)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    char g[512], cls[256];
    golden_file(g, sizeof g);
    snprintf(cls, sizeof cls, "%s", strrchr(g, '/') + 1);
    /* Another experiment's golden under this experiment's name. */
    tu_git_sh("cd %s && cp experiments/tiny.ini experiments/other.ini && mkdir -p golden/other && "
              "cp golden/tiny/%s golden/other/%s",
              repo, cls, cls);
    ck_assert_int_eq(repro_in(repo, "check experiments/other.ini"), 2);
    ck_assert_ptr_nonnull(strstr(err, "is of experiment 'tiny', not 'other'"));
    /* A corrupted golden: step 2's digest shifted by one hex digit (its
     * line has no chain, as a golden keeps it: the next chain written
     * catches it). */
    tu_git_sh("cd %s && sed -i '3s/\"step_digest\":\"\\([0-9a-f]\\)/\"step_digest\":\"\\1\\1/; "
              "3s/\\(\"step_digest\":\"[0-9a-f]\\{64\\}\\)[0-9a-f]/\\1/' golden/tiny/%s",
              repo, cls);
    tu_git_sh("cd %s && sed -n 3p golden/tiny/%s | grep -qv '\"chain\"'", repo, cls);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 2);
    ck_assert_ptr_nonnull(strstr(err, "unreadable"));
    tu_git_sh("cd %s && head -n 3 golden/other/%s > golden/tiny/%s", repo, cls, cls);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 2);
}
END_TEST

START_TEST(test_no_golden_for_class_uses_closest)
{
    make_repo();
    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    tu_git_sh("cd %s && mv golden/tiny/*.jsonl golden/tiny/cpu-other-000000000000.jsonl", repo);
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini"), 0);
    ck_assert_ptr_nonnull(strstr(out, "golden: none for environment class cpu-"));
    ck_assert_ptr_nonnull(strstr(out, "goldens exist for: cpu-other-000000000000"));
    ck_assert_ptr_nonnull(strstr(out, "closest class cpu-other-000000000000"));
    ck_assert_int_eq(repro_in(repo, "check experiments/tiny.ini --require-golden"), 1);
}
END_TEST

START_TEST(test_outside_repo_and_shallow_clone)
{
    make_repo();
    char plain[TU_TMP_LEN];
    tu_tmp_template(plain, sizeof plain, "nogit");
    ck_assert_ptr_nonnull(mkdtemp(plain));
    tu_git_sh("mkdir -p %s/experiments && cp %s/experiments/tiny.ini %s/experiments/", plain, repo,
              plain);
    ck_assert_int_eq(repro_in(plain, "bless experiments/tiny.ini"), 3);
    ck_assert_ptr_nonnull(strstr(err, "not in a git repository"));
    ck_assert_int_eq(repro_in(plain, "log experiments/tiny.ini"), 3);
    /* check still works without git: no golden there, so nothing to compare */
    ck_assert_int_eq(repro_in(plain, "check experiments/tiny.ini"), 0);

    ck_assert_int_eq(repro_in(repo, "bless experiments/tiny.ini"), 0);
    tu_git_sh("cd %s && git add golden && git commit -q -m 'bless' && echo x >> kernels/k.c && "
              "git add -A && git commit -q -m 'after bless'",
              repo);
    char shallow[300];
    snprintf(shallow, sizeof shallow, "%s-shallow", repo);
    tu_git_sh("git clone -q --depth 1 file://%s %s", repo, shallow);
    ck_assert_int_eq(repro_in(shallow, "check experiments/tiny.ini"), 0);
    ck_assert_ptr_nonnull(strstr(out, "golden: matches"));
    setenv("REPRO_FAULT", "flip:step=2:tensor=param.fc1.bias:run=0", 1);
    ck_assert_int_eq(repro_in(shallow, "check experiments/tiny.ini"), 1);
    unsetenv("REPRO_FAULT");
    ck_assert_ptr_nonnull(strstr(out, "golden: MISMATCH"));
    ck_assert_ptr_nonnull(strstr(out, "shallow"));
    ck_assert_int_eq(repro_in(shallow, "log experiments/tiny.ini"), 0);
}
END_TEST

Suite *golden_suite(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("golden");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_bless_check_round_trip_and_log);
    tcase_add_test(tc, test_dirty_refusal_and_allow_dirty);
    tcase_add_test(tc, test_atomic_install);
    tcase_add_test(tc, test_killed_bless_blocks_nothing);
    tcase_add_test(tc, test_mismatch_names_commits);
    tcase_add_test(tc, test_bad_goldens_exit_2);
    tcase_add_test(tc, test_no_golden_for_class_uses_closest);
    tcase_add_test(tc, test_outside_repo_and_shallow_clone);
    tcase_add_test(tc, test_bless_untracked_bystander_and_fault);
    suite_add_tcase(s, tc);
    return s;
}
