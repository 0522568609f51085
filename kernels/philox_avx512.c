/* The AVX-512F path's vector Philox (philox_vec.h): 16 blocks per step in
 * two 512-bit halves. The same template as the AVX2 path, which the
 * philox suite also runs at this width on AVX2 (the shuffles and lane
 * layout; only MUL_EVEN differs). */
#include "philox_vec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define W 8
#define TGT __attribute__((target("avx512f")))
#define SFX(name) name##_avx512
#define MUL_EVEN(a, m) ((SFX(vu64))_mm512_mul_epu32((__m512i)(a), (__m512i)(m)))
#define ZIP_LO 0, 8, 1, 9, 2, 10, 3, 11
#define ZIP_HI 4, 12, 5, 13, 6, 14, 7, 15
#define PAIR_LO 0, 1, 8, 9, 2, 3, 10, 11
#define PAIR_HI 4, 5, 12, 13, 6, 7, 14, 15
#define SHIFT1 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
#define EVENS 0, 2, 4, 6, 8, 10, 12, 14
/* vpmovdb: each 32-bit lane truncated to a byte (AVX-512F). */
#define STORE_LOW_BYTES(dst, v)                                                        \
    _mm_storeu_si128((__m128i *)(void *)(dst), _mm512_cvtepi32_epi8((__m512i)(v)))
#include "philox_tmpl.h"

const repro_philox_vec repro_philox_vec_avx512 = {REPRO_ISA_AVX512, 2 * W, blocks_avx512,
                                                  keep_avx512, normals_avx512};
#else
const repro_philox_vec repro_philox_vec_avx512 = {REPRO_ISA_AVX512, 0, 0, 0, 0};
#endif
