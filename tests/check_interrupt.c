/* Programs repro runs do not outlive it (issue 33, item 2), end to end
 * through build/repro: a program that leaves `sleep &` behind and exits
 * leaves nothing alive once `repro check` returns; SIGTERM and SIGINT to
 * `repro check` reach the program's whole process group (its grandchild
 * too) and repro exits 143 / 130 after cleaning up; SIGKILL, which
 * repro cannot see, still takes the program's group with it. Each test's sleep has
 * its own marker argument, so a process is never mistaken for another's.
 *
 * Orphans (issue 48, item 2): a program that leaves the process group
 * behind (`setsid sleep &`, a daemon's double fork with a setsid between,
 * a `nohup sleep &`) leaves nothing alive after `repro check`, `run`,
 * `bless`, `bisect` and `submit` of it end, nor after SIGTERM or SIGINT to
 * repro. Each test first sees the three sleeps running on the host (the
 * program waits for that), so a pass is never a sleep that did not start;
 * the markers carry the test process's pid, so parallel suites never
 * touch each other's. */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"
#include "tu_procs.h"

static char dir[TU_TMP_LEN];

static void mk_dir_with_program(const char *script)
{
    tu_tmp_template(dir, sizeof dir, "interrupt");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p[TU_TMP_LEN + 16];
    snprintf(p, sizeof p, "%s/prog.sh", dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(script, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* `bin ARGS...` (args NULL-ended, at most 14) in cwd, its stdout and
 * stderr in logdir/log, started directly (no shell between: a signal goes
 * to repro itself); git_env: a scratch repository's (HOME=logdir, no
 * system config, no GIT_DIR or MAKEFLAGS inherited). */
static pid_t spawn_repro(const char *bin, const char *cwd, const char *logdir,
                         const char *const *args, int git_env)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char log[PATH_MAX + 8];
        snprintf(log, sizeof log, "%s/log", logdir);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || chdir(cwd) != 0)
            _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        if (git_env) {
            setenv("HOME", logdir, 1);
            setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
            unsetenv("GIT_DIR");
            unsetenv("MAKEFLAGS");
        }
        char *argv[16];
        int n = 0;
        argv[n++] = "repro";
        for (int i = 0; args[i] && n < 15; i++)
            argv[n++] = (char *)args[i];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(121);
    }
    return pid;
}

/* `repro check --no-golden -- sh prog.sh` in dir, output to dir/log. */
static pid_t start_check(void)
{
    static const char *const args[] = {"check", "--no-golden", "--", "sh", "prog.sh", NULL};
    return spawn_repro(tu_repro_bin(), dir, dir, args, 0);
}

/* waitpid with a deadline; the status, or -1 (then the process is killed). */
static int wait_within(pid_t pid, double seconds)
{
    int wst;
    for (int i = 0; i < (int)(seconds * 100); i++) {
        pid_t w = waitpid(pid, &wst, WNOHANG);
        if (w == pid)
            return wst;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &wst, 0);
    return -1;
}

START_TEST(test_check_leaves_no_background_process)
{
    mk_dir_with_program("sleep 301.201 &\nexit 0\n");
    int wst = wait_within(start_check(), 60);
    int gone = tu_process_gone_within("sleep", "301.201", 5);
    tu_kill_processes("sleep", "301.201");
    ck_assert_msg(wst != -1, "repro check did not return");
    /* The program wrote no trace: the check cannot test it (3). */
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 3, "status %#x", wst);
    ck_assert_msg(gone, "the program's `sleep 301.201 &` outlived repro check");
}
END_TEST

/* The program waits on its grandchild; repro check gets `sig`. */
static void signalled_check(int sig, const char *marker)
{
    char script[128];
    snprintf(script, sizeof script, "sleep %s &\nwait\n", marker);
    mk_dir_with_program(script);
    pid_t pid = start_check();
    pid_t sleeper = tu_process_appears_within("sleep", marker, 30);
    if (sleeper)
        kill(pid, sig);
    int wst = wait_within(pid, 30);
    int gone = tu_process_gone_within("sleep", marker, 5);
    tu_kill_processes("sleep", marker);
    ck_assert_msg(sleeper != 0, "the program's sleep never started");
    ck_assert_msg(wst != -1, "repro check did not return after signal %d", sig);
    if (sig == SIGKILL) /* nothing of repro runs: its guards clean up */
        ck_assert_msg(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "status %#x", wst);
    else
        ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 128 + sig,
                      "status %#x after signal %d", wst, sig);
    ck_assert_msg(gone, "the program's grandchild outlived repro check's signal %d", sig);
}

START_TEST(test_sigterm_stops_the_program_and_exits_143)
{
    signalled_check(SIGTERM, "301.202");
}
END_TEST

START_TEST(test_sigint_stops_the_program_and_exits_130)
{
    signalled_check(SIGINT, "301.203");
}
END_TEST

START_TEST(test_sigkill_still_stops_the_program)
{
    signalled_check(SIGKILL, "301.204");
}
END_TEST

/* ---- orphans ------------------------------------------------------------- */

static char obase[PATH_MAX], orepo[PATH_MAX + 8], obin[PATH_MAX];

/* A committed repository (submit and bless want one) whose prog.sh
 * leaves three sleeps that are not in its process group's reach by
 * the group alone: */
static void orphans_setup(const char *tag, char marks[3][48], char go[PATH_MAX + 32])
{
    tu_git_scratch(obase, sizeof obase, "orphans", obin);
    snprintf(orepo, sizeof orepo, "%s/repo", obase);
    tu_git_init(orepo);
    for (int i = 0; i < 3; i++)
        snprintf(marks[i], 48, "379.%ld%d", (long)getpid(), i + 1);
    snprintf(go, PATH_MAX + 32, "%s/go-%s", obase, tag);
    char script[PATH_MAX + 1024];
    snprintf(script, sizeof script,
             "setsid sleep %s &\n"                        /* its own session */
             "nohup sleep %s >/dev/null 2>&1 &\n"          /* deaf to SIGHUP */
             "(setsid sh -c 'sleep %s & exit 0' &)\n"     /* fork, setsid, fork */
             "i=0\n"
             "while [ ! -e '%s' ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"
             "exit 0\n",
             marks[0], marks[1], marks[2], go);
    tu_git_write(orepo, "prog.sh", "w", script);
    tu_git_commit_all(orepo, "a program that leaves daemons", NULL);
}

/* repro ARGS... in the repository, its output in obase/log. */
static pid_t start_repro(const char *const *args)
{
    return spawn_repro(obin, orepo, obase, args, 1);
}

/* Runs repro ARGS on prog.sh; once the three sleeps run, lets the program
 * end (sig 0) or sends repro sig. Then none of them may be alive. */
static void leaves_no_orphan(const char *tag, const char *const *args, int sig)
{
    char marks[3][48], go[PATH_MAX + 32], log[PATH_MAX + 8], text[8192];
    orphans_setup(tag, marks, go);
    pid_t pid = start_repro(args);
    int seen = 1;
    for (int i = 0; i < 3; i++)
        seen &= tu_process_appears_within("sleep", marks[i], 60) != 0;
    if (sig && seen)
        kill(pid, sig);
    else
        close(open(go, O_WRONLY | O_CREAT, 0644));
    int wst = wait_within(pid, 60);
    int gone[3];
    for (int i = 0; i < 3; i++)
        gone[i] = tu_process_gone_within("sleep", marks[i], 5);
    for (int i = 0; i < 3; i++)
        tu_kill_processes("sleep", marks[i]);
    snprintf(log, sizeof log, "%s/log", obase);
    tu_slurp(log, text, sizeof text);
    tu_git_scratch_remove(obase);
    ck_assert_msg(seen, "repro %s: the program's sleeps never all ran:\n%s", tag, text);
    ck_assert_msg(wst != -1, "repro %s did not return", tag);
    if (sig)
        ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 128 + sig,
                      "repro %s: status %#x after signal %d\n%s", tag, wst, sig, text);
    static const char *const how[] = {"setsid sleep", "nohup sleep", "double-forked sleep"};
    char alive[300] = "";
    for (int i = 0; i < 3; i++)
        if (!gone[i])
            snprintf(alive + strlen(alive), sizeof alive - strlen(alive), " [%s %s]", how[i],
                     marks[i]);
    ck_assert_msg(!alive[0], "repro %s%s: the program's%s outlived it", tag,
                  sig ? " (signalled)" : "", alive);
}

/* Each command that runs a program, ended normally or by a signal; the
 * submit's bundle goes beside the repository (not in it: the tree stays
 * clean). */
static const struct {
    const char *tag;
    const char *args[8];
    int sig;
} orphan_cases[] = {
    {"check", {"check", "--no-golden", "--", "sh", "prog.sh", NULL}, 0},
    {"run", {"run", "--", "sh", "prog.sh", NULL}, 0},
    {"bless", {"bless", "--", "sh", "prog.sh", NULL}, 0},
    {"bisect", {"bisect", "--", "sh", "prog.sh", NULL}, 0},
    {"submit", {"submit", "-o", "../bundle", "--", "sh", "prog.sh", NULL}, 0},
    {"check-sigterm", {"check", "--no-golden", "--", "sh", "prog.sh", NULL}, SIGTERM},
    {"run-sigint", {"run", "--", "sh", "prog.sh", NULL}, SIGINT},
};

START_TEST(test_leaves_no_orphan)
{
    leaves_no_orphan(orphan_cases[_i].tag, orphan_cases[_i].args, orphan_cases[_i].sig);
}
END_TEST

Suite *interrupt_suite(void)
{
    Suite *s = suite_create("interrupt");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_check_leaves_no_background_process);
    tcase_add_test(tc, test_sigterm_stops_the_program_and_exits_143);
    tcase_add_test(tc, test_sigint_stops_the_program_and_exits_130);
    tcase_add_test(tc, test_sigkill_still_stops_the_program);
    suite_add_tcase(s, tc);
    TCase *orphans = tcase_create("orphans");
    tcase_set_timeout(orphans, 180);
    tcase_add_loop_test(orphans, test_leaves_no_orphan, 0,
                        (int)(sizeof orphan_cases / sizeof orphan_cases[0]));
    suite_add_tcase(s, orphans);
    return s;
}
