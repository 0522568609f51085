/* Leaves of the tree hash, sixteen full leaves at a time in AVX-512 lanes
 * (leaf_sha16.c) when the vector path is avx512, then four (then two) at a
 * time on SHA-NI (leaf_sha.h).
 *
 * The two-message compression follows the SHA-256 standard (FIPS 180-4)
 * in the form the SHA extensions compute it: the state as two registers
 * (A,B,E,F) and (C,D,G,H), sha256rnds2 doing two rounds, sha256msg1/msg2
 * extending the message schedule four words at a time. A full 4 KiB leaf is
 * 64 message blocks plus one padding block that is the same for every full
 * leaf (0x80, zeros, the bit length 32768), so it is built once. */
#include "record/leaf_sha.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/isa.h"
#include "kernels/shared/sha256.h"
#include "record/leaf_sha16.h"
#include "record/sha256.h"

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif

enum { PATH_OPENSSL = 0, PATH_SHANI = 1 };

static int path = PATH_OPENSSL;
static const char *path_name = "openssl";
/* The AVX-512 lanes passed their self-test; they are used while the vector
 * path (kernels/isa.h) is avx512, so REPRO_ISA=avx2 leaves them out (and the
 * tests reach both paths). */
static int wide16;
/* Set before hashing starts (repro's main, tests), read by every thread. */
static _Atomic(const char *) forced_why;
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;

/* One leaf through OpenSSL EVP. */
static int leaf_openssl(const unsigned char *data, size_t nbytes, size_t i, repro_digest *out)
{
    size_t off = i * REPRO_LEAF_BYTES;
    size_t len = nbytes - off < REPRO_LEAF_BYTES ? nbytes - off : REPRO_LEAF_BYTES;
    return repro_sha256_concat(data + off, len, NULL, 0, out);
}

#if HAVE_X86

/* The padding block of every full leaf. */
static unsigned char full_leaf_pad[64];

#define SHANI __attribute__((target("sha,sse4.1,ssse3")))

/* Leaves in flight at once on the wide path. sha256rnds2 has a latency of
 * ~4 cycles and a throughput of ~1 a cycle (measured here, Zen 4): one
 * message leaves the unit idle 3 cycles in 4. Four messages interleaved
 * ran 3.5 GB/s a core against 3.2 for two (the unit also runs the message
 * schedule, so twice the messages is not twice the speed) and 3.3 for
 * eight (which spill the sixteen xmm registers). */
enum { MAX_WAYS = 4 };

/* Big-endian words <-> the little-endian lanes the instructions use. */
SHANI static inline __m128i byte_swap_words(__m128i x)
{
    return _mm_shuffle_epi8(x, _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL));
}

/* One 64-byte block of each of N messages into their states (s0 = ABEF,
 * s1 = CDGH per message). The messages' instructions are independent, so
 * each one's rounds run while the others' wait on sha256rnds2's latency. */
SHANI static inline void compress_n(int n, __m128i *s0, __m128i *s1,
                                    const unsigned char *const *blk)
{
    __m128i abef[MAX_WAYS], cdgh[MAX_WAYS], w[MAX_WAYS][4];
    for (int m = 0; m < n; m++) {
        abef[m] = s0[m];
        cdgh[m] = s1[m];
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; g++) { /* rounds 4g .. 4g+3 */
        __m128i k = _mm_loadu_si128((const __m128i *)(const void *)(repro_sha256_k_host + 4 * g));
#pragma GCC unroll 4
        for (int m = 0; m < n; m++) {
            __m128i x;
            if (g < 4) {
                x = byte_swap_words(
                    _mm_loadu_si128((const __m128i *)(const void *)(blk[m] + 16 * g)));
            } else { /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a time */
                __m128i t = _mm_sha256msg1_epu32(w[m][g & 3], w[m][(g + 1) & 3]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(w[m][(g + 3) & 3], w[m][(g + 2) & 3], 4));
                x = _mm_sha256msg2_epu32(t, w[m][(g + 3) & 3]);
            }
            w[m][g & 3] = x;
            __m128i wk = _mm_add_epi32(x, k);
            cdgh[m] = _mm_sha256rnds2_epu32(cdgh[m], abef[m], wk);
            abef[m] = _mm_sha256rnds2_epu32(abef[m], cdgh[m], _mm_shuffle_epi32(wk, 0x0E));
        }
    }
    for (int m = 0; m < n; m++) {
        s0[m] = _mm_add_epi32(s0[m], abef[m]);
        s1[m] = _mm_add_epi32(s1[m], cdgh[m]);
    }
}

/* SHA-256 of N full 4 KiB leaves leaf[0..n), N = 2 or MAX_WAYS. */
SHANI static inline void n_full_leaves(int n, const unsigned char *const *leaf,
                                       repro_digest *const *out)
{
    __m128i dcba = _mm_loadu_si128((const __m128i *)(const void *)repro_sha256_h0_host);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)(const void *)(repro_sha256_h0_host + 4));
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1), efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef0 = _mm_alignr_epi8(cdab, efgh, 8), cdgh0 = _mm_blend_epi16(efgh, cdab, 0xF0);
    __m128i s0[MAX_WAYS], s1[MAX_WAYS];
    const unsigned char *blk[MAX_WAYS], *pad[MAX_WAYS];
    for (int m = 0; m < n; m++) {
        s0[m] = abef0;
        s1[m] = cdgh0;
        pad[m] = full_leaf_pad;
    }
    for (size_t off = 0; off < REPRO_LEAF_BYTES; off += 64) {
        for (int m = 0; m < n; m++)
            blk[m] = leaf[m] + off;
        compress_n(n, s0, s1, blk);
    }
    compress_n(n, s0, s1, pad);
    for (int m = 0; m < n; m++) {
        __m128i feba = _mm_shuffle_epi32(s0[m], 0x1B), dchg = _mm_shuffle_epi32(s1[m], 0xB1);
        __m128i abcd = _mm_blend_epi16(feba, dchg, 0xF0), efgh_out = _mm_alignr_epi8(dchg, feba, 8);
        _mm_storeu_si128((__m128i *)(void *)out[m]->b, byte_swap_words(abcd));
        _mm_storeu_si128((__m128i *)(void *)(out[m]->b + 16), byte_swap_words(efgh_out));
    }
}

SHANI static void two_full_leaves(const unsigned char *a, const unsigned char *b,
                                  repro_digest *da, repro_digest *db)
{
    const unsigned char *leaf[2] = {a, b};
    repro_digest *out[2] = {da, db};
    n_full_leaves(2, leaf, out);
}

/* MAX_WAYS consecutive full leaves starting at first, digests to out[0..). */
SHANI static void many_full_leaves(const unsigned char *first, repro_digest *out)
{
    const unsigned char *leaf[MAX_WAYS];
    repro_digest *dst[MAX_WAYS];
    for (int m = 0; m < MAX_WAYS; m++) {
        leaf[m] = first + (size_t)m * REPRO_LEAF_BYTES;
        dst[m] = out + m;
    }
    n_full_leaves(MAX_WAYS, leaf, dst);
}

static int cpu_has_sha_ni(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 29)) != 0; /* CPUID.(7,0):EBX.SHA */
}

/* Every fast path this CPU has (MAX_WAYS leaves and two on SHA-NI, sixteen
 * in AVX-512 lanes) must give OpenSSL's digests of a test pattern
 * (`corrupt`: one byte of OpenSSL's input to the first leaf, which every
 * path hashes, differs, so they must not). shani/x16: which to test.
 * 1 passed, 0 failed. */
static int self_test(int corrupt, int shani, int x16)
{
    enum { N = 16 };
    unsigned char *p = malloc(N * REPRO_LEAF_BYTES);
    if (!p)
        return 0;
    for (size_t i = 0; i < N * REPRO_LEAF_BYTES; i++)
        p[i] = (unsigned char)(i * 131 + (i >> 9));
    repro_digest fast[N], wide[N], ref[N];
    if (shani) {
        many_full_leaves(p, fast);
        two_full_leaves(p + MAX_WAYS * REPRO_LEAF_BYTES, p + (MAX_WAYS + 1) * REPRO_LEAF_BYTES,
                        &fast[MAX_WAYS], &fast[MAX_WAYS + 1]);
    }
    if (x16)
        repro_leaf_sha16(p, wide);
    p[77] ^= (unsigned char)(corrupt ? 1 : 0);
    int ok = 1;
    for (size_t i = 0; i < N; i++)
        ok = ok && !leaf_openssl(p, N * REPRO_LEAF_BYTES, i, &ref[i]);
    if (shani)
        ok = ok && !memcmp(fast, ref, (MAX_WAYS + 2) * sizeof *ref);
    if (x16)
        ok = ok && !memcmp(wide, ref, sizeof ref);
    free(p);
    return ok;
}
#endif /* HAVE_X86 */

static void choose_path(void)
{
#if HAVE_X86
    uint64_t bits = (uint64_t)REPRO_LEAF_BYTES * 8;
    full_leaf_pad[0] = 0x80;
    for (int i = 0; i < 8; i++)
        full_leaf_pad[63 - i] = (unsigned char)(bits >> (8 * i));
    wide16 = repro_leaf_sha16_supported() && self_test(0, 0, 1);
    if (!cpu_has_sha_ni()) {
        path_name = "openssl (no SHA-NI)";
        return;
    }
    if (!self_test(0, 1, 0)) {
        path_name = "openssl (SHA-NI self-test failed)";
        return;
    }
    path = PATH_SHANI;
    path_name = "sha-ni x4";
#else
    path_name = "openssl (not x86)";
#endif
}

static int forced_to_openssl(void)
{
    return atomic_load_explicit(&forced_why, memory_order_relaxed) != NULL;
}

/* The sixteen-lane path runs now: it passed its self-test, nothing forces
 * OpenSSL, and the vector path is avx512. */
static int wide16_now(void)
{
    return wide16 && !forced_to_openssl() && repro_isa_current() == REPRO_ISA_AVX512;
}

int repro_leaf_sha_range(const void *data, size_t nbytes, size_t i0, size_t i1,
                         repro_digest *leaves)
{
    pthread_once(&choose_once, choose_path);
    const unsigned char *d = data;
    size_t full = nbytes / REPRO_LEAF_BYTES, i = i0;
#if HAVE_X86
    if (wide16_now())
        for (; i + 16 <= i1 && i + 16 <= full; i += 16)
            repro_leaf_sha16(d + i * REPRO_LEAF_BYTES, &leaves[i]);
    if (path == PATH_SHANI && !forced_to_openssl()) {
        for (; i + MAX_WAYS <= i1 && i + MAX_WAYS <= full; i += MAX_WAYS)
            many_full_leaves(d + i * REPRO_LEAF_BYTES, &leaves[i]);
        for (; i + 1 < i1 && i + 1 < full; i += 2)
            two_full_leaves(d + i * REPRO_LEAF_BYTES, d + (i + 1) * REPRO_LEAF_BYTES, &leaves[i],
                            &leaves[i + 1]);
    }
#else
    (void)full;
#endif
    for (; i < i1; i++)
        if (leaf_openssl(d, nbytes, i, &leaves[i]))
            return -1;
    return 0;
}

const char *repro_leaf_sha_path(void)
{
    static _Thread_local char text[96];
    pthread_once(&choose_once, choose_path);
    const char *why = atomic_load(&forced_why);
    if (!why && wide16_now()) {
        snprintf(text, sizeof text, "avx512 x16, then %s", path_name);
        return text;
    }
    if (!why)
        return path_name;
    snprintf(text, sizeof text, "openssl (%s)", why);
    return text;
}

int repro_leaf_sha_self_test(int corrupt)
{
    pthread_once(&choose_once, choose_path);
#if HAVE_X86
    int shani = cpu_has_sha_ni(), x16 = repro_leaf_sha16_supported();
    if (shani || x16)
        return self_test(corrupt, shani, x16);
#endif
    (void)corrupt;
    return -1;
}

void repro_leaf_sha_force_openssl(const char *why)
{
    atomic_store(&forced_why, why);
}
