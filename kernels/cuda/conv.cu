/* Convolution on the GPU: our own kernels in the CPU kernels' exact orders
 * (kernels/cpu/conv2d.c, conv_filter.c, conv_algos.c), one thread per output element (per
 * 2x2 output tile for Winograd), so their bits are the CPU's; the algorithm
 * entries (eligibility, determinism, workspace, choice, forward dispatch)
 * over these and cuDNN's forward algorithms (conv_cudnn.cu).
 *
 *   direct    bias, then (c, ry, rx) lexicographic, a padded input adding
 *             w * +0 as the CPU does;
 *   im2col    the same terms in blocks of 16, each block from +0, block sums
 *             added in order to the bias (no unfolded matrix is stored);
 *   winograd  F(2x2, 3x3) with conv_algos.c's transforms and rounding order;
 *             the filter transform goes into the workspace first.
 * Backward data sums (k, ry, rx) lexicographic, out-of-range terms skipped;
 * backward filter sums each output column over (b, oy) ascending, then the
 * columns in ascending ox (db likewise); its ATOMIC variant adds one
 * partial per sample with atomicAdd (nondeterministic). */
#include "ctx.cuh"

/* ---- forward: direct ------------------------------------------------------ */

__global__ void conv_direct(repro_conv_shape s, const float *x, const float *w, const float *b,
                            float *y)
{
    long OH = s.H + 2 * s.pad - s.R + 1, OW = s.W + 2 * s.pad - s.R + 1;
    REPRO_CUDA_FOR(i, (long)s.B * s.K * OH * OW)
    {
        long ox = i % OW, oy = (i / OW) % OH, k = (i / (OW * OH)) % s.K, bb = i / (OW * OH * s.K);
        float acc = b ? b[k] : 0.0f;
        for (long c = 0; c < s.C; c++) {
            const float *xp = x + (bb * s.C + c) * s.H * s.W;
            const float *wp = w + (k * s.C + c) * s.R * s.R;
            for (long ry = 0; ry < s.R; ry++)
                for (long rx = 0; rx < s.R; rx++) {
                    long iy = oy + ry - s.pad, ix = ox + rx - s.pad;
                    float xv = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W ? xp[iy * s.W + ix] : 0.0f;
                    float p = wp[ry * s.R + rx] * xv;
                    acc = acc + p;
                }
        }
        y[i] = acc;
    }
}

/* ---- forward: im2col order ------------------------------------------------ */

__global__ void conv_im2col(repro_conv_shape s, const float *x, const float *w, const float *b,
                            float *y)
{
    long OH = s.H + 2 * s.pad - s.R + 1, OW = s.W + 2 * s.pad - s.R + 1;
    long RR = (long)s.R * s.R, Q = s.C * RR;
    REPRO_CUDA_FOR(i, (long)s.B * s.K * OH * OW)
    {
        long ox = i % OW, oy = (i / OW) % OH, k = (i / (OW * OH)) % s.K, bb = i / (OW * OH * s.K);
        const float *wk = w + k * Q;
        float acc = b ? b[k] : 0.0f;
        for (long q0 = 0; q0 < Q; q0 += 16) {
            long q1 = q0 + 16 < Q ? q0 + 16 : Q;
            float t = 0.0f;
            for (long q = q0; q < q1; q++) {
                long c = q / RR, ry = (q % RR) / s.R, rx = q % s.R;
                long iy = oy + ry - s.pad, ix = ox + rx - s.pad;
                float col = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W
                                ? x[((bb * s.C + c) * s.H + iy) * s.W + ix]
                                : 0.0f;
                float p = wk[q] * col;
                t = t + p;
            }
            acc = acc + t;
        }
        y[i] = acc;
    }
}

/* ---- forward: winograd F(2x2, 3x3) --------------------------------------- */

/* U[kc][0..16) = G g G^T, conv_algos.c's wino_filter. */
__global__ void wino_filters(long KC, const float *w, float *U)
{
    REPRO_CUDA_FOR(kc, KC)
    {
        const float *g = w + kc * 9;
        float t[4][3];
        for (int j = 0; j < 3; j++) {
            float g0 = g[0 * 3 + j], g1 = g[1 * 3 + j], g2 = g[2 * 3 + j];
            t[0][j] = g0;
            t[1][j] = ((g0 + g1) + g2) * 0.5f;
            t[2][j] = ((g0 - g1) + g2) * 0.5f;
            t[3][j] = g2;
        }
        float *u = U + kc * 16;
        for (int r = 0; r < 4; r++) {
            float g0 = t[r][0], g1 = t[r][1], g2 = t[r][2];
            u[r * 4 + 0] = g0;
            u[r * 4 + 1] = ((g0 + g1) + g2) * 0.5f;
            u[r * 4 + 2] = ((g0 - g1) + g2) * 0.5f;
            u[r * 4 + 3] = g2;
        }
    }
}

/* V = B^T d B, columns first, then rows (wino_input4 per lane). */
__device__ void wino_input(const float d[4][4], float v[16])
{
    float t[4][4];
    for (int j = 0; j < 4; j++) {
        float d0 = d[0][j], d1 = d[1][j], d2 = d[2][j], d3 = d[3][j];
        t[0][j] = d0 - d2;
        t[1][j] = d1 + d2;
        t[2][j] = d2 - d1;
        t[3][j] = d1 - d3;
    }
    for (int r = 0; r < 4; r++) {
        float d0 = t[r][0], d1 = t[r][1], d2 = t[r][2], d3 = t[r][3];
        v[r * 4 + 0] = d0 - d2;
        v[r * 4 + 1] = d1 + d2;
        v[r * 4 + 2] = d2 - d1;
        v[r * 4 + 3] = d1 - d3;
    }
}

/* One thread per (b, k, tile): M = +0, then M + U*V for c ascending; then
 * A^T M A and init + that, stored where the output exists. */
__global__ void conv_winograd(repro_conv_shape s, const float *x, const float *U, const float *b,
                              float *y)
{
    long OH = s.H + 2 * s.pad - 2, OW = s.W + 2 * s.pad - 2;
    long TH = (OH + 1) / 2, TW = (OW + 1) / 2;
    REPRO_CUDA_FOR(i, (long)s.B * s.K * TH * TW)
    {
        long tx = i % TW, ty = (i / TW) % TH, k = (i / (TW * TH)) % s.K, bb = i / (TW * TH * s.K);
        float M[16];
        for (int e = 0; e < 16; e++)
            M[e] = 0.0f;
        long iy0 = 2 * ty - s.pad, ix0 = 2 * tx - s.pad;
        for (long c = 0; c < s.C; c++) {
            const float *xp = x + (bb * s.C + c) * s.H * s.W;
            float d[4][4], v[16];
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++) {
                    long iy = iy0 + r, ix = ix0 + q;
                    d[r][q] = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W ? xp[iy * s.W + ix] : 0.0f;
                }
            wino_input(d, v);
            const float *u = U + (k * s.C + c) * 16;
            for (int e = 0; e < 16; e++) {
                float p = u[e] * v[e];
                M[e] = M[e] + p;
            }
        }
        float t[2][4], o[2][2];
        for (int j = 0; j < 4; j++) {
            float m0 = M[0 * 4 + j], m1 = M[1 * 4 + j], m2 = M[2 * 4 + j], m3 = M[3 * 4 + j];
            t[0][j] = (m0 + m1) + m2;
            t[1][j] = (m1 - m2) - m3;
        }
        for (int r = 0; r < 2; r++) {
            float m0 = t[r][0], m1 = t[r][1], m2 = t[r][2], m3 = t[r][3];
            o[r][0] = (m0 + m1) + m2;
            o[r][1] = (m1 - m2) - m3;
        }
        float init = b ? b[k] : 0.0f;
        float *yp = y + (bb * s.K + k) * OH * OW;
        for (long r = 0; r < 2 && 2 * ty + r < OH; r++)
            for (long q = 0; q < 2 && 2 * tx + q < OW; q++)
                yp[(2 * ty + r) * OW + 2 * tx + q] = init + o[r][q];
    }
}

static long out_positions(const repro_conv_shape *s)
{
    long oh = repro_conv_oh(s), ow = repro_conv_ow(s);
    return oh > 0 && ow > 0 ? oh * ow : 0;
}

int repro_cuda_conv_own_forward(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                                const float *x, const float *w, const float *b, float *y,
                                void *workspace)
{
    long n = (long)s->B * s->K * out_positions(s);
    if (n == 0)
        return 0;
    if (a == REPRO_CONV_WINOGRAD && s->R == 3) {
        long KC = (long)s->K * s->C;
        long tiles = (long)s->B * s->K * ((repro_conv_oh(s) + 1) / 2) * ((repro_conv_ow(s) + 1) / 2);
        float *U = (float *)workspace;
        wino_filters<<<repro_cuda_blocks(KC), REPRO_CUDA_THREADS, 0, c->stream>>>(KC, w, U);
        launchCheck(c);
        conv_winograd<<<repro_cuda_blocks(tiles), REPRO_CUDA_THREADS, 0, c->stream>>>(*s, x, U, b, y);
    } else if (a == REPRO_CONV_IM2COL) {
        conv_im2col<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, c->stream>>>(*s, x, w, b, y);
    } else { /* direct, and what an ineligible id computes (backend.h) */
        conv_direct<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, c->stream>>>(*s, x, w, b, y);
    }
    launchCheck(c);
    return 0;
}

/* ---- the algorithm entries -------------------------------------------------- */

int repro_cuda_conv_algo_eligible(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    if (a == REPRO_CONV_DIRECT || a == REPRO_CONV_IM2COL)
        return 1;
    if (a == REPRO_CONV_WINOGRAD)
        return s->R == 3;
    int det;
    size_t ws;
    return repro_cuda_cudnn_eligible(repro_cuda(ctx), a, s, &det, &ws);
}

int repro_cuda_conv_algo_deterministic(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    if ((int)a < REPRO_CONV_NALGOS)
        return repro_cuda_conv_algo_eligible(ctx, a, s); /* ours: one order each */
    int det = 0;
    size_t ws;
    return repro_cuda_cudnn_eligible(repro_cuda(ctx), a, s, &det, &ws) && det;
}

size_t repro_cuda_conv_workspace_bytes(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    if (a == REPRO_CONV_WINOGRAD)
        return s->R == 3 && out_positions(s) ? (size_t)s->K * s->C * 16 * sizeof(float) : 0;
    if ((int)a < REPRO_CONV_NALGOS)
        return 0;
    int det;
    size_t ws = 0;
    return repro_cuda_cudnn_eligible(repro_cuda(ctx), a, s, &det, &ws) ? ws : 0;
}

void repro_cuda_conv2d_forward(void *ctx, repro_conv_algo a, const repro_conv_shape *s,
                               const float *x, const float *w, const float *b, float *y,
                               void *workspace)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    /* A cuDNN id runs cuDNN or nothing: an ineligible one is refused (an
     * error, the output untouched), never computed by our direct kernel
     * under its name, which the trace would then record as having run. */
    if ((int)a >= REPRO_CONV_CUDNN_BASE && (int)a < REPRO_CONV_ALGO_LIMIT)
        repro_cuda_cudnn_forward(c, a, s, x, w, b, y, workspace);
    else
        repro_cuda_conv_own_forward(c, repro_cuda_conv_algo_eligible(ctx, a, s) ? a : REPRO_CONV_DIRECT,
                                    s, x, w, b, y, workspace);
}

/* ---- backward data --------------------------------------------------------- */

__global__ void conv_bwd_data(repro_conv_shape s, const float *dy, const float *w, float *dx)
{
    long OH = s.H + 2 * s.pad - s.R + 1, OW = s.W + 2 * s.pad - s.R + 1;
    REPRO_CUDA_FOR(i, (long)s.B * s.C * s.H * s.W)
    {
        long ix = i % s.W, iy = (i / s.W) % s.H, c = (i / ((long)s.W * s.H)) % s.C;
        long bb = i / ((long)s.W * s.H * s.C);
        float acc = 0.0f;
        for (long k = 0; k < s.K; k++) {
            const float *dyp = dy + (bb * s.K + k) * OH * OW;
            const float *wp = w + (k * s.C + c) * s.R * s.R;
            for (long ry = 0; ry < s.R; ry++) {
                long oy = iy - ry + s.pad;
                if (oy < 0 || oy >= OH)
                    continue;
                for (long rx = 0; rx < s.R; rx++) {
                    long ox = ix - rx + s.pad;
                    if (ox < 0 || ox >= OW)
                        continue;
                    float p = wp[ry * s.R + rx] * dyp[oy * OW + ox];
                    acc = acc + p;
                }
            }
        }
        dx[i] = acc;
    }
}

static int backward_data(repro_cuda_ctx *c, const repro_conv_shape *s, const float *dy,
                         const float *w, float *dx)
{
    long n = (long)s->B * s->C * s->H * s->W;
    if (n == 0)
        return 0;
    conv_bwd_data<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, c->stream>>>(*s, dy, w, dx);
    launchCheck(c);
    return 0;
}

void repro_cuda_conv2d_backward_data(void *ctx, const repro_conv_shape *s, const float *dy,
                                     const float *w, float *dx)
{
    backward_data(repro_cuda(ctx), s, dy, w, dx);
}

/* ---- backward filter --------------------------------------------------------- */

/* The sum for dw[k][c][ry][rx] over samples [b0, b1), from start: per output
 * column ox, col = +0 + dy*x over (b, oy) ascending (a padded x adds dy*+0),
 * then start + col in ascending ox. */
__device__ float filter_sum(const repro_conv_shape &s, long OH, long OW, const float *dy,
                           const float *x, long k, long c, long ry, long rx, long b0, long b1,
                           float start)
{
    float acc = start;
    for (long ox = 0; ox < OW; ox++) {
        float col = 0.0f;
        long ix = ox + rx - s.pad;
        for (long b = b0; b < b1; b++)
            for (long oy = 0; oy < OH; oy++) {
                long iy = oy + ry - s.pad;
                float xv = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W
                               ? x[((b * s.C + c) * s.H + iy) * s.W + ix]
                               : 0.0f;
                float p = dy[((b * s.K + k) * OH + oy) * OW + ox] * xv;
                col = col + p;
            }
        acc = acc + col;
    }
    return acc;
}

/* db[k] over samples [b0, b1): per column over (b, oy), then columns. */
__device__ float bias_sum(const repro_conv_shape &s, long OH, long OW, const float *dy, long k,
                          long b0, long b1, float start)
{
    float acc = start;
    for (long ox = 0; ox < OW; ox++) {
        float col = 0.0f;
        for (long b = b0; b < b1; b++)
            for (long oy = 0; oy < OH; oy++)
                col = col + dy[((b * s.K + k) * OH + oy) * OW + ox];
        acc = acc + col;
    }
    return acc;
}

/* One thread per dw element, plus one per db element after them. */
__global__ void conv_bwd_filter(repro_conv_shape s, const float *dy, const float *x, float *dw,
                                float *db, int accumulate)
{
    long OH = s.H + 2 * s.pad - s.R + 1, OW = s.W + 2 * s.pad - s.R + 1;
    long nw = (long)s.K * s.C * s.R * s.R;
    REPRO_CUDA_FOR(i, nw + (db ? s.K : 0))
    {
        if (i >= nw) {
            long k = i - nw;
            db[k] = bias_sum(s, OH, OW, dy, k, 0, s.B, accumulate ? db[k] : 0.0f);
            continue;
        }
        long rx = i % s.R, ry = (i / s.R) % s.R, c = (i / ((long)s.R * s.R)) % s.C;
        long k = i / ((long)s.R * s.R * s.C);
        dw[i] = filter_sum(s, OH, OW, dy, x, k, c, ry, rx, 0, s.B, accumulate ? dw[i] : 0.0f);
    }
}

/* ATOMIC: one partial per (sample, element), added in scheduler order. */
__global__ void conv_bwd_filter_atomic(repro_conv_shape s, const float *dy, const float *x,
                                       float *dw, float *db)
{
    long OH = s.H + 2 * s.pad - s.R + 1, OW = s.W + 2 * s.pad - s.R + 1;
    long nw = (long)s.K * s.C * s.R * s.R, per = nw + (db ? s.K : 0);
    REPRO_CUDA_FOR(t, (long)s.B * per)
    {
        long b = t / per, i = t % per;
        if (i >= nw) {
            long k = i - nw;
            atomicAdd(&db[k], bias_sum(s, OH, OW, dy, k, b, b + 1, 0.0f));
            continue;
        }
        long rx = i % s.R, ry = (i / s.R) % s.R, c = (i / ((long)s.R * s.R)) % s.C;
        long k = i / ((long)s.R * s.R * s.C);
        atomicAdd(&dw[i], filter_sum(s, OH, OW, dy, x, k, c, ry, rx, b, b + 1, 0.0f));
    }
}

static int backward_filter(repro_cuda_ctx *c, int variant, const repro_conv_shape *s,
                           const float *dy, const float *x, float *dw, float *db, int accumulate)
{
    long nw = (long)s->K * s->C * s->R * s->R, n = nw + (db ? s->K : 0);
    if (out_positions(s) == 0) { /* no terms: the sums are their start values */
        if (!accumulate) {
            cudaCheck(c, cudaMemsetAsync(dw, 0, (size_t)nw * sizeof(float), c->stream));
            if (db)
                cudaCheck(c, cudaMemsetAsync(db, 0, (size_t)s->K * sizeof(float), c->stream));
        }
        return 0;
    }
    if (variant == REPRO_VARIANT_ORDERED) {
        conv_bwd_filter<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, c->stream>>>(*s, dy, x, dw,
                                                                                   db, accumulate);
        launchCheck(c);
        return 0;
    }
    if (!accumulate) {
        cudaCheck(c, cudaMemsetAsync(dw, 0, (size_t)nw * sizeof(float), c->stream));
        if (db)
            cudaCheck(c, cudaMemsetAsync(db, 0, (size_t)s->K * sizeof(float), c->stream));
    }
    if (s->B <= 0)
        return 0;
    conv_bwd_filter_atomic<<<repro_cuda_blocks((long)s->B * n), REPRO_CUDA_THREADS, 0, c->stream>>>(
        *s, dy, x, dw, db);
    launchCheck(c);
    return 0;
}

void repro_cuda_conv2d_backward_filter(void *ctx, int variant, const repro_conv_shape *s,
                                       const float *dy, const float *x, float *dw, float *db,
                                       int accumulate)
{
    backward_filter(repro_cuda(ctx), variant, s, dy, x, dw, db, accumulate);
}
