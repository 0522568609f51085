/* Template of the per-path inner loops (simd.h), included once by each of
 * simd_sse2.c, simd_avx2.c and simd_avx512.c after they define:
 *   LANES      floats per vector (4, 8, 16)
 *   TGT        the function attribute that enables the path
 *   SFX(name)  name with the path's suffix
 *   MR         the GEMM tiles' most rows (4, 6, 8 or 12): tiles of 1 .. MR
 *              rows are compiled, and GEMM_TABLES names them for the table
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

/* v loaded once into a register: without it GCC folds a load of v into
 * each multiply that uses it (three loads where one does; the lanes-
 * across-filters sums were bound by their loads). An empty asm: no code. */
#define IN_REGISTER(v) __asm__("" : "+v"(v))

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

/* ---- GEMM register tiles (simd.h: gemm_tile, gemm_tile_rows, gemm_strip_rows, gemm_tile_shards)
 * One tile per row count n = 1 .. MR (ROWS_n(X) = X(0) ... X(n-1)), each n
 * rows x 2 vectors of C in 2n accumulators, so a panel of any height runs
 * without zero rows (a 10-row weight gradient ran on a 16-row tile). Per
 * k: two B vectors loaded, one broadcast of A per row, and each
 * accumulator gets its product (a multiply, then an add: the two pipes
 * work side by side, 2n independent chains hide the add latency). */
#ifndef ROWS_1
#define ROWS_1(X) X(0)
#define ROWS_2(X) ROWS_1(X) X(1)
#define ROWS_3(X) ROWS_2(X) X(2)
#define ROWS_4(X) ROWS_3(X) X(3)
#define ROWS_5(X) ROWS_4(X) X(4)
#define ROWS_6(X) ROWS_5(X) X(5)
#define ROWS_7(X) ROWS_6(X) X(6)
#define ROWS_8(X) ROWS_7(X) X(7)
#define ROWS_9(X) ROWS_8(X) X(8)
#define ROWS_10(X) ROWS_9(X) X(9)
#define ROWS_11(X) ROWS_10(X) X(10)
#define ROWS_12(X) ROWS_11(X) X(11)
#endif

/* start values: C's running sums, or the row vector init (every row) */
#define TILE_LOAD(r)                                                                   \
    VF c##r##a = init ? i0 : SFX(ld)(C + (r) * ldc),                                   \
       c##r##b = init ? i1 : SFX(ld)(C + (r) * ldc + LANES);
#define TILE_STEP(r)                                                                   \
    {                                                                                  \
        VF a = SFX(splat)(Ap[r]);                                                      \
        c##r##a = c##r##a + a * b0;                                                    \
        c##r##b = c##r##b + a * b1;                                                    \
    }
#define TILE_STORE(r)                                                                  \
    SFX(st)(C + (r) * ldc, c##r##a);                                                   \
    SFX(st)(C + (r) * ldc + LANES, c##r##b);
/* A read in place: A(r, k) = A[r*lda + k] (a row-major A needs no copy) */
#define ROWS_STEP(r)                                                                   \
    {                                                                                  \
        VF a = SFX(splat)(A[(r) * lda]);                                               \
        c##r##a = c##r##a + a * b0;                                                    \
        c##r##b = c##r##b + a * b1;                                                    \
    }
/* Sharded: each shard's partial starts from +0 in registers (no load), and
 * goes to T once: T = P0 for the first shard, T = T + Pq after it, so T's
 * order is the shard order and each partial's is ascending k. */
#define SHARD_ZERO(r) VF c##r##a = SFX(splat)(0.0f), c##r##b = c##r##a;
#define SHARD_FIRST(r)                                                                 \
    SFX(st)(T + (r) * ldt, c##r##a);                                                   \
    SFX(st)(T + (r) * ldt + LANES, c##r##b);
#define SHARD_ADD(r)                                                                   \
    SFX(st)(T + (r) * ldt, SFX(ld)(T + (r) * ldt) + c##r##a);                          \
    SFX(st)(T + (r) * ldt + LANES, SFX(ld)(T + (r) * ldt + LANES) + c##r##b);

#define GEMM_TILES(n)                                                                  \
    TGT static void SFX(gemm_tile_##n)(long kc, const float *Ap, const float *Bp,       \
                                       long ldb, float *C, long ldc, const float *init) \
    {                                                                                  \
        VF i0 = SFX(splat)(0.0f), i1 = i0;                                             \
        if (init)                                                                      \
            i0 = SFX(ld)(init), i1 = SFX(ld)(init + LANES);                            \
        ROWS_##n(TILE_LOAD) _Pragma("GCC unroll 4") for (long k = 0; k < kc; k++, Ap += (n), Bp += ldb) \
        {                                                                              \
            VF b0 = SFX(ld)(Bp), b1 = SFX(ld)(Bp + LANES);                             \
            ROWS_##n(TILE_STEP)                                                        \
        }                                                                              \
        ROWS_##n(TILE_STORE)                                                           \
    }                                                                                  \
    TGT static inline __attribute__((always_inline)) void SFX(gemm_tile_rows_##n)(       \
        long kc, const float *A, long lda,                                             \
                                            const float *Bp, long ldb, float *C,       \
                                            long ldc, const float *init)               \
    {                                                                                  \
        VF i0 = SFX(splat)(0.0f), i1 = i0;                                             \
        if (init)                                                                      \
            i0 = SFX(ld)(init), i1 = SFX(ld)(init + LANES);                            \
        ROWS_##n(TILE_LOAD) _Pragma("GCC unroll 4") for (long k = 0; k < kc; k++, A++, Bp += ldb) \
        {                                                                              \
            VF b0 = SFX(ld)(Bp), b1 = SFX(ld)(Bp + LANES);                             \
            ROWS_##n(ROWS_STEP)                                                        \
        }                                                                              \
        ROWS_##n(TILE_STORE)                                                           \
    }                                                                                  \
    TGT static void SFX(gemm_strip_rows_##n)(long nt, long kc, const float *A, long lda,  \
                                             const float *B, long ldb, float *C,       \
                                             long ldc, const float *init, long istep)  \
    {                                                                                  \
        for (long t = 0; t < nt; t++, B += 2 * LANES, C += 2 * LANES)                  \
            SFX(gemm_tile_rows_##n)(kc, A, lda, B, ldb, C, ldc,                        \
                                    init ? init + t * istep : NULL);                   \
    }                                                                                  \
    TGT static inline __attribute__((always_inline)) void SFX(gemm_tile_shards_##n)(     \
        long kc, long S, const float *Ap, const float *Bp, long ldb, float *T, long ldt) \
    {                                                                                  \
        for (long q0 = 0; q0 < kc; q0 += S) {                                          \
            ROWS_##n(SHARD_ZERO) long k1 = q0 + S < kc ? q0 + S : kc;                  \
            _Pragma("GCC unroll 4") for (long k = q0; k < k1; k++, Ap += (n), Bp += ldb) { \
                VF b0 = SFX(ld)(Bp), b1 = SFX(ld)(Bp + LANES);                         \
                ROWS_##n(TILE_STEP)                                                    \
            }                                                                          \
            if (q0 == 0) {                                                             \
                ROWS_##n(SHARD_FIRST)                                                  \
            } else {                                                                   \
                ROWS_##n(SHARD_ADD)                                                    \
            }                                                                          \
        }                                                                              \
    }                                                                                  \
    TGT static void SFX(gemm_strip_shards_##n)(long nt, long kc, long S, const float *Ap, \
                                               const float *B, long ldb, float *T,     \
                                               long ldt)                               \
    {                                                                                  \
        for (long t = 0; t < nt; t++, B += 2 * LANES, T += 2 * LANES)                  \
            SFX(gemm_tile_shards_##n)(kc, S, Ap, B, ldb, T, ldt);                      \
    }

GEMM_TILES(1)
GEMM_TILES(2)
GEMM_TILES(3)
GEMM_TILES(4)
#if MR > 4
GEMM_TILES(5)
GEMM_TILES(6)
#endif
#if MR > 6
GEMM_TILES(7)
GEMM_TILES(8)
#endif
#if MR > 8
GEMM_TILES(9)
GEMM_TILES(10)
GEMM_TILES(11)
GEMM_TILES(12)
#endif

/* The tables of simd.h, indexed by row count (0 unused). */
#define GEMM_ENTRY(n) [n] = SFX(gemm_tile_##n),
#define GEMM_ROWS_ENTRY(n) [n] = SFX(gemm_tile_rows_##n),
#define GEMM_SHARDS_ENTRY(n) [n] = SFX(gemm_tile_shards_##n),
#define GEMM_STRIP_ENTRY(n) [n] = SFX(gemm_strip_rows_##n),
#define GEMM_STRIP_SHARDS_ENTRY(n) [n] = SFX(gemm_strip_shards_##n),
#define GEMM_TABLES                                                                    \
    .gemm_tile = {MR_ENTRIES(GEMM_ENTRY)}, .gemm_tile_rows = {MR_ENTRIES(GEMM_ROWS_ENTRY)}, \
    .gemm_tile_shards = {MR_ENTRIES(GEMM_SHARDS_ENTRY)},                                \
    .gemm_strip_rows = {MR_ENTRIES(GEMM_STRIP_ENTRY)},                                  \
    .gemm_strip_shards = {MR_ENTRIES(GEMM_STRIP_SHARDS_ENTRY)}
#if MR == 4
#define MR_ENTRIES(X) X(1) X(2) X(3) X(4)
#elif MR == 6
#define MR_ENTRIES(X) X(1) X(2) X(3) X(4) X(5) X(6)
#elif MR == 8
#define MR_ENTRIES(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
#elif MR == 12
#define MR_ENTRIES(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12)
#else
#error "MR: 4, 6, 8 or 12"
#endif

/* ---- direct convolution tile (simd.h: conv_tile) -------------------------
 * 4 channels g x 2 rows r x LANES columns l, 8 accumulators (SSE2, AVX2):
 *   out[g*ldg + r*ldr + l] = init[g] + wt[0*4 + g] * in[t_off[0] + r*ws + l]
 *                                    + wt[1*4 + g] * in[t_off[1] + r*ws + l] ...
 * over the nt terms in order. */
#if LANES != 16
TGT static void SFX(conv_tile)(long nt, const float *wt, const long *t_off, const float *in,
                               long ws, const float *init, float *out, long ldg, long ldr)
{
    VF a00 = SFX(splat)(init[0]), a01 = a00, a10 = SFX(splat)(init[1]), a11 = a10;
    VF a20 = SFX(splat)(init[2]), a21 = a20, a30 = SFX(splat)(init[3]), a31 = a30;
    for (long t = 0; t < nt; t++, wt += 4) {
        const float *p = in + t_off[t];
        VF d0 = SFX(ld)(p), d1 = SFX(ld)(p + ws);
        VF w = SFX(splat)(wt[0]);
        a00 = a00 + w * d0;
        a01 = a01 + w * d1;
        w = SFX(splat)(wt[1]);
        a10 = a10 + w * d0;
        a11 = a11 + w * d1;
        w = SFX(splat)(wt[2]);
        a20 = a20 + w * d0;
        a21 = a21 + w * d1;
        w = SFX(splat)(wt[3]);
        a30 = a30 + w * d0;
        a31 = a31 + w * d1;
    }
    SFX(st)(out, a00);
    SFX(st)(out + ldr, a01);
    SFX(st)(out + ldg, a10);
    SFX(st)(out + ldg + ldr, a11);
    SFX(st)(out + 2 * ldg, a20);
    SFX(st)(out + 2 * ldg + ldr, a21);
    SFX(st)(out + 3 * ldg, a30);
    SFX(st)(out + 3 * ldg + ldr, a31);
}
#endif

#if LANES == 16
/* The same tile for 8 channels (AVX-512's 32 registers): 16 accumulators,
 * twice the adds in flight that one add's latency needs (the 4-channel
 * tile's 8 were exactly that many, and ran at about half the peak on the
 * CNN's backward data), and each row's load serves 8 products. */
TGT static void SFX(conv_tile8)(long nt, const float *wt, const long *t_off, const float *in,
                                long ws, const float *init, float *out, long ldg, long ldr)
{
    VF a[8][2];
    _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) a[g][0] = a[g][1] = SFX(splat)(init[g]);
    for (long t = 0; t < nt; t++, wt += 8) {
        const float *p = in + t_off[t];
        VF d0 = SFX(ld)(p), d1 = SFX(ld)(p + ws);
        _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++)
        {
            VF w = SFX(splat)(wt[g]);
            a[g][0] = a[g][0] + w * d0;
            a[g][1] = a[g][1] + w * d1;
        }
    }
    _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++)
    {
        SFX(st)(out + g * ldg, a[g][0]);
        SFX(st)(out + g * ldg + ldr, a[g][1]);
    }
}
#define CONV_TILE SFX(conv_tile8)
#define CONV_G 8
#else
#define CONV_TILE SFX(conv_tile)
#define CONV_G 4
#endif

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

/* Two filters (k, k+1) at once, R = 3, 1 or 2 vectors: each row's three
 * shifted x loads serve both filters' accumulators (2 x 3 x NV of them), so
 * a row costs fewer loads per product; every accumulator still adds its
 * rows in order j = 0 .. nrows-1. */
#define COLSUM_R3K2(NV)                                                                  \
    TGT static void SFX(colsum3k2_##NV)(long nrows, const float *dy, long dy_k,           \
                                         const long *dy_off, const float *x,              \
                                         const long *x_off, float *acc)                   \
    {                                                                                    \
        long w = (long)(NV) * LANES, kw = 3 * w;                                         \
        VF a0[NV], a1[NV], a2[NV], b0[NV], b1[NV], b2[NV];                               \
        _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                           \
        {                                                                                \
            a0[v] = SFX(ld)(acc + v * LANES);                                            \
            a1[v] = SFX(ld)(acc + w + v * LANES);                                        \
            a2[v] = SFX(ld)(acc + 2 * w + v * LANES);                                    \
            b0[v] = SFX(ld)(acc + kw + v * LANES);                                       \
            b1[v] = SFX(ld)(acc + kw + w + v * LANES);                                   \
            b2[v] = SFX(ld)(acc + kw + 2 * w + v * LANES);                               \
        }                                                                                \
        for (long j = 0; j < nrows; j++) {                                               \
            const float *d = dy + dy_off[j], *xr = x + x_off[j];                         \
            _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                       \
            {                                                                            \
                /* one shifted x live at a time: 12 accumulators, da, db   \
                 * and x fit 16 registers without spilling */              \
                VF da = SFX(ld)(d + v * LANES), db = SFX(ld)(d + dy_k + v * LANES);      \
                VF xs = SFX(ld)(xr + v * LANES);                                         \
                IN_REGISTER(da);                                                         \
                IN_REGISTER(db);                                                         \
                IN_REGISTER(xs);                                                         \
                a0[v] = a0[v] + da * xs;                                                 \
                b0[v] = b0[v] + db * xs;                                                 \
                xs = SFX(ld)(xr + v * LANES + 1);                                        \
                IN_REGISTER(xs);                                                         \
                a1[v] = a1[v] + da * xs;                                                 \
                b1[v] = b1[v] + db * xs;                                                 \
                xs = SFX(ld)(xr + v * LANES + 2);                                        \
                IN_REGISTER(xs);                                                         \
                a2[v] = a2[v] + da * xs;                                                 \
                b2[v] = b2[v] + db * xs;                                                 \
            }                                                                            \
        }                                                                                \
        _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                           \
        {                                                                                \
            SFX(st)(acc + v * LANES, a0[v]);                                             \
            SFX(st)(acc + w + v * LANES, a1[v]);                                         \
            SFX(st)(acc + 2 * w + v * LANES, a2[v]);                                     \
            SFX(st)(acc + kw + v * LANES, b0[v]);                                        \
            SFX(st)(acc + kw + w + v * LANES, b1[v]);                                    \
            SFX(st)(acc + kw + 2 * w + v * LANES, b2[v]);                                \
        }                                                                                \
    }
COLSUM_R3K2(1)
COLSUM_R3K2(2)

#if LANES == 16
/* Four filters (k .. k+3), R = 3, 2 vectors: AVX-512's 32 registers hold
 * the 24 accumulators, the four rows of dy and one shifted x, so each x
 * load serves four products (the two-filter kernel was bound by its
 * loads, most of them split across cache lines: the CNN's first filter
 * gradient 1.7x faster). Every accumulator adds its rows in order. */
TGT static void SFX(colsum3k4_2)(long nrows, const float *dy, long dy_k, const long *dy_off,
                                 const float *x, const long *x_off, float *acc)
{
    long w = 2 * LANES, kw = 3 * w;
    VF a[4][3][2];
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        _Pragma("GCC unroll 3") for (int rx = 0; rx < 3; rx++)
            _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++)
                a[k][rx][v] = SFX(ld)(acc + k * kw + rx * w + v * LANES);
    for (long j = 0; j < nrows; j++) {
        const float *d = dy + dy_off[j], *xr = x + x_off[j];
        _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++)
        {
            VF d0 = SFX(ld)(d + v * LANES), d1 = SFX(ld)(d + dy_k + v * LANES);
            VF d2 = SFX(ld)(d + 2 * dy_k + v * LANES), d3 = SFX(ld)(d + 3 * dy_k + v * LANES);
            _Pragma("GCC unroll 3") for (int rx = 0; rx < 3; rx++)
            {
                VF xs = SFX(ld)(xr + v * LANES + rx);
                a[0][rx][v] = a[0][rx][v] + d0 * xs;
                a[1][rx][v] = a[1][rx][v] + d1 * xs;
                a[2][rx][v] = a[2][rx][v] + d2 * xs;
                a[3][rx][v] = a[3][rx][v] + d3 * xs;
            }
        }
    }
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        _Pragma("GCC unroll 3") for (int rx = 0; rx < 3; rx++)
            _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++)
                SFX(st)(acc + k * kw + rx * w + v * LANES, a[k][rx][v]);
}
#define COLSUM_NK 4
#else
#define COLSUM_NK 2
#endif

/* One filter: the R = 3 register paths, else one (rx, vector) accumulator
 * at a time through memory, in the same order. */
TGT static void SFX(colsum1)(int R, int nv, long nrows, const float *dy, const long *dy_off,
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

TGT static void SFX(colsum)(int R, int nv, int nk, long nrows, const float *dy, long dy_k,
                            const long *dy_off, const float *x, const long *x_off, float *acc)
{
#if LANES == 16
    if (nk == 4 && R == 3 && nv == 2) {
        SFX(colsum3k4_2)(nrows, dy, dy_k, dy_off, x, x_off, acc);
        return;
    }
#endif
    if (nk > 2) { /* two filters at a time */
        SFX(colsum)(R, nv, 2, nrows, dy, dy_k, dy_off, x, x_off, acc);
        SFX(colsum)(R, nv, nk - 2, nrows, dy + 2 * dy_k, dy_k, dy_off, x, x_off,
                    acc + 2L * R * nv * LANES);
        return;
    }
    if (nk == 2 && R == 3 && nv == 1)
        SFX(colsum3k2_1)(nrows, dy, dy_k, dy_off, x, x_off, acc);
    else if (nk == 2 && R == 3 && nv == 2)
        SFX(colsum3k2_2)(nrows, dy, dy_k, dy_off, x, x_off, acc);
    else
        for (int kk = 0; kk < nk; kk++)
            SFX(colsum1)(R, nv, nrows, dy + kk * dy_k, dy_off, x, x_off,
                         acc + (long)kk * R * nv * LANES);
}

/* ---- column sums of conv backward filter, lanes across filters
 * (simd.h: colsum_k) ----------------------------------------------------
 * K = NV * LANES filters in the lanes, R = 3: for output columns ox0 ..
 * ox0 + G - 1 the 3 x G x NV accumulators stay in registers over the rows;
 * each row loads one vector of dy per (ox, v) and broadcasts each x value
 * once for the three rx that use it. */
#define COLSUM_K(NAME, G, NV)                                                            \
    TGT static void SFX(NAME)(int g, long nrows, const float *dyT, long dyT_row,           \
                              const float *x, const long *x_off, float *out, long ldo)   \
    {                                                                                    \
        VF acc[3][G][NV];                                                                \
        _Pragma("GCC unroll 8") for (int o = 0; o < (G); o++)                            \
            _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                       \
        {                                                                                \
            acc[0][o][v] = SFX(splat)(0.0f);                                             \
            acc[1][o][v] = acc[0][o][v];                                                 \
            acc[2][o][v] = acc[0][o][v];                                                 \
        }                                                                                \
        for (long j = 0; j < nrows; j++) {                                               \
            const float *d = dyT + j * dyT_row, *xr = x + x_off[j];                      \
            _Pragma("GCC unroll 8") for (int o = 0; o < (G); o++)                        \
            {                                                                            \
                if (o >= g)                                                              \
                    break;                                                               \
                _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                   \
                {                                                                        \
                    VF dv = SFX(ld)(d + (o * (NV) + v) * LANES);                         \
                    IN_REGISTER(dv);                                                     \
                    acc[0][o][v] = acc[0][o][v] + dv * SFX(splat)(xr[o]);                \
                    acc[1][o][v] = acc[1][o][v] + dv * SFX(splat)(xr[o + 1]);            \
                    acc[2][o][v] = acc[2][o][v] + dv * SFX(splat)(xr[o + 2]);            \
                }                                                                        \
            }                                                                            \
        }                                                                                \
        _Pragma("GCC unroll 8") for (int o = 0; o < (G); o++)                            \
        {                                                                                \
            if (o >= g)                                                                  \
                break;                                                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < (NV); v++)                       \
                _Pragma("GCC unroll 3") for (int rx = 0; rx < 3; rx++)                   \
                    SFX(st)(out + rx * ldo + (o * (NV) + v) * LANES, acc[rx][o][v]);      \
        }                                                                                \
    }
/* 32 registers (AVX-512) hold 18 accumulators; 16 registers 9 or 6 */
#if LANES == 16
#define KG1 6
#define KG2 3
#else
#define KG1 3
#define KG2 1
#endif
COLSUM_K(colsum_k1, KG1, 1)
COLSUM_K(colsum_k2, KG2, 2)

/* out[(rx * ow + ox) * K + k] = +0 + dyT[j*dyT_row + ox*K + k] * x[x_off[j] + ox + rx]
 * over j = 0 .. nrows-1 ascending, for ox < ow, K = nv * LANES (nv 1 or
 * 2): groups of output columns, each group's sums in registers. */
TGT static void SFX(colsum_k)(int nv, long nrows, long ow, const float *dyT, long dyT_row,
                              const float *x, const long *x_off, float *out)
{
    int G = nv == 1 ? KG1 : KG2;
    long K = (long)nv * LANES;
    for (long ox0 = 0; ox0 < ow; ox0 += G) {
        int g = (int)(ow - ox0 < G ? ow - ox0 : G);
        if (nv == 1)
            SFX(colsum_k1)(g, nrows, dyT + ox0 * K, dyT_row, x + ox0, x_off, out + ox0 * K, ow * K);
        else
            SFX(colsum_k2)(g, nrows, dyT + ox0 * K, dyT_row, x + ox0, x_off, out + ox0 * K, ow * K);
    }
}
#undef KG1
#undef KG2

/* ---- column sums without products (simd.h: rowsum) ---------------------
 * Up to 8 vectors of columns in registers at a time, each column's rows
 * added in order from +0. */
TGT static void SFX(rowsum)(long nrows, long nv, const float *base, long row, float *acc)
{
    for (long v0 = 0; v0 < nv; v0 += 8) {
        long g = nv - v0 < 8 ? nv - v0 : 8;
        VF a[8];
        _Pragma("GCC unroll 8") for (int v = 0; v < 8; v++) a[v] = SFX(splat)(0.0f);
        const float *p = base + v0 * LANES;
        if (g == 8) {
            for (long j = 0; j < nrows; j++, p += row)
                _Pragma("GCC unroll 8") for (int v = 0; v < 8; v++) a[v] =
                    a[v] + SFX(ld)(p + v * LANES);
        } else {
            for (long j = 0; j < nrows; j++, p += row)
                for (long v = 0; v < g; v++)
                    a[v] = a[v] + SFX(ld)(p + v * LANES);
        }
        for (long v = 0; v < g; v++)
            SFX(st)(acc + (v0 + v) * LANES, a[v]);
    }
}

#undef VF

/* The transposing copy (packing B across k, turning C around). */
#include "simd_transpose_tmpl.h"

/* The elementwise loops (relu, optimizers, scaling) on the same vectors. */
#include "simd_pointwise_tmpl.h"

#undef SPLAT_INIT
#undef TILE_LOAD
#undef TILE_STEP
#undef TILE_STORE
#undef ROWS_STEP
#undef SHARD_ZERO
#undef SHARD_FIRST
#undef SHARD_ADD
#undef GEMM_TILES
#undef COLSUM_R3
#undef COLSUM_K
#undef IN_REGISTER
