/* The AVX-512F path's inner loops (simd.h): 16-float vectors, an 8 x 32
 * GEMM tile (16 accumulators of 32 registers). AVX-512F has FMA
 * instructions, but -ffp-contract=off keeps the compiler from fusing and
 * none is written: products are rounded before the add, as on every path. */
#include "simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define LANES 16
#define TGT __attribute__((target("avx512f")))
#define SFX(name) name##_avx512
#define MR 8
#define MR_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SPLAT_INIT(a) {a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a}
#include "simd_tmpl.h"

const repro_simd repro_simd_avx512 = {REPRO_ISA_AVX512, LANES, MR, 2 * LANES,
                                      gemm_tile_avx512, gemm_tile_shards_avx512, conv_tile_avx512, colsum_avx512};
#else
const repro_simd repro_simd_avx512 = {REPRO_ISA_AVX512, 0, 0, 0, 0, 0, 0, 0};
#endif
