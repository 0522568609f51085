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
 * which worker loads a sample never changes its bits.
 *
 * Data parallel (rank, world, shard_size; all 0 = one process, one shard):
 *  - batch_size is the GLOBAL batch B, the same number on every rank; S =
 *    shard_size (0: S = B), nS = B / S shards per global batch. S must divide
 *    B and world must divide nS (else repro_loader_new fails, REPRO_EINVAL).
 *    Each rank's batch has b = B / world rows (repro_batch.size).
 *  - every rank draws base_seed and the permutation exactly as above, from
 *    the same generator, so all ranks agree on the epoch's permutation (the
 *    role of DistributedSampler's seed + epoch) without communicating.
 *  - batches per epoch stay floor(n / B) (drop_last) on every rank. That is
 *    DistributedSampler(drop_last=True)'s per-rank length floor(n / world)
 *    cut into local batches of b = B / world with drop_last:
 *    floor(floor(n / world) / b) = floor(n / B). So no rank pads (no sample
 *    is repeated in an epoch) and every rank takes the same number of steps;
 *    the n mod B samples at the permutation's end are dropped.
 *  - global batch k of an epoch is permutation positions [kB, (k+1)B).
 *    Shard s (0 <= s < nS) of it is the positions g = s + j*nS, j = 0..S-1
 *    (strided). Rank r owns the shards s = r (mod world), so it holds
 *    exactly the positions g = r (mod world): permutation indices kB + r,
 *    kB + r + world, ..., DistributedSampler's contract.
 *  - rank r's rows are in shard-major order: local shard q = 0 ..
 *    nS/world - 1 is global shard s = q*world + r, and row q*S + j holds
 *    position g = s + j*nS, i.e. sample perm[kB + g]. With world = 1 and one
 *    shard (S = B) that is row i = perm[kB + i]: the single-process order.
 *    (world = 1 with S < B keeps the batch's set but reorders its rows.)
 *  - worker seeds: world <= 1 keeps base_seed + worker (repro_worker_seed);
 *    world > 1 seeds worker w of rank r with derive(base_seed, WORKER, epoch,
 *    r, w, 0), so no two (rank, worker) streams of a run coincide (PyTorch
 *    under DDP gives every rank's worker i the same base_seed + i).
 *    num_workers = 0 loads as worker 0 of its rank. Augmentation in mode
 *    `sample` stays keyed by sample id only, so its pixels do not depend on
 *    the rank, the world size or the shard size.
 *  - positions (repro_loader_get_position/restore) are global: epoch and
 *    global batch index, the same on every rank. */
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
    int rank, world;  /* data parallel: world 0 or 1 = one process; 0 <= rank < world */
    int shard_size;   /* S: divides batch_size; 0 = batch_size (one shard) */
} repro_loader_config;

typedef struct {
    int size;             /* this rank's rows: b = global_size / world */
    int global_size;      /* B: rows of the global batch across all ranks */
    int shard_size;       /* S: rows per shard */
    int nshards;          /* nS = B / S: shards of the global batch */
    int nshards_local;    /* nS / world: shards of this rank; size = nshards_local * S */
    int first_shard;      /* = rank: local shard q is global shard first_shard + q * shard_stride */
    int shard_stride;     /* = world (1 for one process) */
    int epoch;            /* from 0 */
    long index;           /* batch number since the start, from 0 */
    int index_in_epoch;
    uint64_t base_seed;   /* of this epoch */
    const uint32_t *ids;  /* sample ids, in batch order (rows shard-major, see above) */
    const float *x;       /* size x 1 x 28 x 28, pixel / 255 then augmentation */
    const int32_t *y;     /* labels */
} repro_batch;

typedef struct repro_loader repro_loader;

int repro_loader_new(repro_loader **out, const repro_dataset *ds, const repro_loader_config *cfg);
/* Blocks for the next batch in sampler order; epochs roll over. The batch
 * stays valid until the next call or repro_loader_free. */
int repro_loader_next(repro_loader *l, const repro_batch **out);
int repro_loader_batches_per_epoch(const repro_loader *l);

/* Cooperative mode (repro_loader_set_cooperative): the num_workers workers are not
 * threads but streams of work that other threads lend time to. A call
 * fills one row (one sample, microseconds) of a batch a worker would be
 * filling now, within the same prefetch bound, and returns 1, or returns
 * 0 when there is none (every batch in flight is filled, or another thread
 * holds each worker's stream). repro_loader_next fills rows itself while
 * its batch is not ready. Each worker's rows are filled in its thread's
 * order, one thread at a time, so every batch has the bits that
 * num_workers threads give: the mode is speed only. Meant for training
 * threads that fill every core (worker threads would preempt them):
 * repro_train gives it its kernel threads' idle time. Any thread may call
 * it, concurrently; not after repro_loader_free; 0 outside this mode. */
int repro_loader_help(repro_loader *l);
/* Switches a fresh loader (no batch drawn, not restored) with
 * num_workers > 0 to cooperative mode. Returns 1 if the loader is in
 * cooperative mode now, 0 if not (it was not fresh, or has no workers). */
int repro_loader_set_cooperative(repro_loader *l);

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

/* The seed of loader worker `worker` of rank `rank` (of `world`) in the epoch
 * with base_seed `base_seed` (the rule above; exposed for tests and for
 * programs that mirror the loader). */
uint64_t repro_loader_worker_seed(uint64_t base_seed, int epoch, int rank, int world, int worker);

/* The augmentation of one sample, exposed for tests: `rng` is the stream to
 * draw from; draws, in order: shift y, shift x (when shift > 0), flip (when
 * flip), then one normal per pixel in row-major order (when noise > 0). */
void repro_augment_sample(const repro_loader_config *cfg, repro_rng *rng, const uint8_t *pixels,
                          float *out);

#endif
