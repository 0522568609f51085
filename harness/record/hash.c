/* The tensor tree hash (see hash.h): the leaves through leaf_xxh3.c or
 * leaf_sha.c, the root, SHA-256 over the canonical header and the leaf
 * digests, through sha256.c. */
#include "record/hash.h"

#include <stdlib.h>
#include <string.h>

#include "record/leaf_sha.h"
#include "record/leaf_xxh3.h"
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

const char *repro_digest_fn_name(repro_digest_fn fn)
{
    return fn == REPRO_DIGEST_XXH3     ? REPRO_TENSOR_HASH_XXH3
           : fn == REPRO_DIGEST_SHA256 ? REPRO_TENSOR_HASH_SHA256
                                       : NULL;
}

int repro_digest_fn_from_name(const char *name, repro_digest_fn *out)
{
    if (name && (!strcmp(name, REPRO_TENSOR_HASH_XXH3) || !strcmp(name, "xxh3"))) {
        *out = REPRO_DIGEST_XXH3;
        return 0;
    }
    if (name && (!strcmp(name, REPRO_TENSOR_HASH_SHA256) || !strcmp(name, "sha256"))) {
        *out = REPRO_DIGEST_SHA256;
        return 0;
    }
    repro_error_set(REPRO_EINVAL, "unknown digest function \"%s\" (%s or %s)",
                    name ? name : "(null)", REPRO_TENSOR_HASH_XXH3, REPRO_TENSOR_HASH_SHA256);
    return REPRO_EINVAL;
}

size_t repro_leaf_digest_len(repro_digest_fn fn)
{
    return fn == REPRO_DIGEST_SHA256 ? REPRO_DIGEST_LEN : 16;
}

int repro_leaf_range(repro_digest_fn fn, const void *data, size_t nbytes, size_t i0, size_t i1,
                     repro_digest *leaves)
{
    if (fn == REPRO_DIGEST_SHA256)
        return repro_leaf_sha_range(data, nbytes, i0, i1, leaves);
    repro_leaf_xxh3_range(data, nbytes, i0, i1, leaves);
    return 0;
}

/* The leaf digests as the root hashes them: each its repro_leaf_digest_len
 * bytes, one after another. SHA-256 leaves are already that; XXH3-128's
 * are packed into *packed (freed by the caller; NULL when not needed). */
static const void *root_leaf_bytes(repro_digest_fn fn, const repro_digest *lv, size_t nleaves,
                                   uint8_t **packed)
{
    *packed = NULL;
    size_t len = repro_leaf_digest_len(fn);
    if (len == REPRO_DIGEST_LEN || nleaves == 0)
        return lv;
    if (!(*packed = malloc(nleaves * len)))
        return NULL;
    for (size_t i = 0; i < nleaves; i++)
        memcpy(*packed + i * len, lv[i].b, len);
    return *packed;
}

/* The root: SHA-256 over the canonical header and the leaf digests. */
static int digest_root(const repro_tensor_view *t, const repro_digest *lv, size_t nleaves,
                       repro_digest *out)
{
    uint8_t hdr[512];
    size_t pos = 0;
    const char *fname = repro_digest_fn_name(t->fn);
    if (!fname)
        return repro_error_set(REPRO_EINVAL, "%s: unknown digest function %d", t->name, (int)t->fn);
    const char *parts[3] = {fname, t->name, t->dtype};
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
    uint8_t *packed;
    const void *leaf_bytes = root_leaf_bytes(t->fn, lv, nleaves, &packed);
    if (!leaf_bytes)
        return repro_error_set(REPRO_ENOMEM, "out of memory hashing %s", t->name);
    int rc = repro_sha256_concat(hdr, pos, leaf_bytes, nleaves * repro_leaf_digest_len(t->fn), out);
    free(packed);
    if (rc)
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
    if (repro_leaf_range(t->fn, t->data, t->nbytes, 0, nleaves, lv))
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
    *v = (repro_tensor_view){name, dtype, ndim, shape, data, (size_t)nbytes, REPRO_DIGEST_XXH3};
    return 0;
}

int repro_tensor_digest_bytes_fn(repro_digest_fn fn, repro_digest *out, const char *name,
                                 const char *dtype, int ndim, const int64_t *shape,
                                 const void *data, uint64_t nbytes)
{
    long sh[8];
    repro_tensor_view v;
    if (public_view(&v, sh, name, dtype, ndim, shape, data, nbytes))
        return repro_error_code();
    v.fn = fn;
    if (repro_tensor_digest(&v, out, NULL))
        return repro_error_code();
    return 0;
}

int repro_tensor_digest_from_leaves_fn(repro_digest_fn fn, repro_digest *out, const char *name,
                                       const char *dtype, int ndim, const int64_t *shape,
                                       uint64_t nbytes, const repro_digest *leaves)
{
    long sh[8];
    repro_tensor_view v;
    if (public_view(&v, sh, name, dtype, ndim, shape, NULL, nbytes))
        return repro_error_code();
    v.fn = fn;
    if (repro_tensor_digest_of_leaves(&v, leaves, out))
        return repro_error_code();
    return 0;
}

int repro_tensor_digest_bytes(repro_digest *out, const char *name, const char *dtype, int ndim,
                              const int64_t *shape, const void *data, uint64_t nbytes)
{
    return repro_tensor_digest_bytes_fn(REPRO_DIGEST_XXH3, out, name, dtype, ndim, shape, data,
                                        nbytes);
}

int repro_tensor_digest_from_leaves(repro_digest *out, const char *name, const char *dtype,
                                    int ndim, const int64_t *shape, uint64_t nbytes,
                                    const repro_digest *leaves)
{
    return repro_tensor_digest_from_leaves_fn(REPRO_DIGEST_XXH3, out, name, dtype, ndim, shape,
                                              nbytes, leaves);
}

int repro_leaf_digests(repro_digest_fn fn, const void *data, uint64_t nbytes,
                       repro_digest *leaves)
{
    if (!repro_digest_fn_name(fn) || (nbytes > 0 && (!data || !leaves)))
        return repro_error_set(REPRO_EINVAL, "leaf digests: bad function, data or leaves"),
               REPRO_EINVAL;
    if (repro_leaf_range(fn, data, (size_t)nbytes, 0, repro_leaf_count((size_t)nbytes), leaves))
        return repro_error_set(REPRO_EIO, "OpenSSL SHA-256 failed hashing leaves"), REPRO_EIO;
    return 0;
}
