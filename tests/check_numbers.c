/* The two number rules every command shares: the float32 ULP distance
 * (util/ulp.h: +0 and -0 are 0 apart, NaN is "not comparable" unless the
 * bits are identical) and strict decimal counts and seeds on the command
 * line (util/numparse.h: `--runs 4294967298` is an error, not 2; `--seed
 * 0x1F` is an error, `--seed 010` is ten). */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/numparse.h"
#include "util/ulp.h"

START_TEST(test_ulp_table)
{
    static const struct {
        uint32_t a, b;
        uint64_t want;
        const char *what;
    } rows[] = {
        {0x00000000u, 0x00000000u, 0, "+0 vs +0"},
        {0x00000000u, 0x80000000u, 0, "+0 vs -0: equal numbers"},
        {0x80000000u, 0x00000000u, 0, "-0 vs +0"},
        {0x00000001u, 0x00000000u, 1, "smallest subnormal vs +0"},
        {0x80000001u, 0x00000000u, 1, "-smallest subnormal vs +0"},
        {0x80000001u, 0x80000000u, 1, "-smallest subnormal vs -0"},
        {0x00000001u, 0x80000001u, 2, "+-smallest subnormal: across zero"},
        {0x3f800000u, 0x3f800001u, 1, "1.0 vs next float"},
        {0x3f800001u, 0x3f800000u, 1, "symmetric"},
        {0x3f800000u, 0xbf800000u, 2u * 0x3f800000u, "1.0 vs -1.0"},
        {0x7f7fffffu, 0x7f800000u, 1, "FLT_MAX vs +inf"},
        {0xff800000u, 0x7f800000u, 2u * 0x7f800000u, "-inf vs +inf"},
        {0x7fc00000u, 0x7fc00000u, 0, "identical NaNs"},
        {0xffc00001u, 0xffc00001u, 0, "identical negative NaNs"},
        {0x7fc00000u, 0x7fc00001u, REPRO_ULP_NAN, "NaNs with other payloads"},
        {0x7fc00000u, 0xffc00000u, REPRO_ULP_NAN, "NaNs of other signs"},
        {0x7fc00000u, 0x3f800000u, REPRO_ULP_NAN, "NaN vs 1.0"},
        {0x00000000u, 0x7f800001u, REPRO_ULP_NAN, "0 vs a signalling NaN"},
        {0x7f800000u, 0x7fc00000u, REPRO_ULP_NAN, "inf vs NaN"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ck_assert_msg(repro_ulp_distance_f32(rows[i].a, rows[i].b) == rows[i].want,
                      "%s: 0x%08x vs 0x%08x gave %llu", rows[i].what, rows[i].a, rows[i].b,
                      (unsigned long long)repro_ulp_distance_f32(rows[i].a, rows[i].b));
    ck_assert(REPRO_ULP_NAN > 2ull * 0x7f800000u); /* no real distance reaches it */
}
END_TEST

START_TEST(test_counts_are_strict_decimal)
{
    long v = -1;
    static const struct {
        const char *s;
        long lo, hi, want; /* want < 0: an error */
    } rows[] = {
        {"2", 1, 32, 2},           {"32", 1, 32, 32},        {"010", 1, 32, 10},
        {"0", 0, 5, 0},            {"0", 1, 32, -1},         {"33", 1, 32, -1},
        {"4294967298", 1, 32, -1}, {"-1", 0, 32, -1},        {"+2", 1, 32, -1},
        {" 2", 1, 32, -1},         {"2 ", 1, 32, -1},        {"0x10", 1, 32, -1},
        {"1e3", 1, 5000, -1},      {"", 1, 32, -1},          {"2.0", 1, 32, -1},
        {"18446744073709551616", 0, LONG_MAX, -1}, /* 2^64 wraps in strtoull: not here */
        {"9223372036854775807", 0, LONG_MAX, LONG_MAX},
        {"9223372036854775808", 0, LONG_MAX, -1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int rc = repro_parse_count("check: --runs", rows[i].s, rows[i].lo, rows[i].hi, &v);
        if (rows[i].want < 0) {
            ck_assert_msg(rc == -1, "'%s' was accepted as %ld", rows[i].s, v);
            ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
            /* the message names the flag and the value as given */
            char want[128];
            snprintf(want, sizeof want, "check: --runs %s: expected a decimal count", rows[i].s);
            ck_assert_msg(strstr(repro_error_message(), want), "%s", repro_error_message());
        } else {
            ck_assert_msg(rc == 0 && v == rows[i].want, "'%s': rc %d, %ld", rows[i].s, rc, v);
        }
    }
    int iv;
    ck_assert_int_eq(repro_parse_count_int("bless: --every", "7", 1, INT_MAX, &iv), 0);
    ck_assert_int_eq(iv, 7);
    ck_assert_int_eq(repro_parse_count_int("bless: --every", "2147483648", 1, INT_MAX, &iv), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "expected a decimal count in 1..2147483647"));
}
END_TEST

START_TEST(test_count_lists)
{
    long v[8];
    int n;
    ck_assert_int_eq(repro_parse_count_list("check: --threads", "1,2,03", 0, 256, v, 8, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert(v[0] == 1 && v[1] == 2 && v[2] == 3);
    ck_assert_int_eq(repro_parse_count_list("check: --threads", "1,x", 0, 256, v, 8, &n), -1);
    ck_assert_str_eq(repro_error_message(), "check: --threads 1,x: 'x' is not a count in 0..256");
    ck_assert_int_eq(repro_parse_count_list("check: --threads", "4294967298", 0, 256, v, 8, &n),
                     -1);
    ck_assert_int_eq(repro_parse_count_list("check: --workers", "1,,2", 0, 256, v, 8, &n), -1);
    ck_assert_int_eq(repro_parse_count_list("check: --workers", "1,", 0, 256, v, 8, &n), -1);
    ck_assert_int_eq(repro_parse_count_list("check: --workers", "", 0, 256, v, 8, &n), -1);
    ck_assert_int_eq(repro_parse_count_list("check: --workers", "-1", 0, 256, v, 8, &n), -1);
    ck_assert_int_eq(repro_parse_count_list("check: --workers", "1,2,3", 0, 256, v, 2, &n), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "more than 2 entries"));
}
END_TEST

START_TEST(test_seeds_are_decimal)
{
    uint64_t s;
    ck_assert_int_eq(repro_parse_seed("check: --seed", "010", &s), 0);
    ck_assert_uint_eq(s, 10); /* decimal, not octal 8 */
    ck_assert_int_eq(repro_parse_seed("check: --seed", "18446744073709551615", &s), 0);
    ck_assert(s == UINT64_MAX);
    ck_assert_int_eq(repro_parse_seed("check: --seed", "0x1F", &s), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "check: --seed 0x1F: expected a decimal"));
    ck_assert_int_eq(repro_parse_seed("check: --seed", "18446744073709551616", &s), -1);
    ck_assert_int_eq(repro_parse_seed("check: --seed", "-1", &s), -1);
    ck_assert_int_eq(repro_parse_seed("check: --seed", "", &s), -1);
}
END_TEST

/* Sizes (verify --max-memory): bytes or binary units, strictly. */
START_TEST(test_sizes)
{
    uint64_t v;
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {{"512M", 512ull << 20}, {"2G", 2ull << 30}, {"4GiB", 4ull << 30},
                {"3g", 3ull << 30},     {"1t", 1ull << 40}, {"1048576", 1 << 20},
                {"2048K", 2 << 20},     {"5MB", 5ull << 20}, {"1048576B", 1 << 20},
                {"8388607T", 8388607ull << 40}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ck_assert_msg(repro_parse_size("x", good[i].text, 1 << 20, &v) == 0, "%s: %s",
                      good[i].text, repro_error_message());
        ck_assert_uint_eq(v, good[i].bytes);
    }
    static const char *const bad[] = {"",     "G",   "2X",   "2 G", "-1G", "+1G", "1.5G",
                                      "0x10M", "2iB", "2GiBs", "1K",  "8388608T", "0",
                                      "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(repro_parse_size("x", bad[i], 1 << 20, &v) == -1, "%s accepted", bad[i]);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "x 99999999999999999999: expected a size"));
}
END_TEST

Suite *numbers_suite(void)
{
    Suite *s = suite_create("numbers");
    TCase *tc = tcase_create("numbers");
    tcase_add_test(tc, test_ulp_table);
    tcase_add_test(tc, test_counts_are_strict_decimal);
    tcase_add_test(tc, test_count_lists);
    tcase_add_test(tc, test_seeds_are_decimal);
    tcase_add_test(tc, test_sizes);
    suite_add_tcase(s, tc);
    return s;
}
