/* The synthetic dataset: deterministic, a pure function of (seed, split,
 * sample), roughly class-balanced, and learnable (a nearest-class-mean
 * classifier beats chance by far). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/dataset.h"
#include "kernels/isa.h"
#include "util/error.h"

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

START_TEST(test_deterministic)
{
    repro_dataset a, b;
    ck_assert_int_eq(repro_dataset_synthetic(&a, 42, REPRO_SPLIT_TRAIN, 300), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&b, 42, REPRO_SPLIT_TRAIN, 300), 0);
    ck_assert_int_eq(a.n, 300);
    ck_assert_mem_eq(a.images, b.images, (size_t)300 * REPRO_IMG_PIXELS);
    ck_assert_mem_eq(a.labels, b.labels, 300);
    for (int i = 0; i < 300; i++)
        ck_assert_uint_lt(a.labels[i], REPRO_CLASSES);
    repro_dataset_release(&a);
    repro_dataset_release(&b);
}
END_TEST

START_TEST(test_pinned_bits)
{
    /* The generator's bits are part of the determinism contract (no libm,
     * no FMA contraction): a change here changes every synthetic run. The
     * noise is drawn on the vector path in use (kernels/isa.h), so every
     * path the CPU has must give them; 1000 samples cover every shift. */
    repro_dataset ref;
    ck_assert_int_eq(repro_isa_select(REPRO_ISA_SSE2), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&ref, 42, REPRO_SPLIT_TRAIN, 1000), 0);
    for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
        if (!repro_isa_supported((repro_isa)isa))
            continue;
        ck_assert_int_eq(repro_isa_select((repro_isa)isa), 0);
        repro_dataset a;
        ck_assert_int_eq(repro_dataset_synthetic(&a, 42, REPRO_SPLIT_TRAIN, 64), 0);
        uint64_t h = fnv1a(0xcbf29ce484222325ULL, a.images, (size_t)64 * REPRO_IMG_PIXELS);
        h = fnv1a(h, a.labels, 64);
        ck_assert_msg(h == 0xbd3b86f99e3fa218ULL, "synthetic bits changed on %s: hash 0x%016llx",
                      repro_isa_name((repro_isa)isa), (unsigned long long)h);
        repro_dataset_release(&a);
        ck_assert_int_eq(repro_dataset_synthetic(&a, 42, REPRO_SPLIT_TRAIN, 1000), 0);
        ck_assert_msg(!memcmp(a.images, ref.images, (size_t)1000 * REPRO_IMG_PIXELS),
                      "synthetic images differ on %s", repro_isa_name((repro_isa)isa));
        repro_dataset_release(&a);
    }
    repro_isa_select(repro_isa_best());
    repro_dataset_release(&ref);
}
END_TEST

START_TEST(test_seeds_and_splits_differ)
{
    repro_dataset a, b, c;
    ck_assert_int_eq(repro_dataset_synthetic(&a, 1, REPRO_SPLIT_TRAIN, 100), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&b, 2, REPRO_SPLIT_TRAIN, 100), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&c, 1, REPRO_SPLIT_TEST, 100), 0);
    ck_assert(memcmp(a.images, b.images, (size_t)100 * REPRO_IMG_PIXELS) != 0);
    ck_assert(memcmp(a.images, c.images, (size_t)100 * REPRO_IMG_PIXELS) != 0);
    ck_assert(memcmp(a.labels, b.labels, 100) != 0);
    repro_dataset_release(&a);
    repro_dataset_release(&b);
    repro_dataset_release(&c);
}
END_TEST

START_TEST(test_subset_is_prefix)
{
    repro_dataset a, b;
    ck_assert_int_eq(repro_dataset_synthetic(&a, 7, REPRO_SPLIT_TEST, 50), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&b, 7, REPRO_SPLIT_TEST, 100), 0);
    ck_assert_mem_eq(a.images, b.images, (size_t)50 * REPRO_IMG_PIXELS);
    ck_assert_mem_eq(a.labels, b.labels, 50);
    repro_dataset_release(&a);
    repro_dataset_release(&b);
}
END_TEST

START_TEST(test_class_balance)
{
    repro_dataset a;
    ck_assert_int_eq(repro_dataset_synthetic(&a, 3, REPRO_SPLIT_TRAIN, 5000), 0);
    int cnt[REPRO_CLASSES] = {0};
    for (int i = 0; i < a.n; i++)
        cnt[a.labels[i]]++;
    for (int c = 0; c < REPRO_CLASSES; c++)
        ck_assert_msg(cnt[c] > 400 && cnt[c] < 600, "class %d: %d of 5000", c, cnt[c]);
    repro_dataset_release(&a);
}
END_TEST

START_TEST(test_learnable_nearest_mean)
{
    /* Means from the train split classify the test split: the classes share
     * prototypes across splits and are distinguishable under shift and
     * noise. Chance is 10%. */
    repro_dataset tr, te;
    ck_assert_int_eq(repro_dataset_synthetic(&tr, 11, REPRO_SPLIT_TRAIN, 2000), 0);
    ck_assert_int_eq(repro_dataset_synthetic(&te, 11, REPRO_SPLIT_TEST, 500), 0);
    static double mean[REPRO_CLASSES][REPRO_IMG_PIXELS];
    int cnt[REPRO_CLASSES] = {0};
    memset(mean, 0, sizeof mean);
    for (int j = 0; j < tr.n; j++) {
        int c = tr.labels[j];
        cnt[c]++;
        for (int i = 0; i < REPRO_IMG_PIXELS; i++)
            mean[c][i] += tr.images[(size_t)j * REPRO_IMG_PIXELS + i];
    }
    for (int c = 0; c < REPRO_CLASSES; c++)
        for (int i = 0; i < REPRO_IMG_PIXELS; i++)
            mean[c][i] /= cnt[c];
    int ok = 0;
    for (int j = 0; j < te.n; j++) {
        int best = -1;
        double bd = 0;
        for (int c = 0; c < REPRO_CLASSES; c++) {
            double d = 0;
            for (int i = 0; i < REPRO_IMG_PIXELS; i++) {
                double e = te.images[(size_t)j * REPRO_IMG_PIXELS + i] - mean[c][i];
                d += e * e;
            }
            if (best < 0 || d < bd) {
                bd = d;
                best = c;
            }
        }
        ok += best == te.labels[j];
    }
    ck_assert_msg(ok * 2 > te.n, "nearest-class-mean accuracy %d / %d", ok, te.n);
    repro_dataset_release(&tr);
    repro_dataset_release(&te);
}
END_TEST

START_TEST(test_pixels_span_range)
{
    /* Ink and background both present: not a constant or saturated image. */
    repro_dataset a;
    ck_assert_int_eq(repro_dataset_synthetic(&a, 5, REPRO_SPLIT_TRAIN, 20), 0);
    for (int j = 0; j < a.n; j++) {
        int zeros = 0, bright = 0;
        for (int i = 0; i < REPRO_IMG_PIXELS; i++) {
            uint8_t v = a.images[(size_t)j * REPRO_IMG_PIXELS + i];
            zeros += v == 0;
            bright += v > 128;
        }
        ck_assert_int_gt(zeros, 100);
        ck_assert_int_gt(bright, 20);
    }
    repro_dataset_release(&a);
}
END_TEST

START_TEST(test_bad_arguments)
{
    repro_dataset a;
    repro_error_clear();
    ck_assert_int_eq(repro_dataset_synthetic(&a, 1, 2, 10), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "split"));
    repro_error_clear();
    ck_assert_int_eq(repro_dataset_synthetic(&a, 1, REPRO_SPLIT_TRAIN, 0), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "sample count"));
    ck_assert_ptr_null(a.images);
}
END_TEST

Suite *dataset_suite(void)
{
    Suite *s = suite_create("dataset");
    TCase *tc = tcase_create("synthetic");
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_pinned_bits);
    tcase_add_test(tc, test_seeds_and_splits_differ);
    tcase_add_test(tc, test_subset_is_prefix);
    tcase_add_test(tc, test_class_balance);
    tcase_add_test(tc, test_learnable_nearest_mean);
    tcase_add_test(tc, test_pixels_span_range);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}
