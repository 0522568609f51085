/* The AVX-512F path's inner loops (simd.h): 16-float vectors, GEMM tiles of
 * 1 to 12 rows x 32 columns (at most 24 accumulators of 32 registers; 8
 * rows where A is read in place, whose row addresses would spill). AVX-512F has FMA
 * instructions, but -ffp-contract=off keeps the compiler from fusing and
 * none is written: products are rounded before the add, as on every path. */
#include "simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define LANES 16
#define TGT __attribute__((target("avx512f,prfchw")))
#define SFX(name) name##_avx512
#define MR 12
#define SPLAT_INIT(a) {a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a}
#include <immintrin.h>
#define VSQRT(v) ((VF)_mm512_sqrt_ps((__m512)(v)))
#include "simd_tmpl.h"

const repro_simd repro_simd_avx512 = {
    .isa = REPRO_ISA_AVX512, .lanes = LANES, .mr = MR, .nr = 2 * LANES, .mr_rows = 8,
    GEMM_TABLES, .transpose = transpose_avx512,
    .conv_tile = CONV_TILE, .conv_g = CONV_G, .colsum = colsum_avx512, .colsum_nk = COLSUM_NK,
    .colsum_k = colsum_k_avx512, .rowsum = rowsum_avx512,
    .relu_fwd = relu_fwd_avx512, .relu_bwd = relu_bwd_avx512,
    .sgd = sgd_avx512, .adamw = adamw_avx512,
    .div_scalar = div_scalar_avx512, .mul_scalar = mul_scalar_avx512,
    .add_into = add_into_avx512, .unscale_check = unscale_check_avx512,
};
#else
const repro_simd repro_simd_avx512 = {.isa = REPRO_ISA_AVX512};
#endif
