/* Philox4x32-10 pinned by the Random123 known-answer vectors, plus the
 * stream helpers and the seed-derivation function; the vector paths
 * (kernels/philox_vec.h) against the scalar block function on every path
 * the CPU has, and the AVX-512 template's lane logic run at its width on
 * AVX2 (this CPU may have no AVX-512). */
#include <check.h>
#include <string.h>

#include "kernels/cpu/philox.h"
#include "kernels/isa.h"
#include "kernels/philox_vec.h"
#include "kernels/shared/pointwise.h"
#include "testutil.h"
#include "util/seeds.h"

static void expect_kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                       uint32_t k1, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    repro_philox_ctr c = {{c0, c1, c2, c3}};
    repro_philox_ctr r = repro_philox4x32_10(c, k0, k1);
    ck_assert_uint_eq(r.v[0], r0);
    ck_assert_uint_eq(r.v[1], r1);
    ck_assert_uint_eq(r.v[2], r2);
    ck_assert_uint_eq(r.v[3], r3);
}

START_TEST(test_random123_kat)
{
    /* Random123 kat_vectors: philox4x32 10 rounds */
    expect_kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    expect_kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
               0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    expect_kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
               0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}
END_TEST

START_TEST(test_stream_matches_block_function)
{
    /* The sequential stream is the block function at counters 0, 1, 2, ... */
    repro_rng rng;
    repro_rng_init(&rng, 0x0123456789abcdefULL);
    for (uint64_t blk = 0; blk < 5; blk++) {
        repro_philox_ctr c = repro_philox_at(0x0123456789abcdefULL, blk, 0);
        for (int i = 0; i < 4; i++)
            ck_assert_uint_eq(repro_rng_u32(&rng), c.v[i]);
    }
}
END_TEST

/* One generator type: the public generator is the kernels' stream, the
 * same struct (not a copy), so draws through either set of names continue
 * one stream; negative control: a second stream of another key differs. */
START_TEST(test_public_generator_is_the_kernel_stream)
{
    _Static_assert(_Generic((repro_rng *)0, repro_generator *: 1, default: 0),
                   "repro_rng is repro_generator");
    repro_rng ref;
    repro_rng_init(&ref, 0x1234abcdULL);
    uint32_t want[6];
    for (int i = 0; i < 6; i++)
        want[i] = repro_rng_u32(&ref);
    repro_generator g;
    repro_generator_init(&g, 0x1234abcdULL);
    uint32_t got[6];
    got[0] = repro_generator_u32(&g);
    got[1] = repro_rng_u32(&g);
    got[2] = repro_generator_u32(&g);
    uint64_t w = repro_rng_u64(&g); /* two words: u64 = lo | hi << 32 */
    got[3] = (uint32_t)w;
    got[4] = (uint32_t)(w >> 32);
    got[5] = repro_generator_u32(&g);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert(g.key == ref.key && g.block == ref.block && g.used == ref.used);
    ck_assert_mem_eq(g.buf, ref.buf, sizeof g.buf);
    repro_generator other;
    repro_generator_init(&other, 0x1234abceULL);
    ck_assert_uint_ne(repro_generator_u32(&other), want[0]);
}
END_TEST

START_TEST(test_below_and_unit_ranges)
{
    repro_rng rng;
    repro_rng_init(&rng, 7);
    int seen[10] = {0};
    for (int i = 0; i < 10000; i++) {
        uint32_t v = repro_rng_below(&rng, 10);
        ck_assert_uint_lt(v, 10);
        seen[v]++;
        float u = repro_rng_unit(&rng);
        ck_assert(u >= 0.0f && u < 1.0f);
    }
    for (int i = 0; i < 10; i++) /* roughly uniform: 1000 expected each */
        ck_assert_int_gt(seen[i], 850);
}
END_TEST

START_TEST(test_normal_moments)
{
    repro_rng rng;
    repro_rng_init(&rng, 11);
    double s = 0, s2 = 0;
    int n = 40000;
    for (int i = 0; i < n; i++) {
        double x = repro_rng_normal(&rng);
        s += x;
        s2 += x * x;
    }
    double mean = s / n, var = s2 / n - mean * mean;
    ck_assert_double_lt(mean < 0 ? -mean : mean, 0.02);
    ck_assert_double_lt(var > 1 ? var - 1 : 1 - var, 0.03);
}
END_TEST

START_TEST(test_seed_derive_distinct_and_pinned)
{
    /* Every tuple field changes the key. */
    uint64_t base = repro_seed_derive(42, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0);
    ck_assert_uint_ne(base, repro_seed_derive(43, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
    ck_assert_uint_ne(base, repro_seed_derive(42, REPRO_PURPOSE_INIT, 0, 0, 0, 0));
    ck_assert_uint_ne(base, repro_seed_derive(42, REPRO_PURPOSE_SHUFFLE, 1, 0, 0, 0));
    ck_assert_uint_ne(base, repro_seed_derive(42, REPRO_PURPOSE_SHUFFLE, 0, 1, 0, 0));
    ck_assert_uint_ne(base, repro_seed_derive(42, REPRO_PURPOSE_SHUFFLE, 0, 0, 1, 0));
    ck_assert_uint_ne(base, repro_seed_derive(42, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 1));
    /* The scheme is pinned: this value may only change with REPRO_SEED_SCHEME. */
    repro_philox_ctr c = {{REPRO_PURPOSE_SHUFFLE, 0, 0, 0}};
    repro_philox_ctr r = repro_philox4x32_10(c, 42, 0);
    ck_assert_uint_eq(base, (uint64_t)r.v[0] | ((uint64_t)r.v[1] << 32));
    ck_assert_str_eq(REPRO_SEED_SCHEME, "repro-seed/v1");
}
END_TEST


START_TEST(test_normals_match_one_at_a_time)
{
    /* The batched normals are the stream's own: from every offset within a
     * block, for lengths around the batch of four and a full image. */
    const long lens[] = {0, 1, 3, 4, 5, 8, 13, 784};
    for (int skip = 0; skip < 6; skip++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            long n = lens[li];
            repro_rng a, b;
            repro_rng_init(&a, 77 + skip);
            repro_rng_init(&b, 77 + skip);
            for (int k = 0; k < skip; k++) {
                repro_rng_u32(&a);
                repro_rng_u32(&b);
            }
            float got[784], want[784];
            repro_rng_normals(&a, got, n);
            for (long i = 0; i < n; i++)
                want[i] = repro_rng_normal(&b);
            ck_assert_msg(!memcmp(got, want, (size_t)n * sizeof *got), "skip %d n %ld", skip, n);
            ck_assert_uint_eq(repro_rng_u32(&a), repro_rng_u32(&b)); /* the streams go on alike */
        }
}
END_TEST

/* ---- the vector paths -------------------------------------------------------- */

/* Block starts: 0, odd ones, counters that carry into the high word inside
 * a step (2^32 - 5), and that wrap at 2^64. Lengths: empty, below one step,
 * every step width and one either side, and long runs with tails. */
static const uint64_t starts[] = {0, 1, 7, 0xFFFFFFFBu, 0x1FFFFFFF1ull, 0xFFFFFFFFFFFFFFF3ull};
static const long lens[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 100, 257};
static const uint64_t keys[] = {0, 0x0123456789abcdefULL, 0xFFFFFFFFFFFFFFFFULL};
#define COUNT(a) (sizeof(a) / sizeof *(a))
#define MAXLEN 257

typedef void (*blocks_fn)(uint64_t key, uint64_t block, long n, uint32_t *out);
typedef void (*keep_fn)(uint64_t key, uint64_t block, long n, float p, uint8_t *mask);

/* blocks(key, start, n) against repro_philox_at, block by block. */
static void expect_blocks(const char *path, blocks_fn blocks, int step)
{
    static uint32_t got[4 * MAXLEN + 4];
    for (size_t k = 0; k < COUNT(keys); k++)
        for (size_t s = 0; s < COUNT(starts); s++)
            for (size_t li = 0; li < COUNT(lens); li++) {
                long n = lens[li] - lens[li] % step;
                got[4 * n] = 0xDEADBEEF; /* nothing written past the end */
                blocks(keys[k], starts[s], n, got);
                ck_assert_uint_eq(got[4 * n], 0xDEADBEEF);
                for (long l = 0; l < n; l++) {
                    repro_philox_ctr c = repro_philox_at(keys[k], starts[s] + (uint64_t)l, 0);
                    ck_assert_msg(!memcmp(got + 4 * l, c.v, sizeof c.v),
                                  "%s: key %zu start %#llx n %ld: block %ld differs", path, k,
                                  (unsigned long long)starts[s], n, l);
                }
            }
}

/* keep(key, start, n, p) against repro_hd_dropout_keep, element by element. */
static void expect_keep(const char *path, keep_fn keep, int step)
{
    static uint8_t got[MAXLEN + 1];
    const float ps[] = {0.1f, 0.5f, 0.9f, 1.0f, 0x1p-24f};
    for (size_t k = 0; k < COUNT(keys); k++)
        for (size_t s = 0; s < COUNT(starts); s++)
            for (size_t li = 0; li < COUNT(lens); li++)
                for (size_t pi = 0; pi < COUNT(ps); pi++) {
                    long n = lens[li] - lens[li] % step;
                    got[n] = 0xAB;
                    keep(keys[k], starts[s], n, ps[pi], got);
                    ck_assert_uint_eq(got[n], 0xAB);
                    for (long l = 0; l < n; l++) {
                        uint64_t i = starts[s] + (uint64_t)l;
                        ck_assert_msg(got[l] == repro_hd_dropout_keep(keys[k], i, ps[pi]),
                                      "%s: key %zu start %#llx p %g: element %ld differs", path,
                                      k, (unsigned long long)starts[s], (double)ps[pi], l);
                    }
                }
}

START_TEST(test_blocks_every_path)
{
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(repro_isa_select(p[i]), 0);
        expect_blocks(repro_isa_name(p[i]), repro_philox_blocks, 1);
        expect_keep(repro_isa_name(p[i]), repro_philox_keep, 1);
        const repro_philox_vec *v = repro_philox_vec_for(p[i]);
        if (v) { /* the table itself, whole steps only */
            ck_assert_int_eq(v->isa, p[i]);
            expect_blocks(repro_isa_name(p[i]), v->blocks, v->lanes);
            expect_keep(repro_isa_name(p[i]), v->keep, v->lanes);
        }
    }
    repro_isa_select(repro_isa_best());
    /* blocks4 is the four-block scalar reference */
    uint32_t four[16];
    repro_philox_blocks4(keys[1], 0xFFFFFFFEu, four);
    for (int l = 0; l < 4; l++) {
        repro_philox_ctr c = repro_philox_at(keys[1], 0xFFFFFFFEu + (uint64_t)l, 0);
        ck_assert(!memcmp(four + 4 * l, c.v, sizeof c.v));
    }
}
END_TEST

/* repro_rng_normals(n) against n repro_rng_normal, from a stream at block
 * `block` with `skip` words of it drawn: the same floats, then the same
 * state (next block, position, buffer). */
static void expect_normals(const char *path, uint64_t key, uint64_t block, int skip, long n)
{
    static float got[1100], want[1100];
    repro_rng a, b;
    repro_rng_init(&a, key);
    a.block = block;
    for (int k = 0; k < skip; k++)
        repro_rng_u32(&a);
    b = a;
    repro_rng_normals(&a, got, n);
    for (long i = 0; i < n; i++)
        want[i] = repro_rng_normal(&b);
    ck_assert_msg(!memcmp(got, want, (size_t)n * sizeof *got), "%s: block %#llx skip %d n %ld",
                  path, (unsigned long long)block, skip, n);
    ck_assert_msg(a.block == b.block && a.used == b.used && !memcmp(a.buf, b.buf, sizeof a.buf),
                  "%s: block %#llx skip %d n %ld: the stream state differs after", path,
                  (unsigned long long)block, skip, n);
}

START_TEST(test_normals_every_path)
{
    /* Every offset within a block (skip 0..4, and 5..8: one block on),
     * lengths around each step width, a full image, and a counter that
     * carries into the high word mid-run. */
    const long nl[] = {0, 1, 3, 4, 5, 8, 12, 16, 17, 31, 32, 33, 48, 784, 1100};
    const uint64_t blocks[] = {0, 0xFFFFFFF0u};
    repro_isa p[REPRO_ISA_COUNT];
    int np = tu_isa_paths(p);
    for (int i = 0; i < np; i++) {
        ck_assert_int_eq(repro_isa_select(p[i]), 0);
        for (size_t bi = 0; bi < COUNT(blocks); bi++)
            for (int skip = 0; skip <= 8; skip++)
                for (size_t li = 0; li < COUNT(nl); li++)
                    expect_normals(repro_isa_name(p[i]), 0x5EED0000u + (uint64_t)skip, blocks[bi],
                                   skip, nl[li]);
        /* used = 0 (a full, unread buffer; repro_rng_u32 never leaves one,
         * only repro_rng_normals keeps it): the same numbers, and the
         * streams go on alike, though one holds its next words in the
         * buffer and the other in the next block. */
        repro_rng a, b;
        repro_rng_init(&a, 99);
        repro_rng_u32(&a);
        a.used = 0;
        b = a;
        float got[64], want[64];
        repro_rng_normals(&a, got, 64);
        for (int k = 0; k < 64; k++)
            want[k] = repro_rng_normal(&b);
        ck_assert_msg(!memcmp(got, want, sizeof got), "%s: used 0", repro_isa_name(p[i]));
        for (int k = 0; k < 9; k++)
            ck_assert_uint_eq(repro_rng_u32(&a), repro_rng_u32(&b));
    }
    repro_isa_select(repro_isa_best());
}
END_TEST

/* The AVX-512 template (W = 8: 16 blocks a step, its shuffle indices and
 * lane layout), compiled for AVX2 with MUL_EVEN done on two 256-bit halves:
 * everything but the one AVX-512 instruction runs here on AVX2 CPUs. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* 64-byte vectors in AVX2 code: the Makefile builds this file with
 * -Wno-psabi (their calling convention differs from AVX-512's; all are
 * static). */
typedef uint64_t emu_v8 __attribute__((vector_size(64)));

__attribute__((target("avx2"))) static inline emu_v8 emu_mul_even(emu_v8 a, emu_v8 m)
{
    __m256i ah[2], mh[2], ph[2];
    memcpy(ah, &a, sizeof a);
    memcpy(mh, &m, sizeof m);
    for (int h = 0; h < 2; h++)
        ph[h] = _mm256_mul_epu32(ah[h], mh[h]);
    emu_v8 p;
    memcpy(&p, ph, sizeof p);
    return p;
}

#define W 8
#define TGT __attribute__((target("avx2")))
#define SFX(name) name##_emu16
#define MUL_EVEN(a, m) emu_mul_even(a, m)
#define ZIP_LO 0, 8, 1, 9, 2, 10, 3, 11
#define ZIP_HI 4, 12, 5, 13, 6, 14, 7, 15
#define PAIR_LO 0, 1, 8, 9, 2, 3, 10, 11
#define PAIR_HI 4, 5, 12, 13, 6, 7, 14, 15
#define SHIFT1 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
#define EVENS 0, 2, 4, 6, 8, 10, 12, 14
#define STORE_LOW_BYTES(dst, v)                                                        \
    do {                                                                               \
        for (int l_ = 0; l_ < 16; l_++)                                                \
            (dst)[l_] = (uint8_t)(v)[l_];                                              \
    } while (0)
#include "kernels/philox_tmpl.h"

START_TEST(test_avx512_template_on_avx2)
{
    if (!repro_isa_supported(REPRO_ISA_AVX2))
        return;
    /* The same index lists as kernels/philox_avx512.c (kept in step by
     * hand: a change there must be copied here). */
    expect_blocks("emu16", blocks_emu16, 16);
    expect_keep("emu16", keep_emu16, 16);
    for (uint64_t block = 0; block < 0x200000000ull; block += 0xFFFFFFF0u)
        for (int r = 0; r <= 4; r++) {
            /* normals with r words of the block before left over, against
             * the scalar stream positioned the same way */
            repro_rng b;
            repro_rng_init(&b, 4242);
            b.block = block;
            repro_rng_u32(&b); /* buffer: the block before; 4 - r words left */
            for (int k = 1; k < 4 - r; k++)
                repro_rng_u32(&b);
            if (r == 4)
                b.used = 0;
            uint32_t prev[4], last[4];
            memcpy(prev, b.buf, sizeof prev);
            float got[48], want[48];
            normals_emu16(4242, block + 1, 48, r, prev, got, last);
            for (int k = 0; k < 48; k++)
                want[k] = repro_rng_normal(&b);
            ck_assert_msg(!memcmp(got, want, sizeof got), "emu16 normals r %d block %#llx", r,
                          (unsigned long long)block);
            repro_philox_ctr end = repro_philox_at(4242, block + 48, 0); /* the last fresh block */
            ck_assert(!memcmp(last, end.v, sizeof last));
        }
}
END_TEST
#endif

Suite *philox_suite(void)
{
    Suite *s = suite_create("philox");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_random123_kat);
    tcase_add_test(tc, test_stream_matches_block_function);
    tcase_add_test(tc, test_public_generator_is_the_kernel_stream);
    tcase_add_test(tc, test_below_and_unit_ranges);
    tcase_add_test(tc, test_normal_moments);
    tcase_add_test(tc, test_seed_derive_distinct_and_pinned);
    tcase_add_test(tc, test_normals_match_one_at_a_time);
    tcase_add_test(tc, test_blocks_every_path);
    tcase_add_test(tc, test_normals_every_path);
#if defined(__x86_64__) || defined(__i386__)
    tcase_add_test(tc, test_avx512_template_on_avx2);
#endif
    suite_add_tcase(s, tc);
    return s;
}
