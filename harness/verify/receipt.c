/* Writing and checking signed verification receipts (see receipt.h). */
#include "verify/receipt.h"

#include <stdlib.h>
#include <string.h>

#include "verify/bundle.h"
#include "util/error.h"
#include "verify/sign.h"

/* verify.c's verdict names, in its order. */
static const char *const verdicts[] = {"reproduced",   "diverged",   "invalid submission",
                                       "exceeded limits", "build failed", "run failed",
                                       "score mismatch", "outputs differ"};
#define NVERDICTS (sizeof verdicts / sizeof *verdicts)

char *repro_receipt_text(const json_t *doc)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return NULL;
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    return t;
}

int repro_receipt_write(const char *path, json_t *doc, EVP_PKEY *key)
{
    if (key && repro_sign_json(doc, key))
        return -1;
    char *text = repro_receipt_text(doc);
    if (!text)
        return repro_error_set(REPRO_EIO, "cannot serialize the receipt");
    int rc = repro_write_file_atomic(path, text, strlen(text));
    free(text);
    return rc;
}

int repro_receipt_check_bytes(const char *bytes, size_t len, const char *what, EVP_PKEY *pub,
                              json_t **doc_out)
{
    if (doc_out)
        *doc_out = NULL;
    if (len > (size_t)REPRO_RECEIPT_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: too large for a receipt (%zu bytes)", what,
                               len);
    json_error_t je;
    json_t *doc = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return repro_error_set(REPRO_EINVAL, "%s:%d: not valid JSON: %s", what, je.line,
                               je.text);
    char *canon = NULL, *text = NULL;
    int rc = -1;
    json_t *ver = json_object_get(doc, "repro_receipt");
    if (!json_is_object(doc) || !json_is_integer(ver)) {
        repro_error_set(REPRO_EINVAL, "%s: not a repro receipt (no \"repro_receipt\")", what);
        goto cleanup;
    }
    if (json_integer_value(ver) != REPRO_RECEIPT_VERSION) {
        repro_error_set(REPRO_EINVAL, "%s: unsupported receipt version (this repro reads %d)",
                        what, REPRO_RECEIPT_VERSION);
        goto cleanup;
    }
    const char *verdict = json_string_value(json_object_get(doc, "verdict"));
    size_t i = 0;
    while (verdict && i < NVERDICTS && strcmp(verdict, verdicts[i]))
        i++;
    if (!verdict || i == NVERDICTS) {
        repro_error_set(REPRO_EINVAL,
                        "%s: \"verdict\" must be one of reproduced, diverged, invalid "
                        "submission, exceeded limits, build failed, run failed, score mismatch, "
                        "outputs differ",
                        what);
        goto cleanup;
    }
    json_t *sig = json_object_get(doc, "signature");
    if (!sig) {
        repro_error_set(REPRO_EMISMATCH, "%s: the receipt is not signed", what);
        goto cleanup;
    }
    const char *alg = json_string_value(json_object_get(sig, "alg"));
    const char *id = json_string_value(json_object_get(sig, "key_id"));
    const char *val = json_string_value(json_object_get(sig, "value"));
    if (!json_is_object(sig) || !alg || !id || !val ||
        !json_is_string(json_object_get(sig, "public_key"))) {
        repro_error_set(REPRO_EINVAL,
                        "%s: \"signature\" must be an object with alg, public_key, key_id, value",
                        what);
        goto cleanup;
    }
    if (strcmp(alg, "ed25519")) {
        repro_error_set(REPRO_EINVAL, "%s: \"signature\".\"alg\" must be \"ed25519\"", what);
        goto cleanup;
    }
    uint8_t raw[REPRO_SIG_LEN + 4];
    long n = repro_base64_decode(val, raw, sizeof raw);
    if (n != REPRO_SIG_LEN) {
        repro_error_set(REPRO_EINVAL, "%s: \"signature\".\"value\" is not base64 of %d bytes",
                        what, REPRO_SIG_LEN);
        goto cleanup;
    }
    /* Well formed from here: every failure below is an invalid receipt. */
    text = repro_receipt_text(doc);
    canon = repro_json_canonical(doc);
    if (!text || !canon) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    if (strlen(text) != len || memcmp(text, bytes, len)) {
        repro_error_set(REPRO_EMISMATCH,
                        "%s: INVALID: the receipt was edited (it is not in the exact form repro "
                        "writes)",
                        what);
        goto cleanup;
    }
    char pub_id[65];
    if (repro_sign_key_id(pub, pub_id))
        goto cleanup;
    if (strcmp(pub_id, id)) {
        repro_error_set(REPRO_EMISMATCH,
                        "%s: INVALID: signed by a different key (key id %.12s, expected %.12s)",
                        what, id, pub_id);
        goto cleanup;
    }
    int ok = repro_sign_verify(pub, canon, strlen(canon), raw, (size_t)n);
    if (ok < 0)
        goto cleanup;
    if (!ok) {
        repro_error_set(REPRO_EMISMATCH,
                        "%s: INVALID: the signature does not verify (the receipt was edited or "
                        "forged)",
                        what);
        goto cleanup;
    }
    rc = 0;
    if (doc_out) {
        *doc_out = doc;
        doc = NULL;
    }
cleanup:
    free(text);
    free(canon);
    json_decref(doc);
    return rc;
}

int repro_receipt_check(const char *path, const char *pub_path, json_t **doc_out)
{
    if (doc_out)
        *doc_out = NULL;
    EVP_PKEY *pub = NULL;
    if (repro_sign_load_public(&pub, pub_path))
        return -1;
    char *bytes;
    size_t len;
    int rc = repro_read_file_limited(path, REPRO_RECEIPT_MAX, &bytes, &len);
    if (rc == 0) {
        rc = repro_receipt_check_bytes(bytes, len, path, pub, doc_out);
        free(bytes);
    }
    EVP_PKEY_free(pub);
    return rc;
}
