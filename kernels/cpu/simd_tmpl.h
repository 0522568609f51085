/* Template of the per-path inner loops (simd.h), included once by each of
 * simd_sse2.c, simd_avx2.c and simd_avx512.c after they define:
 *   LANES      floats per vector (4, 8, 16)
 *   TGT        the function attribute that enables the path
 *   SFX(name)  name with the path's suffix
 *   MR_ROWS(X) X(0) X(1) ... X(mr-1): the GEMM tile's rows
 *   MR         their count
 *   SPLAT_INIT(a)  the initializer {a, a, ...} of LANES elements
 *   VSQRT(v)   optional: the path's vector square root (simd_pointwise_tmpl.h)
 * Everything here is elementwise IEEE arithmetic on GCC/Clang vector types:
 * each lane is its own output, products are rounded before the add (no FMA:
 * -ffp-contract=off, and none is written). */
#include <string.h>

typedef float SFX(vf) __attribute__((vector_size(LANES * 4)));
#define VF SFX(vf)

TGT static inline VF SFX(ld)(const float *p)
{
    VF v;
    memcpy(&v, p, sizeof v); /* unaligned-safe */
    return v;
}

TGT static inline void SFX(st)(float *p, VF v)
{
    memcpy(p, &v, sizeof v);
}

/* Every lane a: a broadcast (not 0 + a, which would turn -0 into +0). */
TGT static inline VF SFX(splat)(float a)
{
    VF v = SPLAT_INIT(a);
    return v;
}

/* ---- GEMM register tile (simd.h: gemm_tile) ----------------------------- */
#define TILE_LOAD(r)                                                                   \
    VF c##r##a = SFX(ld)(C + (r) * ldc), c##r##b = SFX(ld)(C + (r) * ldc + LANES);
#define TILE_STEP(r)                                                                   \
    {                                                                                  \
        VF a = SFX(splat)(Ap[r]);                                                      \
        c##r##a = c##r##a + a * b0;                                                    \
        c##r##b = c##r##b + a * b1;                                                    \
    }
#define TILE_STORE(r)                                                                  \
    SFX(st)(C + (r) * ldc, c##r##a);                                                   \
    SFX(st)(C + (r) * ldc + LANES, c##r##b);

TGT static void SFX(gemm_tile)(long kc, const float *Ap, const float *Bp, long ldb, float *C,
                               long ldc)
{
    MR_ROWS(TILE_LOAD)
    for (long k = 0; k < kc; k++, Ap += MR, Bp += ldb) {
        VF b0 = SFX(ld)(Bp), b1 = SFX(ld)(Bp + LANES);
        MR_ROWS(TILE_STEP)
    }
    MR_ROWS(TILE_STORE)
}

/* ---- column sums of conv backward filter (simd.h: colsum) ----------------
 * R = 3 with 1..3 vectors in registers (3 x 3 accumulators at most, so
 * SSE2's and AVX2's 16 registers hold them with the loads); anything else
 * one (rx, vector) accumulator at a time through memory, in the same order. */
#define COLSUM_R3(NV)                                                                    \
    TGT static void SFX(colsum3_##NV)(long nrows, const float *dy, const long *dy_off,     \
                                       const float *x, const long *x_off, float *acc)      \
    {                                                                                    \
        long w = (long)(NV) * LANES;                                                     \
        VF a0[NV], a1[NV], a2[NV];                                                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < (NV); v++)                           \
        {                                                                                \
            a0[v] = SFX(ld)(acc + v * LANES);                                            \
            a1[v] = SFX(ld)(acc + w + v * LANES);                                        \
            a2[v] = SFX(ld)(acc + 2 * w + v * LANES);                                    \
        }                                                                                \
        for (long j = 0; j < nrows; j++) {                                               \
            const float *d = dy + dy_off[j], *xr = x + x_off[j];                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < (NV); v++)                       \
            {                                                                            \
                VF dv = SFX(ld)(d + v * LANES);                                          \
                a0[v] = a0[v] + dv * SFX(ld)(xr + v * LANES);                            \
                a1[v] = a1[v] + dv * SFX(ld)(xr + v * LANES + 1);                        \
                a2[v] = a2[v] + dv * SFX(ld)(xr + v * LANES + 2);                        \
            }                                                                            \
        }                                                                                \
        _Pragma("GCC unroll 4") for (int v = 0; v < (NV); v++)                           \
        {                                                                                \
            SFX(st)(acc + v * LANES, a0[v]);                                             \
            SFX(st)(acc + w + v * LANES, a1[v]);                                         \
            SFX(st)(acc + 2 * w + v * LANES, a2[v]);                                     \
        }                                                                                \
    }
COLSUM_R3(1)
COLSUM_R3(2)
COLSUM_R3(3)

TGT static void SFX(colsum)(int R, int nv, long nrows, const float *dy, const long *dy_off,
                            const float *x, const long *x_off, float *acc)
{
    if (R == 3 && nv == 1)
        SFX(colsum3_1)(nrows, dy, dy_off, x, x_off, acc);
    else if (R == 3 && nv == 2)
        SFX(colsum3_2)(nrows, dy, dy_off, x, x_off, acc);
    else if (R == 3 && nv == 3)
        SFX(colsum3_3)(nrows, dy, dy_off, x, x_off, acc);
    else
        for (int rx = 0; rx < R; rx++)
            for (int v = 0; v < nv; v++) {
                float *ap = acc + (long)rx * nv * LANES + v * LANES;
                VF a = SFX(ld)(ap);
                for (long j = 0; j < nrows; j++)
                    a = a + SFX(ld)(dy + dy_off[j] + v * LANES) *
                                SFX(ld)(x + x_off[j] + v * LANES + rx);
                SFX(st)(ap, a);
            }
}

#undef VF

/* The elementwise loops (relu, optimizers, scaling) on the same vectors. */
#include "simd_pointwise_tmpl.h"

#undef SPLAT_INIT
#undef TILE_LOAD
#undef TILE_STEP
#undef TILE_STORE
#undef COLSUM_R3
