/* Sixteen full 4 KiB leaves at once, one per 32-bit lane of AVX-512
 * (leaf_sha.c's widest path; internal to the record layer).
 *
 * Why by hand: SHA-256 is one dependent chain of rounds per message, and
 * on a CPU that runs 512-bit integer operations at full width (AMD Zen 5,
 * Intel's AVX-512 cores) sixteen messages side by side in vector lanes
 * outrun the SHA extensions, whose unit is busy at four interleaved
 * messages: measured on Zen 5, 4.4-4.5 GB/s a core here against 3.1 for
 * four messages on SHA-NI. Every output is plain SHA-256 (FIPS 180-4);
 * leaf_sha.c checks it against OpenSSL before first use. */
#ifndef REPRO_LEAF_SHA16_H
#define REPRO_LEAF_SHA16_H

#include "repro/digest.h"

/* 1 when the CPU and OS run AVX-512F and AVX-512BW (the code's needs). */
int repro_leaf_sha16_supported(void);

/* out[m] = SHA-256 of the 4 KiB at first + m * 4096, m = 0..15. Only when
 * repro_leaf_sha16_supported(). */
void repro_leaf_sha16(const unsigned char *first, repro_digest *out);

#endif
