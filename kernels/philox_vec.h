/* Philox4x32-10 on vector integer units: one table per vector path
 * (kernels/isa.h), compiled from philox_tmpl.h with per-function target
 * attributes (philox_sse2.c, philox_avx2.c, philox_avx512.c), so the build
 * flags stay baseline x86-64. kernels/philox.c picks the table of the path
 * in use and does the tails with the scalar block function.
 *
 * Why the bits cannot change: a lane is one block, and the rounds are the
 * scalar ones in integer arithmetic (32x32 -> 64-bit products, xor, adds
 * mod 2^32), exact by construction. The float work (normals) is per lane
 * the scalar expression, the same operations in the same order, each
 * correctly rounded (no FMA: none is written, -ffp-contract=off). */
#ifndef REPRO_PHILOX_VEC_H
#define REPRO_PHILOX_VEC_H

#include <stdint.h>

#include "isa.h"

typedef struct {
    repro_isa isa;
    int lanes; /* blocks per step; every n below is a multiple of it; 0: no table */
    /* out[4*l + w] = word w of repro_philox_at(key, block + l, 0), l < n. */
    void (*blocks)(uint64_t key, uint64_t block, long n, uint32_t *out);
    /* mask[l] = repro_u32_to_unit(word 0 of block + l) >= p (dropout's keep
     * rule, kernels/shared/pointwise.h), as 1 or 0. */
    void (*keep)(uint64_t key, uint64_t block, long n, float p, uint8_t *mask);
    /* The normals of a repro_rng stream (repro_philox_normal over its next
     * words, four per normal): r (0..4) words left over from the block
     * before, prev[4-r..3], then blocks block .. block+n-1. out[k], k < n;
     * last = the words of block + n - 1 (the stream's new buffer; it may
     * be prev, which is read first). */
    void (*normals)(uint64_t key, uint64_t block, long n, int r, const uint32_t prev[4],
                    float *out, uint32_t last[4]);
} repro_philox_vec;

/* The table of a path, or NULL when this build has none for it. */
const repro_philox_vec *repro_philox_vec_for(repro_isa isa);

extern const repro_philox_vec repro_philox_vec_sse2, repro_philox_vec_avx2,
    repro_philox_vec_avx512;

#endif
