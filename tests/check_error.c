/* util/error.h: context is put before a cause without losing it.
 * repro_error_wrap keeps the cause's text whole (its file:line above all),
 * a long prefix is cut before the cause is, and repro_error_set given the
 * slot's own text among its arguments no longer formats into itself. End
 * to end: the places that used to format the slot into itself (a program's
 * unreadable trace under `repro check --`, an unreadable golden) print the
 * reader's cause with its file:line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"
#include "testutil.h"
#include "tu_procs.h"

#define CAUSE "trace.jsonl:3: maximum nesting depth reached near '['"

START_TEST(test_wrap_puts_context_before_the_cause)
{
    repro_error_set(REPRO_EIO, "%s", CAUSE);
    ck_assert_int_eq(repro_error_wrap(REPRO_EINVAL, "run %d of `%s` could not be tested", 2,
                                      "prog"),
                     -1);
    ck_assert_str_eq(repro_error_message(), "run 2 of `prog` could not be tested: " CAUSE);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    /* Wrapped twice: both contexts, outermost first. */
    repro_error_wrap(REPRO_EIO, "golden %s", "g.jsonl");
    ck_assert_str_eq(repro_error_message(),
                     "golden g.jsonl: run 2 of `prog` could not be tested: " CAUSE);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    repro_error_clear();
}
END_TEST

START_TEST(test_wrap_cuts_the_prefix_not_the_cause)
{
    char longp[2000], longc[2000];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    /* A cause of 700 bytes, then a prefix of 1999: the cause stays whole. */
    memset(longc, 'c', 690);
    snprintf(longc + 690, sizeof longc - 690, "%s", "f.ini:42:");
    repro_error_set(REPRO_EINVAL, "%s", longc);
    repro_error_wrap(REPRO_EINVAL, "%s", longp);
    const char *m = repro_error_message();
    ck_assert_uint_eq(strlen(m), 1023);
    ck_assert_ptr_nonnull(strstr(m, "p...: ccc"));
    ck_assert_str_eq(m + strlen(m) - 9, "f.ini:42:");
    /* A cause longer than the slot: the prefix keeps its minimum, the
     * cause is cut at its end. */
    memset(longc, 'c', sizeof longc - 1);
    longc[sizeof longc - 1] = '\0';
    repro_error_set(REPRO_EINVAL, "%s", longc); /* itself cut to 1023 */
    repro_error_wrap(REPRO_EINVAL, "short context");
    m = repro_error_message();
    ck_assert(!strncmp(m, "short context: ccc", 18));
    ck_assert_uint_eq(strlen(m), 1023);
    repro_error_wrap(REPRO_EINVAL, "%s", longp);
    m = repro_error_message();
    ck_assert_uint_eq(strlen(m), 1023);
    ck_assert_ptr_nonnull(strstr(m, "ppp...: short context: ccc"));
    repro_error_clear();
}
END_TEST

/* The old pattern, now harmless: the slot among the arguments. */
START_TEST(test_set_with_its_own_message_keeps_it)
{
    repro_error_set(REPRO_EINVAL, "%s", CAUSE);
    repro_error_set(REPRO_EIO, "golden %s is unreadable: %s", "g.jsonl", repro_error_message());
    ck_assert_str_eq(repro_error_message(), "golden g.jsonl is unreadable: " CAUSE);
    repro_error_clear();
    ck_assert_str_eq(repro_error_message(), "unknown error");
}
END_TEST

/* ---- end to end ----------------------------------------------------------- */

static char dir[TU_TMP_LEN];
static char err[1 << 14];

/* `cd dir && repro ARGS`, stderr into err; the exit status. */
static int repro_in_dir(const char *args)
{
    const char *bin = tu_repro_bin();
    char cmd[2048], ep[TU_TMP_LEN + 8];
    snprintf(ep, sizeof ep, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >/dev/null 2>'%s' </dev/null", dir,
             bin, args, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    FILE *f = fopen(ep, "r");
    size_t n = f ? fread(err, 1, sizeof err - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_in_dir(const char *name, const char *text)
{
    char p[TU_TMP_LEN + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* A program whose trace is not JSON at line 1: the message names the run,
 * then the reader's cause with the trace's path and line. */
START_TEST(test_check_program_bad_trace_keeps_cause)
{
    tu_tmp_template(dir, sizeof dir, "error");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_in_dir("prog.sh", "printf '{\"repro_trace\": [[[[ oops\\n' > \"$REPRO_TRACE\"\n");
    int rc = repro_in_dir("check --no-golden -- sh prog.sh");
    ck_assert_msg(rc == 2 || rc == 3, "exit %d: %s", rc, err);
    const char *at = strstr(err, "could not be tested: its trace is not a valid repro trace: ");
    ck_assert_msg(at != NULL, "%s", err);
    const char *cause = at + strlen("could not be tested: its trace is not a valid repro trace: ");
    ck_assert_msg(strstr(cause, "trace.jsonl:1") != NULL, "cause lost: %s", err);
}
END_TEST

Suite *error_suite(void)
{
    Suite *s = suite_create("error");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_wrap_puts_context_before_the_cause);
    tcase_add_test(tc, test_wrap_cuts_the_prefix_not_the_cause);
    tcase_add_test(tc, test_set_with_its_own_message_keeps_it);
    tcase_add_test(tc, test_check_program_bad_trace_keeps_cause);
    suite_add_tcase(s, tc);
    return s;
}
