/* XXH3-128 leaves (leaf_xxh3.h): the library's one-shot XXH3_128bits, or
 * the same function's AVX2 path (leaf_xxh3_avx2.c) while the vector path
 * (kernels/isa.h) is avx2 or wider, so REPRO_ISA=sse2 runs the library's
 * and the tests reach both. The AVX2 path is used only after it reproduced
 * the library's digests of a test pattern at every length class XXH3 has
 * (0, 1-3, 4-8, 9-16, 17-128, 129-240, and longer, full and partial
 * stripes and blocks). */
#include "record/leaf_xxh3.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "kernels/isa.h"

static int avx2_ok = -1; /* -1: no AVX2; 0: failed its self-test; 1: passed */
static pthread_once_t test_once = PTHREAD_ONCE_INIT;

static void library_leaf(const void *p, size_t len, unsigned char out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
    memcpy(out, c.digest, sizeof c.digest);
}

int repro_leaf_xxh3_self_test(int corrupt)
{
    if (!repro_leaf_xxh3_avx2_available() || !repro_isa_supported(REPRO_ISA_AVX2))
        return -1;
    static const size_t lens[] = {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1000, 1024, 1025,
                                  2047, 4095, 4096};
    unsigned char pat[REPRO_LEAF_BYTES], alt[REPRO_LEAF_BYTES];
    for (size_t i = 0; i < sizeof pat; i++)
        pat[i] = (unsigned char)(i * 131u + (i >> 8) * 7u);
    memcpy(alt, pat, sizeof pat);
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        unsigned char a[16], b[16];
        if (corrupt && lens[k] > 0)
            alt[lens[k] / 2] ^= 1;
        library_leaf(alt, lens[k], a);
        repro_leaf_xxh3_avx2(pat, lens[k], b);
        memcpy(alt, pat, sizeof pat);
        if (memcmp(a, b, 16) != 0)
            return 0;
    }
    return 1;
}

static void run_self_test(void)
{
    avx2_ok = repro_leaf_xxh3_self_test(0);
}

static int avx2_now(void)
{
    pthread_once(&test_once, run_self_test);
    return avx2_ok == 1 && repro_isa_current() >= REPRO_ISA_AVX2;
}

void repro_leaf_xxh3_range(const void *data, size_t nbytes, size_t i0, size_t i1,
                           repro_digest *leaves)
{
    const unsigned char *d = data;
    void (*leaf)(const void *, size_t, unsigned char *) =
        avx2_now() ? repro_leaf_xxh3_avx2 : library_leaf;
    for (size_t i = i0; i < i1; i++) {
        size_t off = i * REPRO_LEAF_BYTES;
        size_t len = nbytes - off < REPRO_LEAF_BYTES ? nbytes - off : REPRO_LEAF_BYTES;
        leaf(d + off, len, leaves[i].b);
        memset(leaves[i].b + 16, 0, REPRO_DIGEST_LEN - 16);
    }
}

const char *repro_leaf_xxh3_path(void)
{
    pthread_once(&test_once, run_self_test);
    if (avx2_now())
        return "avx2 (xxhash.h inline)";
    if (avx2_ok == 0)
        return "libxxhash (the AVX2 path failed its self-test)";
    if (avx2_ok < 0)
        return "libxxhash (no AVX2)";
    return "libxxhash (vector path below avx2)";
}
