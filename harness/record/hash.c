/* SHA-256 and the tensor tree hash (see hash.h). One EVP_MD is fetched once;
 * each thread keeps its own EVP_MD_CTX, because contexts are not shareable
 * and creating one per 4 KiB leaf would cost more than the hashing. */
#include "record/hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "record/leaf_sha.h"
#include "util/error.h"

static EVP_MD *sha256_md;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void fetch_md(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* A per-thread context, freed at thread exit. */
static pthread_key_t ctx_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void free_ctx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void make_key(void)
{
    pthread_key_create(&ctx_key, free_ctx);
}

static EVP_MD_CTX *thread_ctx(void)
{
    pthread_once(&md_once, fetch_md);
    pthread_once(&key_once, make_key);
    if (!sha256_md)
        return NULL;
    EVP_MD_CTX *ctx = pthread_getspecific(ctx_key);
    if (!ctx) {
        ctx = EVP_MD_CTX_new();
        if (ctx)
            pthread_setspecific(ctx_key, ctx);
    }
    return ctx;
}

/* The streaming core: begin, feed, end. Returns 0 or -1 without touching the
 * error slot (callers may run on pool threads). */
static int sha_begin(EVP_MD_CTX **ctx)
{
    *ctx = thread_ctx();
    return *ctx && EVP_DigestInit_ex2(*ctx, sha256_md, NULL) == 1 ? 0 : -1;
}

static int sha_feed(EVP_MD_CTX *ctx, const void *p, size_t n)
{
    return EVP_DigestUpdate(ctx, p, n) == 1 ? 0 : -1;
}

static int sha_end(EVP_MD_CTX *ctx, repro_digest *out)
{
    unsigned int len = 0;
    return EVP_DigestFinal_ex(ctx, out->b, &len) == 1 && len == REPRO_DIGEST_LEN ? 0 : -1;
}

static int sha_oneshot(const void *data, size_t len, repro_digest *out)
{
    EVP_MD_CTX *ctx;
    if (sha_begin(&ctx) || sha_feed(ctx, data, len) || sha_end(ctx, out))
        return -1;
    return 0;
}

int repro_sha256(const void *data, size_t len, repro_digest *out)
{
    if (sha_oneshot(data, len, out)) {
        repro_error_set(REPRO_EIO, "OpenSSL SHA-256 failed");
        return REPRO_EIO;
    }
    return 0;
}

int repro_sha256_digests(const repro_digest *d, size_t n, repro_digest *out)
{
    return repro_sha256(d, n * sizeof *d, out);
}

void repro_digest_hex(const repro_digest *d, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < REPRO_DIGEST_LEN; i++) {
        hex[2 * i] = digits[d->b[i] >> 4];
        hex[2 * i + 1] = digits[d->b[i] & 15];
    }
    hex[2 * REPRO_DIGEST_LEN] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int repro_digest_from_hex(const char *hex, repro_digest *out)
{
    for (int i = 0; i < REPRO_DIGEST_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return REPRO_EINVAL;
        out->b[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * REPRO_DIGEST_LEN] == '\0' ? 0 : REPRO_EINVAL;
}

int repro_digest_eq(const repro_digest *a, const repro_digest *b)
{
    return memcmp(a->b, b->b, REPRO_DIGEST_LEN) == 0;
}

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
    EVP_MD_CTX *ctx;
    if (sha_begin(&ctx) || sha_feed(ctx, hdr, pos) ||
        sha_feed(ctx, lv, nleaves * sizeof *lv) || sha_end(ctx, out))
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

const char *repro_hash_backend_version(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}
