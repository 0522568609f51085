/* The tensor tree hash whose definition is in the public repro/digest.h
 * (SHA-256 itself: sha256.h; the leaves: leaf_xxh3.h, leaf_sha.h). A
 * differing leaf locates a change to 1,024 float32s. Leaves are
 * independent: a GPU hashes them and hands in only the leaf digests
 * (repro_tensor_digest_of_leaves). */
#ifndef REPRO_HASH_H
#define REPRO_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "repro/digest.h"

typedef struct {
    const char *name;  /* "fc1.weight", "grad.fc1.weight", "batch.x" ... */
    const char *dtype; /* "f32", "i32", "u32" */
    int ndim;
    const long *shape;
    const void *data;
    size_t nbytes;
    repro_digest_fn fn; /* the leaf digest (zero: the default, XXH3-128) */
} repro_tensor_view;

/* leaves[i] for i in [i0, i1): leaf i of data (nbytes long) under fn.
 * 0, or -1 if OpenSSL failed (the error slot is NOT set: any thread may
 * call this). */
int repro_leaf_range(repro_digest_fn fn, const void *data, size_t nbytes, size_t i0, size_t i1,
                     repro_digest *leaves);


/* The tree hash above (repro/digest.h). `leaves` (may be NULL) receives
 * repro_leaf_count(nbytes) leaf digests. Returns 0 or -1 (error slot). */
int repro_tensor_digest(const repro_tensor_view *t, repro_digest *out, repro_digest *leaves);
/* The root from leaf digests computed elsewhere (t->data unused). */
int repro_tensor_digest_of_leaves(const repro_tensor_view *t, const repro_digest *leaves,
                                  repro_digest *out);

#endif
