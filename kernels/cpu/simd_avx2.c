/* The AVX2 path's inner loops (simd.h): 8-float vectors, GEMM tiles of 1 to
 * 6 rows x 16 columns (at most 12 accumulators of 16 registers: the two B
 * vectors, the broadcast and a product take the rest). Only these functions are compiled for
 * AVX2 (target attribute), and only called when the CPU has it. target
 * "avx2,prfchw" does not enable FMA, so no fused instruction can appear
 * (prfchw: the optimizer's prefetchw, simd_pointwise_tmpl.h). */
#include "simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define LANES 8
#define TGT __attribute__((target("avx2,prfchw")))
#define SFX(name) name##_avx2
#define MR 6
#define SPLAT_INIT(a) {a, a, a, a, a, a, a, a}
#include <immintrin.h>
#define VSQRT(v) ((VF)_mm256_sqrt_ps((__m256)(v)))
#include "simd_tmpl.h"

const repro_simd repro_simd_avx2 = {
    .isa = REPRO_ISA_AVX2, .lanes = LANES, .mr = MR, .nr = 2 * LANES, .mr_rows = 6,
    GEMM_TABLES, .transpose = transpose_avx2,
    .conv_tile = CONV_TILE, .conv_g = CONV_G, .colsum = colsum_avx2, .colsum_nk = COLSUM_NK,
    .colsum_k = colsum_k_avx2, .rowsum = rowsum_avx2,
    .relu_fwd = relu_fwd_avx2, .relu_bwd = relu_bwd_avx2,
    .sgd = sgd_avx2, .adamw = adamw_avx2,
    .div_scalar = div_scalar_avx2, .mul_scalar = mul_scalar_avx2,
    .add_into = add_into_avx2, .unscale_check = unscale_check_avx2,
};
#else
const repro_simd repro_simd_avx2 = {.isa = REPRO_ISA_AVX2};
#endif
