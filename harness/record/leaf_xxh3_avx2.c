/* XXH3-128 of one leaf on AVX2: libxxhash's own header (xxhash.h) in its
 * inline mode with its AVX2 accumulator, compiled for AVX2 in this file
 * only (the build stays baseline x86-64; leaf_xxh3.c calls this only while
 * the CPU's vector path is avx2 or wider). The Debian library is built for
 * the baseline, so its XXH3 runs SSE2: ~16 GB/s on 4 KiB leaves on Zen 3,
 * ~39 GB/s here. XXH3's digests are the same on every vector path (its
 * specification; leaf_xxh3.c checks it at first use). */
#include "record/leaf_xxh3.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include <immintrin.h>
#include <string.h>
#define XXH_INLINE_ALL
#define XXH_VECTOR 2 /* XXH_AVX2 in xxhash.h's numbering */
#include <xxhash.h>

int repro_leaf_xxh3_avx2_available(void)
{
    return 1;
}

void repro_leaf_xxh3_avx2(const void *data, size_t len, unsigned char out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out, c.digest, sizeof c.digest);
}

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#else /* not x86: the library's path only */

int repro_leaf_xxh3_avx2_available(void)
{
    return 0;
}

void repro_leaf_xxh3_avx2(const void *data, size_t len, unsigned char out[16])
{
    (void)data, (void)len, (void)out;
}

#endif
