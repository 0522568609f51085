/* Pinned submitter keys (see trusted.h). */
#include "verify/trusted.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "verify/sign.h"

#define DER_B64_MAX 128 /* an Ed25519 SubjectPublicKeyInfo is 44 bytes: 60 chars */

static int line_error(const repro_trusted_keys *t, long line, const char *msg)
{
    return repro_error_set(REPRO_EINVAL, "%s:%ld: %s", t->path, line, msg);
}

/* BASE64 (DER SubjectPublicKeyInfo) to an Ed25519 key id. */
static int b64_key_id(const char *b64, char id_out[65])
{
    uint8_t der[DER_B64_MAX];
    long n = repro_base64_decode(b64, der, sizeof der);
    if (n <= 0)
        return -1;
    const unsigned char *p = der;
    EVP_PKEY *k = d2i_PUBKEY(NULL, &p, n);
    int ok = k && p == der + n && EVP_PKEY_get_id(k) == EVP_PKEY_ED25519 &&
             repro_sign_key_id(k, id_out) == 0;
    EVP_PKEY_free(k);
    ERR_clear_error();
    return ok ? 0 : -1;
}

static int printable_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > REPRO_TRUSTED_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* One non-comment line, already stripped of its newline. */
static int parse_line(repro_trusted_keys *t, char *s, long line)
{
    char *type = strtok(s, " \t");
    char *b64 = type ? strtok(NULL, " \t") : NULL;
    char *name = b64 ? strtok(NULL, "") : NULL;
    while (name && (*name == ' ' || *name == '\t'))
        name++;
    if (strcmp(type, "ed25519"))
        return line_error(t, line, "expected \"ed25519 BASE64 NAME\" (the key type must be "
                                   "ed25519)");
    if (!b64 || !name || !*name)
        return line_error(t, line, "expected \"ed25519 BASE64 NAME\" (a key and its owner's "
                                   "name)");
    size_t nl = strlen(name);
    while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t'))
        name[--nl] = '\0';
    if (!printable_name(name))
        return line_error(t, line, "the name must be 1 to 128 printable ASCII characters");
    repro_trusted_key k;
    if (strlen(b64) > DER_B64_MAX || b64_key_id(b64, k.key_id))
        return line_error(t, line, "not an Ed25519 public key (expected the base64 line of a "
                                   "KEY.pem.pub that `repro keygen` wrote)");
    if (repro_trusted_keys_find(t, k.key_id)) {
        char msg[160];
        snprintf(msg, sizeof msg, "key %.16s... is listed twice", k.key_id);
        return line_error(t, line, msg);
    }
    if (t->n == REPRO_TRUSTED_KEYS_MAX)
        return line_error(t, line, "more than 10000 keys");
    snprintf(k.name, sizeof k.name, "%s", name);
    repro_trusted_key *grown = realloc(t->keys, (t->n + 1) * sizeof *grown);
    if (!grown)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    t->keys = grown;
    t->keys[t->n++] = k;
    return 0;
}

int repro_trusted_keys_load(repro_trusted_keys *t, const char *path)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    FILE *f = repro_fopen_regular(path, "trusted keys");
    if (!f)
        return repro_error_wrap(REPRO_EINVAL, "verify: --trusted-keys");
    char buf[1024];
    long line = 0;
    int rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        size_t n = strlen(buf);
        if (n && buf[n - 1] == '\n')
            buf[--n] = '\0';
        else if (!feof(f))
            rc = line_error(t, line, "line longer than 1023 bytes");
        if (rc)
            break;
        char *s = buf + strspn(buf, " \t\r");
        if (n && buf[n - 1] == '\r')
            buf[n - 1] = '\0';
        if (*s && *s != '#')
            rc = parse_line(t, s, line);
    }
    if (rc == 0 && ferror(f))
        rc = repro_error_set_errno(REPRO_EIO, "cannot read %s", path);
    fclose(f);
    if (rc == 0 && t->n == 0)
        rc = repro_error_set(REPRO_EINVAL, "%s: no keys (a trusted-keys file pins at least one)",
                             path);
    if (rc)
        repro_trusted_keys_release(t);
    return rc;
}

void repro_trusted_keys_release(repro_trusted_keys *t)
{
    free(t->keys);
    t->keys = NULL;
    t->n = 0;
}

const repro_trusted_key *repro_trusted_keys_find(const repro_trusted_keys *t, const char *key_id)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->keys[i].key_id, key_id))
            return &t->keys[i];
    return NULL;
}

char *repro_trusted_key_line(EVP_PKEY *key, const char *name)
{
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(key, &der);
    if (n <= 0 || n > 90) {
        OPENSSL_free(der);
        repro_error_set(REPRO_EIO, "cannot encode a public key");
        return NULL;
    }
    char b64[4 * ((90 + 2) / 3) + 1];
    repro_base64_encode(der, (size_t)n, b64);
    OPENSSL_free(der);
    size_t len = strlen(b64) + strlen(name) + 16;
    char *s = malloc(len);
    if (!s) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(s, len, "ed25519 %s %s", b64, name);
    return s;
}
