/* The baseline path's inner loops (simd.h): 4-float vectors, GEMM tiles of 1
 * to 4 rows x 8 columns (at most 8 accumulators: SSE2's two-operand
 * instructions need spare registers for copies). */
#include "simd.h"

#define LANES 4
#define TGT
#define SFX(name) name##_sse2
#define MR 4
#define SPLAT_INIT(a) {a, a, a, a}
#if defined(__SSE2__)
#include <emmintrin.h>
#define VSQRT(v) ((VF)_mm_sqrt_ps((__m128)(v)))
#endif
#include "simd_tmpl.h"

const repro_simd repro_simd_sse2 = {
    .isa = REPRO_ISA_SSE2, .lanes = LANES, .mr = MR, .nr = 2 * LANES, .mr_rows = 4,
    GEMM_TABLES, .transpose = transpose_sse2,
    .conv_tile = CONV_TILE, .conv_g = CONV_G, .colsum = colsum_sse2, .colsum_nk = COLSUM_NK,
    .colsum_k = colsum_k_sse2, .rowsum = rowsum_sse2,
    .relu_fwd = relu_fwd_sse2, .relu_bwd = relu_bwd_sse2,
    .sgd = sgd_sse2, .adamw = adamw_sse2,
    .div_scalar = div_scalar_sse2, .mul_scalar = mul_scalar_sse2,
    .add_into = add_into_sse2, .unscale_check = unscale_check_sse2,
};
