/* The filter and bias gradients of a 2-D convolution (stride 1, zero
 * padding), in the exact per-element order ops.h states; forward and
 * backward data are conv2d.c's. This file: the public entry points, which
 * take the vectorized sums (conv_filter_fast.c) where they apply, and the
 * plain loops they fall back to; the bias sums both use are
 * conv_filter_bias.c's. Determinism
 * argument for the plain loops: a (k, c, ry) row of dw is written by one
 * chunk, its db by the (k, 0, 0) chunk, chunk boundaries depend only on the
 * shape, and each sum adds its terms one by one in the stated order.
 * Padding: the padded positions are real terms whose input value is +0
 * (dy*0 is added, exactly as "zero padding" reads). Sums without an
 * "accumulate" start value start from +0. */
#include "conv_filter.h"
#include "conv_filter_bias.h"

#include "vec4.h"

/* y[i] = y[i] + a[i] * x[i]. */
static void vmuladd(float *y, const float *a, const float *x, long n)
{
    long i = 0;
    for (; i + 4 <= n; i += 4)
        v4_store(y + i, v4_load(y + i) + v4_load(a + i) * v4_load(x + i));
    for (; i < n; i++)
        y[i] = y[i] + a[i] * x[i];
}

/* y[i] = y[i] + a[i] * 0: the term of a zero-padded input position. */
static void vmulzero(float *y, const float *a, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = y[i] + a[i] * 0.0f;
}

static inline long lmax(long a, long b) { return a > b ? a : b; }
static inline long lmin(long a, long b) { return a < b ? a : b; }

typedef repro_conv_filter_ctx conv_ctx;

/* ---- backward filter: chunk = (k, c, ry), owning dw[k][c][ry][0..R) ------- */
/* Column accumulators: col[rx][ox] is the sum over (b, oy) ascending for one
 * output column; output columns are processed in segments that fit this
 * stack buffer, and the column sums are folded into dw in ascending ox
 * across segments, so segmenting does not change the order. */
enum { COLBUF = 4096, RX_GROUP = 32 };

static void bwd_filter_chunk(void *vctx, long chunk)
{
    const conv_ctx *cx = vctx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long ry = chunk % R, c = (chunk / R) % C, k = chunk / (R * C);
    float *dwrow = cx->dw + ((k * C + c) * R + ry) * R;
    if (cx->db && c == 0 && ry == 0)
        repro_conv_bias_k(cx, k);
    for (long rx = 0; rx < R; rx++)
        if (!cx->accumulate)
            dwrow[rx] = 0.0f;
    float col[COLBUF];
    for (long rx0 = 0; rx0 < R; rx0 += RX_GROUP) {
        long nrx = lmin(RX_GROUP, R - rx0);
        long seg = COLBUF / nrx;
        for (long s0 = 0; s0 < OW; s0 += seg) {
            long n = lmin(seg, OW - s0);
            for (long i = 0; i < nrx * n; i++)
                col[i] = 0.0f;
            for (long b = 0; b < s->B; b++)
                for (long oy = 0; oy < OH; oy++) {
                    const float *dyrow = cx->dy + ((b * K + k) * OH + oy) * OW + s0;
                    long iy = oy + ry - pad;
                    for (long j = 0; j < nrx; j++) {
                        float *cj = col + j * n;
                        long rx = rx0 + j;
                        if (iy < 0 || iy >= H) {
                            vmulzero(cj, dyrow, n);
                            continue;
                        }
                        /* segment positions whose input column is in range */
                        long lo = lmin(n, lmax(0, pad - rx - s0));
                        long hi = lmax(lo, lmin(n, W + pad - rx - s0));
                        const float *xrow = cx->x + ((b * C + c) * H + iy) * W;
                        vmulzero(cj, dyrow, lo);
                        vmuladd(cj + lo, dyrow + lo, xrow + s0 + lo + rx - pad, hi - lo);
                        vmulzero(cj + hi, dyrow + hi, n - hi);
                    }
                }
            for (long j = 0; j < nrx; j++) {
                float acc = dwrow[rx0 + j];
                for (long i = 0; i < n; i++)
                    acc = acc + col[j * n + i];
                dwrow[rx0 + j] = acc;
            }
        }
    }
}

void repro_conv2d_backward_filter(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                  const float *x, float *dw, float *db, int accumulate)
{
    conv_ctx cx = {.s = s, .dy = dy, .x = x, .dw = dw, .db = db, .accumulate = accumulate};
    if (repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0) {
        /* no terms: the sums are their start values */
        long n = (long)s->K * s->C * s->R * s->R;
        for (long i = 0; i < n && !accumulate; i++)
            dw[i] = 0.0f;
        for (long k = 0; k < s->K && db && !accumulate; k++)
            db[k] = 0.0f;
        return;
    }
    if (repro_conv_filter_fast(pool, &cx, 1, 0))
        repro_pool_run(pool, (long)s->K * s->C * s->R, bwd_filter_chunk, &cx);
}

int repro_conv2d_backward_filter_sharded(repro_pool *pool, const repro_conv_shape *s, int nq,
                                         const float *dy, const float *x, float *dw, float *db,
                                         int accumulate)
{
    if (nq < 1 || repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0)
        return -1;
    conv_ctx cx = {.s = s, .dy = dy, .x = x, .dw = dw, .db = db, .accumulate = accumulate};
    return repro_conv_filter_fast(pool, &cx, nq, 1);
}
