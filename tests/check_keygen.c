/* `repro keygen` on a failing disk: the keys are written whole to
 * temporary files and only then put in place, so a write that fails (here a
 * full disk, simulated with RLIMIT_FSIZE: writes past the limit fail with
 * EFBIG, as on a full file system) leaves no partial private key to block
 * the next attempt, and no temporary file either. Also: an existing key is
 * never replaced. */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* Runs `repro keygen -o key` with files limited to `fsize` bytes (0: no
 * limit); returns the exit status. */
static int keygen(const char *key, rlim_t fsize)
{
    char bin[PATH_MAX];
    const char *b = getenv("REPRO_BIN");
    ck_assert_ptr_nonnull(realpath(b ? b : "build/repro", bin));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (fsize) {
            struct rlimit rl = {fsize, fsize};
            signal(SIGXFSZ, SIG_IGN); /* stays ignored across exec: write() fails instead */
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execl(bin, "repro", "keygen", "-o", key, (char *)NULL);
        _exit(127);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

START_TEST(test_full_disk_leaves_no_partial_key)
{
    char dir[TU_TMP_LEN], key[300], pub[310];
    tu_tmp_template(dir, sizeof dir, "keygen");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(key, sizeof key, "%s/k.pem", dir);
    snprintf(pub, sizeof pub, "%s/k.pem.pub", dir);
    /* 16 bytes: less than a PEM header line */
    ck_assert_int_eq(keygen(key, 16), 3);
    ck_assert_msg(access(key, F_OK) != 0, "a partial private key was left behind");
    ck_assert_int_eq(access(pub, F_OK), -1);
    ck_assert_int_eq(count_entries(dir), 0); /* no temporary either */
    /* the next attempt is not blocked */
    ck_assert_int_eq(keygen(key, 0), 0);
    struct stat st;
    ck_assert_int_eq(stat(key, &st), 0);
    ck_assert_int_gt(st.st_size, 100);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(stat(pub, &st), 0);
    ck_assert_int_gt(st.st_size, 100);
    ck_assert_int_eq(count_entries(dir), 2);
}
END_TEST

START_TEST(test_existing_key_not_replaced)
{
    char dir[TU_TMP_LEN], key[300];
    tu_tmp_template(dir, sizeof dir, "keygen");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(key, sizeof key, "%s/k.pem", dir);
    FILE *f = fopen(key, "w");
    ck_assert_ptr_nonnull(f);
    fputs("mine\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(keygen(key, 0), 2);
    char buf[16] = "";
    f = fopen(key, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "mine\n");
    ck_assert_int_eq(count_entries(dir), 1);
}
END_TEST

Suite *keygen_suite(void)
{
    Suite *s = suite_create("keygen");
    TCase *tc = tcase_create("keygen");
    tcase_add_test(tc, test_full_disk_leaves_no_partial_key);
    tcase_add_test(tc, test_existing_key_not_replaced);
    suite_add_tcase(s, tc);
    return s;
}
