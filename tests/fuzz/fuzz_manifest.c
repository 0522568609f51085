/* libFuzzer target: the bundle manifest validator (bundle.c) and the
 * receipt checker (receipt.c), both straight from memory. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "verify/bundle.h"
#include "util/error.h"
#include "verify/receipt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static EVP_PKEY *pub;
    if (!pub) { /* any Ed25519 key: the checker must refuse cleanly either way */
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
        if (!ctx || EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &pub) <= 0)
            abort();
        EVP_PKEY_CTX_free(ctx);
    }
    repro_bundle b = {0};
    repro_bundle_parse(&b, (const char *)data, size, "fuzz");
    repro_bundle_release(&b);
    repro_error_clear();
    json_t *doc = NULL;
    if (repro_receipt_check_bytes((const char *)data, size, "fuzz", pub, &doc) == 0)
        json_decref(doc);
    repro_error_clear();
    return 0;
}
