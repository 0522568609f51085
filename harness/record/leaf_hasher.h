/* A tensor's 4 KiB leaf digests (repro/digest.h's tree hash) on two
 * threads: a helper thread hashes the first half of the leaves while the
 * caller hashes the rest. The recorder's hasher thread uses it for large
 * tensors, so that a recorded run's hashing, which bounds its speed when
 * the training step is faster than SHA-256 over the step's bytes, gets a
 * second core whenever the training thread is waiting for it. The digests
 * are those of the one-thread tree hash: who hashed a leaf changes nothing. */
#ifndef REPRO_LEAF_HASHER_H
#define REPRO_LEAF_HASHER_H

#include <stddef.h>

#include "repro/digest.h"

typedef struct repro_leaf_hasher repro_leaf_hasher;

/* Starts the helper thread. 0, or -1 (error slot set). */
int repro_leaf_hasher_new(repro_leaf_hasher **out);
/* Stops and joins the helper; h may be NULL. */
void repro_leaf_hasher_free(repro_leaf_hasher *h);
/* leaves[repro_leaf_count(nbytes)] = the leaf digests of data. 0, or -1
 * (error slot set). One caller at a time. */
int repro_leaf_hasher_run(repro_leaf_hasher *h, const void *data, size_t nbytes,
                          repro_digest *leaves);

#endif
