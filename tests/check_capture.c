/* Captured program output is bounded (issue 33, item 8), end to end: a
 * program under `repro check --` that writes far more than the limit to
 * stdout leaves a stdout.txt under runs/ of the first and the last 1 MiB
 * (the default) with a line saying how much was dropped between; with
 * REPRO_CAPTURE_LIMIT=64K, 64 KiB at each end. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "tu_procs.h"

static char dir[TU_TMP_LEN];

/* Runs the check in a fresh directory with `env` before it; fills path
 * with run 1's stdout.txt. The exit status. */
static int check_flood(const char *env, char *path, size_t len)
{
    tu_tmp_template(dir, sizeof dir, "capture");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *bin = tu_repro_bin();
    char cmd[1024];
    /* 5 MB: a marker, zeros, a marker; no trace (the check cannot test it). */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf 'printf FIRST; head -c 5000000 /dev/zero; printf LAST\\n' "
             "> flood.sh && %s '%s' check --no-golden -- sh flood.sh >/dev/null 2>&1",
             dir, env, bin);
    int st = system(cmd);
    snprintf(cmd, sizeof cmd, "ls '%s'/runs/flood/check-*/run-1/stdout.txt", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(path, (int)len, p));
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void assert_bounded(const char *path, long limit)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg(st.st_size > 2 * limit && st.st_size < 2 * limit + 200,
                  "%s holds %ld bytes (limit %ld at each end)", path, (long)st.st_size, limit);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    buf[st.st_size] = '\0';
    ck_assert(!strncmp(buf, "FIRST", 5));
    ck_assert_str_eq(buf + st.st_size - 4, "LAST");
    char note[160];
    snprintf(note, sizeof note, "[repro: %ld bytes of output dropped here; the first and the last "
                                "%ld bytes are kept",
             5000009L - 2 * limit, limit);
    ck_assert_msg(strstr(buf + limit, note) == buf + limit + 1, "no note after the head");
    free(buf);
}

START_TEST(test_flood_keeps_one_mib_at_each_end)
{
    char path[512];
    ck_assert_int_eq(check_flood("", path, sizeof path), 3);
    assert_bounded(path, 1L << 20);
}
END_TEST

START_TEST(test_capture_limit_is_configurable)
{
    char path[512];
    ck_assert_int_eq(check_flood("REPRO_CAPTURE_LIMIT=64K", path, sizeof path), 3);
    assert_bounded(path, 64L << 10);
}
END_TEST

Suite *capture_suite(void)
{
    Suite *s = suite_create("capture");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_flood_keeps_one_mib_at_each_end);
    tcase_add_test(tc, test_capture_limit_is_configurable);
    suite_add_tcase(s, tc);
    return s;
}
