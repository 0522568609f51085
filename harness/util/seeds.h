/* Seed derivation: every random stream of a run is derived from the one
 * global seed by a keyed, well-mixed function of (seed, purpose, epoch, rank,
 * worker, index), never by libc rand(). Versioned: the string below goes into
 * `repro run`'s output and every trace header, and changes whenever any
 * derived number would change. */
#ifndef REPRO_SEEDS_H
#define REPRO_SEEDS_H

#include <stdint.h>

#include "repro/random.h"

/* v1: key = first 64 bits of Philox4x32-10 with key = seed and
 * counter = (purpose, epoch, rank << 16 | worker, index).
 * Philox is a bijection of the counter for a fixed key, so distinct tuples
 * give distinct 128-bit blocks; the 64-bit truncation collides with
 * probability about 2^-64 per pair. rank and worker must be < 65536. */
#define REPRO_SEED_SCHEME "repro-seed/v1"

typedef enum {
    REPRO_PURPOSE_INIT = 1,       /* parameter init; index = parameter number */
    REPRO_PURPOSE_SHUFFLE = 2,    /* the loader's generator (one stream) */
    REPRO_PURPOSE_DROPOUT = 3,    /* epoch = step, index = layer */
    REPRO_PURPOSE_AUGMENT = 4,    /* augment_seed = sample: seed = base_seed, index = sample id */
    REPRO_PURPOSE_DATA_PROTO = 5, /* synthetic dataset: index = class */
    REPRO_PURPOSE_DATA_SAMPLE = 6, /* synthetic dataset: epoch = split, index = sample */
    REPRO_PURPOSE_BATCH_COMPOSITION = 7, /* check --batch-invariance's shuffled batches: index =
                                            batch size (trains nothing: no run's bits use it) */
    REPRO_PURPOSE_WORKER = 8 /* data-parallel loader workers (world > 1): seed = the epoch's
                                base_seed, rank, worker, index 0. One stream per (rank,
                                worker), unlike base_seed + worker, which every rank repeats */
} repro_purpose;

/* repro_seed_derive, repro_worker_seed and the generator are public:
 * repro/random.h. */

const char *repro_purpose_name(repro_purpose p);

#endif
