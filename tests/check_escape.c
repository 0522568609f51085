/* util/escape.h: untrusted text made safe for a terminal — printable ASCII
 * kept, the backslash doubled, every other byte \xNN, long text cut with
 * "..." inside the buffer. */
#include <check.h>
#include <string.h>

#include "util/escape.h"

START_TEST(test_escape_forms)
{
    char b[64];
    ck_assert_str_eq(repro_escape(b, sizeof b, "plain text: 1+1=2"), "plain text: 1+1=2");
    ck_assert_str_eq(repro_escape(b, sizeof b, "\x1b[2J\x1b[1;1Hok"), "\\x1b[2J\\x1b[1;1Hok");
    ck_assert_str_eq(repro_escape(b, sizeof b, "a\nb\r\t\x7f"), "a\\x0ab\\x0d\\x09\\x7f");
    ck_assert_str_eq(repro_escape(b, sizeof b, "C:\\x1b"), "C:\\\\x1b"); /* not an escape */
    ck_assert_str_eq(repro_escape(b, sizeof b, "caf\xc3\xa9 \xc2\x9b"), "caf\\xc3\\xa9 \\xc2\\x9b");
    ck_assert_str_eq(repro_escape(b, sizeof b, NULL), "(null)");
    ck_assert_str_eq(repro_escape(b, sizeof b, ""), "");
    ck_assert(repro_escape_is_plain("param.fc1.weight"));
    ck_assert(!repro_escape_is_plain("a\\b"));
    ck_assert(!repro_escape_is_plain("\x1b"));
}
END_TEST

START_TEST(test_escape_cuts_inside_the_buffer)
{
    char b[12];
    ck_assert_str_eq(repro_escape(b, sizeof b, "0123456789a"), "0123456789a"); /* fits exactly */
    ck_assert_str_eq(repro_escape(b, sizeof b, "0123456789ab"), "01234567...");
    ck_assert_str_eq(repro_escape(b, sizeof b, "0123\x1b\x1b\x1b"), "0123\\x1b...");
    char tiny[3];
    ck_assert_str_eq(repro_escape(tiny, sizeof tiny, "\x1b"), ""); /* never half an escape */
    ck_assert_str_eq(repro_escape(tiny, sizeof tiny, "ab"), "ab");
    /* The ring: eight results alive at once. */
    const char *r[REPRO_ESC_RING];
    for (int i = 0; i < REPRO_ESC_RING; i++) {
        char in[8] = {'x', (char)('0' + i), '\x1b', 0};
        r[i] = repro_esc(in);
    }
    for (int i = 0; i < REPRO_ESC_RING; i++) {
        char want[16] = {'x', (char)('0' + i), 0};
        strcat(want, "\\x1b");
        ck_assert_str_eq(r[i], want);
    }
}
END_TEST

/* The lines form: a traceback stays lines (newline and tab, backslashes
 * and UTF-8 kept); the controls that move the cursor or rewrite a line
 * (ESC, CR, DEL, C1) and malformed UTF-8 are still \xNN. */
START_TEST(test_escape_lines_keeps_lines)
{
    char b[128];
    ck_assert_str_eq(repro_escape_lines(b, sizeof b, "Traceback:\n  File \"x.py\"\n\tValueError"),
                     "Traceback:\n  File \"x.py\"\n\tValueError");
    ck_assert_str_eq(repro_escape_lines(b, sizeof b, "C:\\dir caf\xc3\xa9"), "C:\\dir caf\xc3\xa9");
    ck_assert_str_eq(repro_escape_lines(b, sizeof b, "\x1b[2Jok\rfake\x7f"),
                     "\\x1b[2Jok\\x0dfake\\x7f");
    ck_assert_str_eq(repro_escape_lines(b, sizeof b, "a\xc2\x9b" "b \xff \xc3"),
                     "a\\xc2\\x9bb \\xff \\xc3");
    ck_assert_str_eq(repro_escape_lines(b, sizeof b, NULL), "(null)");
    char small[8];
    ck_assert_str_eq(repro_escape_lines(small, sizeof small, "abc\ndefgh"), "abc\n...");
    ck_assert_str_eq(repro_esc_lines("x\n\x1b"), "x\n\\x1b");
}
END_TEST

Suite *escape_suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = tcase_create("escape");
    tcase_add_test(tc, test_escape_forms);
    tcase_add_test(tc, test_escape_cuts_inside_the_buffer);
    tcase_add_test(tc, test_escape_lines_keeps_lines);
    suite_add_tcase(s, tc);
    return s;
}
