/* The child-process API (util/child.h): a long argument vector arrives
 * intact and never meets a shell; a timeout kills the child's whole process
 * group; a child dies with its parent (kill -9 of the parent); exit, signal
 * and timeout are told apart; environment, directory and resource limits
 * reach the child; a program that cannot be started is an error of start. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/orphans.h"
#include "util/rank_watch.h"
#include "testutil.h"
#include "tu_procs.h"

static char tmpdir[TU_TMP_LEN];

static void mk_tmp(void)
{
    tu_tmp_template(tmpdir, sizeof tmpdir, "child");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* 1 when pid no longer runs: gone, or a zombie waiting for init. */
static int is_dead(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return p && (p[2] == 'Z' || p[2] == 'X');
}

static int dies_within(pid_t pid, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (is_dead(pid))
            return 1;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return is_dead(pid);
}

START_TEST(test_hundred_arguments_arrive_intact)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    /* printf '%s\n' ARG...: one line per argument. Shell metacharacters
     * arrive as they are: nothing goes through a shell. */
    static char args[100][32];
    char *argv[104];
    int n = 0;
    argv[n++] = "printf";
    argv[n++] = "%s\\n";
    static const char *const odd[] = {"a b", "$HOME", "*", "'", "\"", ";echo x", "`id`", ""};
    for (int i = 0; i < 100; i++) {
        if (i < 8)
            snprintf(args[i], sizeof args[i], "%s", odd[i]);
        else
            snprintf(args[i], sizeof args[i], "arg-%d", i);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    ck_assert_int_eq(n, 102);
    repro_child c = {0};
    c.argv = argv;
    c.out_path = out;
    repro_child_status st;
    ck_assert_msg(repro_child_run(&c, &st) == 0, "%s", repro_error_message());
    ck_assert_int_eq(st.how, REPRO_CHILD_EXITED);
    ck_assert_int_eq(st.code, 0);
    char want[8192] = "";
    for (int i = 0; i < 100; i++) {
        strcat(want, args[i]);
        strcat(want, "\n");
    }
    ck_assert_str_eq(slurp(out, NULL), want);
}
END_TEST

START_TEST(test_timeout_kills_the_process_group)
{
    mk_tmp();
    char script[256], pidfile[TU_TMP_LEN + 16];
    snprintf(pidfile, sizeof pidfile, "%s/grandchild.pid", tmpdir);
    /* The child (sh) starts a grandchild (sleep) and then sleeps itself. */
    snprintf(script, sizeof script, "sleep 30 & echo $! > %s; sleep 30", pidfile);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    repro_child c = {0};
    c.argv = argv;
    c.timeout_s = 1.0;
    repro_child_status st;
    ck_assert_msg(repro_child_run(&c, &st) == 0, "%s", repro_error_message());
    ck_assert_int_eq(st.how, REPRO_CHILD_TIMED_OUT);
    ck_assert_int_eq(repro_child_status_code(&st), 128 + SIGKILL);
    char text[64];
    ck_assert_str_eq(repro_child_status_text(&st, &c, text, sizeof text), "timed out after 1 s");
    pid_t grandchild = (pid_t)atol(slurp(pidfile, NULL));
    ck_assert_int_gt(grandchild, 1);
    ck_assert_msg(dies_within(grandchild, 2.0), "grandchild %ld still runs", (long)grandchild);
}
END_TEST

START_TEST(test_child_dies_with_its_parent)
{
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t helper = fork();
    ck_assert_int_ge(helper, 0);
    if (helper == 0) { /* the parent-to-be-killed: starts sleep 30, waits forever */
        close(pfd[0]);
        char *argv[] = {"sleep", "30", NULL};
        repro_child c = {0};
        c.argv = argv;
        if (repro_child_start(&c) != 0)
            _exit(1);
        long pid = (long)c.pid;
        if (write(pfd[1], &pid, sizeof pid) != (ssize_t)sizeof pid)
            _exit(1);
        for (;;)
            pause();
    }
    close(pfd[1]);
    long sleeper = 0;
    ck_assert_int_eq(read(pfd[0], &sleeper, sizeof sleeper), (ssize_t)sizeof sleeper);
    close(pfd[0]);
    ck_assert(!is_dead((pid_t)sleeper));
    ck_assert_int_eq(kill(helper, SIGKILL), 0);
    ck_assert_int_eq(waitpid(helper, NULL, 0), helper);
    ck_assert_msg(dies_within((pid_t)sleeper, 2.0), "sleep %ld outlived its parent", sleeper);
}
END_TEST

START_TEST(test_exit_and_signal_are_told_apart)
{
    repro_child_status st;
    char text[64];
    char *exit3[] = {"/bin/sh", "-c", "exit 3", NULL};
    repro_child c = {0};
    c.argv = exit3;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    ck_assert_int_eq(st.how, REPRO_CHILD_EXITED);
    ck_assert_int_eq(st.code, 3);
    ck_assert_int_eq(repro_child_status_code(&st), 3);
    ck_assert_str_eq(repro_child_status_text(&st, &c, text, sizeof text), "exited 3");
    char *term[] = {"/bin/sh", "-c", "kill -TERM $$; sleep 5", NULL};
    repro_child d = {0};
    d.argv = term;
    ck_assert_int_eq(repro_child_run(&d, &st), 0);
    ck_assert_int_eq(st.how, REPRO_CHILD_SIGNALED);
    ck_assert_int_eq(st.code, SIGTERM);
    ck_assert_int_eq(repro_child_status_code(&st), 128 + SIGTERM);
    ck_assert_ptr_nonnull(strstr(repro_child_status_text(&st, &d, text, sizeof text),
                                 "killed by signal 15"));
}
END_TEST

START_TEST(test_environment_directory_and_stderr)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/log", tmpdir);
    setenv("MAKEFLAGS", "-j9", 1);
    setenv("REPRO_T_KEEP", "kept", 1);
    setenv("REPRO_T_A", "old", 1);
    char *argv[] = {"/bin/sh", "-c",
                    "echo \"$REPRO_T_A|${MAKEFLAGS-unset}|$REPRO_T_KEEP|$(pwd)\"; echo err >&2",
                    NULL};
    const char *set[] = {"REPRO_T_A=new", NULL};
    const char *unset[] = {"MAKEFLAGS", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.env_set = set;
    c.env_unset = unset;
    c.cwd = tmpdir;
    c.out_path = out;
    c.err_to_out = 1;
    repro_child_status st;
    ck_assert_msg(repro_child_run(&c, &st) == 0, "%s", repro_error_message());
    ck_assert_int_eq(repro_child_status_code(&st), 0);
    char want[256];
    char real[TU_TMP_LEN + 16];
    ck_assert_ptr_nonnull(realpath(tmpdir, real));
    snprintf(want, sizeof want, "new|unset|kept|%s\nerr\n", real);
    ck_assert_str_eq(slurp(out, NULL), want);
    /* append: a second run adds to the log */
    c.append = 1;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    ck_assert_int_eq((int)strlen(slurp(out, NULL)), 2 * (int)strlen(want));
}
END_TEST

START_TEST(test_file_size_limit)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/big", tmpdir);
    char *argv[] = {"head", "-c", "100000", "/dev/zero", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.out_path = out;
    c.limits.fsize_bytes = 4096;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    /* head is killed by SIGXFSZ at the limit (or exits non-zero if it
     * ignores it); either way no more than 4096 bytes were written. */
    ck_assert(!(st.how == REPRO_CHILD_EXITED && st.code == 0));
    size_t len;
    slurp(out, &len);
    ck_assert_uint_le(len, 4096);
}
END_TEST

START_TEST(test_missing_program_is_a_start_error)
{
    char *argv[] = {"/nonexistent/prog", "x", NULL};
    repro_child c = {0};
    c.argv = argv;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "cannot start /nonexistent/prog"));
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "No such file"));
    ck_assert_int_eq(c.pid, 0);
    char *bare[] = {"repro-no-such-program-here", NULL};
    c.argv = bare;
    ck_assert_int_eq(repro_child_run(&c, &st), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "repro-no-such-program-here"));
    char *argv2[] = {"true", NULL};
    c.argv = argv2;
    c.cwd = "/nonexistent-dir";
    ck_assert_int_eq(repro_child_run(&c, &st), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "/nonexistent-dir"));
}
END_TEST

START_TEST(test_interrupt_is_forwarded_to_the_group)
{
    volatile sig_atomic_t flag = SIGTERM; /* as a SIGTERM handler would leave it */
    char *argv[] = {"sleep", "30", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.interrupt = &flag;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    ck_assert_int_eq(st.how, REPRO_CHILD_SIGNALED);
    ck_assert_int_eq(st.code, SIGTERM);
}
END_TEST

/* A child that leaves `sleep &` behind and exits: the sleep is killed
 * with the child's group before wait returns. */
START_TEST(test_leftover_in_the_group_is_killed)
{
    char *argv[] = {"/bin/sh", "-c", "sleep 301.101 & exit 0", NULL};
    repro_child c = {0};
    c.argv = argv;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    ck_assert_int_eq(repro_child_status_code(&st), 0);
    int gone = tu_process_gone_within("sleep", "301.101", 5);
    tu_kill_processes("sleep", "301.101");
    ck_assert_msg(gone, "the child's background sleep outlived it");
}
END_TEST

/* Orphans (util/orphans.h), in a process of its own (it becomes a
 * subreaper): a `setsid sleep &` leaves the group, so the group kill
 * misses it and it outlives the child (the control, before adopting);
 * once the process adopts orphans, the same leftover is killed when the
 * child ends. Exit 0, or 1 + which step failed. */
static int orphan_outlives(const char *marker)
{
    char script[160];
    snprintf(script, sizeof script, "setsid sleep %s & sleep 0.3; exit 0", marker);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    repro_child c = {0};
    c.argv = argv;
    repro_child_status st;
    if (repro_child_run(&c, &st) || repro_child_status_code(&st) != 0)
        return -1;
    int alive = tu_process_appears_within("sleep", marker, 2) != 0;
    tu_kill_processes("sleep", marker);
    return alive;
}

START_TEST(test_orphan_that_left_the_group_is_killed)
{
    char before[32], after[32];
    snprintf(before, sizeof before, "301.%ld1", (long)getpid());
    snprintf(after, sizeof after, "301.%ld2", (long)getpid());
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (orphan_outlives(before) != 1)
            _exit(1);
        if (repro_orphans_adopt() != 0 || !repro_orphans_adopted())
            _exit(2);
        _exit(orphan_outlives(after) == 0 ? 0 : 3);
    }
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    tu_kill_processes("sleep", before);
    tu_kill_processes("sleep", after);
    ck_assert_msg(WIFEXITED(wst), "status %#x", wst);
    ck_assert_msg(WEXITSTATUS(wst) != 1, "the control: a setsid sleep did not outlive a "
                                         "child that does not adopt orphans");
    ck_assert_msg(WEXITSTATUS(wst) != 2, "cannot become a child subreaper");
    ck_assert_msg(WEXITSTATUS(wst) == 0, "the setsid sleep outlived the child (exit %d)",
                  WEXITSTATUS(wst));
}
END_TEST

/* The CLI's trap (repro_child_trap_signals), in a process of its own: a
 * SIGTERM while a child runs is forwarded to the child's group (the
 * grandchild dies too), the wait returns, no new child starts, and the
 * signal is there to exit with. */
START_TEST(test_trap_forwards_and_stops_starting)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        repro_child_trap_signals();
        char *argv[] = {"/bin/sh", "-c", "sleep 301.102 & wait", NULL};
        repro_child c = {0};
        c.argv = argv;
        repro_child_status st;
        if (repro_child_run(&c, &st) || st.how != REPRO_CHILD_SIGNALED || st.code != SIGTERM)
            _exit(1);
        char *again[] = {"true", NULL};
        repro_child d = {0};
        d.argv = again;
        if (repro_child_run(&d, &st) == 0 || !strstr(repro_error_message(), "interrupted"))
            _exit(2);
        _exit(128 + repro_child_interrupted());
    }
    pid_t sleeper = tu_process_appears_within("sleep", "301.102", 10);
    if (sleeper)
        kill(pid, SIGTERM);
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    int gone = tu_process_gone_within("sleep", "301.102", 5);
    tu_kill_processes("sleep", "301.102");
    ck_assert_msg(sleeper != 0, "the child's sleep never started");
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 128 + SIGTERM, "status %#x", wst);
    ck_assert_msg(gone, "the child's sleep outlived the interruption");
}
END_TEST

/* With no child running, a trapped signal acts as untrapped: the process
 * dies of it. */
START_TEST(test_trap_without_children_is_the_default)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        repro_child_trap_signals();
        raise(SIGTERM);
        _exit(0);
    }
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGTERM);
}
END_TEST

/* With the trap held (check --report), a signal with no child running is
 * only noted: the process goes on to write what it has, no new child
 * starts, and it exits with the signal's code itself. */
START_TEST(test_trap_held_notes_the_signal)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        repro_child_trap_signals();
        repro_child_trap_hold();
        raise(SIGTERM);
        char *argv[] = {"true", NULL};
        repro_child c = {0};
        c.argv = argv;
        repro_child_status st;
        if (repro_child_run(&c, &st) == 0 || !strstr(repro_error_message(), "interrupted"))
            _exit(2);
        _exit(128 + repro_child_interrupted());
    }
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 128 + SIGTERM, "status %#x", wst);
}
END_TEST

/* Captured output keeps the first and the last capture_limit bytes of
 * each stream, and says how many were dropped between. */
START_TEST(test_capture_keeps_head_and_tail)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16], err[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    char *argv[] = {"/bin/sh", "-c",
                    "printf HEAD; head -c 100000 /dev/zero | tr '\\0' x; printf TAIL; "
                    "printf 'short error' >&2",
                    NULL};
    repro_child c = {0};
    c.argv = argv;
    c.out_path = out;
    c.err_path = err;
    c.capture_limit = 1000;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    ck_assert_int_eq(repro_child_status_code(&st), 0);
    size_t len;
    char *text = slurp(out, &len);
    ck_assert_msg(len < 2200, "kept %zu bytes", len);
    ck_assert(!strncmp(text, "HEADxxx", 7));
    ck_assert_str_eq(text + len - 7, "xxxTAIL");
    /* 100008 written, 2 x 1000 kept. */
    ck_assert_ptr_nonnull(strstr(text, "\n[repro: 98008 bytes of output dropped here; the first "
                                       "and the last 1000 bytes are kept"));
    const char *note_end = strstr(text, "kept (REPRO_CAPTURE_LIMIT)]\n");
    ck_assert_ptr_nonnull(note_end);
    ck_assert_uint_eq(len - (size_t)(note_end + strlen("kept (REPRO_CAPTURE_LIMIT)]\n") - text),
                      1000);
    ck_assert_str_eq(slurp(err, NULL), "short error"); /* under the limit: as written */
}
END_TEST

/* Output between one and two limits long is kept whole, in order; with
 * stderr in stdout's file, both streams share one bound. */
START_TEST(test_capture_under_twice_the_limit_is_whole)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = {"/bin/sh", "-c", "seq 1 400; seq 401 500 >&2", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.out_path = out;
    c.err_to_out = 1;
    c.capture_limit = 1000; /* seq 1 500 writes 1892 bytes */
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    size_t len;
    char *text = slurp(out, &len);
    ck_assert_uint_eq(len, 1892);
    ck_assert(!strncmp(text, "1\n2\n3\n", 6));
    ck_assert_ptr_nonnull(strstr(text, "\n399\n400\n401\n"));
    ck_assert_str_eq(text + len - 8, "499\n500\n");
    ck_assert_ptr_null(strstr(text, "dropped"));
}
END_TEST

START_TEST(test_capture_limit_from_the_environment)
{
    unsetenv("REPRO_CAPTURE_LIMIT");
    ck_assert_uint_eq(repro_child_capture_limit(), 1 << 20);
    setenv("REPRO_CAPTURE_LIMIT", "4096", 1);
    ck_assert_uint_eq(repro_child_capture_limit(), 4096);
    setenv("REPRO_CAPTURE_LIMIT", "64K", 1);
    ck_assert_uint_eq(repro_child_capture_limit(), 65536);
    setenv("REPRO_CAPTURE_LIMIT", "2M", 1);
    ck_assert_uint_eq(repro_child_capture_limit(), 2 << 20);
    setenv("REPRO_CAPTURE_LIMIT", "0", 1); /* unbounded */
    ck_assert(repro_child_capture_limit() == UINT64_MAX);
    setenv("REPRO_CAPTURE_LIMIT", "-5", 1);
    ck_assert_uint_eq(repro_child_capture_limit(), 1 << 20);
    setenv("REPRO_CAPTURE_LIMIT", "12Q", 1);
    ck_assert_uint_eq(repro_child_capture_limit(), 1 << 20);
    unsetenv("REPRO_CAPTURE_LIMIT");
}
END_TEST

/* A parent with stdin, stdout and stderr closed opens the child's files on
 * fds 0..2 themselves: they must still reach the child (not be closed at
 * exec by their close-on-exec flag). */
START_TEST(test_parent_without_standard_fds)
{
    mk_tmp();
    char out[TU_TMP_LEN + 16];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(0);
        close(1);
        close(2);
        char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2", NULL};
        repro_child c = {0};
        c.argv = argv;
        c.out_path = out;
        c.err_to_out = 1;
        repro_child_status st;
        _exit(repro_child_run(&c, &st) == 0 && repro_child_status_code(&st) == 0 ? 0 : 1);
    }
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    ck_assert_str_eq(slurp(out, NULL), "out\nerr\n");
}
END_TEST

/* Ranks found gone together: the one named is the one whose end agrees
 * with mpirun's exit status. A rank that refuses (exit 2) ends the job
 * and mpirun kills the others (signal 9): the refusal is the cause, not
 * the kill that a lower rank happened to show. */
START_TEST(test_rank_watch_names_the_rank_mpirun_names)
{
    repro_rank_watch w;
    ck_assert_int_eq(repro_rank_watch_init(&w, NULL, 3), 0);
    w.first_status[0] = SIGKILL; /* a wait status: killed by signal 9 */
    w.first_status[1] = 2 << 8;  /* exited with 2 */
    w.first_gone = 0, w.status = SIGKILL, w.ngone_first = 2;
    repro_child_status refused = {REPRO_CHILD_EXITED, 2}, killed = {REPRO_CHILD_SIGNALED, SIGKILL};
    repro_rank_watch_settle(&w, &killed); /* mpirun saw the kill first: rank 0 stays */
    ck_assert_int_eq(w.first_gone, 0);
    repro_rank_watch_settle(&w, &refused);
    ck_assert_int_eq(w.first_gone, 1);
    ck_assert(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 2);
    /* one rank gone: nothing to choose */
    w.first_gone = 0, w.status = SIGKILL, w.ngone_first = 1;
    repro_rank_watch_settle(&w, &refused);
    ck_assert_int_eq(w.first_gone, 0);
    repro_rank_watch_release(&w);
}
END_TEST

Suite *child_suite(void)
{
    Suite *s = suite_create("child");
    TCase *tc = tcase_create("child");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_hundred_arguments_arrive_intact);
    tcase_add_test(tc, test_timeout_kills_the_process_group);
    tcase_add_test(tc, test_child_dies_with_its_parent);
    tcase_add_test(tc, test_exit_and_signal_are_told_apart);
    tcase_add_test(tc, test_environment_directory_and_stderr);
    tcase_add_test(tc, test_file_size_limit);
    tcase_add_test(tc, test_missing_program_is_a_start_error);
    tcase_add_test(tc, test_interrupt_is_forwarded_to_the_group);
    tcase_add_test(tc, test_parent_without_standard_fds);
    tcase_add_test(tc, test_leftover_in_the_group_is_killed);
    tcase_add_test(tc, test_orphan_that_left_the_group_is_killed);
    tcase_add_test(tc, test_trap_forwards_and_stops_starting);
    tcase_add_test(tc, test_trap_without_children_is_the_default);
    tcase_add_test(tc, test_trap_held_notes_the_signal);
    tcase_add_test(tc, test_capture_keeps_head_and_tail);
    tcase_add_test(tc, test_capture_under_twice_the_limit_is_whole);
    tcase_add_test(tc, test_capture_limit_from_the_environment);
    tcase_add_test(tc, test_rank_watch_names_the_rank_mpirun_names);
    suite_add_tcase(s, tc);
    return s;
}
