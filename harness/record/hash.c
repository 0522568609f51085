/* The tensor tree hash (see hash.h): the leaves through leaf_sha.c, the
 * root, SHA-256 over the canonical header and the leaf digests, through
 * sha256.c. */
#include "record/hash.h"

#include <stdlib.h>
#include <string.h>

#include "record/leaf_sha.h"
#include "record/sha256.h"
#include "util/error.h"

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The root: SHA-256 over the canonical header and the leaf digests. */
static int digest_root(const repro_tensor_view *t, const repro_digest *lv, size_t nleaves,
                       repro_digest *out)
{
    uint8_t hdr[512];
    size_t pos = 0;
    const char *parts[3] = {REPRO_TENSOR_HASH_VERSION, t->name, t->dtype};
    if (t->ndim < 0 || t->ndim > 8)
        return repro_error_set(REPRO_EINVAL, "%s: %d dimensions (at most 8)", t->name, t->ndim);
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]) + 1;
        if (pos + n > sizeof hdr - 4 - 8 * (size_t)t->ndim - 8)
            return repro_error_set(REPRO_EINVAL, "tensor name too long: %s", t->name);
        memcpy(hdr + pos, parts[i], n);
        pos += n;
    }
    put_u32le(hdr + pos, (uint32_t)t->ndim);
    pos += 4;
    for (int i = 0; i < t->ndim; i++, pos += 8)
        put_u64le(hdr + pos, (uint64_t)t->shape[i]);
    put_u64le(hdr + pos, (uint64_t)t->nbytes);
    pos += 8;
    if (repro_sha256_concat(hdr, pos, lv, nleaves * sizeof *lv, out))
        return repro_error_set(REPRO_EIO, "OpenSSL SHA-256 failed hashing %s", t->name);
    return 0;
}

int repro_tensor_digest(const repro_tensor_view *t, repro_digest *out, repro_digest *leaves)
{
    size_t nleaves = repro_leaf_count(t->nbytes);
    repro_digest stack_leaves[64];
    repro_digest *lv = leaves;
    if (!lv) {
        lv = nleaves <= 64 ? stack_leaves : malloc(nleaves * sizeof *lv);
        if (!lv)
            return repro_error_set(REPRO_ENOMEM, "out of memory hashing %s", t->name);
    }
    int rc = 0;
    if (repro_leaf_sha_range(t->data, t->nbytes, 0, nleaves, lv))
        rc = repro_error_set(REPRO_EIO, "OpenSSL SHA-256 failed hashing %s", t->name);
    if (!rc)
        rc = digest_root(t, lv, nleaves, out);
    if (!leaves && lv != stack_leaves)
        free(lv);
    return rc;
}

int repro_tensor_digest_of_leaves(const repro_tensor_view *t, const repro_digest *leaves,
                                  repro_digest *out)
{
    return digest_root(t, leaves, repro_leaf_count(t->nbytes), out);
}

/* ---- the public entry points (repro/digest.h): shapes are int64_t there. */

static int public_view(repro_tensor_view *v, long *shape, const char *name, const char *dtype,
                       int ndim, const int64_t *shape64, const void *data, uint64_t nbytes)
{
    if (!name || !dtype || ndim < 0 || ndim > 8 || (ndim > 0 && !shape64))
        return repro_error_set(REPRO_EINVAL, "tensor digest: bad name, dtype or shape");
    for (int i = 0; i < ndim; i++) {
        if (shape64[i] < 0)
            return repro_error_set(REPRO_EINVAL, "%s: negative dimension", name);
        shape[i] = (long)shape64[i];
    }
    *v = (repro_tensor_view){name, dtype, ndim, shape, data, (size_t)nbytes};
    return 0;
}

int repro_tensor_digest_bytes(repro_digest *out, const char *name, const char *dtype, int ndim,
                              const int64_t *shape, const void *data, uint64_t nbytes)
{
    long sh[8];
    repro_tensor_view v;
    if (public_view(&v, sh, name, dtype, ndim, shape, data, nbytes) ||
        repro_tensor_digest(&v, out, NULL))
        return repro_error_code();
    return 0;
}

int repro_tensor_digest_from_leaves(repro_digest *out, const char *name, const char *dtype,
                                    int ndim, const int64_t *shape, uint64_t nbytes,
                                    const repro_digest *leaves)
{
    long sh[8];
    repro_tensor_view v;
    if (public_view(&v, sh, name, dtype, ndim, shape, NULL, nbytes) ||
        repro_tensor_digest_of_leaves(&v, leaves, out))
        return repro_error_code();
    return 0;
}
