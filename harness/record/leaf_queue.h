/* Tensors' 4 KiB leaf digests (repro/digest.h's tree hash), queued for
 * later: a batch of tensors is posted and its leaves are hashed, in small
 * units, by whichever threads have a moment (kernel threads between their
 * jobs), until its owner needs the digests and finishes what is left.
 *
 * What it is for: a recorded step on as many kernel threads as CPUs
 * (core/train_record.c's inline jobs). Hashing a step's tensors where the
 * step produces them keeps both threads on the hash while no training
 * runs; posted instead, the leaves are hashed in the kernel threads' idle
 * moments of the next phase of training (serial ops, small products), and
 * the owner hashes only what is left when the tensor is about to change.
 * The digests are the one-thread tree hash's: who hashed a leaf, and
 * when, changes nothing.
 *
 * A batch may also carry other work as units (repro_leaf_batch_tasks).
 *
 * Like leaf_share.h it has no lock of its own: it uses its owner's mutex
 * and condition variable. A posted batch's tensors must not change until
 * repro_leaf_queue_finish returns for it. */
#ifndef REPRO_LEAF_QUEUE_H
#define REPRO_LEAF_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "repro/digest.h"

enum { REPRO_LEAF_QUEUE_MAX = 4 };

typedef struct {
    const unsigned char *data;
    size_t nbytes, nleaves, first_unit;
    repro_digest *leaves;
} repro_leaf_tensor;

typedef struct {
    /* Set by repro_leaf_batch_add before the post; constant while posted. */
    int ntensors, cap;
    repro_leaf_tensor *t;
    /* Other work of the batch, as units of their own before the leaves
     * (repro_leaf_batch_tasks): task(task_arg, k) for k < ntasks. */
    void (*task)(void *arg, int k);
    void *task_arg;
    int ntasks;
    size_t nunits;
    atomic_size_t next; /* the first unit not yet taken */
    atomic_size_t done; /* units hashed */
    int helpers;        /* under mu: threads hashing a unit of this batch */
    atomic_int failed;
} repro_leaf_batch;

typedef struct {
    pthread_mutex_t *mu; /* the owner's */
    pthread_cond_t *cv;  /* the owner's: broadcast when a batch's last unit is hashed */
    repro_digest_fn fn;
    size_t unit_leaves;  /* leaves per unit: 16 (leaf_share.c says why) */
    /* Posted batches, oldest first (under mu); `posted` mirrors the count
     * for repro_leaf_queue_unit's one-load check. */
    repro_leaf_batch *q[REPRO_LEAF_QUEUE_MAX];
    int nq;
    atomic_int posted;
} repro_leaf_queue;

void repro_leaf_queue_init(repro_leaf_queue *q, pthread_mutex_t *mu, pthread_cond_t *cv,
                           repro_digest_fn fn);

/* A batch with room for `cap` tensors: 0, or -1 (error slot set). */
int repro_leaf_batch_init(repro_leaf_batch *b, int cap);
void repro_leaf_batch_release(repro_leaf_batch *b);

/* Empties a batch that is not posted; then its tensors: leaves[
 * repro_leaf_count(nbytes)] will hold the leaf digests of data. -1 (error
 * slot set) past the batch's room. */
void repro_leaf_batch_clear(repro_leaf_batch *b);
int repro_leaf_batch_add(repro_leaf_batch *b, const void *data, size_t nbytes,
                         repro_digest *leaves);

/* Adds `ntasks` units of other work to a batch that is not posted: any
 * thread may run task(arg, k) once for each k, before the leaves (the
 * longer units first, so that two threads end close together). */
void repro_leaf_batch_tasks(repro_leaf_batch *b, void (*task)(void *arg, int k), void *arg,
                            int ntasks);

/* Called WITHOUT mu, by the batch's owner: any thread may now hash its
 * leaves. At most REPRO_LEAF_QUEUE_MAX batches are posted at once (-1,
 * error slot set, past that; nothing is posted). */
int repro_leaf_queue_post(repro_leaf_queue *q, repro_leaf_batch *b);
/* The same, ahead of the batches posted already: for work its owner is
 * about to wait for. */
int repro_leaf_queue_post_first(repro_leaf_queue *q, repro_leaf_batch *b);

/* Called WITHOUT mu by a thread with a moment to spare (a kernel thread
 * between two jobs): hashes one unit of the oldest posted batch with
 * units left (64 KiB, microseconds) and returns 1, or returns 0 at the
 * cost of one atomic load when nothing is posted. */
int repro_leaf_queue_unit(repro_leaf_queue *q);

/* Called WITHOUT mu by the owner: hashes b's units left, waits for the
 * helpers inside b, and takes b out of the queue; its leaves are then
 * all written. 0, or -1 (error slot set) when a leaf failed (SHA-256). */
int repro_leaf_queue_finish(repro_leaf_queue *q, repro_leaf_batch *b);

#endif
