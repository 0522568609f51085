/* Programs repro runs do not outlive it (issue 33, item 2), end to end
 * through build/repro: a program that leaves `sleep &` behind and exits
 * leaves nothing alive once `repro check` returns; SIGTERM and SIGINT to
 * `repro check` reach the program's whole process group (its grandchild
 * too) and repro exits 143 / 130 after cleaning up; SIGKILL, which
 * repro cannot see, still takes the program's group with it. Each test's sleep has
 * its own marker argument, so a process is never mistaken for another's. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* `repro check --no-golden -- sh prog.sh` in dir, started directly (no
 * shell between: signals go to repro itself), output to dir/log. */
static pid_t start_check(void)
{
    const char *bin = tu_repro_bin();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char log[TU_TMP_LEN + 8];
        snprintf(log, sizeof log, "%s/log", dir);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || chdir(dir) != 0)
            _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(bin, "repro", "check", "--no-golden", "--", "sh",
              "prog.sh", (char *)NULL);
        _exit(121);
    }
    return pid;
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
    return s;
}
