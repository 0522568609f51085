/* Template of the vector Philox (philox_vec.h), included once by each of
 * philox_sse2.c, philox_avx2.c and philox_avx512.c after they define:
 *   W              64-bit lanes per vector (2, 4, 8); a step is 2W blocks
 *   TGT            the function attribute that enables the path
 *   SFX(name)      name with the path's suffix
 *   MUL_EVEN(a, m) per 64-bit lane, the 64-bit product of the low 32 bits
 *                  of a and of m (pmuludq: the one instruction that the
 *                  vector extensions below cannot be trusted to produce)
 *   ZIP_LO, ZIP_HI     shuffle indices over two W-lane vectors: lanes
 *                      0,W, 1,W+1, ... of the low half; the same, high half
 *   PAIR_LO, PAIR_HI   the same zip, two lanes (128 bits) at a time
 *   SHIFT1             over two 2W-lane vectors x, y: x[2W-1], y[0..2W-2]
 *   EVENS              0, 2, 4, ..., 2W-2
 *   STORE_LOW_BYTES(dst, v)  stores the low byte of each 32-bit lane of v
 *                  (each 0 or 1) at dst[0 .. 2W-1]: the narrowing the
 *                  vector extensions lower badly
 *
 * Layout: a step holds blocks block .. block+2W-1 in two halves, a = the
 * even ones (lane i: block + 2i), b = the odd ones, each word in the low 32
 * bits of a 64-bit lane, so MUL_EVEN gives a whole product per lane and its
 * high word is one shift away. What the high 32 bits of a lane hold
 * otherwise is junk that never reaches a low half: MUL_EVEN ignores it, the
 * only right shifts by 32 are of products (whose high halves are theirs),
 * and only low halves are ever stored. */
#include <string.h>

typedef uint64_t SFX(vu64) __attribute__((vector_size(W * 8)));
typedef uint32_t SFX(vu32) __attribute__((vector_size(W * 8)));
typedef int32_t SFX(vi32) __attribute__((vector_size(W * 8)));
typedef float SFX(vf32) __attribute__((vector_size(W * 8)));
#define VU64 SFX(vu64)
#define VU32 SFX(vu32)
#define VI32 SFX(vi32)
#define VF SFX(vf32)
#define BLOCKS (2 * W) /* per step */

TGT static inline VU64 SFX(splat64)(uint64_t x)
{
    VU64 z = {0};
    return z + x;
}

/* One Philox round on a half step (repro_philox4x32_10's body, per lane). */
TGT static inline void SFX(round)(VU64 c[4], VU64 m0, VU64 m1, VU64 k0, VU64 k1)
{
    VU64 p0 = MUL_EVEN(c[0], m0), p1 = MUL_EVEN(c[2], m1);
    VU64 n0 = (p1 >> 32) ^ c[1] ^ k0, n2 = (p0 >> 32) ^ c[3] ^ k1;
    c[1] = p1;
    c[3] = p0;
    c[0] = n0;
    c[2] = n2;
}

/* The key schedule, every round's two key words in every lane: made once
 * per call, so the rounds xor them from memory instead of broadcasting. */
typedef struct {
    VU64 k[10][2];
} SFX(keys);

TGT static inline void SFX(schedule)(uint64_t key, SFX(keys) *ks)
{
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int round = 0; round < 10; round++) {
        ks->k[round][0] = SFX(splat64)(k0);
        ks->k[round][1] = SFX(splat64)(k1);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* The counters of blocks block .. block+2W-1, (b lo, b hi, 0, 0) as
 * repro_philox_at with lane 0: h[0][w], h[1][w] hold word w, layout above. */
TGT static inline void SFX(start)(uint64_t block, VU64 h[2][4])
{
    const VU64 evens = {EVENS};
    VU64 ctr = SFX(splat64)(block) + evens; /* mod 2^64, as the scalar counter */
    h[0][0] = ctr; /* low 32 bits: counter word 0 */
    h[0][1] = ctr >> 32;
    h[1][0] = ctr + 1u;
    h[1][1] = h[1][0] >> 32;
    h[0][2] = h[0][3] = h[1][2] = h[1][3] = SFX(splat64)(0);
}

/* The ten rounds on those blocks (start): the two halves h[0], h[1] are
 * independent chains, so their multiplies overlap. */
TGT static inline void SFX(rounds)(const SFX(keys) *ks, uint64_t block, VU64 h[2][4])
{
    SFX(start)(block, h);
    const VU64 m0 = SFX(splat64)(0xD2511F53u), m1 = SFX(splat64)(0xCD9E8D57u);
    for (int round = 0; round < 10; round++) {
        SFX(round)(h[0], m0, m1, ks->k[round][0], ks->k[round][1]);
        SFX(round)(h[1], m0, m1, ks->k[round][0], ks->k[round][1]);
    }
}

/* One word of every block of the step, in block order: lane 2i from a,
 * lane 2i+1 from b (little-endian lanes of a 64-bit one). */
TGT static inline VU32 SFX(merge)(VU64 a, VU64 b)
{
    return (VU32)((a & 0xFFFFFFFFu) | (b << 32));
}

/* repro_u32_to_unit per lane: u >> 8 < 2^24, so the signed conversion is
 * exact, and the scaling by a power of two is too. */
TGT static inline VF SFX(unit)(VU32 u)
{
    return __builtin_convertvector((VI32)(u >> 8), VF) * 0x1p-24f;
}

TGT static void SFX(blocks)(uint64_t key, uint64_t block, long n, uint32_t *out)
{
    SFX(keys) ks;
    SFX(schedule)(key, &ks);
    for (long i = 0; i < n; i += BLOCKS) {
        VU64 h[2][4];
        SFX(rounds)(&ks, block + (uint64_t)i, h);
        const VU64 *a = h[0], *b = h[1];
        /* Words (0,1) and (2,3) of a block as one 64-bit lane each, then
         * blocks 2i and 2i+1 side by side: four vectors of whole blocks. */
        VU64 a01 = (a[0] & 0xFFFFFFFFu) | (a[1] << 32), a23 = (a[2] & 0xFFFFFFFFu) | (a[3] << 32);
        VU64 b01 = (b[0] & 0xFFFFFFFFu) | (b[1] << 32), b23 = (b[2] & 0xFFFFFFFFu) | (b[3] << 32);
        VU64 ea = __builtin_shufflevector(a01, a23, ZIP_LO); /* even blocks, first half */
        VU64 eb = __builtin_shufflevector(a01, a23, ZIP_HI);
        VU64 oa = __builtin_shufflevector(b01, b23, ZIP_LO); /* odd blocks */
        VU64 ob = __builtin_shufflevector(b01, b23, ZIP_HI);
        VU64 o0 = __builtin_shufflevector(ea, oa, PAIR_LO);
        VU64 o1 = __builtin_shufflevector(ea, oa, PAIR_HI);
        VU64 o2 = __builtin_shufflevector(eb, ob, PAIR_LO);
        VU64 o3 = __builtin_shufflevector(eb, ob, PAIR_HI);
        uint32_t *to = out + 4 * i;
        memcpy(to, &o0, sizeof o0);
        memcpy(to + BLOCKS, &o1, sizeof o1);
        memcpy(to + 2 * BLOCKS, &o2, sizeof o2);
        memcpy(to + 3 * BLOCKS, &o3, sizeof o3);
    }
}

/* Word 0 of every block of S steps (blocks block .. block + S*2W - 1),
 * for keep: the same rounds as rounds(), but S steps' 2S chains side by
 * side, rounds unrolled, so the multiplies of one chain hide the latency
 * of the others (one step's two chains leave the multiplier idle). The
 * last round computes only what word 0 needs: hi(c2 * m1) ^ c1 ^ k0. */
TGT static inline __attribute__((always_inline)) void
SFX(word0s)(const SFX(keys) *ks, uint64_t block, const int S, VU32 w0[])
{
    VU64 h[2 * S][4];
    for (int s = 0; s < S; s++)
        SFX(start)(block + (uint64_t)(s * BLOCKS), &h[2 * s]);
    const VU64 m0 = SFX(splat64)(0xD2511F53u), m1 = SFX(splat64)(0xCD9E8D57u);
#pragma GCC unroll 9
    for (int round = 0; round < 9; round++)
#pragma GCC unroll 8
        for (int c = 0; c < 2 * S; c++)
            SFX(round)(h[c], m0, m1, ks->k[round][0], ks->k[round][1]);
    VU64 last[2 * S];
#pragma GCC unroll 8
    for (int c = 0; c < 2 * S; c++)
        last[c] = (MUL_EVEN(h[c][2], m1) >> 32) ^ h[c][1] ^ ks->k[9][0];
    for (int s = 0; s < S; s++)
        w0[s] = SFX(merge)(last[2 * s], last[2 * s + 1]);
}

TGT static void SFX(keep)(uint64_t key, uint64_t block, long n, float p, uint8_t *mask)
{
    VF vp;
    for (int l = 0; l < BLOCKS; l++)
        vp[l] = p;
    SFX(keys) ks;
    SFX(schedule)(key, &ks);
    enum { S = 2 }; /* steps at once: four chains fill Zen 3's multiplier */
    long i = 0;
    for (; i + S * BLOCKS <= n; i += S * BLOCKS) {
        VU32 w0[S];
        SFX(word0s)(&ks, block + (uint64_t)i, S, w0);
        for (int s = 0; s < S; s++) {
            VI32 kept = SFX(unit)(w0[s]) >= vp; /* -1 or 0 */
            STORE_LOW_BYTES(mask + i + s * BLOCKS, kept & 1);
        }
    }
    for (; i < n; i += BLOCKS) {
        VU32 w0[1];
        SFX(word0s)(&ks, block + (uint64_t)i, 1, w0);
        VI32 kept = SFX(unit)(w0[0]) >= vp;
        STORE_LOW_BYTES(mask + i, kept & 1);
    }
}

/* repro_philox_normal per lane: the same sum, in the same order. */
TGT static inline VF SFX(normal)(VU32 w0, VU32 w1, VU32 w2, VU32 w3)
{
    VF s = SFX(unit)(w0) + SFX(unit)(w1);
    s = s + SFX(unit)(w2);
    s = s + SFX(unit)(w3);
    return (s - 2.0f) * 1.7320508f;
}

/* normals with r words left over (a constant once inlined): word j of
 * normal k is the stream's word 4k + j, i.e. word j - r of block k, or, for
 * j < r, word 4 + j - r of block k - 1: the same word of the step shifted
 * by one lane, lane 0 taking it from the step before (first: from prev). */
TGT static inline __attribute__((always_inline)) void
SFX(normals_r)(uint64_t key, uint64_t block, long n, const int r, const uint32_t prev[4],
               float *out, uint32_t last[4])
{
    VU32 before[4];
#pragma GCC unroll 4
    for (int w = 0; w < 4; w++)
        for (int l = 0; l < BLOCKS; l++)
            before[w][l] = prev[w];
    SFX(keys) ks;
    SFX(schedule)(key, &ks);
    for (long i = 0; i < n; i += BLOCKS) {
        VU64 h[2][4];
        SFX(rounds)(&ks, block + (uint64_t)i, h);
        const VU64 *a = h[0], *b = h[1];
        VU32 s[8]; /* s[4 + w]: word w of each block; s[w]: of the block before */
#pragma GCC unroll 4
        for (int w = 0; w < 4; w++) {
            s[4 + w] = SFX(merge)(a[w], b[w]);
            s[w] = __builtin_shufflevector(before[w], s[4 + w], SHIFT1);
            before[w] = s[4 + w];
        }
        VF z = SFX(normal)(s[4 - r], s[5 - r], s[6 - r], s[7 - r]);
        memcpy(out + i, &z, sizeof z);
    }
    for (int w = 0; w < 4; w++)
        last[w] = before[w][BLOCKS - 1];
}

TGT static void SFX(normals)(uint64_t key, uint64_t block, long n, int r, const uint32_t prev[4],
                             float *out, uint32_t last[4])
{
    switch (r) {
    case 0:
        SFX(normals_r)(key, block, n, 0, prev, out, last);
        break;
    case 1:
        SFX(normals_r)(key, block, n, 1, prev, out, last);
        break;
    case 2:
        SFX(normals_r)(key, block, n, 2, prev, out, last);
        break;
    case 3:
        SFX(normals_r)(key, block, n, 3, prev, out, last);
        break;
    default:
        SFX(normals_r)(key, block, n, 4, prev, out, last);
        break;
    }
}

#undef VU64
#undef VU32
#undef VI32
#undef VF
#undef BLOCKS
