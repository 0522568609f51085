/* Philox4x32-10 (Salmon et al., SC'11; the generator cuRAND and PyTorch use):
 * a counter-based RNG, so any element's random numbers are a pure function of
 * (key, counter). Kernels draw by logical element index, which is why
 * re-tiling or re-threading a kernel never changes its random numbers, and the
 * CUDA backend computes the very same bits. Pinned by the Random123
 * known-answer vectors in tests/check_philox.c. The inline functions are
 * REPRO_HD (kernels/shared/hd.h): the CUDA kernels compile this very code,
 * so device Philox is CPU Philox for the same key and counter. */
#ifndef REPRO_PHILOX_H
#define REPRO_PHILOX_H

#include <stdint.h>

#include "kernels/shared/hd.h"
#include "repro/random.h"

#define REPRO_RNG_VERSION "philox4x32-10/v1"

typedef struct {
    uint32_t v[4];
} repro_philox_ctr;

/* The block function: 10 rounds over a 128-bit counter under a 64-bit key. */
static inline REPRO_HD repro_philox_ctr repro_philox4x32_10(repro_philox_ctr c, uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c.v[0];
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c.v[2];
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        repro_philox_ctr n = {{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

/* Four 32-bit numbers for logical element `index` of the stream `key`.
 * The counter is (index lo, index hi, lane, 0): `lane` lets one element draw
 * more than four numbers without touching its neighbours' counters. */
static inline REPRO_HD repro_philox_ctr repro_philox_at(uint64_t key, uint64_t index, uint32_t lane)
{
    repro_philox_ctr c = {{(uint32_t)index, (uint32_t)(index >> 32), lane, 0}};
    return repro_philox4x32_10(c, (uint32_t)key, (uint32_t)(key >> 32));
}

/* Uniform float in [0, 1) from the top 24 bits: exact, no rounding anywhere. */
static inline REPRO_HD float repro_u32_to_unit(uint32_t u)
{
    return (float)(u >> 8) * 0x1p-24f;
}

#ifdef __cplusplus
extern "C" {
#endif

/* A sequential stream over the same block function, for consumers that draw
 * an unknown number of values in order (the shuffle generator, worker RNGs).
 * Its whole state is (key, next block, position in block): small enough to
 * log and to checkpoint. It is the public generator (repro/random.h), one
 * struct: the public header defines it, because it may not include this
 * one, and kernel code calls it by this name. */
typedef repro_generator repro_rng;

void repro_rng_init(repro_rng *rng, uint64_t key);
uint32_t repro_rng_u32(repro_rng *rng);
uint64_t repro_rng_u64(repro_rng *rng);
/* Uniform in [0, n) by 64-bit multiply-high (Lemire): no division, no libc,
 * bias below 2^-32 for n < 2^32. */
uint32_t repro_rng_below(repro_rng *rng, uint32_t n);
float repro_rng_unit(repro_rng *rng);
/* perm[0..n) = a permutation of 0..n-1: identity, then Fisher-Yates from the
 * last index down, i <-> below(i + 1) (the loader's shuffle). */
void repro_rng_permute(repro_rng *rng, uint32_t *perm, uint32_t n);
/* Approximately standard normal: Irwin-Hall sum of four uniforms, rescaled to
 * unit variance. Chosen over Box-Muller because it needs no libm (whose
 * log/cos differ between libcs) and its bits are the same everywhere. */
float repro_rng_normal(repro_rng *rng);
/* n successive repro_rng_normal(rng) values, the very same numbers, and the
 * same stream state after (the block function run on many blocks at a
 * time, on the vector path in use: kernels/isa.h, philox_vec.h). From
 * used = 0, a state only this function leaves, the state after is an
 * equivalent one: the next words in the buffer rather than the next block. */
void repro_rng_normals(repro_rng *rng, float *out, long n);
/* The same normal from one counter-addressed block (4 uniforms). */
float repro_philox_normal(repro_philox_ctr block);

/* Blocks block .. block+3 of the stream `key` (counter (b lo, b hi, 0, 0),
 * as repro_philox_at with lane 0), four at once with their multiply chains
 * interleaved: out[4*l + w] is word w of block + l. The same bits as four
 * calls of repro_philox_at. */
void repro_philox_blocks4(uint64_t key, uint64_t block, uint32_t out[16]);
/* The same for n blocks (n >= 0): out[4*l + w] = word w of
 * repro_philox_at(key, block + l, 0), on the vector path in use. */
void repro_philox_blocks(uint64_t key, uint64_t block, long n, uint32_t *out);
/* Dropout's keep rule (kernels/shared/pointwise.h) for elements index ..
 * index+n-1: mask[l] = repro_u32_to_unit(repro_philox_at(key, index + l,
 * 0).v[0]) >= p, as 1 or 0, on the vector path in use. */
void repro_philox_keep(uint64_t key, uint64_t index, long n, float p, uint8_t *mask);

#ifdef __cplusplus
}
#endif

#endif
