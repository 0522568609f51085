/* Sixteen full leaves in the lanes of AVX-512 (leaf_sha16.h).
 *
 * Lane m of every vector is message m. Each 64-byte block of the sixteen
 * messages is loaded as sixteen rows and transposed (16 x 16 words), so
 * vector t holds word t of every message; the rounds are the standard's,
 * with rotates (vprord) and three-input logic (vpternlogd: 0x96 is
 * a ^ b ^ c, 0xCA is Ch = e ? f : g, 0xE8 is Maj). */
#include "record/leaf_sha16.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "kernels/isa.h"
#include "kernels/shared/sha256.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* The padding block of every full leaf as big-endian words: 0x80, zeros,
 * the bit length 32768. */
static const uint32_t pad_words[16] = {0x80000000u, 0, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0, 0, 0, 0, 0, 32768};

#define X16 __attribute__((target("avx512f,avx512bw")))
#define ROR(x, n) _mm512_ror_epi32(x, n)
#define XOR3(a, b, c) _mm512_ternarylogic_epi32(a, b, c, 0x96)

/* Word t (0..15) of block `off` of the sixteen leaves into w[t], as the
 * big-endian words the rounds read. */
X16 static inline void load_block(const unsigned char *first, size_t off, __m512i *w)
{
    const __m512i bswap = _mm512_broadcast_i32x4(
        _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL));
    __m512i r[16], t[16], u[16];
    for (int m = 0; m < 16; m++)
        r[m] = _mm512_loadu_si512((const void *)(first + (size_t)m * REPRO_LEAF_BYTES + off));
    /* Within each 128-bit lane: 4 x 4 transposes of four rows at a time,
     * so u[4i + k], lane L, holds word 4L + k of rows 4i .. 4i + 3. */
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* Then the 128-bit lanes across the four groups of rows. */
    for (int k = 0; k < 4; k++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44);
        __m512i x1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xEE);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44);
        __m512i y1 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xEE);
        w[k] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(x0, y0, 0x88), bswap);
        w[4 + k] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(x0, y0, 0xDD), bswap);
        w[8 + k] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(x1, y1, 0x88), bswap);
        w[12 + k] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(x1, y1, 0xDD), bswap);
    }
}

/* One round on the state (a..h) with kw = K[t] + W[t] in every lane:
 * T1 = h + S1(e) + Ch(e,f,g) + kw, e' = d + T1, a' = T1 + S0(a) + Maj(a,b,c).
 * Integer adds, so any grouping gives the same words; this one keeps what
 * waits on the previous round short (each new e is two adds after S1(e),
 * each new a one add after the new e: a' = e' + (S0(a) + Maj - d)) and
 * costs 17 operations, where computing T1 and e' apart cost 19: on Intel's
 * two 512-bit ports the count bounds the speed (4.16 -> 4.25 GB/s), on
 * Zen 5 the round chain did (3.9 -> 4.3 GB/s when it was first shortened). */
#define ROUND16(kw)                                                                      \
    do {                                                                                 \
        __m512i dhkw = _mm512_add_epi32(d, _mm512_add_epi32(h, (kw)));                   \
        __m512i ch = _mm512_ternarylogic_epi32(e, f, g, 0xCA);                           \
        __m512i new_e =                                                                  \
            _mm512_add_epi32(_mm512_add_epi32(dhkw, ch), XOR3(ROR(e, 6), ROR(e, 11), ROR(e, 25))); \
        __m512i maj = _mm512_ternarylogic_epi32(a, b, c, 0xE8);                          \
        __m512i s0maj = _mm512_add_epi32(maj, XOR3(ROR(a, 2), ROR(a, 13), ROR(a, 22)));  \
        __m512i new_a = _mm512_add_epi32(new_e, _mm512_sub_epi32(s0maj, d));             \
        h = g, g = f, f = e, e = new_e;                                                  \
        d = c, c = b, b = a, a = new_a;                                                  \
    } while (0)

X16 static inline void add_state(__m512i *s, __m512i a, __m512i b, __m512i c, __m512i d,
                                 __m512i e, __m512i f, __m512i g, __m512i h)
{
    s[0] = _mm512_add_epi32(s[0], a), s[1] = _mm512_add_epi32(s[1], b);
    s[2] = _mm512_add_epi32(s[2], c), s[3] = _mm512_add_epi32(s[3], d);
    s[4] = _mm512_add_epi32(s[4], e), s[5] = _mm512_add_epi32(s[5], f);
    s[6] = _mm512_add_epi32(s[6], g), s[7] = _mm512_add_epi32(s[7], h);
}

/* The 64 rounds on one block's words w[0..15] (the schedule extends them
 * in place, sixteen words live at a time), added into the state s[0..7]. */
X16 static inline void compress16(__m512i *s, __m512i *w)
{
    __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 64
    for (int t = 0; t < 64; t++) {
        if (t >= 16) { /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] */
            __m512i w2 = w[(t - 2) & 15], w15 = w[(t - 15) & 15];
            __m512i s1 = XOR3(ROR(w2, 17), ROR(w2, 19), _mm512_srli_epi32(w2, 10));
            __m512i s0 = XOR3(ROR(w15, 7), ROR(w15, 18), _mm512_srli_epi32(w15, 3));
            w[t & 15] = _mm512_add_epi32(_mm512_add_epi32(s1, w[(t - 7) & 15]),
                                         _mm512_add_epi32(s0, w[t & 15]));
        }
        ROUND16(_mm512_add_epi32(w[t & 15], _mm512_set1_epi32((int)repro_sha256_k_host[t])));
    }
    add_state(s, a, b, c, d, e, f, g, h);
}

/* K[t] + W[t] of the padding block, the same for every full leaf: its
 * schedule is computed once (pad_kw_init), not in every lane of every
 * leaf (1/65 of the work). */
static uint32_t pad_kw[64];

static uint32_t ror32(uint32_t x, int n)
{
    return x >> n | x << (32 - n);
}

static void pad_kw_init(void)
{
    uint32_t w[64];
    memcpy(w, pad_words, sizeof pad_words);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = ror32(w[t - 15], 7) ^ ror32(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = ror32(w[t - 2], 17) ^ ror32(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    for (int t = 0; t < 64; t++)
        pad_kw[t] = w[t] + repro_sha256_k_host[t];
}

/* The padding block's 64 rounds, from pad_kw. */
X16 static inline void compress16_pad(__m512i *s)
{
    __m512i a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma GCC unroll 64
    for (int t = 0; t < 64; t++)
        ROUND16(_mm512_set1_epi32((int)pad_kw[t]));
    add_state(s, a, b, c, d, e, f, g, h);
}

X16 static void leaves16(const unsigned char *first, repro_digest *out)
{
    __m512i s[8], w[16];
    for (int j = 0; j < 8; j++)
        s[j] = _mm512_set1_epi32((int)repro_sha256_h0_host[j]);
    for (size_t off = 0; off < REPRO_LEAF_BYTES; off += 64) {
        load_block(first, off, w);
        compress16(s, w);
    }
    compress16_pad(s);
    uint32_t words[8][16];
    for (int j = 0; j < 8; j++)
        _mm512_storeu_si512((void *)words[j], s[j]);
    for (int m = 0; m < 16; m++)
        for (int j = 0; j < 8; j++) { /* big-endian, as SHA-256 writes its digest */
            uint32_t v = words[j][m];
            unsigned char *o = out[m].b + 4 * j;
            o[0] = (unsigned char)(v >> 24), o[1] = (unsigned char)(v >> 16);
            o[2] = (unsigned char)(v >> 8), o[3] = (unsigned char)v;
        }
}

static pthread_once_t pad_once = PTHREAD_ONCE_INIT;

int repro_leaf_sha16_supported(void)
{
    /* AVX-512F support here includes the OS saving the zmm state. */
    return repro_isa_supported(REPRO_ISA_AVX512) && __builtin_cpu_supports("avx512bw");
}

void repro_leaf_sha16(const unsigned char *first, repro_digest *out)
{
    pthread_once(&pad_once, pad_kw_init); /* once per 64 KiB: nothing beside the rounds */
    leaves16(first, out);
}

#else /* not x86-64 */

int repro_leaf_sha16_supported(void)
{
    return 0;
}

void repro_leaf_sha16(const unsigned char *first, repro_digest *out)
{
    (void)first, (void)out;
}
#endif
