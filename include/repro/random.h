/* Seeds and random numbers, as repro's own workload draws them.
 *
 * Philox4x32-10 (the generator cuRAND and PyTorch use) is counter-based: a
 * number is a pure function of (key, counter), so CPU and GPU draw the same
 * bits and re-tiling a kernel does not change them. Every stream of a run
 * is keyed by repro_seed_derive of the one global seed. */
#ifndef REPRO_PUBLIC_RANDOM_H
#define REPRO_PUBLIC_RANDOM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 10 rounds of Philox4x32 over counter ctr under key (k0, k1). */
void repro_philox4x32_10_block(const uint32_t ctr[4], uint32_t k0, uint32_t k1, uint32_t out[4]);

/* A seed for one stream of a run: a keyed, well-mixed function of (seed,
 * purpose, epoch, rank, worker, index) ("repro-seed/v1": the first 64 bits
 * of Philox4x32-10 with key = seed and counter = (purpose, epoch,
 * rank << 16 | worker, index)). Distinct tuples give distinct streams;
 * rank and worker must be < 65536, index < 2^32. Purposes 1..7 are repro's
 * own (init, shuffle, dropout, augment, data, batch composition); use 100 and up for yours. */
uint64_t repro_seed_derive(uint64_t seed, uint32_t purpose, uint32_t epoch, uint32_t rank,
                           uint32_t worker, uint64_t index);

/* PyTorch's DataLoader worker seed: base_seed + worker_id (mod 2^64). */
uint64_t repro_worker_seed(uint64_t base_seed, int worker_id);

/* A seeded stream of numbers, like a torch.Generator: sequential draws over
 * Philox blocks. The whole state is these fields (copy it to checkpoint).
 * The one generator type: repro's kernels and loader draw from this very
 * struct (kernels/philox.h names it repro_rng). */
typedef struct {
    uint64_t key;
    uint64_t block; /* the next block to generate */
    uint32_t buf[4];
    int used;       /* numbers of buf already handed out; 4 = empty */
} repro_generator;

void repro_generator_init(repro_generator *g, uint64_t seed);
uint32_t repro_generator_u32(repro_generator *g);
uint64_t repro_generator_u64(repro_generator *g);
/* Uniform in [0, n), n > 0 (64-bit multiply-high: no division). */
uint32_t repro_generator_below(repro_generator *g, uint32_t n);
/* Uniform float in [0, 1) with 24 random bits: exact. */
float repro_generator_unit(repro_generator *g);
/* out[0..n) = a random permutation of 0..n-1 (Fisher-Yates from the last
 * index down, i <-> below(i + 1): the shuffle repro's loader uses). */
void repro_generator_randperm(repro_generator *g, uint32_t n, uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
