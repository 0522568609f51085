/* The baseline path's vector Philox (philox_vec.h): 4 blocks per step in
 * two 128-bit halves. */
#include "philox_vec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>

#define W 2
#define TGT
#define SFX(name) name##_sse2
#define MUL_EVEN(a, m) ((SFX(vu64))_mm_mul_epu32((__m128i)(a), (__m128i)(m)))
#define ZIP_LO 0, 2
#define ZIP_HI 1, 3
#define PAIR_LO 0, 1
#define PAIR_HI 2, 3
#define SHIFT1 3, 4, 5, 6
#define EVENS 0, 2
/* Two saturating packs: 0 and 1 stay 0 and 1. */
#define STORE_LOW_BYTES(dst, v)                                                        \
    do {                                                                               \
        __m128i w16_ = _mm_packs_epi32((__m128i)(v), (__m128i)(v));                    \
        int32_t w8_ = _mm_cvtsi128_si32(_mm_packus_epi16(w16_, w16_));                 \
        memcpy(dst, &w8_, sizeof w8_);                                                 \
    } while (0)
#include "philox_tmpl.h"

const repro_philox_vec repro_philox_vec_sse2 = {REPRO_ISA_SSE2, 2 * W, blocks_sse2, keep_sse2,
                                                normals_sse2};
#else
const repro_philox_vec repro_philox_vec_sse2 = {REPRO_ISA_SSE2, 0, 0, 0, 0};
#endif
