/* Pinned submitter keys: the file `repro verify --trusted-keys FILE` reads,
 * so that a host accepts only bundles signed by the keys registered for a
 * competition.
 *
 * One key per line:   ed25519 BASE64 NAME
 *   ed25519  the key type (the only one)
 *   BASE64   the public key's DER (SubjectPublicKeyInfo), base64: exactly
 *            the line between the BEGIN and END lines of KEY.pem.pub, which
 *            `repro keygen` also prints as a ready line
 *   NAME     the rest of the line: who the key belongs to (1..128 bytes of
 *            printable ASCII; spaces allowed); the receipt names it
 * Blank lines and lines whose first non-blank character is '#' are
 * ignored. Fields are separated by spaces or tabs. A key listed twice, or
 * anything else, is an error naming FILE:LINE (exit 2). At most 10000 keys.
 *
 * A key's fingerprint is its key id (sign.h: SHA-256 of the 32 raw public
 * key bytes, lowercase hex), the same as a signed manifest's "key_id". */
#ifndef REPRO_TRUSTED_H
#define REPRO_TRUSTED_H

#include <stddef.h>

#include <openssl/evp.h>

#define REPRO_TRUSTED_NAME_MAX 128
#define REPRO_TRUSTED_KEYS_MAX 10000

typedef struct {
    char key_id[65];
    char name[REPRO_TRUSTED_NAME_MAX + 1];
} repro_trusted_key;

typedef struct {
    char path[1024];
    repro_trusted_key *keys;
    size_t n;
} repro_trusted_keys;

/* Reads FILE; 0, or -1 (error slot: REPRO_EINVAL naming FILE:LINE). */
int repro_trusted_keys_load(repro_trusted_keys *t, const char *path);
void repro_trusted_keys_release(repro_trusted_keys *t);
/* The pinned key with this key id, or NULL. */
const repro_trusted_key *repro_trusted_keys_find(const repro_trusted_keys *t, const char *key_id);
/* The line for `key` with `name` ("ed25519 BASE64 NAME", no newline),
 * malloc'd; NULL (error slot) on failure. */
char *repro_trusted_key_line(EVP_PKEY *key, const char *name);

#endif
