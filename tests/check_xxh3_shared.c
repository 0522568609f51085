/* The shared XXH3-128 (kernels/shared/xxh3.h), the code the CUDA backend
 * runs on the device to digest 4 KiB leaves, against libxxhash's (the
 * library's own leaves, record/leaf_xxh3.c) on the same bytes; and the CPU
 * backend's tensor_leaves entry under XXH3-128 feeding the default tensor
 * digest, which must equal the digest of the bytes. A difference here
 * would make a GPU-hashed trace disagree with a CPU-hashed one on equal
 * tensors. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "kernels/backend.h"
#include "kernels/shared/xxh3.h"
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

/* Every length from 0 to a leaf and past it (each of XXH3's paths: 0,
 * 1-3, 4-8, 9-16, 17-128, 129-240, and stripes, blocks and their ends),
 * random contents at every alignment mod 8, and all-zero and all-one
 * bytes at the boundaries. */
START_TEST(test_matches_libxxhash)
{
    enum { MAXN = 4096 + 1100 };
    uint8_t *buf = malloc(MAXN + 8);
    ck_assert_ptr_nonnull(buf);
    for (size_t n = 0; n <= MAXN; n++) {
        uint8_t *p = buf + n % 8;
        fill(p, n, (uint32_t)n);
        XXH128_canonical_t want;
        XXH128_canonicalFromHash(&want, XXH3_128bits(p, n));
        uint8_t got[16];
        repro_hd_xxh3_128(p, n, got);
        ck_assert_msg(memcmp(got, want.digest, 16) == 0, "length %zu: shared XXH3-128 != libxxhash",
                      n);
    }
    static const size_t edges[] = {0, 3, 8, 16, 128, 240, 1024, 4096};
    for (int fillv = 0; fillv < 2; fillv++)
        for (size_t k = 0; k < sizeof edges / sizeof *edges; k++) {
            memset(buf, fillv ? 0xff : 0x00, edges[k] + 1);
            for (size_t n = edges[k]; n <= edges[k] + 1; n++) {
                XXH128_canonical_t want;
                XXH128_canonicalFromHash(&want, XXH3_128bits(buf, n));
                uint8_t got[16];
                repro_hd_xxh3_128(buf, n, got);
                ck_assert_msg(memcmp(got, want.digest, 16) == 0, "length %zu, bytes %d", n, fillv);
            }
        }
    free(buf);
}
END_TEST

/* xxHash's own known answer for the empty input (seed 0), through the
 * shared code alone; negative control: one input byte changed changes it. */
START_TEST(test_known_answer)
{
    static const uint8_t want[16] = {0x99, 0xaa, 0x06, 0xd3, 0x01, 0x47, 0x98, 0xd8,
                                     0x60, 0x01, 0xc3, 0x24, 0x46, 0x8d, 0x49, 0x7f};
    uint8_t got[16], a[16], b[16];
    repro_hd_xxh3_128((const uint8_t *)"", 0, got);
    ck_assert(memcmp(got, want, 16) == 0);
    uint8_t leaf[4096];
    fill(leaf, sizeof leaf, 7);
    repro_hd_xxh3_128(leaf, sizeof leaf, a);
    leaf[2048] ^= 0x01;
    repro_hd_xxh3_128(leaf, sizeof leaf, b);
    ck_assert(memcmp(a, b, 16) != 0);
}
END_TEST

/* The CPU backend's tensor_leaves under XXH3-128 (fn 0): each slot is
 * libxxhash's 16 bytes then 16 zeros, the tensor digest from them is the
 * default digest of the bytes; an unknown function is refused. */
START_TEST(test_cpu_tensor_leaves_xxh3)
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
        fill((uint8_t *)x, nbytes, (uint32_t)k);
        uint8_t *leaves = malloc(32 * (nleaves ? nleaves : 1));
        ck_assert_int_eq(be->tensor_leaves(ctx, 0, x, nbytes, leaves, NULL), 0);
        static const uint8_t zero[16];
        for (size_t l = 0; l < nleaves; l++) {
            size_t off = l * 4096, len = nbytes - off < 4096 ? nbytes - off : 4096;
            XXH128_canonical_t want;
            XXH128_canonicalFromHash(&want, XXH3_128bits((uint8_t *)x + off, len));
            ck_assert_msg(memcmp(want.digest, leaves + 32 * l, 16) == 0, "n %zu leaf %zu", n, l);
            ck_assert(memcmp(zero, leaves + 32 * l + 16, 16) == 0);
        }
        int64_t shape[1] = {(int64_t)n};
        repro_digest from_bytes, from_leaves;
        ck_assert_int_eq(repro_tensor_digest_bytes(&from_bytes, "t", "f32", 1, shape, x, nbytes),
                         0);
        ck_assert_int_eq(repro_tensor_digest_from_leaves(&from_leaves, "t", "f32", 1, shape, nbytes,
                                                         (const repro_digest *)leaves),
                         0);
        ck_assert(repro_digest_eq(&from_bytes, &from_leaves));
        free(leaves);
        be->free(ctx, x);
    }
    uint8_t slot[32];
    float one = 1.0f;
    ck_assert_int_eq(be->tensor_leaves(ctx, 9, &one, 4, slot, NULL), -1);
    be->destroy(ctx);
}
END_TEST

Suite *xxh3_shared_suite(void)
{
    Suite *s = suite_create("xxh3_shared");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_matches_libxxhash);
    tcase_add_test(tc, test_known_answer);
    tcase_add_test(tc, test_cpu_tensor_leaves_xxh3);
    suite_add_tcase(s, tc);
    return s;
}
