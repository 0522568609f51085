/* Verification receipts: the verdict `repro verify` writes, signed with the
 * host's Ed25519 key, and the check behind `repro verify-receipt`.
 *
 * A receipt is one JSON object (version "repro_receipt": 1; the fields are
 * listed in cmd_verify.c and the README) plus "signature" (as in sign.h:
 * alg, public_key, key_id, value over the canonical bytes of the receipt
 * without "signature"). It is written in exactly one form: jansson's dump
 * with 2-space indent, sorted keys, ASCII only, and a final newline. The
 * check re-dumps what it parsed and requires the file to be that form
 * byte for byte, so any edit fails — even one that only changes
 * whitespace, which the signature alone would not see. Receipts carry no
 * real numbers (times in integer milliseconds, tolerances as strings), so
 * the form is stable. */
#ifndef REPRO_RECEIPT_H
#define REPRO_RECEIPT_H

#include <jansson.h>
#include <openssl/evp.h>

#define REPRO_RECEIPT_VERSION 1
#define REPRO_RECEIPT_MAX (1L << 20)

/* Signs doc (when key is not NULL) and writes it atomically to path. */
int repro_receipt_write(const char *path, json_t *doc, EVP_PKEY *key);
/* The text repro_receipt_write writes (malloc'd; without signing). */
char *repro_receipt_text(const json_t *doc);

/* Checks the receipt at path against the public key in pub_path.
 * Returns 0 when valid (*doc_out, if not NULL, receives the parsed receipt,
 * a new reference); -1 with the error slot set otherwise: exit 1 for a
 * receipt that is well formed but edited, forged, signed by another key or
 * not signed; exit 2 for a malformed receipt or an unreadable key. */
int repro_receipt_check(const char *path, const char *pub_path, json_t **doc_out);
/* The same for receipt bytes already in memory (the fuzzer's entry). */
int repro_receipt_check_bytes(const char *bytes, size_t len, const char *what, EVP_PKEY *pub,
                              json_t **doc_out);

#endif
