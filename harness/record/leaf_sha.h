/* The leaves of the tensor tree hash (repro/digest.h), many at a time.
 *
 * Every leaf is one SHA-256 message, independent of the others. OpenSSL
 * hashes one message at a time, and on the SHA extensions (SHA-NI) one
 * message is latency-bound: each pair of rounds waits for the previous
 * pair, so the unit idles between them. Several messages interleaved keep
 * it busy: measured on Zen 3, 1.2 GB/s for OpenSSL's SHA-256 on 4 KiB
 * leaves, 2.5 GB/s for two full leaves interleaved; on Zen 4, 3.2 GB/s for
 * two and 3.5 for four. No packaged library
 * offers that (OpenSSL's multi-block SHA-256 is internal to its TLS
 * ciphers), so this module does it for the one case that matters, full
 * 4 KiB leaves on a CPU with SHA-NI or AVX-512 (sixteen messages in the
 * lanes of one vector, leaf_sha16.h: 4.4-4.5 GB/s on Zen 5 against 3.1
 * for four on SHA-NI), and leaves everything else to OpenSSL
 * EVP: short last leaves, roots, chains, CPUs without SHA-NI.
 *
 * The digests are SHA-256's whichever path runs: at first use the
 * interleaved path must reproduce OpenSSL's digest of a test pattern, or
 * it is not used. repro_leaf_sha_force_openssl turns it off (repro's
 * REPRO_SHA=openssl; the library reads no environment). */
#ifndef REPRO_LEAF_SHA_H
#define REPRO_LEAF_SHA_H

#include <stddef.h>

#include "repro/digest.h"

/* leaves[i] = SHA-256 of leaf i of data (nbytes long) for i in [i0, i1).
 * 0, or -1 if OpenSSL failed (the error slot is NOT set: any thread may
 * call this). */
int repro_leaf_sha_range(const void *data, size_t nbytes, size_t i0, size_t i1,
                         repro_digest *leaves);

/* The path in use: "avx512 x16, then sha-ni x4" (sixteen full leaves in
 * AVX-512 lanes while the vector path is avx512, the rest four and two at
 * a time on SHA-NI), "sha-ni x4", "avx512 x16, then openssl (no SHA-NI)",
 * or "openssl (WHY)", e.g. "openssl (no SHA-NI)", "openssl (REPRO_SHA)".
 * For `repro env`. */
const char *repro_leaf_sha_path(void);

/* The start-up self-test, for tests: 1 passed, 0 failed, -1 not run (no
 * SHA-NI). corrupt = 1 is its negative control: OpenSSL hashes a pattern
 * with one byte changed, so the test must fail. */
int repro_leaf_sha_self_test(int corrupt);

/* why (a static string, shown by repro_leaf_sha_path) forces OpenSSL for
 * every leaf; NULL goes back to the fastest path (which may still be
 * OpenSSL). Call it before hashing starts: the digests are the same either
 * way, only which code computes them changes. */
void repro_leaf_sha_force_openssl(const char *why);

#endif
