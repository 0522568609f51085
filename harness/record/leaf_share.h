/* A tensor's 4 KiB leaf digests (repro/digest.h's tree hash), shared out in
 * small chunks to whichever threads have nothing better to do.
 *
 * The recorder's hasher thread posts a large tensor and hashes its leaves;
 * the training thread, when it reaches a point where it must wait for the
 * hasher, takes chunks of the same tensor instead of sleeping. So a
 * recorded run uses the second core when its training uses one, and no
 * third thread ever competes with training for a core (a helper thread
 * would: it runs whether or not the training thread is waiting). The
 * digests are the one-thread tree hash's: who hashed a leaf changes
 * nothing.
 *
 * The share has no lock of its own: it uses its owner's mutex and condition
 * variable, so one wait can watch for both "the job I wait for is done" and
 * "there are leaves to help with" (the owner's waiters are woken when a
 * tensor is posted). */
#ifndef REPRO_LEAF_SHARE_H
#define REPRO_LEAF_SHARE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "repro/digest.h"

typedef struct {
    pthread_mutex_t *mu; /* the owner's */
    pthread_cond_t *cv;  /* the owner's; broadcast on post and on completion */
    /* The posted tensor: constant while `active`; under mu otherwise. */
    const unsigned char *data;
    size_t nbytes, n;
    repro_digest *leaves;
    repro_digest_fn fn;  /* the leaf digest: set by the owner before a run
                            (init: the default, XXH3-128) */
    atomic_int active; /* written under mu; read without it by repro_leaf_share_unit */
    int helpers;   /* under mu: threads inside repro_leaf_share_help's work */
    atomic_size_t next;  /* first leaf not yet taken */
    atomic_size_t done;  /* leaves hashed */
    atomic_int failed;
} repro_leaf_share;

/* mu and cv: the owner's, used for every wait and wake-up here. */
void repro_leaf_share_init(repro_leaf_share *s, pthread_mutex_t *mu, pthread_cond_t *cv);

/* Called WITHOUT mu held, by one thread at a time (the poster):
 * leaves[repro_leaf_count(nbytes)] = the leaf digests of data, hashed by
 * this thread and any helpers. `while_shared` (may be NULL) runs on this
 * thread after the tensor is posted and before it takes leaves, so work
 * that reads the same tensor (its stats) overlaps with a helper's hashing.
 * 0, or -1 (error slot set). */
int repro_leaf_share_run(repro_leaf_share *s, const void *data, size_t nbytes,
                         repro_digest *leaves, void (*while_shared)(void *), void *arg);

/* Called WITH mu held: if a tensor is posted and has leaves left, drops mu,
 * hashes chunks until none are left, retakes mu and returns 1; else 0
 * (without dropping mu). A waiter loops: help, or cond_wait when this
 * returns 0. */
int repro_leaf_share_help(repro_leaf_share *s);

/* Called WITHOUT mu held, by a thread with a moment to spare (a kernel
 * thread between two jobs: kernels/cpu/pool.h's idle work): hashes one
 * chunk of the posted tensor (64 KiB, microseconds) and returns 1, or
 * returns 0 at the cost of one atomic load when nothing is left to take. */
int repro_leaf_share_unit(repro_leaf_share *s);

#endif
