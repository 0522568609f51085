/* The AVX2 path's vector Philox (philox_vec.h): 8 blocks per step in two
 * 256-bit halves. Only these functions are compiled for AVX2 (target
 * attribute), and only called when the CPU has it. */
#include "philox_vec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define W 4
#define TGT __attribute__((target("avx2")))
#define SFX(name) name##_avx2
#define MUL_EVEN(a, m) ((SFX(vu64))_mm256_mul_epu32((__m256i)(a), (__m256i)(m)))
#define ZIP_LO 0, 4, 1, 5
#define ZIP_HI 2, 6, 3, 7
#define PAIR_LO 0, 1, 4, 5
#define PAIR_HI 2, 3, 6, 7
#define SHIFT1 7, 8, 9, 10, 11, 12, 13, 14
#define EVENS 0, 2, 4, 6
#define STORE_LOW_BYTES(dst, v)                                                        \
    do {                                                                               \
        typedef uint8_t bytes_ __attribute__((vector_size(32)));                       \
        bytes_ all_ = (bytes_)(v);                                                     \
        uint8_t lo_ __attribute__((vector_size(8))) =                                 \
            __builtin_shufflevector(all_, all_, 0, 4, 8, 12, 16, 20, 24, 28);          \
        memcpy(dst, &lo_, sizeof lo_);                                                 \
    } while (0)
#include "philox_tmpl.h"

const repro_philox_vec repro_philox_vec_avx2 = {REPRO_ISA_AVX2, 2 * W, blocks_avx2, keep_avx2,
                                                normals_avx2};
#else
const repro_philox_vec repro_philox_vec_avx2 = {REPRO_ISA_AVX2, 0, 0, 0, 0};
#endif
