/* SHA-256 (FIPS 180-4): the compression function and a one-shot digest,
 * shared by the CPU and the CUDA kernels. The CUDA backend hashes each
 * 4 KiB leaf of a device tensor with this (one thread per leaf) and sends
 * back only the 32-byte leaf digests, which the recorder turns into the
 * tensor digest (repro_recorder_tensor_leaves). The library's own hashing
 * stays OpenSSL's (harness/record/sha256.c), except its hand-written leaf
 * paths (harness/record/leaf_sha.c, leaf_sha16.c), which take their
 * constants from the tables here; tests/check_sha256_shared.c
 * proves this code gives OpenSSL's digests on the same leaves, so a digest
 * does not depend on which side computed it. Plain integer code: no
 * rounding anywhere, so no compiler flag can change it. */
#ifndef REPRO_SHARED_SHA256_H
#define REPRO_SHARED_SHA256_H

#include <stddef.h>

#include "hd.h"

static inline REPRO_HD uint32_t repro_hd_rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* The round constants (first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes): one list, two tables, a __constant__ one
 * for device code and a plain one for the host (nvcc's host pass too). */
#define REPRO_SHA256_K_INIT                                                              \
    {0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u,      \
     0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,      \
     0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u,      \
     0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,      \
     0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,      \
     0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,      \
     0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,      \
     0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,      \
     0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au,      \
     0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,      \
     0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u}

#ifdef __CUDACC__
static __constant__ uint32_t repro_sha256_k_dev[64] = REPRO_SHA256_K_INIT;
#endif
static const uint32_t repro_sha256_k_host[64] = REPRO_SHA256_K_INIT;

/* The initial hash value H(0) (first 32 bits of the fractional parts of
 * the square roots of the first 8 primes): one list, a host table for the
 * hand-written leaf paths, and each digest's starting state. */
#define REPRO_SHA256_H0_INIT                                                             \
    {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,                                \
     0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u}
static const uint32_t repro_sha256_h0_host[8] = REPRO_SHA256_H0_INIT;

static inline REPRO_HD uint32_t repro_hd_sha256_k(int i)
{
#ifdef __CUDA_ARCH__
    return repro_sha256_k_dev[i];
#else
    return repro_sha256_k_host[i];
#endif
}

/* One 64-byte block into the state h[8]. */
static inline REPRO_HD void repro_hd_sha256_compress(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = repro_hd_rotr(w[i - 15], 7) ^ repro_hd_rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = repro_hd_rotr(w[i - 2], 17) ^ repro_hd_rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = repro_hd_rotr(e, 6) ^ repro_hd_rotr(e, 11) ^ repro_hd_rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + repro_hd_sha256_k(i) + w[i];
        uint32_t S0 = repro_hd_rotr(a, 2) ^ repro_hd_rotr(a, 13) ^ repro_hd_rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

/* SHA-256 of data[0..n) into out[32]: whole blocks straight from data, the
 * tail and the padding (0x80, zeros, the bit length big-endian) in a local
 * block. */
static inline REPRO_HD void repro_hd_sha256(const uint8_t *data, size_t n, uint8_t out[32])
{
    uint32_t h[8] = REPRO_SHA256_H0_INIT;
    size_t full = n / 64;
    for (size_t i = 0; i < full; i++)
        repro_hd_sha256_compress(h, data + 64 * i);
    uint8_t blk[64];
    size_t rem = n - 64 * full;
    for (size_t i = 0; i < 64; i++)
        blk[i] = i < rem ? data[64 * full + i] : 0;
    blk[rem] = 0x80;
    if (rem >= 56) { /* no room for the length: one more block */
        repro_hd_sha256_compress(h, blk);
        for (int i = 0; i < 64; i++)
            blk[i] = 0;
    }
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        blk[63 - i] = (uint8_t)(bits >> (8 * i));
    repro_hd_sha256_compress(h, blk);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

#endif
