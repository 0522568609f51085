/* The example programs in examples/, built by `make check` against the
 * installed library (pkg-config) as a user builds them: their traces are
 * read by `repro diff`, two runs compare identical, the thread count does
 * not change a bit, and charlm's unordered reduction (its negative
 * control) does. REPRO_EXAMPLES names the directory of the built examples
 * (the Makefile sets it). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char *examples_dir(void)
{
    const char *d = getenv("REPRO_EXAMPLES");
    ck_assert_msg(d && *d, "REPRO_EXAMPLES is not set: run the suite through `make check`");
    return d;
}

/* Runs charlm with a fresh trace; env is extra "K=V " assignments. */
static void charlm(const char *env, char *trace, size_t len)
{
    char dir[] = "/tmp/repro-ex-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, len, "%s/trace.jsonl", dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env %s REPRO_TRACE='%s' '%s/charlm' --steps 40 >/dev/null 2>&1",
             env, trace, examples_dir());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
}

static int diff(const char *a, const char *b)
{
    char args[1200], out[8192], err[4096];
    snprintf(args, sizeof args, "diff '%s' '%s'", a, b);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

START_TEST(test_charlm_reproduces_at_any_thread_count)
{
    char a[256], b[256], c[256];
    charlm("REPRO_THREADS=1", a, sizeof a);
    charlm("REPRO_THREADS=1", b, sizeof b);
    charlm("REPRO_THREADS=3", c, sizeof c);
    ck_assert_int_eq(diff(a, b), 0);
    ck_assert_int_eq(diff(a, c), 0);
}
END_TEST

START_TEST(test_charlm_negative_control_diverges)
{
    /* Shards added in the order threads finish: with 2 threads some run
     * pair must differ (a few tries: two fast shards can finish in order). */
    char first[256], next[256];
    charlm("REPRO_THREADS=2 CHARLM_UNORDERED=1", first, sizeof first);
    int differed = 0;
    for (int i = 0; i < 4 && !differed; i++) {
        charlm("REPRO_THREADS=2 CHARLM_UNORDERED=1", next, sizeof next);
        differed = diff(first, next) == 1;
    }
    ck_assert_msg(differed, "the unordered reduction never changed a bit in 5 runs");
}
END_TEST

Suite *examples_suite(void)
{
    Suite *s = suite_create("examples");
    TCase *tc = tcase_create("charlm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_charlm_reproduces_at_any_thread_count);
    tcase_add_test(tc, test_charlm_negative_control_diverges);
    suite_add_tcase(s, tc);
    return s;
}
