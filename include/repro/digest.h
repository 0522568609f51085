/* Digests: SHA-256 (through OpenSSL inside the library) and the tensor tree
 * hash every trace is made of:
 *
 *   leaf[i] = SHA-256(bytes[4096*i .. 4096*(i+1)))   (the last leaf shorter;
 *                                                     an empty tensor has none)
 *   header  = "repro-tensor/v1" 0x00 name 0x00 dtype 0x00
 *             ndim as u32 LE, each dim as u64 LE, byte count as u64 LE
 *   digest  = SHA-256(header || leaf[0] || leaf[1] || ...)
 *
 * Bitwise: the raw bytes are hashed, so -0.0 != +0.0 and NaN payloads count.
 * Leaves are independent, so they can be hashed anywhere (a GPU sends back
 * only leaf digests) without the result depending on who hashed them. */
#ifndef REPRO_PUBLIC_DIGEST_H
#define REPRO_PUBLIC_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REPRO_DIGEST_LEN 32
#define REPRO_LEAF_BYTES 4096
#define REPRO_TENSOR_HASH_VERSION "repro-tensor/v1"

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

/* Lowercase hex, NUL-terminated (65 bytes), and back (0 or REPRO_EINVAL). */
void repro_digest_hex(const repro_digest *d, char *hex);
int repro_digest_from_hex(const char *hex, repro_digest *out);
int repro_digest_eq(const repro_digest *a, const repro_digest *b);

/* The tensor digest of host bytes. dtype is a trace dtype name ("f32", ...,
 * see repro_dtype_name); nbytes the tensor's size in bytes. */
int repro_tensor_digest_bytes(repro_digest *out, const char *name, const char *dtype, int ndim,
                              const int64_t *shape, const void *data, uint64_t nbytes);
/* The same from leaf digests computed elsewhere:
 * leaves[repro_leaf_count(nbytes)]. */
int repro_tensor_digest_from_leaves(repro_digest *out, const char *name, const char *dtype,
                                    int ndim, const int64_t *shape, uint64_t nbytes,
                                    const repro_digest *leaves);

#ifdef __cplusplus
}
#endif
#endif
