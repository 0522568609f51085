/* The loader's insides, shared by its two ways of filling batches,
 * worker threads (loader.c) and cooperative filling by the threads that
 * call repro_loader_help (loader_coop.c), and by what both fill with
 * (loader_fill.c). Private to those three files; the calls go one way:
 * loader.c -> loader_coop.c -> loader_fill.c, and loader.c -> loader_fill.c. */
#ifndef REPRO_LOADER_IMPL_H
#define REPRO_LOADER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/loader.h"

typedef struct {
    uint32_t *ids;
    float *x;
    int32_t *y;
    atomic_int ready_k; /* index in epoch of the batch this slot holds, -1 if none */
    repro_batch batch;
} slot;

typedef struct {
    repro_loader *l;
    int id;
    pthread_t thread;
    pthread_cond_t slot_cv; /* this worker waits: its next slot freed, or stop */
} worker;

/* Cooperative mode's worker w: the stream of batches w, w + W, ... that a
 * worker thread would fill, filled a row at a time by whichever thread
 * holds `busy`, in the thread's order (so its RNG draws the same numbers
 * in the same order). k and row change only under busy. */
typedef struct {
    atomic_int busy;
    repro_rng rng;
    int k;   /* the batch being filled (>= bpe: the epoch's share is done) */
    int row; /* its next row */
} coop_worker;

struct repro_loader {
    const repro_dataset *ds; /* = &ds_copy */
    repro_dataset ds_copy;   /* the caller's struct may move; its arrays may not */
    repro_loader_config cfg;
    int nw;               /* threads this epoch: num_workers, or 0 */
    int bpe;              /* batches per epoch (drop_last) */
    int world, rank;      /* world >= 1 */
    int shard;            /* S */
    int nshards;          /* nS = B / S */
    int rows;             /* b = B / world: this rank's rows per batch */
    int nslots;
    slot *slots;
    worker *workers;
    uint32_t *perm;

    repro_rng gen;        /* the shuffle generator: consumer thread only */
    int epoch;            /* current epoch, -1 before the first */
    uint64_t base_seed;
    long index;           /* batches handed out so far */
    int next_k;           /* next batch index in this epoch to hand out */
    int first_k;          /* first batch the epoch's workers produce: 0, or where
                             repro_loader_restore resumed (earlier ones are replayed) */
    int held;             /* 1: the caller holds batch next_k - 1 */
    int running;          /* workers of the current epoch are started */

    pthread_mutex_t mu;
    pthread_cond_t ready_cv;    /* consumer waits: batch ready */
    atomic_int released;  /* batches of this epoch the consumer is done with */
    int started;          /* batches of this epoch a worker has begun filling */
    int stop;
    int max_in_flight;    /* test instrumentation: max of started - released */
    repro_rng sync_rng;   /* num_workers = 0: worker 0's RNG, in the caller */

    /* Cooperative mode (repro_loader_set_cooperative, num_workers > 0) */
    int coop;
    coop_worker *cw;      /* nw of them */
    atomic_int coop_open;   /* 1 while the epoch's fields may be read by helpers */
    atomic_int coop_inside; /* helpers inside repro_loader_help */
    atomic_int coop_next;   /* the batch the consumer waits for or takes next */
};

/* Filling (loader_fill.c). Row b of batch k of the current epoch into
 * slot s (worker mode draws from wrng); then, once every row is in, the
 * batch's fields. */
void repro_loader_fill_row(repro_loader *l, slot *s, int k, int b, repro_rng *wrng);
void repro_loader_finish_batch(repro_loader *l, slot *s, int k);
/* Advances a worker's RNG past batch k as if it had filled it. */
void repro_loader_replay_batch(const repro_loader *l, int k, repro_rng *wrng);
/* Counts batch k's start for the prefetch bound (repro_loader_max_in_flight). */
void repro_loader_count_start(repro_loader *l);

/* Cooperative mode (loader_coop.c): start the epoch's workers from
 * first_k (replaying the batches before it), stop them (returns once no
 * helper is inside), and, in the consumer, wait for batch k in slot s,
 * filling rows meanwhile. */
void repro_loader_coop_start(repro_loader *l);
void repro_loader_coop_stop(repro_loader *l);
void repro_loader_coop_wait(repro_loader *l, slot *s, int k);

#endif
