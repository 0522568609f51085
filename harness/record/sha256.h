/* SHA-256 through OpenSSL EVP, behind our own small API: the public
 * repro_sha256 and digest helpers (repro/digest.h), and the one entry the
 * record layer's own hashing needs beyond them. */
#ifndef REPRO_RECORD_SHA256_H
#define REPRO_RECORD_SHA256_H

#include <stddef.h>

#include "repro/digest.h"

/* SHA-256 of a[0..na) followed by b[0..nb) (b may be NULL when nb = 0):
 * 0, or -1 if OpenSSL failed. The error slot is NOT set, so any thread
 * (a pool's, the hasher's) may call it. */
int repro_sha256_concat(const void *a, size_t na, const void *b, size_t nb, repro_digest *out);

#endif
