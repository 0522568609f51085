/* Hashing: SHA-256 through OpenSSL EVP (never the deprecated SHA256_Init),
 * behind our own small API, and the tensor tree hash of DESIGN.md:
 *
 *   leaf[i] = SHA-256(bytes[4096*i .. 4096*(i+1)))      (last leaf shorter;
 *                                                        an empty tensor has none)
 *   header  = "repro-tensor/v1" 0x00 name 0x00 dtype 0x00
 *             ndim as u32 LE, each dim as u64 LE, byte count as u64 LE
 *   digest  = SHA-256(header || leaf[0] || leaf[1] || ...)
 *
 * Bitwise: the raw bytes are hashed, so -0.0 != +0.0 and NaN payloads count.
 * Leaves are independent, so they are hashed in parallel (and, later, on a
 * GPU that sends back only digests) without the result depending on the
 * thread count; a differing leaf locates a change to 1,024 float32s. */
#ifndef REPRO_HASH_H
#define REPRO_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"

#define REPRO_DIGEST_LEN 32
#define REPRO_LEAF_BYTES 4096
#define REPRO_TENSOR_HASH_VERSION "repro-tensor/v1"

typedef struct {
    uint8_t b[REPRO_DIGEST_LEN];
} repro_digest;

/* One-shot SHA-256. Returns 0, or -1 (error slot, exit 3) if OpenSSL fails. */
int repro_sha256(const void *data, size_t len, repro_digest *out);
/* SHA-256 of the concatenation of n digests (step and chain digests). */
int repro_sha256_digests(const repro_digest *d, size_t n, repro_digest *out);

/* Lowercase hex, NUL-terminated (65 bytes). */
void repro_digest_hex(const repro_digest *d, char *hex);
/* Parses 64 hex digits; returns 0 or -1. */
int repro_digest_from_hex(const char *hex, repro_digest *out);
int repro_digest_eq(const repro_digest *a, const repro_digest *b);

typedef struct {
    const char *name;  /* "fc1.weight", "grad.fc1.weight", "batch.x" ... */
    const char *dtype; /* "f32", "i32", "u32" */
    int ndim;
    const long *shape;
    const void *data;
    size_t nbytes;
} repro_tensor_view;

static inline size_t repro_leaf_count(size_t nbytes)
{
    return (nbytes + REPRO_LEAF_BYTES - 1) / REPRO_LEAF_BYTES;
}

/* The tree hash above. `leaves` (may be NULL) receives
 * repro_leaf_count(nbytes) leaf digests. Leaves are spread over `pool`
 * (may be NULL). Returns 0 or -1 (error slot). */
int repro_tensor_digest(repro_pool *pool, const repro_tensor_view *t, repro_digest *out,
                        repro_digest *leaves);

/* Versions of the libraries behind this module, for fingerprints. */
const char *repro_hash_backend_version(void);

#endif
