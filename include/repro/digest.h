/* Digests: SHA-256 (through OpenSSL inside the library) and the tensor tree
 * hash every trace is made of. A tree hash is defined by its digest
 * function (the trace header's "tensor_hash"):
 *
 *   "repro-tensor/v2-xxh3-128" (REPRO_DIGEST_XXH3, the default):
 *     leaf[i] = XXH3-128(bytes[4096*i .. 4096*(i+1)))  (libxxhash, seed 0;
 *               16 bytes, the canonical big-endian form XXH128_canonical_t)
 *   "repro-tensor/v1" (REPRO_DIGEST_SHA256, `[trace] digest = sha256`):
 *     leaf[i] = SHA-256(bytes[4096*i .. 4096*(i+1)))    (32 bytes)
 *
 *   (the last leaf shorter; an empty tensor has none)
 *   header  = tensor_hash 0x00 name 0x00 dtype 0x00
 *             ndim as u32 LE, each dim as u64 LE, byte count as u64 LE
 *   digest  = SHA-256(header || leaf[0] || leaf[1] || ...)  (each leaf
 *             its 16 or 32 bytes)
 *
 * Leaves are where the bytes are: the fast non-cryptographic XXH3-128
 * catches accidental divergence (two different leaves collide with
 * probability 2^-128) but not a party who crafts a collision; SHA-256 leaves
 * do both, at about a fifth of the speed. Roots, step and chain digests are
 * SHA-256 over the (small) leaf and tensor digests whatever the leaves.
 *
 * Bitwise: the raw bytes are hashed, so -0.0 != +0.0 and NaN payloads count.
 * Leaves are independent, so they can be hashed anywhere (a GPU sends back
 * only leaf digests) without the result depending on who hashed them. A
 * leaf digest travels as a repro_digest: XXH3-128's 16 bytes first, the
 * other 16 zero. */
#ifndef REPRO_PUBLIC_DIGEST_H
#define REPRO_PUBLIC_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REPRO_DIGEST_LEN 32
#define REPRO_LEAF_BYTES 4096
/* The digest functions' names (the trace header's "tensor_hash"). */
#define REPRO_TENSOR_HASH_SHA256 "repro-tensor/v1"
#define REPRO_TENSOR_HASH_XXH3 "repro-tensor/v2-xxh3-128"
/* The default's. */
#define REPRO_TENSOR_HASH_VERSION REPRO_TENSOR_HASH_XXH3

/* Which leaf digest a tree hash uses (zero, the default: XXH3-128). */
typedef enum { REPRO_DIGEST_XXH3 = 0, REPRO_DIGEST_SHA256 = 1 } repro_digest_fn;

typedef struct {
    uint8_t b[REPRO_DIGEST_LEN];
} repro_digest;

static inline size_t repro_leaf_count(size_t nbytes)
{
    return (nbytes + REPRO_LEAF_BYTES - 1) / REPRO_LEAF_BYTES;
}

/* One-shot SHA-256 (a leaf digest is this over its bytes). */
int repro_sha256(const void *data, size_t len, repro_digest *out);
/* SHA-256 of the concatenation of n digests (step and chain digests). */
int repro_sha256_digests(const repro_digest *d, size_t n, repro_digest *out);

/* The header name of fn ("repro-tensor/v2-xxh3-128"), or NULL. */
const char *repro_digest_fn_name(repro_digest_fn fn);
/* fn from a header name (either above) or a config value ("xxh3",
 * "sha256"): 0, or REPRO_EINVAL for any other text. */
int repro_digest_fn_from_name(const char *name, repro_digest_fn *out);
/* Bytes of one leaf digest: 16 (XXH3-128) or 32 (SHA-256). */
size_t repro_leaf_digest_len(repro_digest_fn fn);
/* The leaf digests of host bytes: leaves[repro_leaf_count(nbytes)]. */
int repro_leaf_digests(repro_digest_fn fn, const void *data, uint64_t nbytes,
                       repro_digest *leaves);

/* Lowercase hex, NUL-terminated (65 bytes), and back (0 or REPRO_EINVAL). */
void repro_digest_hex(const repro_digest *d, char *hex);
int repro_digest_from_hex(const char *hex, repro_digest *out);
int repro_digest_eq(const repro_digest *a, const repro_digest *b);

/* The tensor digest of host bytes under the default digest function
 * (repro_tensor_digest_bytes_fn for another). dtype is a trace dtype name ("f32", ...,
 * see repro_dtype_name); nbytes the tensor's size in bytes. */
int repro_tensor_digest_bytes(repro_digest *out, const char *name, const char *dtype, int ndim,
                              const int64_t *shape, const void *data, uint64_t nbytes);
/* The same from leaf digests computed elsewhere:
 * leaves[repro_leaf_count(nbytes)]. */
int repro_tensor_digest_from_leaves(repro_digest *out, const char *name, const char *dtype,
                                    int ndim, const int64_t *shape, uint64_t nbytes,
                                    const repro_digest *leaves);
/* The same two under digest function fn. */
int repro_tensor_digest_bytes_fn(repro_digest_fn fn, repro_digest *out, const char *name,
                                 const char *dtype, int ndim, const int64_t *shape,
                                 const void *data, uint64_t nbytes);
int repro_tensor_digest_from_leaves_fn(repro_digest_fn fn, repro_digest *out, const char *name,
                                       const char *dtype, int ndim, const int64_t *shape,
                                       uint64_t nbytes, const repro_digest *leaves);

#ifdef __cplusplus
}
#endif
#endif
