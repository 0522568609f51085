/* SHA-256 and the tensor tree hash (see hash.h). One EVP_MD is fetched once;
 * each thread keeps its own EVP_MD_CTX, because contexts are not shareable
 * and creating one per 4 KiB leaf would cost more than the hashing. */
#include "hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

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
    if (sha_oneshot(data, len, out))
        return repro_error_set(REPRO_EXIT_ENV, "OpenSSL SHA-256 failed");
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
            return -1;
        out->b[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * REPRO_DIGEST_LEN] == '\0' ? 0 : -1;
}

int repro_digest_eq(const repro_digest *a, const repro_digest *b)
{
    return memcmp(a->b, b->b, REPRO_DIGEST_LEN) == 0;
}

/* Leaves per pool chunk: 16 x 4 KiB = 64 KiB, enough to amortize dispatch. */
enum { LEAVES_PER_CHUNK = 16 };

typedef struct {
    const uint8_t *data;
    size_t nbytes, nleaves;
    repro_digest *leaves;
    atomic_int failed;
} leaf_job;

static void hash_leaves(void *arg, long chunk)
{
    leaf_job *j = arg;
    size_t first = (size_t)chunk * LEAVES_PER_CHUNK;
    size_t last = first + LEAVES_PER_CHUNK < j->nleaves ? first + LEAVES_PER_CHUNK : j->nleaves;
    for (size_t i = first; i < last; i++) {
        size_t off = i * REPRO_LEAF_BYTES;
        size_t n = j->nbytes - off < REPRO_LEAF_BYTES ? j->nbytes - off : REPRO_LEAF_BYTES;
        if (sha_oneshot(j->data + off, n, &j->leaves[i]))
            atomic_store(&j->failed, 1);
    }
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

int repro_tensor_digest(repro_pool *pool, const repro_tensor_view *t, repro_digest *out,
                        repro_digest *leaves)
{
    size_t nleaves = repro_leaf_count(t->nbytes);
    repro_digest stack_leaves[64];
    repro_digest *lv = leaves;
    if (!lv) {
        lv = nleaves <= 64 ? stack_leaves : malloc(nleaves * sizeof *lv);
        if (!lv)
            return repro_error_set(REPRO_EXIT_ENV, "out of memory hashing %s", t->name);
    }
    leaf_job job = {t->data, t->nbytes, nleaves, lv, 0};
    long chunks = (long)((nleaves + LEAVES_PER_CHUNK - 1) / LEAVES_PER_CHUNK);
    repro_pool_run(pool, chunks, hash_leaves, &job);

    /* The canonical header. */
    uint8_t hdr[512];
    size_t pos = 0;
    const char *parts[3] = {REPRO_TENSOR_HASH_VERSION, t->name, t->dtype};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(parts[i]) + 1;
        if (pos + n > sizeof hdr - 4 - 8 * (size_t)t->ndim - 8 || t->ndim > 8) {
            rc = repro_error_set(REPRO_EXIT_USAGE, "tensor name too long: %s", t->name);
            goto done;
        }
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
    if (atomic_load(&job.failed) || sha_begin(&ctx) || sha_feed(ctx, hdr, pos) ||
        sha_feed(ctx, lv, nleaves * sizeof *lv) || sha_end(ctx, out))
        rc = repro_error_set(REPRO_EXIT_ENV, "OpenSSL SHA-256 failed hashing %s", t->name);
done:
    if (!leaves && lv != stack_leaves)
        free(lv);
    return rc;
}

const char *repro_hash_backend_version(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}
