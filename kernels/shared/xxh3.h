/* XXH3-128 (seed 0, the default secret), as the xxHash specification
 * defines it, for the CPU and the CUDA kernels: the CUDA backend digests
 * each 4 KiB leaf of a device tensor with this (one thread per leaf) and
 * sends back only the 16-byte leaf digests, which the recorder turns into
 * the tensor digest (repro/digest.h, repro-tensor/v2-xxh3-128). The
 * library's own leaves use libxxhash (harness/record/leaf_xxh3.c);
 * tests/check_xxh3_shared.c proves this code gives libxxhash's digests for
 * every length from 0 to 4096 bytes, so a digest does not depend on which
 * side computed it. Plain integer code: no rounding, no compiler flag can
 * change it.
 *
 * Written for leaves (any length, one call, seed 0): the seeded and
 * streaming variants of XXH3 are not here. */
#ifndef REPRO_SHARED_XXH3_H
#define REPRO_SHARED_XXH3_H

#include "hd.h"

#define REPRO_XXH_P32_1 0x9E3779B1u
#define REPRO_XXH_P32_2 0x85EBCA77u
#define REPRO_XXH_P32_3 0xC2B2AE3Du
#define REPRO_XXH_P64_1 0x9E3779B185EBCA87ull
#define REPRO_XXH_P64_2 0xC2B2AE3D27D4EB4Full
#define REPRO_XXH_P64_3 0x165667B19E3779F9ull
#define REPRO_XXH_P64_4 0x85EBCA77C2B2AE63ull
#define REPRO_XXH_P64_5 0x27D4EB2F165667C5ull
#define REPRO_XXH_MX1 0x165667919E3779F9ull
#define REPRO_XXH_MX2 0x9FB21C651E98DF25ull

/* The default secret (192 bytes) of the specification: one list, a
 * __constant__ table for device code and a plain one for the host. */
#define REPRO_XXH3_SECRET_INIT                                                           \
    {0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21,  \
     0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4,  \
     0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a,  \
     0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e,  \
     0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3,  \
     0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97,  \
     0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa,  \
     0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,  \
     0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78,  \
     0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff,  \
     0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16,  \
     0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc,  \
     0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16,  \
     0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e}

enum { REPRO_XXH3_SECRET_LEN = 192, REPRO_XXH3_STRIPE = 64 };

#ifdef __CUDACC__
static __constant__ uint8_t repro_xxh3_secret_dev[REPRO_XXH3_SECRET_LEN] = REPRO_XXH3_SECRET_INIT;
#endif
static const uint8_t repro_xxh3_secret_host[REPRO_XXH3_SECRET_LEN] = REPRO_XXH3_SECRET_INIT;

static inline REPRO_HD const uint8_t *repro_xxh3_secret(void)
{
#ifdef __CUDA_ARCH__
    return repro_xxh3_secret_dev;
#else
    return repro_xxh3_secret_host;
#endif
}

typedef struct {
    uint64_t lo, hi;
} repro_u128;

/* Little-endian reads (the test machines and GPUs are little-endian; the
 * bytes are assembled explicitly all the same). */
static inline REPRO_HD uint64_t repro_xxh_r64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline REPRO_HD uint32_t repro_xxh_r32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline REPRO_HD repro_u128 repro_xxh_mul128(uint64_t a, uint64_t b)
{
    repro_u128 r;
#ifdef __CUDA_ARCH__
    r.lo = a * b;
    r.hi = __umul64hi(a, b);
#else
    unsigned __int128 p = (unsigned __int128)a * b;
    r.lo = (uint64_t)p;
    r.hi = (uint64_t)(p >> 64);
#endif
    return r;
}

static inline REPRO_HD uint64_t repro_xxh_fold64(uint64_t a, uint64_t b)
{
    repro_u128 p = repro_xxh_mul128(a, b);
    return p.lo ^ p.hi;
}

static inline REPRO_HD uint64_t repro_xxh3_avalanche(uint64_t h)
{
    h ^= h >> 37;
    h *= REPRO_XXH_MX1;
    return h ^ (h >> 32);
}

static inline REPRO_HD uint64_t repro_xxh64_avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= REPRO_XXH_P64_2;
    h ^= h >> 29;
    h *= REPRO_XXH_P64_3;
    return h ^ (h >> 32);
}

static inline REPRO_HD uint32_t repro_xxh_swap32(uint32_t x)
{
    return (x << 24) | ((x << 8) & 0xff0000u) | ((x >> 8) & 0xff00u) | (x >> 24);
}

static inline REPRO_HD uint64_t repro_xxh_swap64(uint64_t x)
{
    return (uint64_t)repro_xxh_swap32((uint32_t)x) << 32 | repro_xxh_swap32((uint32_t)(x >> 32));
}

/* ---- up to 16 bytes -------------------------------------------------------- */

static inline REPRO_HD repro_u128 repro_xxh3_0to16(const uint8_t *p, size_t len, const uint8_t *s)
{
    repro_u128 h;
    if (len > 8) {
        uint64_t flip_lo = repro_xxh_r64(s + 32) ^ repro_xxh_r64(s + 40);
        uint64_t flip_hi = repro_xxh_r64(s + 48) ^ repro_xxh_r64(s + 56);
        uint64_t in_lo = repro_xxh_r64(p), in_hi = repro_xxh_r64(p + len - 8);
        repro_u128 m = repro_xxh_mul128(in_lo ^ in_hi ^ flip_lo, REPRO_XXH_P64_1);
        m.lo += (uint64_t)(len - 1) << 54;
        in_hi ^= flip_hi;
        m.hi += in_hi + (uint64_t)(uint32_t)in_hi * (REPRO_XXH_P32_2 - 1);
        m.lo ^= repro_xxh_swap64(m.hi);
        h = repro_xxh_mul128(m.lo, REPRO_XXH_P64_2);
        h.hi += m.hi * REPRO_XXH_P64_2;
        h.lo = repro_xxh3_avalanche(h.lo);
        h.hi = repro_xxh3_avalanche(h.hi);
    } else if (len >= 4) {
        uint64_t in = repro_xxh_r32(p) + ((uint64_t)repro_xxh_r32(p + len - 4) << 32);
        uint64_t flip = repro_xxh_r64(s + 16) ^ repro_xxh_r64(s + 24);
        h = repro_xxh_mul128(in ^ flip, REPRO_XXH_P64_1 + ((uint64_t)len << 2));
        h.hi += h.lo << 1;
        h.lo ^= h.hi >> 3;
        h.lo ^= h.lo >> 35;
        h.lo *= REPRO_XXH_MX2;
        h.lo ^= h.lo >> 28;
        h.hi = repro_xxh3_avalanche(h.hi);
    } else if (len > 0) {
        uint32_t lo = (uint32_t)p[0] << 16 | (uint32_t)p[len >> 1] << 24 | p[len - 1] |
                      (uint32_t)len << 8;
        uint32_t sw = repro_xxh_swap32(lo), hi = (sw << 13) | (sw >> 19);
        uint64_t flip_lo = repro_xxh_r32(s) ^ repro_xxh_r32(s + 4);
        uint64_t flip_hi = repro_xxh_r32(s + 8) ^ repro_xxh_r32(s + 12);
        h.lo = repro_xxh64_avalanche(lo ^ flip_lo);
        h.hi = repro_xxh64_avalanche(hi ^ flip_hi);
    } else {
        h.lo = repro_xxh64_avalanche(repro_xxh_r64(s + 64) ^ repro_xxh_r64(s + 72));
        h.hi = repro_xxh64_avalanche(repro_xxh_r64(s + 80) ^ repro_xxh_r64(s + 88));
    }
    return h;
}

/* ---- 17 to 240 bytes ------------------------------------------------------- */

static inline REPRO_HD uint64_t repro_xxh3_mix16(const uint8_t *p, const uint8_t *s)
{
    return repro_xxh_fold64(repro_xxh_r64(p) ^ repro_xxh_r64(s),
                            repro_xxh_r64(p + 8) ^ repro_xxh_r64(s + 8));
}

static inline REPRO_HD void repro_xxh3_mix32(repro_u128 *acc, const uint8_t *a, const uint8_t *b,
                                            const uint8_t *s)
{
    acc->lo += repro_xxh3_mix16(a, s);
    acc->lo ^= repro_xxh_r64(b) + repro_xxh_r64(b + 8);
    acc->hi += repro_xxh3_mix16(b, s + 16);
    acc->hi ^= repro_xxh_r64(a) + repro_xxh_r64(a + 8);
}

static inline REPRO_HD repro_u128 repro_xxh3_mid_final(repro_u128 acc, size_t len)
{
    repro_u128 h;
    h.lo = repro_xxh3_avalanche(acc.lo + acc.hi);
    h.hi = 0 - repro_xxh3_avalanche(acc.lo * REPRO_XXH_P64_1 + acc.hi * REPRO_XXH_P64_4 +
                                    (uint64_t)len * REPRO_XXH_P64_2);
    return h;
}

static inline REPRO_HD repro_u128 repro_xxh3_17to128(const uint8_t *p, size_t len,
                                                   const uint8_t *s)
{
    repro_u128 acc = {(uint64_t)len * REPRO_XXH_P64_1, 0};
    if (len > 32) {
        if (len > 64) {
            if (len > 96)
                repro_xxh3_mix32(&acc, p + 48, p + len - 64, s + 96);
            repro_xxh3_mix32(&acc, p + 32, p + len - 48, s + 64);
        }
        repro_xxh3_mix32(&acc, p + 16, p + len - 32, s + 32);
    }
    repro_xxh3_mix32(&acc, p, p + len - 16, s);
    return repro_xxh3_mid_final(acc, len);
}

static inline REPRO_HD repro_u128 repro_xxh3_129to240(const uint8_t *p, size_t len,
                                                    const uint8_t *s)
{
    repro_u128 acc = {(uint64_t)len * REPRO_XXH_P64_1, 0};
    size_t rounds = len / 32;
    for (size_t i = 0; i < 4; i++)
        repro_xxh3_mix32(&acc, p + 32 * i, p + 32 * i + 16, s + 32 * i);
    acc.lo = repro_xxh3_avalanche(acc.lo);
    acc.hi = repro_xxh3_avalanche(acc.hi);
    for (size_t i = 4; i < rounds; i++) /* the secret from byte 3 on */
        repro_xxh3_mix32(&acc, p + 32 * i, p + 32 * i + 16, s + 3 + 32 * (i - 4));
    /* the last 32 bytes, with the secret's bytes 103..134 (136 - 17 - 16) */
    repro_xxh3_mix32(&acc, p + len - 16, p + len - 32, s + 103);
    return repro_xxh3_mid_final(acc, len);
}

/* ---- longer: stripes of 64 bytes into 8 accumulators ----------------------- */

static inline REPRO_HD void repro_xxh3_stripe(uint64_t acc[8], const uint8_t *p, const uint8_t *s)
{
    for (int i = 0; i < 8; i++) {
        uint64_t v = repro_xxh_r64(p + 8 * i), k = v ^ repro_xxh_r64(s + 8 * i);
        acc[i ^ 1] += v;
        acc[i] += (uint64_t)(uint32_t)k * (k >> 32);
    }
}

static inline REPRO_HD void repro_xxh3_scramble(uint64_t acc[8], const uint8_t *s)
{
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= repro_xxh_r64(s + 8 * i);
        acc[i] = a * REPRO_XXH_P32_1;
    }
}

static inline REPRO_HD uint64_t repro_xxh3_merge(const uint64_t acc[8], const uint8_t *s,
                                                 uint64_t start)
{
    for (int i = 0; i < 4; i++)
        start += repro_xxh_fold64(acc[2 * i] ^ repro_xxh_r64(s + 16 * i),
                                  acc[2 * i + 1] ^ repro_xxh_r64(s + 16 * i + 8));
    return repro_xxh3_avalanche(start);
}

static inline REPRO_HD repro_u128 repro_xxh3_long(const uint8_t *p, size_t len, const uint8_t *s)
{
    enum { PER_BLOCK = (REPRO_XXH3_SECRET_LEN - REPRO_XXH3_STRIPE) / 8 }; /* 16 stripes */
    const size_t block = (size_t)REPRO_XXH3_STRIPE * PER_BLOCK;
    uint64_t acc[8] = {REPRO_XXH_P32_3, REPRO_XXH_P64_1, REPRO_XXH_P64_2, REPRO_XXH_P64_3,
                       REPRO_XXH_P64_4, REPRO_XXH_P32_2, REPRO_XXH_P64_5, REPRO_XXH_P32_1};
    size_t blocks = (len - 1) / block;
    for (size_t b = 0; b < blocks; b++) {
        for (size_t k = 0; k < PER_BLOCK; k++)
            repro_xxh3_stripe(acc, p + b * block + k * REPRO_XXH3_STRIPE, s + 8 * k);
        repro_xxh3_scramble(acc, s + REPRO_XXH3_SECRET_LEN - REPRO_XXH3_STRIPE);
    }
    size_t stripes = ((len - 1) - block * blocks) / REPRO_XXH3_STRIPE;
    for (size_t k = 0; k < stripes; k++)
        repro_xxh3_stripe(acc, p + blocks * block + k * REPRO_XXH3_STRIPE, s + 8 * k);
    /* the last 64 bytes, with the secret 7 bytes before its last stripe */
    repro_xxh3_stripe(acc, p + len - REPRO_XXH3_STRIPE,
                      s + REPRO_XXH3_SECRET_LEN - REPRO_XXH3_STRIPE - 7);
    repro_u128 h;
    h.lo = repro_xxh3_merge(acc, s + 11, (uint64_t)len * REPRO_XXH_P64_1);
    h.hi = repro_xxh3_merge(acc, s + REPRO_XXH3_SECRET_LEN - REPRO_XXH3_STRIPE - 11,
                            ~((uint64_t)len * REPRO_XXH_P64_2));
    return h;
}

/* XXH3-128 of p[0..len) in canonical form: the high 64 bits big-endian,
 * then the low 64 bits big-endian (libxxhash's XXH128_canonical_t). */
static inline REPRO_HD void repro_hd_xxh3_128(const uint8_t *p, size_t len, uint8_t out[16])
{
    const uint8_t *s = repro_xxh3_secret();
    repro_u128 h = len <= 16    ? repro_xxh3_0to16(p, len, s)
                   : len <= 128 ? repro_xxh3_17to128(p, len, s)
                   : len <= 240 ? repro_xxh3_129to240(p, len, s)
                                : repro_xxh3_long(p, len, s);
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(h.hi >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(h.lo >> (56 - 8 * i));
    }
}

#endif
