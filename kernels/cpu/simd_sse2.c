/* The baseline path's inner loops (simd.h): 4-float vectors, a 4 x 8 GEMM
 * tile (8 accumulators: SSE2's two-operand instructions need spare
 * registers for copies). */
#include "simd.h"

#define LANES 4
#define TGT
#define SFX(name) name##_sse2
#define MR 4
#define MR_ROWS(X) X(0) X(1) X(2) X(3)
#define SPLAT_INIT(a) {a, a, a, a}
#include "simd_tmpl.h"

const repro_simd repro_simd_sse2 = {REPRO_ISA_SSE2, LANES, MR, 2 * LANES, gemm_tile_sse2, gemm_tile_shards_sse2, conv_tile_sse2,
                                    colsum_sse2};
