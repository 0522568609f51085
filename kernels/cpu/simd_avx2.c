/* The AVX2 path's inner loops (simd.h): 8-float vectors, a 6 x 16 GEMM tile
 * (12 accumulators of 16 registers). Only these functions are compiled for
 * AVX2 (target attribute), and only called when the CPU has it. target
 * "avx2" alone does not enable FMA, so no fused instruction can appear. */
#include "simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define LANES 8
#define TGT __attribute__((target("avx2")))
#define SFX(name) name##_avx2
#define MR 6
#define MR_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define SPLAT_INIT(a) {a, a, a, a, a, a, a, a}
#include "simd_tmpl.h"

const repro_simd repro_simd_avx2 = {REPRO_ISA_AVX2, LANES, MR, 2 * LANES, gemm_tile_avx2, gemm_tile_shards_avx2, conv_tile_avx2,
                                    colsum_avx2};
#else
const repro_simd repro_simd_avx2 = {REPRO_ISA_AVX2, 0, 0, 0, 0, 0, 0, 0};
#endif
