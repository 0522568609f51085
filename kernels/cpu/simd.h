/* The CPU kernels' inner loops per vector path (kernels/isa.h): one table of
 * function pointers per path, compiled three times from simd_tmpl.h with
 * per-function target attributes (simd_sse2.c, simd_avx2.c,
 * simd_avx512.c), so the build flags stay baseline x86-64.
 *
 * Why every path gives the same bits (the determinism contract, ops.h): a
 * vector lane is only ever one output element; each entry adds that
 * element's terms one by one in the order its comment states, product
 * rounded first (a multiply, then an add: -ffp-contract=off, and no FMA
 * instruction is ever written). Widths differ only in how many independent
 * outputs advance together. */
#ifndef REPRO_SIMD_H
#define REPRO_SIMD_H

#include "kernels/isa.h"
#include "kernels/shared/optim.h"

/* The most rows of a GEMM register tile on any path (AVX-512's). */
#define REPRO_MR_MAX 12
/* The most columns (AVX-512: 2 x 16 floats). */
#define REPRO_NR_MAX 32

typedef struct {
    repro_isa isa;
    int lanes;  /* floats per vector */
    /* GEMM register tiles of 1 .. mr rows x nr (= 2 * lanes) columns:
     * entry [n] of each table is the n-row tile (a panel of any height
     * runs on its own tile, no zero rows). */
    int mr, nr;
    /* The most rows of gemm_tile_rows: each row of an A read in place is
     * a stream of its own, and past 8 their addresses no longer fit the
     * general registers (AVX-512's 12-row tile spilled them). */
    int mr_rows;
    /* The register tile: C[r][j] (r < n, j < nr, row stride ldc) =
     * C[r][j] + Ap[0*n + r]*Bp[0*ldb + j] + Ap[1*n + r]*Bp[1*ldb + j] + ...
     * for k = 0 .. kc-1 in that order (Ap: n x kc packed by k; Bp: kc rows
     * of nr floats, ldb apart). C holds the running sums: a caller that
     * splits K into blocks keeps each element's order ascending in k. With
     * init (nr floats) the sums start from init[j] instead, C is only
     * written: C[r][j] = init[j] + Ap[0*n + r]*Bp[j] + ... (a first K block
     * from +0 or the bias, without writing C first and reading it back). */
    void (*gemm_tile[REPRO_MR_MAX + 1])(long kc, const float *Ap, const float *Bp, long ldb,
                                        float *C, long ldc, const float *init);
    /* gemm_tile with A in place, A(r, k) = A[r*lda + k] (a row-major A:
     * no packing); the same sums in the same order. */
    void (*gemm_tile_rows[REPRO_MR_MAX + 1])(long kc, const float *A, long lda, const float *Bp,
                                             long ldb, float *C, long ldc, const float *init);
    /* nt gemm_tile_rows side by side along N in one call: tile t reads
     * B + t*nr and writes C + t*nr, starting from init + t*istep (init
     * NULL: C's running sums). For a short K (the logits' backward data,
     * K = 10) the per-tile call and set-up cost as much as the products. */
    void (*gemm_strip_rows[REPRO_MR_MAX + 1])(long nt, long kc, const float *A, long lda,
                                              const float *B, long ldb, float *C, long ldc,
                                              const float *init, long istep);
    /* The sharded register tile: K (kc) cut into shards of S (the last one
     * may be short); shard q's partial Pq[r][j] = +0 + Ap[k*n + r]*Bp[k*ldb
     * + j] over its k ascending, and T[r][j] (row stride ldt) becomes P0,
     * then T + P1, T + P2 ... in shard order (T's old value is not read). */
    void (*gemm_tile_shards[REPRO_MR_MAX + 1])(long kc, long S, const float *Ap, const float *Bp,
                                               long ldb, float *T, long ldt);
    /* nt gemm_tile_shards side by side along N in one call, B read in
     * place: tile t reads B + t*nr and writes T + t*nr (a gradient of few
     * rows, the logits' 10: the engine's per-tile work cost a tenth). */
    void (*gemm_strip_shards[REPRO_MR_MAX + 1])(long nt, long kc, long S, const float *Ap,
                                                const float *B, long ldb, float *T, long ldt);
    /* dst[i*ldd + j] = src[j*lds + i] for i < rows, j < cols: a copy (no
     * arithmetic) through register transposes of the path's width, for
     * the GEMM's packing of a B read across k and its turned-around C. */
    void (*transpose)(const float *src, long lds, long rows, long cols, float *dst, long ldd);
    /* A direct convolution tile: G = conv_g channels g x 2 rows r x
     * `lanes` columns l, out[g*ldg + r*ldr + l] = init[g] + wt[t*G + g] *
     * in[t_off[t] + r*ws + l] for t = 0 .. nt-1 in that order. */
    void (*conv_tile)(long nt, const float *wt, const long *t_off, const float *in, long ws,
                      const float *init, float *out, long ldg, long ldr);
    int conv_g; /* 4, or 8 where 16 accumulators fit (AVX-512) */
    /* Column sums of conv backward filter for nk filters kk (any; 2 with
     * R = 3 and nv <= 2 share the x loads, and 4 with nv = 2 on AVX-512:
     * colsum_nk), nv vectors of output
     * columns ox = v*lanes + lane (R = 3 with nv 1..3 in registers; any
     * works), R kernel columns rx:
     *   acc[kk][rx][ox] = acc[kk][rx][ox]
     *                     + dy[kk*dy_k + dy_off[j] + ox] * x[x_off[j] + ox + rx]
     * for j = 0 .. nrows-1 in that order. acc is [nk][R][nv*lanes]; dy and
     * x must be readable over nv*lanes (+ R - 1) floats from each offset. */
    void (*colsum)(int R, int nv, int nk, long nrows, const float *dy, long dy_k,
                   const long *dy_off, const float *x, const long *x_off, float *acc);
    /* The filters colsum takes at once at its best: 4 where the registers
     * hold 4 x 3 x 2 vectors of sums (AVX-512), else 2. */
    int colsum_nk;
    /* The same column sums with the lanes across K = nv * lanes filters
     * (nv 1 or 2), R = 3, dy transposed (dyT: row j's ow columns of K
     * filters, rows dyT_row apart), every column ox < ow:
     *   out[(rx*ow + ox)*K + k] = +0 + dyT[j*dyT_row + ox*K + k] * x[x_off[j] + ox + rx]
     * for j = 0 .. nrows-1 in that order: no lane idle where ow is not a
     * whole number of vectors (the CNN's 11 columns filled 11 of 16). */
    void (*colsum_k)(int nv, long nrows, long ow, const float *dyT, long dyT_row,
                     const float *x, const long *x_off, float *out);
    /* acc[l] = +0 + base[j*row + l] for j = 0 .. nrows-1 in that order, for
     * l < nv * lanes: the bias gradient's column sums over a transposed dy
     * (every filter and column of a row a lane). */
    void (*rowsum)(long nrows, long nv, const float *base, long row, float *acc);

    /* Elementwise loops over n floats (simd_pointwise_tmpl.h), any n: each
     * output element is the scalar kernel's expression of its own inputs,
     * so every path and any split of a range give the same bits. */
    /* y[i] = repro_hd_relu(x[i]) */
    void (*relu_fwd)(const float *x, float *y, long n);
    /* dx[i] = repro_hd_relu_grad(y[i], dy[i]) */
    void (*relu_bwd)(const float *y, const float *dy, float *dx, long n);
    /* repro_hd_sgd on each (p[i], g[i], buf[i]) */
    void (*sgd)(float *p, const float *g, float *buf, long n, float lr, float momentum,
                float wd, int first_step);
    /* repro_hd_adamw on each (g[i], p[i], m[i], v[i]) */
    void (*adamw)(const repro_adamw_consts *k, float *p, const float *g, float *m, float *v,
                  long n);
    /* x[i] = x[i] / d;  x[i] = x[i] * s */
    void (*div_scalar)(float *x, long n, float d);
    void (*mul_scalar)(float *x, long n, float s);
    /* y[i] = y[i] + x[i]; where both are NaN, y's (quieted) */
    void (*add_into)(float *y, const float *x, long n);
    /* g[i] = repro_hd_unscale(g[i], inv, &found); returns found (0 or 1) */
    int (*unscale_check)(float *g, long n, float inv);
} repro_simd;

/* The table of the path in use (repro_isa_current()). */
const repro_simd *repro_simd_get(void);
/* The table of a given path, or NULL when this build has none for it. */
const repro_simd *repro_simd_for(repro_isa isa);

extern const repro_simd repro_simd_sse2, repro_simd_avx2, repro_simd_avx512;

#endif
