/* SHA-256 through OpenSSL EVP (never the deprecated SHA256_Init), and the
 * digest helpers of repro/digest.h (hex, compare). One EVP_MD is fetched
 * once; each thread keeps its own EVP_MD_CTX, because contexts are not
 * shareable and creating one per 4 KiB leaf would cost more than the
 * hashing. The bottom of the record layer's hashing: the leaves
 * (leaf_sha.c) and the tree hash (hash.c) hash through it. */
#include "record/sha256.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

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

int repro_sha256_concat(const void *a, size_t na, const void *b, size_t nb, repro_digest *out)
{
    EVP_MD_CTX *ctx;
    if (sha_begin(&ctx) || sha_feed(ctx, a, na) || (nb && sha_feed(ctx, b, nb)) ||
        sha_end(ctx, out))
        return -1;
    return 0;
}

int repro_sha256(const void *data, size_t len, repro_digest *out)
{
    if (repro_sha256_concat(data, len, NULL, 0, out)) {
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
