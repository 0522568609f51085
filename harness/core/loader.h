/* The data loader, following the PyTorch DataLoader contract users know:
 *  - a generator keyed by derive(seed, SHUFFLE) is consumed, per epoch, first
 *    for that epoch's base_seed (one u64) and then for the permutation
 *    (Fisher-Yates from the last index down, repro_rng_below);
 *  - batches of the permutation (drop_last) go round-robin to num_workers
 *    worker threads: batch j of an epoch to worker j % num_workers;
 *  - worker i seeds its RNG with base_seed + i;
 *  - at most num_workers * prefetch batches are in flight;
 *  - batches come out in sampler order whichever worker finishes first;
 *  - num_workers = 0 loads in the caller's thread, as worker 0.
 * Augmentation draws, per sample in the batch order: in mode `worker` from the
 * worker's RNG (PyTorch's behaviour: bits change with num_workers); in mode
 * `sample` from the stream derive(base_seed, AUGMENT, 0,0,0, sample id), so
 * which worker loads a sample never changes its bits. */
#ifndef REPRO_LOADER_H
#define REPRO_LOADER_H

#include <stdint.h>

#include "core/dataset.h"
#include "kernels/philox.h"

typedef enum { REPRO_AUGMENT_SEED_SAMPLE = 0, REPRO_AUGMENT_SEED_WORKER = 1 } repro_augment_seed;

typedef struct {
    uint64_t seed;
    int batch_size;   /* 1 .. dataset size */
    int num_workers;  /* 0 .. 64 */
    int prefetch;     /* batches per worker in flight, >= 1 */
    int shuffle;      /* 0: identity order every epoch (base_seed still drawn) */
    repro_augment_seed augment_seed;
    int shift;        /* random translation by -shift..shift pixels per axis, zero fill; 0 = off */
    int flip;         /* horizontal flip with probability 1/2 */
    float noise;      /* stddev of additive normal noise (repro_*_normal); 0 = off */
} repro_loader_config;

typedef struct {
    int size;
    int epoch;            /* from 0 */
    long index;           /* batch number since the start, from 0 */
    int index_in_epoch;
    uint64_t base_seed;   /* of this epoch */
    const uint32_t *ids;  /* sample ids, in batch order */
    const float *x;       /* size x 1 x 28 x 28, pixel / 255 then augmentation */
    const int32_t *y;     /* labels */
} repro_batch;

typedef struct repro_loader repro_loader;

int repro_loader_new(repro_loader **out, const repro_dataset *ds, const repro_loader_config *cfg);
/* Blocks for the next batch in sampler order; epochs roll over. The batch
 * stays valid until the next call or repro_loader_free. */
int repro_loader_next(repro_loader *l, const repro_batch **out);
int repro_loader_batches_per_epoch(const repro_loader *l);

/* Where the loader's random streams stand: recorded in traces (rng.state)
 * and, later, checkpoints. */
typedef struct {
    uint64_t gen_key, gen_block; /* the shuffle generator */
    int gen_used;
    int epoch;                   /* current epoch, -1 before the first batch */
    uint64_t base_seed;
    long index;                  /* batches handed out */
    int next_in_epoch;           /* index in the epoch of the next batch to hand out */
} repro_loader_position;

void repro_loader_get_position(const repro_loader *l, repro_loader_position *out);
/* The current epoch's permutation (dataset size entries; valid once the
 * first batch was drawn), for checkpoints. */
const uint32_t *repro_loader_permutation(const repro_loader *l);
int repro_loader_dataset_size(const repro_loader *l);
/* Puts a fresh loader (no batch drawn yet) where `p` says, with `perm` the
 * epoch's permutation (ignored when p->epoch < 0): the next repro_loader_next
 * returns exactly the batch an uninterrupted loader would. Worker RNGs
 * (augment_seed = worker) are advanced by replay: each worker, when the
 * epoch's threads start, first re-draws the augmentation of the batches it
 * produced earlier in the epoch (batch j < next_in_epoch with j % W == its
 * id; W = 1 for num_workers = 0), since its stream position is a function of
 * how many samples it augmented and augmentation draws a data-independent
 * count of numbers. So a checkpoint must be resumed with the same
 * num_workers in that mode (checkpoint.c checks). Returns 0, or -1 (exit 2)
 * when the position does not fit this loader. */
int repro_loader_restore(repro_loader *l, const repro_loader_position *p, const uint32_t *perm);
void repro_loader_free(repro_loader *l);

/* The augmentation of one sample, exposed for tests: `rng` is the stream to
 * draw from; draws, in order: shift y, shift x (when shift > 0), flip (when
 * flip), then one normal per pixel in row-major order (when noise > 0). */
void repro_augment_sample(const repro_loader_config *cfg, repro_rng *rng, const uint8_t *pixels,
                          float *out);

#endif
