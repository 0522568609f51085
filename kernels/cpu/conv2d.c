/* 2-D convolution (stride 1, zero padding), direct: forward and backward
 * data, each in the exact per-element order ops.h states (the filter and
 * bias gradients: conv_filter.c). Determinism argument: every output element
 * is written by exactly one chunk (a sample, on the register tiles of
 * conv_tiles.c, or planes in the plain loops), chunk boundaries depend only
 * on the shape, and vector lanes run across output positions, never across
 * the terms of one sum; the tiles keep each sum's order. The plain loops
 * stay as the fallback (no scratch memory, non-finite weights in backward
 * data). Padding: in forward the padded positions are real terms whose
 * input value is +0 (w*0 is added, exactly as "zero padding" reads, so the
 * sign of a zero result or a non-finite weight behaves like the padded
 * tensor would); in backward data out-of-range terms are skipped, as ops.h
 * says. Sums without an "accumulate" start value start from +0 (or the
 * bias), like repro_gemm. */
#include "ops.h"

#include <string.h>

#include "conv_algos.h"
#include "conv_tiles.h"
#include "vec4.h"


/* y[i] = y[i] + a * x[i] (product rounded, then the add), i ascending;
 * every i is a different output element. */
static void axpy(float *y, const float *x, float a, long n)
{
    long i = 0;
    v4f av = {a, a, a, a};
    for (; i + 8 <= n; i += 8) {
        v4_store(y + i, v4_load(y + i) + av * v4_load(x + i));
        v4_store(y + i + 4, v4_load(y + i + 4) + av * v4_load(x + i + 4));
    }
    for (; i + 4 <= n; i += 4)
        v4_store(y + i, v4_load(y + i) + av * v4_load(x + i));
    for (; i < n; i++)
        y[i] = y[i] + a * x[i];
}

/* y[i] = y[i] + c. */
static void addc(float *y, float c, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = y[i] + c;
}

static inline long lmax(long a, long b) { return a > b ? a : b; }
static inline long lmin(long a, long b) { return a < b ? a : b; }

typedef struct {
    const repro_conv_shape *s;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db;
    int accumulate;
} conv_ctx;

/* ---- forward: chunk = (b, k) output plane -------------------------------- */
static void fwd_chunk(void *vctx, long chunk)
{
    const conv_ctx *cx = vctx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long b = chunk / s->K, k = chunk % s->K;
    float *yp = cx->y + chunk * OH * OW; /* chunk == b*K + k */
    float init = cx->b ? cx->b[k] : 0.0f;
    for (long i = 0; i < OH * OW; i++)
        yp[i] = init;
    /* Loops c, ry, rx outside and (oy, ox) inside: for each output element
     * the terms still arrive in (c, ry, rx) lexicographic order. */
    for (long c = 0; c < C; c++) {
        const float *xp = cx->x + (b * C + c) * H * W;
        const float *wp = cx->w + (k * C + c) * R * R;
        for (long ry = 0; ry < R; ry++)
            for (long rx = 0; rx < R; rx++) {
                float wv = wp[ry * R + rx];
                float zterm = wv * 0.0f; /* w times a padded zero */
                /* ox whose input column ox + rx - pad lies in [0, W) */
                long lo = lmin(OW, lmax(0, pad - rx));
                long hi = lmax(lo, lmin(OW, W + pad - rx));
                for (long oy = 0; oy < OH; oy++) {
                    long iy = oy + ry - pad;
                    float *yrow = yp + oy * OW;
                    if (iy < 0 || iy >= H) {
                        addc(yrow, zterm, OW);
                        continue;
                    }
                    addc(yrow, zterm, lo);
                    axpy(yrow + lo, xp + iy * W + lo + rx - pad, wv, hi - lo);
                    addc(yrow + hi, zterm, OW - hi);
                }
            }
    }
}

/* Sample b's planes by the plain loops (conv_tiles.h's fallback). */
static void fwd_sample(void *vctx, long b)
{
    const conv_ctx *cx = vctx;
    for (long k = 0; k < cx->s->K; k++)
        fwd_chunk(vctx, b * cx->s->K + k);
}

/* The register tiles (conv_tiles.c: same order, same bits, one chunk per
 * sample), or the plain planes when their tables do not fit in memory. */
void repro_conv2d_forward(repro_pool *pool, const repro_conv_shape *s, const float *x,
                          const float *w, const float *b, float *y)
{
    if (repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0)
        return;
    conv_ctx cx = {.s = s, .x = x, .w = w, .b = b, .y = y};
    if (repro_conv_forward_tiled(pool, s, x, w, b, y, fwd_sample, &cx))
        repro_pool_run(pool, (long)s->B * s->K, fwd_chunk, &cx);
}

/* ---- backward data: chunk = (b, c) input-gradient plane ------------------ */
static void bwd_data_chunk(void *vctx, long chunk)
{
    const conv_ctx *cx = vctx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long b = chunk / C, c = chunk % C;
    float *dxp = cx->dx + chunk * H * W; /* chunk == b*C + c */
    for (long i = 0; i < H * W; i++)
        dxp[i] = 0.0f;
    for (long k = 0; k < K; k++) {
        const float *dyp = cx->dy + (b * K + k) * OH * OW;
        const float *wp = cx->w + (k * C + c) * R * R;
        for (long ry = 0; ry < R; ry++)
            for (long rx = 0; rx < R; rx++) {
                float wv = wp[ry * R + rx];
                /* ix whose dy column ix - rx + pad lies in [0, OW) */
                long lo = lmin(W, lmax(0, rx - pad));
                long hi = lmax(lo, lmin(W, OW + rx - pad));
                long iy0 = lmax(0, ry - pad), iy1 = lmin(H, OH + ry - pad);
                for (long iy = iy0; iy < iy1; iy++)
                    axpy(dxp + iy * W + lo, dyp + (iy - ry + pad) * OW + lo - rx + pad, wv,
                         hi - lo);
            }
    }
}

/* Sample b's channels by the plain loops (conv_tiles.h's fallback). */
static void bwd_data_sample(void *vctx, long b)
{
    const conv_ctx *cx = vctx;
    for (long c = 0; c < cx->s->C; c++)
        bwd_data_chunk(vctx, b * cx->s->C + c);
}

static int all_finite(const float *a, long n)
{
    for (long i = 0; i < n; i++)
        if (!(a[i] - a[i] == 0.0f)) /* inf - inf and NaN - NaN are NaN */
            return 0;
    return 1;
}

/* The register tiles when every weight is finite (conv_tiles.h: a skipped
 * term becomes w * 0, the same bits only then), else the plain loops. */
void repro_conv2d_backward_data(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                const float *w, float *dx)
{
    conv_ctx cx = {.s = s, .dy = dy, .w = w, .dx = dx};
    long nw = (long)s->K * s->C * s->R * s->R;
    if (repro_conv_oh(s) > 0 && repro_conv_ow(s) > 0 && all_finite(w, nw) &&
        !repro_conv_backward_data_tiled(pool, s, dy, w, dx, bwd_data_sample, &cx))
        return;
    repro_pool_run(pool, (long)s->B * s->C, bwd_data_chunk, &cx);
}
