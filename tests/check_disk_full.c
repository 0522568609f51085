/* A full disk, simulated without mounts or root: a file-size limit of the
 * process (RLIMIT_FSIZE; repro ignores SIGXFSZ, so a write past it fails
 * with EFBIG as one on a full disk fails with ENOSPC). What repro says
 * must name what it could not write:
 *  - `repro check` whose run cannot write anything under runs/ used to
 *    say "run 1 failed (exit 3):" and nothing more (the child's stderr
 *    log could not be written either): now the parent says the log is
 *    empty and what writing in that directory gives it;
 *  - `repro bless` that cannot write the golden named the source trace
 *    ("copying runs/.../trace.jsonl"): now it names the golden. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char out[1 << 16];

static const char tiny_ini[] = "[model]\ntype = mlp\nhidden = 16\n"
                               "[data]\ntrain_size = 256\ntest_size = 64\n"
                               "[train]\nseed = 5\nsteps = 6\n";

static void sh(const char *cmd)
{
    int st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "failed: %s", cmd);
}

static long file_size(const char *path)
{
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0, "%s", path);
    return (long)st.st_size;
}

/* The first line of `cmd`'s output, without its newline. */
static void first_line(const char *cmd, char *buf, size_t len)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(fgets(buf, (int)len, p) != NULL, "no output: %s", cmd);
    pclose(p);
    buf[strcspn(buf, "\n")] = '\0';
}

START_TEST(test_check_on_a_full_disk_says_why_the_run_is_silent)
{
    char ini[512], dir[512];
    tu_write_temp(ini, sizeof ini, "tiny.ini", tiny_ini);
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(ini, '/') - ini), ini);
    /* Nothing can be written: not the trace, not the run's stderr log. */
    int rc = tu_run_repro_fsize(dir, 0, "check tiny.ini --runs 1", out, sizeof out);
    ck_assert_msg(rc == 3, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "repro: run 1 failed (exit 3):") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "(it said nothing: its error output runs/tiny/check-") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "/run-1/stderr.txt is empty; writing in runs/tiny/check-") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "/run-1 fails: cannot write: File too large (") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "free there)") != NULL, "%s", out);
}
END_TEST

START_TEST(test_bless_on_a_full_disk_names_the_golden)
{
    char repo[TU_TMP_LEN], cmd[4096], p[600];
    tu_tmp_template(repo, sizeof repo, "full");
    ck_assert_ptr_nonnull(mkdtemp(repo));
    snprintf(p, sizeof p, "%s/tiny.ini", repo);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(tiny_ini, f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && git init -q -b main . && printf 'runs/\\n' > .gitignore && git add -A && "
             "git -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false commit -q "
             "-m initial",
             repo);
    sh(cmd);
    /* Once with room: how large a run's trace and the golden are. */
    /* --every 1: every line has detail, so the golden is the run's trace
     * plus its provenance (a golden leaves the chain out of lines without
     * detail, and would be smaller than the trace) */
    int rc = tu_run_repro_fsize(repo, (unsigned long)RLIM_INFINITY, "bless tiny.ini --every 1", out,
                                sizeof out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    char golden[600], trace[600];
    snprintf(cmd, sizeof cmd, "ls %s/golden/tiny/*.jsonl", repo);
    first_line(cmd, golden, sizeof golden);
    snprintf(cmd, sizeof cmd, "ls %s/runs/tiny/bless-*/run-1/trace.jsonl", repo);
    first_line(cmd, trace, sizeof trace);
    long g = file_size(golden), t = file_size(trace);
    ck_assert_int_gt(g, t + 100); /* the golden's header carries its provenance */

    /* Room for the runs' traces, not for the golden. */
    rc = tu_run_repro_fsize(repo, (unsigned long)(t + (g - t) / 2), "bless tiny.ini --every 1", out,
                            sizeof out);
    ck_assert_msg(rc == 3, "exit %d: %s", rc, out);
    const char *rel = strstr(golden, "/golden/");
    char want[700];
    snprintf(want, sizeof want, "repro: cannot write the golden %s%s", repo, rel);
    ck_assert_msg(strstr(out, want) != NULL, "expected '%s' in: %s", want, out);
    ck_assert_msg(strstr(out, "): File too large") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "trace.jsonl:") == NULL && strstr(out, "copying") == NULL, "%s",
                  out);
    /* The old golden is intact, and no temporary is left. */
    ck_assert_int_eq(file_size(golden), g);
    snprintf(cmd, sizeof cmd, "ls %s/golden/tiny | grep -c tmp || true", repo);
    first_line(cmd, want, sizeof want);
    ck_assert_str_eq(want, "0");
}
END_TEST

Suite *disk_full_suite(void)
{
    Suite *s = suite_create("disk_full");
    TCase *tc = tcase_create("disk_full");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_check_on_a_full_disk_says_why_the_run_is_silent);
    tcase_add_test(tc, test_bless_on_a_full_disk_names_the_golden);
    suite_add_tcase(s, tc);
    return s;
}
