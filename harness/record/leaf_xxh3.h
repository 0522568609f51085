/* The default leaf digest of the tensor tree hash (repro/digest.h):
 * XXH3-128 (libxxhash) over each 4 KiB leaf, seed 0, written in its
 * canonical (big-endian) form into the first 16 bytes of a repro_digest,
 * the other 16 zero. About five times SHA-256's speed on the library's
 * baseline (SSE2) build, twelve times on its AVX2 path (leaf_xxh3_avx2.c):
 * the leaves are most of what a recorded step hashes. */
#ifndef REPRO_LEAF_XXH3_H
#define REPRO_LEAF_XXH3_H

#include <stddef.h>

#include "repro/digest.h"

/* leaves[i] = XXH3-128 of leaf i of data (nbytes long) for i in [i0, i1).
 * Cannot fail; any thread may call it. */
void repro_leaf_xxh3_range(const void *data, size_t nbytes, size_t i0, size_t i1,
                           repro_digest *leaves);

/* The path in use: "avx2 (xxhash.h inline)" while the vector path is avx2
 * or wider and the AVX2 code passed its self-test, else "libxxhash (WHY)".
 * For `repro env`. */
const char *repro_leaf_xxh3_path(void);

/* The AVX2 self-test, for tests: 1 passed, 0 failed, -1 not run (no AVX2).
 * corrupt = 1 is its negative control (one byte changed on one side). */
int repro_leaf_xxh3_self_test(int corrupt);

/* leaf_xxh3_avx2.c: one leaf on the AVX2 path (call only where AVX2 is
 * supported); available: 0 on CPUs it is not built for. */
int repro_leaf_xxh3_avx2_available(void);
void repro_leaf_xxh3_avx2(const void *data, size_t len, unsigned char out[16]);

#endif
