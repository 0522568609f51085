/* Ed25519 signatures through OpenSSL EVP (EVP_PKEY_ED25519, EVP_DigestSign
 * with a NULL digest: Ed25519 hashes internally), plus the two encodings
 * signed documents need: base64 for signature bytes, and the canonical
 * JSON bytes a signature covers.
 *
 * Canonical bytes of a signed JSON document (bundle manifests, receipts):
 * the object without its "signature" member, dumped by jansson with sorted
 * keys, compact separators and \u escapes for every non-ASCII character
 * (JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII). The documents carry
 * no real numbers, so re-dumping a parsed document gives the same bytes. */
#ifndef REPRO_SIGN_H
#define REPRO_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/evp.h>

#define REPRO_SIG_LEN 64          /* Ed25519 signature bytes */
#define REPRO_SIG_B64_LEN 88      /* base64 of 64 bytes, with padding */
#define REPRO_PEM_MAX 1024        /* a PEM Ed25519 key is ~120 bytes */

/* A new key pair: private key PEM (PKCS#8) to priv_path (mode 0600, never
 * overwritten: exit 2 if it exists), public key PEM to pub_path, both by
 * the output-path rule (util/outpath.h: through symlinks, a directory
 * refused). Each is written whole to a temporary file and then put in
 * place, so a failure (a full disk) leaves neither a partial key nor a
 * temporary file. */
int repro_sign_keygen(const char *priv_path, const char *pub_path);
/* Loads a PEM private key; it must be Ed25519 (exit 2 otherwise). Keys
 * are read from regular files only (a FIFO is refused, not waited on). */
int repro_sign_load_private(EVP_PKEY **out, const char *path);
/* Loads a PEM public key from a file or from PEM text. */
int repro_sign_load_public(EVP_PKEY **out, const char *path);
int repro_sign_public_from_pem(EVP_PKEY **out, const char *pem);
/* The public half as PEM text (malloc'd) and its SHA-256 (of the 32 raw
 * key bytes, lowercase hex): a short name to compare keys by. */
int repro_sign_public_pem(EVP_PKEY *key, char **pem_out);
int repro_sign_key_id(EVP_PKEY *key, char hex_out[65]);

/* sig_out receives REPRO_SIG_LEN bytes. */
int repro_sign(EVP_PKEY *key, const void *data, size_t len, uint8_t sig_out[REPRO_SIG_LEN]);
/* 1 valid, 0 invalid, -1 error (error slot). */
int repro_sign_verify(EVP_PKEY *key, const void *data, size_t len, const uint8_t *sig,
                      size_t siglen);

/* base64 (standard alphabet, padded, no newlines). encode: out needs
 * 4 * ((len + 2) / 3) + 1 bytes. decode returns the byte count or -1 on a
 * malformed string or one longer than max. */
void repro_base64_encode(const uint8_t *in, size_t len, char *out);
long repro_base64_decode(const char *in, uint8_t *out, size_t max);

/* The canonical bytes above, malloc'd, NUL-terminated. */
char *repro_json_canonical(const json_t *doc);

/* Signs doc's canonical bytes with key and sets doc["signature"] =
 * {"alg": "ed25519", "public_key": PEM, "key_id": hex, "value": base64}. */
int repro_sign_json(json_t *doc, EVP_PKEY *key);

#endif
