/* The convolution forward algorithms of conv_algos.h (im2col with a blocked
 * reduction, Winograd F(2x2, 3x3)) and the eligibility/workspace rules
 * that benchmark-mode selection works from. direct is conv2d.c's kernel.
 *
 * Determinism argument, shared by both: a chunk is one sample (all K output
 * planes of sample b) with its own workspace region; every output element's
 * arithmetic is written out below in a fixed order that depends only on the
 * shape; vector code (GCC/Clang vector extension, 4 floats, elementwise IEEE)
 * only ever groups different output elements (or different tiles), never
 * terms of one sum; no FMA (-ffp-contract=off, and we multiply then add). So
 * the thread count, the compiler and -O level change no bit. */
#include "conv_algos.h"

#include <string.h>

#include "scratch.h"

#include "vec4.h"

static inline long lmax(long a, long b) { return a > b ? a : b; }
static inline long lmin(long a, long b) { return a < b ? a : b; }

/* ---- eligibility, workspace (the names are every backend's: backend.c) -- */

int repro_conv_algo_eligible(repro_conv_algo a, const repro_conv_shape *s)
{
    switch (a) {
    case REPRO_CONV_DIRECT:
    case REPRO_CONV_IM2COL:
        return 1;
    case REPRO_CONV_WINOGRAD:
        return s->R == 3;
    default:
        return 0;
    }
}

static long out_positions(const repro_conv_shape *s)
{
    long oh = repro_conv_oh(s), ow = repro_conv_ow(s);
    return oh > 0 && ow > 0 ? oh * ow : 0;
}

/* Winograd output tiles per plane: ceil(OH/2) x ceil(OW/2). */
static long wino_tiles_h(const repro_conv_shape *s) { return (repro_conv_oh(s) + 1) / 2; }
static long wino_tiles_w(const repro_conv_shape *s) { return (repro_conv_ow(s) + 1) / 2; }

static long wino_sample_floats(const repro_conv_shape *s)
{
    return ((long)s->C + 1) * 16 * wino_tiles_h(s) * wino_tiles_w(s);
}

size_t repro_conv_workspace_floats(repro_conv_algo a, const repro_conv_shape *s)
{
    if (out_positions(s) == 0)
        return 0;
    switch (a) {
    case REPRO_CONV_IM2COL:
        return (size_t)s->B * (size_t)s->C * (size_t)s->R * (size_t)s->R *
               (size_t)out_positions(s);
    case REPRO_CONV_WINOGRAD:
        return (size_t)s->K * (size_t)s->C * 16 + (size_t)s->B * (size_t)wino_sample_floats(s);
    default:
        return 0;
    }
}

typedef struct {
    const repro_conv_shape *s;
    const float *x, *w, *b;
    float *y, *ws;
} algo_ctx;

/* ---- im2col ------------------------------------------------------------
 * What: per sample, col[q][p] = x[c][oy+ry-pad][ox+rx-pad] (0 where padded)
 * with q = (c, ry, rx) lexicographic (q = (c*R + ry)*R + rx, w's own row
 * layout) and p = oy*OW + ox; then y[k][p] = b[k] + sum_q w[k][q]*col[q][p].
 *
 * Summation order (fixed and documented, like a k-panelled BLAS): q runs in
 * blocks of IM2COL_QBLOCK = 16 consecutive terms (the last block shorter).
 * Each block is summed on its own, starting from +0 and adding its rounded
 * products in ascending q; the accumulator starts at b[k] (+0 when b is
 * NULL) and adds the block sums in ascending block order:
 *     acc = b[k]; for each block: t = +0; t += w*col (ascending q); acc += t
 * Deterministic: yes; the order depends only on q, never on threads, tiling
 * or vector width. It differs from direct's single running sum from b[k]
 * (each block sum is rounded on its own before it meets the accumulator), so
 * it rounds differently -- which is the point: it is a second valid
 * algorithm with its own bits, as cuDNN's IMPLICIT_GEMM vs GEMM are. */
enum { IM2COL_QBLOCK = 16 };

/* Unfold sample b into col [Q][P] (conv_algos.h). */
void repro_conv_unfold(const repro_conv_shape *s, const float *xb, float *col)
{
    long C = s->C, H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s), P = OH * OW;
    for (long c = 0; c < C; c++)
        for (long ry = 0; ry < R; ry++)
            for (long rx = 0; rx < R; rx++) {
                float *row = col + ((c * R + ry) * R + rx) * P;
                const float *xp = xb + c * H * W;
                long lo = lmin(OW, lmax(0, pad - rx));
                long hi = lmax(lo, lmin(OW, W + pad - rx));
                for (long oy = 0; oy < OH; oy++) {
                    float *r = row + oy * OW;
                    long iy = oy + ry - pad;
                    if (iy < 0 || iy >= H) {
                        repro_fzero(r, OW);
                        continue;
                    }
                    repro_fzero(r, lo);
                    repro_fcopy(r + lo, xp + iy * W + lo + rx - pad, hi - lo);
                    repro_fzero(r + hi, OW - hi);
                }
            }
}

/* 4 filters x 8 positions: y[k..k+3][p..p+7] in the blocked order. The
 * block sums t live in registers across a block; acc is touched once per
 * block. */
static void im2col_tile_4x8(const float *w, long Q, const float *col, long P, float *y,
                            const float *init, long p)
{
    const float *a0 = w, *a1 = w + Q, *a2 = w + 2 * Q, *a3 = w + 3 * Q;
    v4f acc[8];
    for (int r = 0; r < 4; r++)
        acc[2 * r] = acc[2 * r + 1] = v4_splat(init[r]);
    for (long q0 = 0; q0 < Q; q0 += IM2COL_QBLOCK) {
        long q1 = lmin(Q, q0 + IM2COL_QBLOCK);
        v4f z = v4_splat(0.0f);
        v4f t00 = z, t01 = z, t10 = z, t11 = z, t20 = z, t21 = z, t30 = z, t31 = z;
        const float *bp = col + q0 * P + p;
        for (long q = q0; q < q1; q++, bp += P) {
            v4f b0 = v4_load(bp), b1 = v4_load(bp + 4);
            v4f x0 = v4_splat(a0[q]), x1 = v4_splat(a1[q]);
            v4f x2 = v4_splat(a2[q]), x3 = v4_splat(a3[q]);
            t00 = t00 + x0 * b0;
            t01 = t01 + x0 * b1;
            t10 = t10 + x1 * b0;
            t11 = t11 + x1 * b1;
            t20 = t20 + x2 * b0;
            t21 = t21 + x2 * b1;
            t30 = t30 + x3 * b0;
            t31 = t31 + x3 * b1;
        }
        acc[0] = acc[0] + t00;
        acc[1] = acc[1] + t01;
        acc[2] = acc[2] + t10;
        acc[3] = acc[3] + t11;
        acc[4] = acc[4] + t20;
        acc[5] = acc[5] + t21;
        acc[6] = acc[6] + t30;
        acc[7] = acc[7] + t31;
    }
    for (int r = 0; r < 4; r++) {
        v4_store(y + r * P + p, acc[2 * r]);
        v4_store(y + r * P + p + 4, acc[2 * r + 1]);
    }
}

/* 1 filter x 4 positions, same order. */
static void im2col_tile_1x4(const float *w, long Q, const float *col, long P, float *y,
                            float init, long p)
{
    v4f acc = v4_splat(init);
    for (long q0 = 0; q0 < Q; q0 += IM2COL_QBLOCK) {
        long q1 = lmin(Q, q0 + IM2COL_QBLOCK);
        v4f t = v4_splat(0.0f);
        const float *bp = col + q0 * P + p;
        for (long q = q0; q < q1; q++, bp += P)
            t = t + v4_splat(w[q]) * v4_load(bp);
        acc = acc + t;
    }
    v4_store(y + p, acc);
}

/* 1 filter x 1 position: the reference order itself. */
static void im2col_tile_1x1(const float *w, long Q, const float *col, long P, float *y,
                            float init, long p)
{
    float acc = init;
    for (long q0 = 0; q0 < Q; q0 += IM2COL_QBLOCK) {
        long q1 = lmin(Q, q0 + IM2COL_QBLOCK);
        float t = 0.0f;
        for (long q = q0; q < q1; q++) {
            float prod = w[q] * col[q * P + p];
            t = t + prod;
        }
        acc = acc + t;
    }
    y[p] = acc;
}

/* Chunk = sample b: unfold into its own column matrix, then the GEMM. */
static void im2col_chunk(void *vctx, long b)
{
    const algo_ctx *cx = vctx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, R = s->R, H = s->H, W = s->W;
    long Q = C * R * R, P = out_positions(s);
    float *col = cx->ws + b * Q * P;
    float *yb = cx->y + b * K * P;
    repro_conv_unfold(s, cx->x + b * C * H * W, col);
    long p8 = P / 8 * 8, p4 = P / 4 * 4, k4 = K / 4 * 4;
    /* Position strips outside, filter quads inside: one Q x 8 strip of col
     * stays in L1 while all K filters sweep over it. */
    for (long p = 0; p < p8; p += 8) {
        long k = 0;
        for (; k < k4; k += 4) {
            float init[4];
            for (int r = 0; r < 4; r++)
                init[r] = cx->b ? cx->b[k + r] : 0.0f;
            im2col_tile_4x8(cx->w + k * Q, Q, col, P, yb + k * P, init, p);
        }
        for (; k < K; k++) {
            float init = cx->b ? cx->b[k] : 0.0f;
            im2col_tile_1x4(cx->w + k * Q, Q, col, P, yb + k * P, init, p);
            im2col_tile_1x4(cx->w + k * Q, Q, col, P, yb + k * P, init, p + 4);
        }
    }
    for (long k = 0; k < K; k++) {
        float init = cx->b ? cx->b[k] : 0.0f;
        if (p4 > p8)
            im2col_tile_1x4(cx->w + k * Q, Q, col, P, yb + k * P, init, p8);
        for (long p = p4; p < P; p++)
            im2col_tile_1x1(cx->w + k * Q, Q, col, P, yb + k * P, init, p);
    }
}

/* ---- winograd F(2x2, 3x3) -----------------------------------------------
 * What (Lavin & Gray 2015): each 2x2 block of outputs of plane (b, k) is
 *     Y = A^T [ sum_c (G g_kc G^T) .* (B^T d_bc B) ] A   (+ b[k])
 * where g_kc is the 3x3 filter, d_bc the 4x4 input tile whose top-left is at
 * input (2ty - pad, 2tx - pad) (zero outside the input), .* elementwise, and
 *     G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
 *     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *     A^T = [1 1 1 0; 0 1 -1 -1].
 * Rounding order, all in float, written out in the transforms below:
 *   filter  U = G g G^T: columns first (G g), then rows, each row of G as
 *           u1 = ((g0 + g1) + g2) * 0.5, u2 = ((g0 - g1) + g2) * 0.5;
 *   input   V = B^T d B: columns first, then rows, v0 = d0 - d2,
 *           v1 = d1 + d2, v2 = d2 - d1, v3 = d1 - d3;
 *   sum     M[e] = +0, then M[e] + U[k][c][e] * V[c][e] for c ascending;
 *   output  A^T M A: columns first, then rows, y0 = (m0 + m1) + m2,
 *           y1 = (m1 - m2) - m3; finally y = init + that, init = b[k] or +0.
 * Edge tiles (OH or OW odd) are computed whole and only their valid outputs
 * are stored. Deterministic: yes, the order is fixed per output element.
 * It differs from direct because it does not multiply w by x at all: it
 * multiplies transformed (pre-added, halved) filters by transformed (pre-
 * subtracted) inputs and undoes the transform after the channel sum, so
 * every intermediate rounding is different -- and it trades 36 products per
 * 2x2 tile and channel for 16, which is why cuDNN picks it when it is
 * faster. */

/* U[k][c][0..16) = G g G^T, row-major 4x4. */
static void wino_filter(const float *g, float *u)
{
    float t[4][3]; /* G g: 4 x 3 */
    for (int j = 0; j < 3; j++) {
        float g0 = g[0 * 3 + j], g1 = g[1 * 3 + j], g2 = g[2 * 3 + j];
        t[0][j] = g0;
        t[1][j] = ((g0 + g1) + g2) * 0.5f;
        t[2][j] = ((g0 - g1) + g2) * 0.5f;
        t[3][j] = g2;
    }
    for (int i = 0; i < 4; i++) { /* (G g) G^T: the same on each row */
        float g0 = t[i][0], g1 = t[i][1], g2 = t[i][2];
        u[i * 4 + 0] = g0;
        u[i * 4 + 1] = ((g0 + g1) + g2) * 0.5f;
        u[i * 4 + 2] = ((g0 - g1) + g2) * 0.5f;
        u[i * 4 + 3] = g2;
    }
}

/* V = B^T d B for 4 tiles at once (lane l = tile l; lanes never mix, so
 * each tile's arithmetic is exactly the scalar formula). */
static inline void wino_input4(const v4f d[4][4], v4f v[16])
{
    v4f t[4][4]; /* B^T d */
    for (int j = 0; j < 4; j++) {
        v4f d0 = d[0][j], d1 = d[1][j], d2 = d[2][j], d3 = d[3][j];
        t[0][j] = d0 - d2;
        t[1][j] = d1 + d2;
        t[2][j] = d2 - d1;
        t[3][j] = d1 - d3;
    }
    for (int i = 0; i < 4; i++) { /* (B^T d) B */
        v4f d0 = t[i][0], d1 = t[i][1], d2 = t[i][2], d3 = t[i][3];
        v[i * 4 + 0] = d0 - d2;
        v[i * 4 + 1] = d1 + d2;
        v[i * 4 + 2] = d2 - d1;
        v[i * 4 + 3] = d1 - d3;
    }
}

/* Y = A^T M A (2x2) for 4 tiles at once, lane = tile. */
static inline void wino_output4(const v4f m[16], v4f out[2][2])
{
    v4f t[2][4]; /* A^T M */
    for (int j = 0; j < 4; j++) {
        v4f m0 = m[0 * 4 + j], m1 = m[1 * 4 + j], m2 = m[2 * 4 + j], m3 = m[3 * 4 + j];
        t[0][j] = (m0 + m1) + m2;
        t[1][j] = (m1 - m2) - m3;
    }
    for (int i = 0; i < 2; i++) { /* (A^T M) A */
        v4f m0 = t[i][0], m1 = t[i][1], m2 = t[i][2], m3 = t[i][3];
        out[i][0] = (m0 + m1) + m2;
        out[i][1] = (m1 - m2) - m3;
    }
}

/* m[i] = m[i] + u * v[i], i ascending; every i is a different tile. */
static void axpy(float *m, const float *v, float u, long n)
{
    long i = 0;
    v4f uv = v4_splat(u);
    for (; i + 8 <= n; i += 8) {
        v4_store(m + i, v4_load(m + i) + uv * v4_load(v + i));
        v4_store(m + i + 4, v4_load(m + i + 4) + uv * v4_load(v + i + 4));
    }
    for (; i + 4 <= n; i += 4)
        v4_store(m + i, v4_load(m + i) + uv * v4_load(v + i));
    for (; i < n; i++)
        m[i] = m[i] + u * v[i];
}

/* The 4x4 input tile of output tile (ty, tx) of one input plane, zero
 * outside the input, into lane l of d. */
static void wino_gather(const float *xp, long H, long W, long pad, long ty, long tx,
                        float d[4][4][4], int l)
{
    long iy0 = 2 * ty - pad, ix0 = 2 * tx - pad;
    if (iy0 >= 0 && ix0 >= 0 && iy0 + 4 <= H && ix0 + 4 <= W) { /* inside: no checks */
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                d[i][j][l] = xp[(iy0 + i) * W + ix0 + j];
        return;
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            long iy = iy0 + i, ix = ix0 + j;
            d[i][j][l] = iy >= 0 && iy < H && ix >= 0 && ix < W ? xp[iy * W + ix] : 0.0f;
        }
}

typedef struct {
    const algo_ctx *cx;
    long TH, TW;
} wino_ctx;

/* Chunk = sample b: transform its input tiles (all channels) into
 * V [c][e][tile], then per filter k: M [e][tile] = channel sum, output
 * transform, store. */
static void wino_chunk(void *vctx, long b)
{
    const wino_ctx *wc = vctx;
    const algo_ctx *cx = wc->cx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, H = s->H, W = s->W, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long TH = wc->TH, TW = wc->TW, T = TH * TW;
    const float *U = cx->ws;
    float *V = cx->ws + K * C * 16 + b * (C + 1) * 16 * T;
    float *M = V + C * 16 * T;

    /* Input transform, 4 tiles (t = ty*TW + tx ascending) at a time; a
     * short last group repeats its first tile in lanes that are never
     * stored (every lane of d is written: no zeroing per group). */
    for (long c = 0; c < C; c++) {
        const float *xp = cx->x + (b * C + c) * H * W;
        float *vc = V + c * 16 * T;
        for (long t0 = 0; t0 < T; t0 += 4) {
            int nl = (int)lmin(4, T - t0);
            float d[4][4][4];
            for (int l = 0; l < 4; l++) {
                long tl = t0 + (l < nl ? l : 0);
                wino_gather(xp, H, W, pad, tl / TW, tl % TW, d, l);
            }
            v4f dv[4][4], v[16];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    dv[i][j] = v4_load(d[i][j]);
            wino_input4(dv, v);
            for (int e = 0; e < 16; e++) {
                if (nl == 4) {
                    v4_store(vc + e * T + t0, v[e]);
                    continue;
                }
                float lanes[4];
                v4_store(lanes, v[e]);
                for (int l = 0; l < nl; l++)
                    vc[e * T + t0 + l] = lanes[l];
            }
        }
    }

    /* The channel sums of every k at once: for each e a GEMM
     * Mall[k][e][t] = +0 + U[k][c][e] * V[c][e][t] over c ascending (the
     * same order as the axpy loop below, which runs when no scratch). */
    float *Mall = repro_scratch(REPRO_SCRATCH_CONV, (size_t)(K * 16 * T));
    for (int e = 0; Mall && e < 16; e++)
        repro_gemm_serial((int)K, (int)T, (int)C, U + e, C * 16, 16, V + e * T, 16 * T,
                          Mall + e * T, 16 * T, NULL, 0);
    for (long k = 0; k < K; k++) {
        if (Mall) {
            M = Mall + k * 16 * T;
        } else {
            for (long i = 0; i < 16 * T; i++)
                M[i] = 0.0f;
            for (long c = 0; c < C; c++) {
                const float *u = U + (k * C + c) * 16;
                const float *v = V + c * 16 * T;
                for (int e = 0; e < 16; e++)
                    axpy(M + e * T, v + e * T, u[e], T);
            }
        }
        /* Output transform, 4 tiles at a time, then init + it, stored
         * where the output exists (edge tiles are partly outside). */
        v4f init = v4_splat(cx->b ? cx->b[k] : 0.0f);
        float *yp = cx->y + (b * K + k) * OH * OW;
        for (long t0 = 0; t0 < T; t0 += 4) {
            int nl = (int)lmin(4, T - t0);
            v4f m[16], out[2][2];
            for (int e = 0; e < 16; e++) {
                if (nl == 4) {
                    m[e] = v4_load(M + e * T + t0);
                    continue;
                }
                float lanes[4] = {0};
                for (int l = 0; l < nl; l++)
                    lanes[l] = M[e * T + t0 + l];
                m[e] = v4_load(lanes);
            }
            wino_output4(m, out);
            float o[2][2][4];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    v4_store(o[i][j], init + out[i][j]);
            for (int l = 0; l < nl; l++) {
                long oy = 2 * ((t0 + l) / TW), ox = 2 * ((t0 + l) % TW);
                for (long i = 0; i < 2 && oy + i < OH; i++)
                    for (long j = 0; j < 2 && ox + j < OW; j++)
                        yp[(oy + i) * OW + ox + j] = o[i][j][l];
            }
        }
    }
}

/* ---- dispatch ----------------------------------------------------------- */

void repro_conv2d_forward_algo(repro_pool *pool, repro_conv_algo a, const repro_conv_shape *s,
                               const float *x, const float *w, const float *b, float *y,
                               float *workspace)
{
    /* Ineligible (or unknown) algorithms compute direct rather than leave y
     * unwritten; callers check repro_conv_algo_eligible first. */
    if (!repro_conv_algo_eligible(a, s) || a == REPRO_CONV_DIRECT || out_positions(s) == 0) {
        repro_conv2d_forward(pool, s, x, w, b, y);
        return;
    }
    algo_ctx cx = {.s = s, .x = x, .w = w, .b = b, .y = y, .ws = workspace};
    if (a == REPRO_CONV_IM2COL) {
        repro_pool_run(pool, s->B, im2col_chunk, &cx);
    } else { /* winograd, R == 3 */
        /* The filter transform is shared by all samples and cheap (K*C
         * tiles): done here, once, before the chunks read it. */
        for (long kc = 0; kc < (long)s->K * s->C; kc++)
            wino_filter(w + kc * 9, workspace + kc * 16);
        wino_ctx wc = {&cx, wino_tiles_h(s), wino_tiles_w(s)};
        repro_pool_run(pool, s->B, wino_chunk, &wc);
    }
}
