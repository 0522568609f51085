/* SHA-256's constants (FIPS 180-4, 4.2.2 and 5.3.3), for the record
 * layer's hand-written leaf paths (leaf_sha.c on SHA-NI, leaf_sha16.c in
 * AVX-512 lanes); everything else hashes through OpenSSL. */
#ifndef REPRO_SHA256_CONSTS_H
#define REPRO_SHA256_CONSTS_H

#include <stdint.h>

/* The 64 round constants K[t]. */
extern const uint32_t repro_sha256_round_k[64];
/* The initial hash value H(0). */
extern const uint32_t repro_sha256_initial_h[8];

#endif
