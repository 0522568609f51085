/* Ed25519 keys, signatures, base64 and canonical JSON (see sign.h). */
#include "verify/sign.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "util/outpath.h"
#include "record/hash.h"

/* OpenSSL's own reason, for messages: the last queued error, then clear. */
static const char *ssl_reason(void)
{
    static __thread char buf[160];
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    else
        snprintf(buf, sizeof buf, "unknown OpenSSL error");
    ERR_clear_error();
    return buf;
}

static int check_ed25519(EVP_PKEY *k, const char *what)
{
    if (EVP_PKEY_get_id(k) != EVP_PKEY_ED25519)
        return repro_error_set(REPRO_EINVAL, "%s: not an Ed25519 key", what);
    return 0;
}

/* Writes k as PEM (private or public) into o, opened by the output-path
 * rule; on failure (a full disk, a quota) o is given up. */
static int write_pem(repro_outfile *o, EVP_PKEY *k, int priv)
{
    int ok = priv ? PEM_write_PrivateKey(o->f, k, NULL, NULL, 0, NULL, NULL)
                  : PEM_write_PUBKEY(o->f, k);
    if (!ok || fflush(o->f) != 0) {
        int saved = errno;
        repro_outfile_abort(o);
        ERR_clear_error();
        errno = saved;
        return repro_error_set_errno(REPRO_EIO, "cannot write %s", o->path);
    }
    return 0;
}

int repro_sign_keygen(const char *priv_path, const char *pub_path)
{
    /* The paths follow the output-path rule (util/outpath.h): a symlink is
     * written through, a directory refused naming it; the private key is
     * never put over an existing file (link() at commit) and is created
     * 0600. Refused before the work when one is there already. */
    repro_outfile priv, pub;
    if (repro_outfile_open_new(&priv, priv_path, "private key", 0600))
        return -1;
    if (repro_outfile_open(&pub, pub_path, "public key")) {
        repro_outfile_abort(&priv);
        return -1;
    }
    EVP_PKEY *k = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    if (!ctx || EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &k) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        repro_outfile_abort(&priv);
        repro_outfile_abort(&pub);
        return repro_error_set(REPRO_EIO, "cannot generate an Ed25519 key: %s",
                               ssl_reason());
    }
    EVP_PKEY_CTX_free(ctx);
    /* Both keys are written whole before either is put in place: a full
     * disk used to leave a 0-byte private key that blocked the next
     * attempt. */
    int rc = -1;
    if (write_pem(&priv, k, 1)) {
        repro_outfile_abort(&pub);
    } else if (write_pem(&pub, k, 0)) {
        repro_outfile_abort(&priv);
    } else if (repro_outfile_commit(&priv)) {
        repro_outfile_abort(&pub);
    } else if (repro_outfile_commit(&pub)) {
        if (priv.tmp[0]) /* ours: a private key without its public key helps no one */
            unlink(priv.target);
    } else {
        rc = 0;
    }
    EVP_PKEY_free(k);
    return rc;
}

/* Keys are read from regular files only: a FIFO given as --pub used to
 * hang verify-receipt. */
static FILE *open_key(const char *path)
{
    return repro_fopen_regular(path, "key");
}

int repro_sign_load_private(EVP_PKEY **out, const char *path)
{
    *out = NULL;
    FILE *f = open_key(path);
    if (!f)
        return -1;
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!k)
        return repro_error_set(REPRO_EINVAL, "%s: not a PEM private key (%s)", path,
                               ssl_reason());
    if (check_ed25519(k, path)) {
        EVP_PKEY_free(k);
        return -1;
    }
    *out = k;
    return 0;
}

int repro_sign_load_public(EVP_PKEY **out, const char *path)
{
    *out = NULL;
    FILE *f = open_key(path);
    if (!f)
        return -1;
    EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (!k)
        return repro_error_set(REPRO_EINVAL, "%s: not a PEM public key (%s)", path,
                               ssl_reason());
    if (check_ed25519(k, path)) {
        EVP_PKEY_free(k);
        return -1;
    }
    *out = k;
    return 0;
}

int repro_sign_public_from_pem(EVP_PKEY **out, const char *pem)
{
    *out = NULL;
    size_t n = strlen(pem);
    if (n > REPRO_PEM_MAX)
        return repro_error_set(REPRO_EINVAL, "public key: longer than %d bytes",
                               REPRO_PEM_MAX);
    BIO *b = BIO_new_mem_buf(pem, (int)n);
    EVP_PKEY *k = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!k)
        return repro_error_set(REPRO_EINVAL, "public key: not a PEM public key (%s)",
                               ssl_reason());
    if (check_ed25519(k, "public key")) {
        EVP_PKEY_free(k);
        return -1;
    }
    *out = k;
    return 0;
}

int repro_sign_public_pem(EVP_PKEY *key, char **pem_out)
{
    *pem_out = NULL;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b || !PEM_write_bio_PUBKEY(b, key)) {
        BIO_free(b);
        return repro_error_set(REPRO_EIO, "cannot encode a public key: %s", ssl_reason());
    }
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s = malloc((size_t)n + 1);
    if (s) {
        memcpy(s, data, (size_t)n);
        s[n] = '\0';
    }
    BIO_free(b);
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    *pem_out = s;
    return 0;
}

int repro_sign_key_id(EVP_PKEY *key, char hex_out[65])
{
    uint8_t raw[64];
    size_t n = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key, raw, &n) <= 0)
        return repro_error_set(REPRO_EIO, "cannot read a public key: %s", ssl_reason());
    repro_digest d;
    if (repro_sha256(raw, n, &d))
        return -1;
    repro_digest_hex(&d, hex_out);
    return 0;
}

int repro_sign(EVP_PKEY *key, const void *data, size_t len, uint8_t sig_out[REPRO_SIG_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t siglen = REPRO_SIG_LEN;
    /* Ed25519 is "pure": no digest (NULL md), one-shot EVP_DigestSign. */
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) > 0 &&
             EVP_DigestSign(ctx, sig_out, &siglen, data, len) > 0 && siglen == REPRO_SIG_LEN;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return repro_error_set(REPRO_EIO, "Ed25519 signing failed: %s", ssl_reason());
    return 0;
}

int repro_sign_verify(EVP_PKEY *key, const void *data, size_t len, const uint8_t *sig,
                      size_t siglen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) <= 0) {
        EVP_MD_CTX_free(ctx);
        return repro_error_set(REPRO_EIO, "Ed25519 verification failed: %s", ssl_reason());
    }
    int r = EVP_DigestVerify(ctx, sig, siglen, data, len);
    EVP_MD_CTX_free(ctx);
    ERR_clear_error(); /* a bad signature queues an error; it is an answer, not a failure */
    return r == 1 ? 1 : 0;
}

void repro_base64_encode(const uint8_t *in, size_t len, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

long repro_base64_decode(const char *in, uint8_t *out, size_t max)
{
    size_t n = strlen(in);
    if (n == 0 || n % 4 || n / 4 * 3 > max + 2)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '+' || c == '/' || (c == '=' && i >= n - 2);
        if (!ok || (c != '=' && i > 0 && in[i - 1] == '='))
            return -1;
    }
    uint8_t tmp[4096];
    if (n / 4 * 3 > sizeof tmp)
        return -1;
    int m = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)n);
    if (m < 0)
        return -1;
    /* EVP_DecodeBlock counts the padding as zero bytes: take them off. */
    if (in[n - 1] == '=')
        m--;
    if (in[n - 2] == '=')
        m--;
    if ((size_t)m > max)
        return -1;
    memcpy(out, tmp, (size_t)m);
    return m;
}

char *repro_json_canonical(const json_t *doc)
{
    json_t *copy = json_copy((json_t *)doc); /* shallow: only the top level changes */
    if (!copy)
        return NULL;
    json_object_del(copy, "signature");
    char *s = json_dumps(copy, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(copy);
    return s;
}

int repro_sign_json(json_t *doc, EVP_PKEY *key)
{
    char *bytes = repro_json_canonical(doc);
    char *pem = NULL;
    char id[65], b64[REPRO_SIG_B64_LEN + 1];
    uint8_t sig[REPRO_SIG_LEN];
    int rc = -1;
    if (!bytes) {
        repro_error_set(REPRO_EIO, "cannot serialize a document to sign");
        goto cleanup;
    }
    if (repro_sign(key, bytes, strlen(bytes), sig) || repro_sign_public_pem(key, &pem) ||
        repro_sign_key_id(key, id))
        goto cleanup;
    repro_base64_encode(sig, sizeof sig, b64);
    json_object_set_new(doc, "signature",
                        json_pack("{s:s, s:s, s:s, s:s}", "alg", "ed25519", "public_key", pem,
                                  "key_id", id, "value", b64));
    rc = 0;
cleanup:
    free(bytes);
    free(pem);
    return rc;
}
