/* The IDX reader and the IDX dataset loader: a valid pair loads exactly, and
 * every malformed input fails with exit code 2 and a message naming the file
 * and what is wrong. Files are written to a fresh mkdtemp directory. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dataset.h"
#include "util/error.h"
#include "core/idx.h"

static char tmpdir[256];
static char paths[8][320];
static int npaths;

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/repro-idx-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    npaths = 0;
}

static void teardown(void)
{
    for (int i = 0; i < npaths; i++)
        unlink(paths[i]);
    rmdir(tmpdir);
}

static const char *write_file(const char *name, const void *bytes, size_t len)
{
    ck_assert_int_lt(npaths, 8);
    char *p = paths[npaths++];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    return p;
}

/* An IDX file in memory: header for `ndim` dims, then `extra` data bytes
 * beyond the product (negative: that many fewer). Data byte i = i * 7. */
static size_t make_idx(uint8_t *buf, size_t cap, int type, int ndim, const uint32_t *dims,
                       long extra)
{
    size_t n = 0;
    buf[n++] = 0;
    buf[n++] = 0;
    buf[n++] = (uint8_t)type;
    buf[n++] = (uint8_t)ndim;
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        buf[n++] = (uint8_t)(dims[d] >> 24);
        buf[n++] = (uint8_t)(dims[d] >> 16);
        buf[n++] = (uint8_t)(dims[d] >> 8);
        buf[n++] = (uint8_t)dims[d];
        count *= dims[d];
    }
    size_t data = (size_t)((long)count + extra);
    ck_assert_uint_le(n + data, cap);
    for (size_t i = 0; i < data; i++)
        buf[n + i] = (uint8_t)(i * 7);
    return n + data;
}

static uint8_t buf[4 * 784 + 64];

/* Asserts a failed read: -1, exit code 2, message naming `path` and `phrase`. */
static void expect_fail(int rc, const char *path, const char *phrase)
{
    const char *msg = repro_error_message();
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_msg(strstr(msg, path) != NULL, "message lacks the path: %s", msg);
    ck_assert_msg(strstr(msg, phrase) != NULL, "message lacks '%s': %s", phrase, msg);
}

static void expect_idx_fail(const char *path, const char *phrase)
{
    repro_idx idx;
    repro_error_clear();
    expect_fail(repro_idx_read(&idx, path), path, phrase);
    ck_assert_ptr_null(idx.data);
}

static void expect_ds_fail(const char *images, const char *labels, const char *bad,
                           const char *phrase)
{
    repro_dataset ds;
    repro_error_clear();
    expect_fail(repro_dataset_load_idx(&ds, images, labels), bad, phrase);
    ck_assert_int_eq(ds.n, 0);
    ck_assert_ptr_null(ds.images);
    ck_assert_ptr_null(ds.labels);
}

static const char *good_images(int n)
{
    uint32_t dims[3] = {(uint32_t)n, 28, 28};
    size_t len = make_idx(buf, sizeof buf, 0x08, 3, dims, 0);
    return write_file("images.idx", buf, len);
}

static const char *labels_file(const char *name, const uint8_t *labels, uint32_t n)
{
    uint8_t b[64];
    size_t len = make_idx(b, sizeof b, 0x08, 1, &n, 0);
    memcpy(b + 8, labels, n);
    return write_file(name, b, len);
}

START_TEST(test_valid_pair_loads)
{
    const char *im = good_images(3);
    const uint8_t lab[3] = {0, 9, 5};
    const char *lb = labels_file("labels.idx", lab, 3);
    repro_dataset ds;
    ck_assert_int_eq(repro_dataset_load_idx(&ds, im, lb), 0);
    ck_assert_int_eq(ds.n, 3);
    for (int i = 0; i < 3 * 784; i++)
        ck_assert_uint_eq(ds.images[i], (uint8_t)(i * 7));
    ck_assert_mem_eq(ds.labels, lab, 3);
    repro_dataset_release(&ds);
    ck_assert_ptr_null(ds.images);

    repro_idx idx;
    ck_assert_int_eq(repro_idx_read(&idx, im), 0);
    ck_assert_int_eq(idx.ndim, 3);
    ck_assert_uint_eq(idx.dims[0], 3);
    ck_assert_uint_eq(idx.dims[1], 28);
    ck_assert_uint_eq(idx.dims[2], 28);
    ck_assert_uint_eq(idx.count, 3 * 784);
    repro_idx_release(&idx);
}
END_TEST

START_TEST(test_missing_file)
{
    char p[320];
    snprintf(p, sizeof p, "%s/no-such-file.idx", tmpdir);
    expect_idx_fail(p, "cannot open");
    const char *lb = labels_file("labels.idx", (const uint8_t[]){1}, 1);
    expect_ds_fail(p, lb, p, "cannot open");
    const char *im = good_images(1);
    expect_ds_fail(im, p, p, "cannot open");
}
END_TEST

START_TEST(test_bad_magic)
{
    uint32_t dims[1] = {4};
    size_t len = make_idx(buf, sizeof buf, 0x08, 1, dims, 0);
    buf[0] = 0x1f;
    buf[1] = 0x8b; /* a gzip file, the classic mistake */
    const char *p = write_file("gz.idx", buf, len);
    expect_idx_fail(p, "bad magic: found 0x1f 0x8b, expected 0x00 0x00");
}
END_TEST

START_TEST(test_wrong_type)
{
    uint32_t dims[1] = {4};
    size_t len = make_idx(buf, sizeof buf, 0x0D, 1, dims, 0);
    const char *p = write_file("float.idx", buf, len);
    expect_idx_fail(p, "unsupported IDX data type 0x0d (float)");
}
END_TEST

START_TEST(test_bad_ndim)
{
    uint32_t dims[5] = {1, 1, 1, 1, 1};
    size_t len = make_idx(buf, sizeof buf, 0x08, 0, dims, 0);
    const char *p = write_file("nd0.idx", buf, len);
    expect_idx_fail(p, "bad number of dimensions 0");
    len = make_idx(buf, sizeof buf, 0x08, 5, dims, 0);
    p = write_file("nd5.idx", buf, len);
    expect_idx_fail(p, "bad number of dimensions 5");
}
END_TEST

START_TEST(test_zero_and_huge_dims)
{
    uint32_t zero[2] = {3, 0};
    size_t len = make_idx(buf, sizeof buf, 0x08, 2, zero, 0);
    const char *p = write_file("zero.idx", buf, len);
    expect_idx_fail(p, "dimension 1 is zero");
    /* 2^32-1 cubed overflows size_t arithmetic done naively. */
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    uint8_t h[16] = {0, 0, 8, 3};
    for (int d = 0; d < 3; d++)
        for (int b = 0; b < 4; b++)
            h[4 + 4 * d + b] = (uint8_t)(huge[d] >> (24 - 8 * b));
    p = write_file("huge.idx", h, sizeof h);
    expect_idx_fail(p, "too large");
}
END_TEST

START_TEST(test_wrong_dims)
{
    uint32_t dims[3] = {2, 28, 27};
    size_t len = make_idx(buf, sizeof buf, 0x08, 3, dims, 0);
    const char *im = write_file("im2827.idx", buf, len);
    const char *lb = labels_file("labels.idx", (const uint8_t[]){1, 2}, 2);
    expect_ds_fail(im, lb, im, "wrong image dimensions 2 x 28 x 27");

    uint32_t flat[2] = {2, 784};
    len = make_idx(buf, sizeof buf, 0x08, 2, flat, 0);
    im = write_file("im2d.idx", buf, len);
    expect_ds_fail(im, lb, im, "expected 3-D n x 28 x 28");

    /* Labels must be 1-D. */
    const char *good = good_images(2);
    uint32_t ld[2] = {2, 1};
    len = make_idx(buf, sizeof buf, 0x08, 2, ld, 0);
    buf[8] = buf[9] = 0;
    const char *lb2 = write_file("lab2d.idx", buf, len);
    expect_ds_fail(good, lb2, lb2, "wrong label dimensions");
}
END_TEST

START_TEST(test_truncated_header)
{
    const uint8_t two[2] = {0, 0};
    const char *p = write_file("two.idx", two, 2);
    expect_idx_fail(p, "truncated header");
    const uint8_t part[10] = {0, 0, 8, 3, 0, 0, 0, 1, 0, 0}; /* 3 dims, 6 bytes of them */
    p = write_file("part.idx", part, sizeof part);
    expect_idx_fail(p, "truncated header: expected 16 bytes, found 10");
}
END_TEST

START_TEST(test_truncated_data)
{
    uint32_t dims[3] = {3, 28, 28};
    size_t len = make_idx(buf, sizeof buf, 0x08, 3, dims, -(3 * 784 - 100));
    const char *p = write_file("short.idx", buf, len);
    expect_idx_fail(p, "truncated data: expected 2352 bytes of data, found 100");
    const char *lb = labels_file("labels.idx", (const uint8_t[]){1, 2, 3}, 3);
    expect_ds_fail(p, lb, p, "expected 2352 bytes of data, found 100");
}
END_TEST

START_TEST(test_trailing_bytes)
{
    uint32_t dims[1] = {4};
    size_t len = make_idx(buf, sizeof buf, 0x08, 1, dims, 5);
    const char *p = write_file("trail.idx", buf, len);
    expect_idx_fail(p, "5 trailing bytes");
}
END_TEST

START_TEST(test_count_mismatch)
{
    const char *im = good_images(3);
    const char *lb = labels_file("labels.idx", (const uint8_t[]){1, 2, 3, 4}, 4);
    expect_ds_fail(im, lb, lb, "count mismatch: 4 labels but");
    ck_assert_ptr_nonnull(strstr(repro_error_message(), im)); /* names both files */
}
END_TEST

START_TEST(test_label_out_of_range)
{
    const char *im = good_images(3);
    const char *lb = labels_file("labels.idx", (const uint8_t[]){0, 10, 1}, 3);
    expect_ds_fail(im, lb, lb, "label out of range at index 1: value 10");
}
END_TEST

Suite *idx_suite(void)
{
    Suite *s = suite_create("idx");
    TCase *tc = tcase_create("idx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_valid_pair_loads);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_wrong_type);
    tcase_add_test(tc, test_bad_ndim);
    tcase_add_test(tc, test_zero_and_huge_dims);
    tcase_add_test(tc, test_wrong_dims);
    tcase_add_test(tc, test_truncated_header);
    tcase_add_test(tc, test_truncated_data);
    tcase_add_test(tc, test_trailing_bytes);
    tcase_add_test(tc, test_count_mismatch);
    tcase_add_test(tc, test_label_out_of_range);
    suite_add_tcase(s, tc);
    return s;
}
