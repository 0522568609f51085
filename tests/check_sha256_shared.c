/* The shared SHA-256 (kernels/shared/sha256.h), the code the CUDA backend
 * runs on the device to hash 4 KiB leaves, against OpenSSL's SHA-256 (the
 * library's own, record/hash.c) on the same bytes; and the CPU backend's
 * tensor_leaves entry (the same code, plus the stats in the recorder's
 * order) feeding the tensor digest, which must equal the digest of the
 * bytes. A difference here would make a GPU-hashed trace disagree with a
 * CPU-hashed one on equal tensors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/shared/sha256.h"
#include "record/hash.h"

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

/* Every length across the padding boundaries (55/56/63/64 bytes) and the
 * leaf size, random contents. */
START_TEST(test_matches_openssl)
{
    enum { MAXN = 4096 + 130 };
    uint8_t *buf = malloc(MAXN);
    ck_assert_ptr_nonnull(buf);
    static const size_t extra[] = {511, 512, 1000, 4031, 4032, 4095, 4096, 4097, 4096 + 129};
    for (size_t k = 0; k < 200 + sizeof extra / sizeof *extra; k++) {
        size_t n = k < 200 ? k : extra[k - 200];
        fill(buf, n, (uint32_t)k);
        repro_digest want;
        uint8_t got[32];
        ck_assert_int_eq(repro_sha256(buf, n, &want), 0);
        repro_hd_sha256(buf, n, got);
        ck_assert_msg(memcmp(got, want.b, 32) == 0, "length %zu: shared SHA-256 != OpenSSL", n);
    }
    free(buf);
}
END_TEST

/* FIPS 180-4's two-block example through the shared code alone. */
START_TEST(test_known_answer)
{
    static const char msg[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    static const uint8_t want[32] = {
        0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8, 0xe5, 0xc0, 0x26, 0x93, 0x0c, 0x3e, 0x60, 0x39,
        0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff, 0x21, 0x67, 0xf6, 0xec, 0xed, 0xd4, 0x19, 0xdb, 0x06, 0xc1};
    uint8_t got[32];
    repro_hd_sha256((const uint8_t *)msg, 56, got);
    ck_assert(memcmp(got, want, 32) == 0);
}
END_TEST

/* Plain reference of the stats contract (backend.h, tensor_leaves). */
static void ref_stats(const float *x, size_t n, repro_buffer_stats *st)
{
    double l2[4] = {0}, sum[4] = {0}, mx[4] = {0};
    long nf = 0;
    for (size_t i = 0; i < n; i++) {
        int j = (int)(i % 4);
        if (!isfinite(x[i])) {
            nf++;
            continue; /* adds 0 */
        }
        double v = x[i];
        l2[j] += v * v;
        sum[j] += v;
        mx[j] = fabs(v) > mx[j] ? fabs(v) : mx[j];
    }
    st->l2 = sqrt((l2[0] + l2[1]) + (l2[2] + l2[3]));
    st->sum = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    double a = mx[0] > mx[1] ? mx[0] : mx[1], b = mx[2] > mx[3] ? mx[2] : mx[3];
    st->max_abs = a > b ? a : b;
    st->nonfinite = nf;
}

/* The CPU backend's tensor_leaves: leaf digests = OpenSSL's, the tensor
 * digest from them = the digest of the bytes, stats = the reference. */
START_TEST(test_cpu_tensor_leaves)
{
    const repro_backend *be = repro_backend_get("cpu");
    ck_assert_ptr_nonnull(be);
    void *ctx = NULL;
    char why[128];
    repro_backend_options o = {.threads = 1};
    ck_assert_int_eq(be->create(&ctx, &o, why, sizeof why), 0);
    static const size_t counts[] = {0, 1, 5, 1023, 1024, 1025, 3000};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        size_t n = counts[k], nbytes = n * 4, nleaves = repro_leaf_count(nbytes);
        float *x = be->alloc(ctx, nbytes ? nbytes : 4);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)((long)(i * 7919 % 2003) - 1000) / 37.0f;
        if (n > 5) {
            x[3] = INFINITY;
            x[n - 2] = NAN;
        }
        uint8_t *leaves = malloc(32 * (nleaves ? nleaves : 1));
        repro_buffer_stats st, ref;
        ck_assert_int_eq(be->tensor_leaves(ctx, 1 /* SHA-256 */, x, nbytes, leaves, &st), 0);
        for (size_t l = 0; l < nleaves; l++) {
            repro_digest d;
            size_t off = l * 4096, len = nbytes - off < 4096 ? nbytes - off : 4096;
            ck_assert_int_eq(repro_sha256((uint8_t *)x + off, len, &d), 0);
            ck_assert_msg(memcmp(d.b, leaves + 32 * l, 32) == 0, "n %zu leaf %zu", n, l);
        }
        int64_t shape[1] = {(int64_t)n};
        repro_digest from_bytes, from_leaves;
        ck_assert_int_eq(repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, &from_bytes, "t", "f32", 1,
                                                      shape, x, nbytes), 0);
        ck_assert_int_eq(repro_tensor_digest_from_leaves_fn(REPRO_DIGEST_SHA256, &from_leaves, "t", "f32", 1, shape, nbytes,
                                                         (const repro_digest *)leaves),
                         0);
        ck_assert(repro_digest_eq(&from_bytes, &from_leaves));
        ref_stats(x, n, &ref);
        ck_assert(memcmp(&st.l2, &ref.l2, 8) == 0 && memcmp(&st.sum, &ref.sum, 8) == 0 &&
                  memcmp(&st.max_abs, &ref.max_abs, 8) == 0);
        ck_assert_int_eq(st.nonfinite, ref.nonfinite);
        free(leaves);
        be->free(ctx, x);
    }
    be->destroy(ctx);
}
END_TEST

Suite *sha256_shared_suite(void)
{
    Suite *s = suite_create("sha256_shared");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_matches_openssl);
    tcase_add_test(tc, test_known_answer);
    tcase_add_test(tc, test_cpu_tensor_leaves);
    suite_add_tcase(s, tc);
    return s;
}
