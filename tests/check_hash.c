/* The hash module: SHA-256 and XXH3-128 known answers, and the tensor tree
 * hash under both digest functions against a plain re-computation of its
 * definition, for any thread count. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "record/hash.h"
#include "kernels/isa.h"
#include "record/leaf_sha.h"
#include "record/leaf_sha16.h"
#include "record/leaf_xxh3.h"
#include "record/sha256.h"
#include "util/error.h"
#include "kernels/cpu/pool.h"
#include "testutil.h"

static void expect_hex(const void *data, size_t len, const char *hex)
{
    repro_digest d;
    char got[65];
    ck_assert_int_eq(repro_sha256(data, len, &d), 0);
    repro_digest_hex(&d, got);
    ck_assert_str_eq(got, hex);
}

START_TEST(test_sha256_known_answers)
{
    expect_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

/* repro_sha256_concat (the tree hash's root: header, then leaf digests)
 * hashes a then b as one message, the known answer of "abc" split at every
 * point; negative control: the halves swapped give another digest. */
START_TEST(test_sha256_concat_is_one_message)
{
    const char *msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    repro_digest whole, part;
    ck_assert_int_eq(repro_sha256(msg, 56, &whole), 0);
    for (size_t cut = 0; cut <= 56; cut++) {
        ck_assert_int_eq(repro_sha256_concat(msg, cut, msg + cut, 56 - cut, &part), 0);
        ck_assert(repro_digest_eq(&part, &whole));
    }
    ck_assert_int_eq(repro_sha256_concat(msg, 56, NULL, 0, &part), 0);
    ck_assert(repro_digest_eq(&part, &whole));
    ck_assert_int_eq(repro_sha256_concat(msg + 28, 28, msg, 28, &part), 0);
    ck_assert(!repro_digest_eq(&part, &whole));
}
END_TEST

START_TEST(test_hex_round_trip)
{
    repro_digest d, e;
    char hex[65];
    ck_assert_int_eq(repro_sha256("x", 1, &d), 0);
    repro_digest_hex(&d, hex);
    ck_assert_int_eq(repro_digest_from_hex(hex, &e), 0);
    ck_assert(repro_digest_eq(&d, &e));
    hex[5] = 'G';
    ck_assert_int_eq(repro_digest_from_hex(hex, &e), REPRO_EINVAL);
    ck_assert_int_eq(repro_digest_from_hex("abc", &e), REPRO_EINVAL);
}
END_TEST

/* One leaf digest as repro/digest.h defines it, from the libraries
 * directly: OpenSSL's SHA-256 (32 bytes) or libxxhash's one-shot XXH3-128
 * in canonical form (16 bytes, then 16 zero). */
static void reference_leaf(repro_digest_fn fn, const void *p, size_t len, repro_digest *out)
{
    memset(out, 0, sizeof *out);
    if (fn == REPRO_DIGEST_SHA256) {
        ck_assert_int_eq(repro_sha256(p, len, out), 0);
        return;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
    memcpy(out->b, c.digest, 16);
}

/* The definition of repro/digest.h, written out plainly, one leaf at a
 * time: each leaf contributes its 32 (SHA-256) or 16 (XXH3-128) bytes. */
static void reference_digest(repro_digest_fn fn, const repro_tensor_view *t, repro_digest *out)
{
    size_t nleaves = repro_leaf_count(t->nbytes), llen = fn == REPRO_DIGEST_SHA256 ? 32 : 16;
    const char *fname = fn == REPRO_DIGEST_SHA256 ? "repro-tensor/v1" : "repro-tensor/v2-xxh3-128";
    size_t hdr_len = strlen(fname) + 1 + strlen(t->name) + 1 + strlen(t->dtype) + 1 + 4 +
                     8 * (size_t)t->ndim + 8;
    size_t total = hdr_len + nleaves * llen;
    uint8_t *buf = malloc(total), *p = buf;
    strcpy((char *)p, fname);
    p += strlen(fname) + 1;
    strcpy((char *)p, t->name);
    p += strlen(t->name) + 1;
    strcpy((char *)p, t->dtype);
    p += strlen(t->dtype) + 1;
    uint32_t nd = (uint32_t)t->ndim; /* test machine is little-endian x86-64/arm64 */
    memcpy(p, &nd, 4);
    p += 4;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        memcpy(p, &d, 8);
        p += 8;
    }
    uint64_t nb = t->nbytes;
    memcpy(p, &nb, 8);
    p += 8;
    for (size_t i = 0; i < nleaves; i++) {
        size_t off = i * REPRO_LEAF_BYTES;
        size_t n = t->nbytes - off < REPRO_LEAF_BYTES ? t->nbytes - off : REPRO_LEAF_BYTES;
        repro_digest leaf;
        reference_leaf(fn, (const uint8_t *)t->data + off, n, &leaf);
        memcpy(p, leaf.b, llen);
        p += llen;
    }
    ck_assert_int_eq(repro_sha256(buf, total, out), 0);
    free(buf);
}

static void tree_hash_matches_reference(repro_digest_fn fn)
{
    /* Sizes around leaf boundaries, and big enough for many pool chunks. */
    static const long sizes[] = {0, 1, 1023, 1024, 1025, 4096, 100000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        long n = sizes[s];
        float *x = malloc((size_t)(n ? n : 1) * sizeof(float));
        for (long i = 0; i < n; i++)
            x[i] = (float)i * 0.25f - 3.0f;
        long shape[1] = {n};
        repro_tensor_view t = {"fc1.weight", "f32", 1, shape, x, (size_t)n * sizeof(float), fn};
        repro_digest ref, d1, d2, d3;
        reference_digest(fn, &t, &ref);
        ck_assert_int_eq(repro_tensor_digest(&t, &d1, NULL), 0);
        ck_assert(repro_digest_eq(&ref, &d1));
        /* Leaves hashed elsewhere, last first (as a GPU or another thread
         * might), then handed in: the same digest. */
        size_t nl = repro_leaf_count(t.nbytes);
        repro_digest *lv = malloc((nl ? nl : 1) * sizeof *lv);
        for (size_t i = nl; i-- > 0;) {
            size_t off = i * REPRO_LEAF_BYTES;
            size_t len = t.nbytes - off < REPRO_LEAF_BYTES ? t.nbytes - off : REPRO_LEAF_BYTES;
            reference_leaf(fn, (const char *)x + off, len, &lv[i]);
        }
        int64_t shape64[1] = {n};
        ck_assert_int_eq(repro_tensor_digest_from_leaves_fn(fn, &d2, "fc1.weight", "f32", 1,
                                                            shape64, t.nbytes, lv), 0);
        ck_assert(repro_digest_eq(&ref, &d2));
        ck_assert_int_eq(repro_tensor_digest_bytes_fn(fn, &d3, "fc1.weight", "f32", 1, shape64,
                                                      x, t.nbytes), 0);
        ck_assert(repro_digest_eq(&ref, &d3));
        /* the public leaves: the same as the reference's */
        repro_digest *pl = malloc((nl ? nl : 1) * sizeof *pl);
        ck_assert_int_eq(repro_leaf_digests(fn, x, t.nbytes, pl), 0);
        ck_assert(nl == 0 || !memcmp(pl, lv, nl * sizeof *pl));
        free(pl);
        free(lv);
        free(x);
    }
}

START_TEST(test_tree_hash_matches_reference_any_threads)
{
    tree_hash_matches_reference(REPRO_DIGEST_XXH3);
    tree_hash_matches_reference(REPRO_DIGEST_SHA256);
}
END_TEST

/* The default (what repro_tensor_digest_bytes and a zero-initialized view
 * compute) is XXH3-128; the two functions never give the same digest of
 * the same bytes (their header names differ), and their names round-trip. */
START_TEST(test_digest_functions_named_and_distinct)
{
    float x[3] = {1, 2, 3};
    int64_t s[1] = {3};
    repro_digest dflt, xx, sha;
    ck_assert_int_eq(repro_tensor_digest_bytes(&dflt, "x", "f32", 1, s, x, sizeof x), 0);
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(REPRO_DIGEST_XXH3, &xx, "x", "f32", 1, s, x,
                                                  sizeof x), 0);
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, &sha, "x", "f32", 1, s, x,
                                                  sizeof x), 0);
    ck_assert(repro_digest_eq(&dflt, &xx));
    ck_assert(!repro_digest_eq(&xx, &sha));
    ck_assert_str_eq(repro_digest_fn_name(REPRO_DIGEST_XXH3), REPRO_TENSOR_HASH_VERSION);
    ck_assert_str_eq(repro_digest_fn_name(REPRO_DIGEST_SHA256), "repro-tensor/v1");
    ck_assert_ptr_null(repro_digest_fn_name((repro_digest_fn)7));
    repro_digest_fn fn;
    ck_assert_int_eq(repro_digest_fn_from_name("repro-tensor/v1", &fn), 0);
    ck_assert_int_eq(fn, REPRO_DIGEST_SHA256);
    ck_assert_int_eq(repro_digest_fn_from_name("xxh3", &fn), 0);
    ck_assert_int_eq(fn, REPRO_DIGEST_XXH3);
    ck_assert_int_eq(repro_digest_fn_from_name("sha256", &fn), 0);
    ck_assert_int_eq(fn, REPRO_DIGEST_SHA256);
    ck_assert_int_eq(repro_digest_fn_from_name("repro-tensor/v9", &fn), REPRO_EINVAL);
    ck_assert_int_eq(repro_leaf_digest_len(REPRO_DIGEST_XXH3), 16);
    ck_assert_int_eq(repro_leaf_digest_len(REPRO_DIGEST_SHA256), 32);
    repro_error_clear();
}
END_TEST

START_TEST(test_bitwise_semantics_and_header)
{
    float a[4] = {0.0f, 1.0f, 2.0f, 3.0f}, b[4];
    long shape[2] = {2, 2}, shape_t[2] = {4, 1};
    repro_tensor_view t = {"w", "f32", 2, shape, a, sizeof a, REPRO_DIGEST_XXH3};
    repro_digest base, d;
    ck_assert_int_eq(repro_tensor_digest(&t, &base, NULL), 0);
    /* -0.0 is not +0.0 */
    memcpy(b, a, sizeof a);
    b[0] = -0.0f;
    t.data = b;
    ck_assert_int_eq(repro_tensor_digest(&t, &d, NULL), 0);
    ck_assert(!repro_digest_eq(&base, &d));
    /* two NaNs with different payloads differ */
    uint32_t n1 = 0x7fc00001, n2 = 0x7fc00002;
    memcpy(&b[0], &n1, 4);
    repro_digest dn1, dn2;
    ck_assert_int_eq(repro_tensor_digest(&t, &dn1, NULL), 0);
    memcpy(&b[0], &n2, 4);
    ck_assert_int_eq(repro_tensor_digest(&t, &dn2, NULL), 0);
    ck_assert(!repro_digest_eq(&dn1, &dn2));
    /* the header counts: name, dtype and shape */
    t.data = a;
    t.name = "v";
    ck_assert_int_eq(repro_tensor_digest(&t, &d, NULL), 0);
    ck_assert(!repro_digest_eq(&base, &d));
    t.name = "w";
    t.dtype = "i32";
    ck_assert_int_eq(repro_tensor_digest(&t, &d, NULL), 0);
    ck_assert(!repro_digest_eq(&base, &d));
    t.dtype = "f32";
    t.shape = shape_t;
    ck_assert_int_eq(repro_tensor_digest(&t, &d, NULL), 0);
    ck_assert(!repro_digest_eq(&base, &d));
}
END_TEST

START_TEST(test_leaf_locates_change)
{
    enum { N = 5000 }; /* 5 leaves of 1024 floats */
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    long shape[1] = {N};
    repro_tensor_view t = {"x", "f32", 1, shape, x, sizeof x, REPRO_DIGEST_XXH3};
    repro_digest r1, r2, l1[5], l2[5];
    for (int fn = 0; fn < 2; fn++) {
        t.fn = (repro_digest_fn)fn;
        x[3000] = 3000.0f;
        ck_assert_int_eq(repro_tensor_digest(&t, &r1, l1), 0);
        x[3000] = 1e9f; /* element 3000 lives in leaf 3000 / 1024 = 2 */
        ck_assert_int_eq(repro_tensor_digest(&t, &r2, l2), 0);
        ck_assert(!repro_digest_eq(&r1, &r2));
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(repro_digest_eq(&l1[i], &l2[i]), i != 2);
    }
}
END_TEST

/* Known answers that hold on every machine and build: the tensor digest
 * (also computed independently from the format's definition with Python's
 * hashlib, and libxxhash through ctypes for XXH3-128), a step digest over
 * two tensor digests, and the chain after it, under each digest function.
 * A change here is a change of the trace format: it orphans every golden.
 * The SHA-256 ones are v1's, unchanged: traces and goldens written before
 * XXH3 still verify. */
static void known_answers(repro_digest_fn fn, const char *const hex_want[4])
{
    float x[4] = {1, 2, 3, 4};
    static float big[5000];
    for (int i = 0; i < 5000; i++)
        big[i] = (float)i * 0.25f;
    int64_t sx[1] = {4}, sb[2] = {50, 100};
    repro_digest d[2], step, chain, zero = {{0}};
    char hex[65];
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(fn, &d[0], "x", "f32", 1, sx, x, sizeof x), 0);
    repro_digest_hex(&d[0], hex);
    ck_assert_str_eq(hex, hex_want[0]);
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(fn, &d[1], "param.w", "f32", 2, sb, big,
                                                  sizeof big), 0);
    repro_digest_hex(&d[1], hex);
    ck_assert_str_eq(hex, hex_want[1]);
    ck_assert_int_eq(repro_sha256_digests(d, 2, &step), 0);
    repro_digest_hex(&step, hex);
    ck_assert_str_eq(hex, hex_want[2]);
    repro_digest pair[2] = {zero, step};
    ck_assert_int_eq(repro_sha256_digests(pair, 2, &chain), 0);
    repro_digest_hex(&chain, hex);
    ck_assert_str_eq(hex, hex_want[3]);
}

START_TEST(test_known_answer_digests)
{
    static const char *const v1[4] = {
        "d4bf5f8f5a5f658190cfc061a7f236b4188bc6d7c9527c348e8c8708c9a67659",
        "f248fc64bbc20fea074429a6496832062c9711623fc093e4c88c8133c6c7efe6",
        "508a6721932c51cbcf1e5b8db4f3bb67877009645ecac87a479ffbfb354339ff",
        "0537e9e51a4d0c689ce0429797af9b577f9f2620667ec2a7cad7b83610682cf8"};
    static const char *const v2[4] = {
        "6c6f0218ca8d3b85b091c1dabdf6b3720c8e9bdb347189e5617ac431d4ee6ef3",
        "8088175adeb7c6124a873cc4b281a8ac4cf0a0e1905d9e0f7365d8a2a8074ed5",
        "ffd448594b32e4e73b00d0e9ce74449e173fb21af069c6adec6048c4f0bbf45b",
        "7a54ea676dd81fe3b541dcc75712fb27ce2bd029fcb5747e0b6fc438dff0e757"};
    known_answers(REPRO_DIGEST_SHA256, v1);
    known_answers(REPRO_DIGEST_XXH3, v2);
    /* XXH3-128 itself: the empty input's digest from xxHash's own tests */
    unsigned char d[16];
    repro_digest lv[1];
    char hex[33];
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits("", 0));
    memcpy(d, c.digest, 16);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    ck_assert_str_eq(hex, "99aa06d3014798d86001c324468d497f");
    if (repro_leaf_xxh3_avx2_available() && repro_isa_supported(REPRO_ISA_AVX2)) {
        repro_leaf_xxh3_avx2("", 0, lv[0].b);
        ck_assert(!memcmp(lv[0].b, d, 16));
    }
}
END_TEST

/* XXH3-128 leaves, on every path (the library's, and its AVX2 inline path
 * while the vector path is avx2 or wider), against the library's one-shot
 * for every range of leaves and last leaves of every length class XXH3
 * has; the AVX2 self-test passes, and fails on its negative control. */
START_TEST(test_xxh3_leaf_paths_equal_library)
{
    static const size_t tails[] = {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 4095};
    int self = repro_leaf_xxh3_self_test(0);
    if (self >= 0) {
        ck_assert_int_eq(self, 1);
        ck_assert_int_eq(repro_leaf_xxh3_self_test(1), 0);
    }
    int avx2_seen = 0;
    for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
        if (repro_isa_select((repro_isa)isa))
            continue;
        int avx2 = !strncmp(repro_leaf_xxh3_path(), "avx2 ", 5);
        avx2_seen |= avx2;
        ck_assert_int_eq(avx2, isa >= REPRO_ISA_AVX2 && self == 1);
        for (size_t k = 0; k < sizeof tails / sizeof *tails; k++) {
            size_t nbytes = 3 * REPRO_LEAF_BYTES + tails[k], nl = repro_leaf_count(nbytes);
            unsigned char *d = malloc(nbytes + 1);
            for (size_t i = 0; i < nbytes; i++)
                d[i] = (unsigned char)(i * 2654435761u >> 13);
            repro_digest ref[4], got[4];
            for (size_t i = 0; i < nl; i++) {
                size_t off = i * REPRO_LEAF_BYTES;
                size_t len = nbytes - off < REPRO_LEAF_BYTES ? nbytes - off : REPRO_LEAF_BYTES;
                reference_leaf(REPRO_DIGEST_XXH3, d + off, len, &ref[i]);
            }
            for (size_t i0 = 0; i0 <= nl; i0++)
                for (size_t i1 = i0; i1 <= nl; i1++) {
                    memset(got, 0xee, sizeof got);
                    repro_leaf_xxh3_range(d, nbytes, i0, i1, got);
                    for (size_t i = i0; i < i1; i++)
                        ck_assert(repro_digest_eq(&got[i], &ref[i]));
                }
            free(d);
        }
    }
    repro_isa_select(repro_isa_best());
    if (!avx2_seen)
        tu_skip("hash", "no AVX2 on this CPU: the AVX2 XXH3 leaf path was not run");
}
END_TEST

/* The leaves, whichever path hashes them (leaf_sha.h): sixteen full leaves
 * in AVX-512 lanes while the vector path is avx512, four (then two)
 * interleaved on SHA-NI where the CPU has it, OpenSSL otherwise, and
 * OpenSSL when forced. Every range, odd starts and ends, a short last leaf,
 * misaligned data and extreme bytes against OpenSSL one leaf at a time,
 * under every vector path this CPU has (so each leaf path runs here). */
static void leaf_ranges_equal_openssl(const char *path)
{
    enum { NL = 21 }; /* 16 + 4 + 1 full leaves, then a short one */
    size_t nbytes = NL * REPRO_LEAF_BYTES + 7, nl = NL + 1;
    unsigned char *buf = malloc(nbytes + 1);
    uint32_t x = 2463534242u;
    for (int pattern = 0; pattern < 3; pattern++)
        for (int skew = 0; skew < 2; skew++) {
            unsigned char *d = buf + skew;
            for (size_t i = 0; i < nbytes; i++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                d[i] = pattern == 0 ? (unsigned char)x : pattern == 1 ? 0x00 : 0xff;
            }
            repro_digest ref[NL + 1], got[NL + 1], forced[NL + 1];
            for (size_t i = 0; i < nl; i++) {
                size_t off = i * REPRO_LEAF_BYTES;
                size_t len = nbytes - off < REPRO_LEAF_BYTES ? nbytes - off : REPRO_LEAF_BYTES;
                ck_assert_int_eq(repro_sha256(d + off, len, &ref[i]), 0);
            }
            for (size_t i0 = 0; i0 <= nl; i0++)
                for (size_t i1 = i0; i1 <= nl; i1++) {
                    memset(got, 0, sizeof got);
                    ck_assert_int_eq(repro_leaf_sha_range(d, nbytes, i0, i1, got), 0);
                    for (size_t i = i0; i < i1; i++)
                        ck_assert_msg(repro_digest_eq(&got[i], &ref[i]),
                                      "leaf %zu of [%zu, %zu) differs (%s)", i, i0, i1, path);
                }
            repro_leaf_sha_force_openssl("test");
            ck_assert_str_eq(repro_leaf_sha_path(), "openssl (test)");
            ck_assert_int_eq(repro_leaf_sha_range(d, nbytes, 0, nl, forced), 0);
            repro_leaf_sha_force_openssl(NULL);
            ck_assert(!memcmp(forced, ref, nl * sizeof *ref));
        }
    free(buf);
}

START_TEST(test_leaf_paths_equal_openssl)
{
    ck_assert_int_ne(repro_leaf_sha_self_test(1), 1); /* the self-test can fail */
    int wide_seen = 0;
    for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
        if (repro_isa_select((repro_isa)isa))
            continue; /* not on this CPU */
        const char *path = repro_leaf_sha_path();
        ck_assert_msg(!strstr(path, "self-test failed"), "leaf SHA path: %s", path);
        if (strstr(path, "sha-ni x4") || strstr(path, "avx512 x16"))
            ck_assert_int_eq(repro_leaf_sha_self_test(0), 1);
        /* The sixteen lanes run exactly when the vector path is avx512 on
         * a CPU with AVX-512BW. */
        int wide = strstr(path, "avx512 x16") != NULL;
        ck_assert_int_eq(wide, isa == REPRO_ISA_AVX512 && repro_leaf_sha16_supported());
        wide_seen |= wide;
        leaf_ranges_equal_openssl(path);
    }
    repro_isa_select(repro_isa_best());
    if (!wide_seen)
        tu_skip("hash", "no AVX-512BW on this CPU: the sixteen-lane leaf path was not run");
}
END_TEST

Suite *hash_suite(void)
{
    Suite *s = suite_create("hash");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_known_answer_digests);
    tcase_add_test(tc, test_sha256_known_answers);
    tcase_add_test(tc, test_sha256_concat_is_one_message);
    tcase_add_test(tc, test_hex_round_trip);
    tcase_add_test(tc, test_tree_hash_matches_reference_any_threads);
    tcase_add_test(tc, test_bitwise_semantics_and_header);
    tcase_add_test(tc, test_leaf_locates_change);
    tcase_add_test(tc, test_leaf_paths_equal_openssl);
    tcase_add_test(tc, test_xxh3_leaf_paths_equal_library);
    tcase_add_test(tc, test_digest_functions_named_and_distinct);
    suite_add_tcase(s, tc);
    return s;
}
