/* The filter and bias gradients of a 2-D convolution (stride 1, zero
 * padding), in the exact per-element order ops.h states; forward and
 * backward data are conv2d.c's. This file: the public entry points, which
 * take the vectorized sums (conv_filter_fast.c) where they apply, the plain
 * loops they fall back to, and the bias sums both use. Determinism
 * argument for the plain loops: a (k, c, ry) row of dw is written by one
 * chunk, its db by the (k, 0, 0) chunk, chunk boundaries depend only on the
 * shape, and each sum adds its terms one by one in the stated order.
 * Padding: the padded positions are real terms whose input value is +0
 * (dy*0 is added, exactly as "zero padding" reads). Sums without an
 * "accumulate" start value start from +0. */
#include "conv_filter.h"

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

/* Rows of at most REG_COLS (the models' convolutions): bwd_bias_k's column
 * sums kept in registers across the whole (b, oy) loop, eight 4-float
 * vectors and up to three single floats, instead of stored and reloaded
 * every row (a store-to-load wait per row; 4% of a CNN step). The same
 * adds in the same order: col[ox] = +0 + the (b, oy) terms ascending. */
enum { REG_COLS = 32 };

#define BIAS_VEC(j) \
    if (nv > j)     \
        a##j = a##j + v4_load(row + 4 * j);

static void bias_cols_in_registers(const conv_ctx *cx, const float *dy, long k, float *col)
{
    const repro_conv_shape *s = cx->s;
    long K = s->K, OH = repro_conv_oh(s), OW = repro_conv_ow(s), nv = OW / 4;
    v4f a0 = v4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f;
    for (long b = 0; b < s->B; b++)
        for (long oy = 0; oy < OH; oy++) {
            const float *row = dy + ((b * K + k) * OH + oy) * OW;
            BIAS_VEC(0) BIAS_VEC(1) BIAS_VEC(2) BIAS_VEC(3)
            BIAS_VEC(4) BIAS_VEC(5) BIAS_VEC(6) BIAS_VEC(7)
            const float *tail = row + 4 * nv;
            long nt = OW - 4 * nv;
            if (nt > 0)
                t0 = t0 + tail[0];
            if (nt > 1)
                t1 = t1 + tail[1];
            if (nt > 2)
                t2 = t2 + tail[2];
        }
    v4f v[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    for (long j = 0; j < nv; j++)
        v4_store(col + 4 * j, v[j]);
    float t[3] = {t0, t1, t2};
    for (long i = 4 * nv; i < OW; i++)
        col[i] = t[i - 4 * nv];
}

float repro_conv_bias_sum(const conv_ctx *cx, const float *dy, long k, float acc)
{
    const repro_conv_shape *s = cx->s;
    long K = s->K, OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    float col[COLBUF];
    if (OW <= REG_COLS) {
        bias_cols_in_registers(cx, dy, k, col);
        for (long i = 0; i < OW; i++)
            acc = acc + col[i];
        return acc;
    }
    for (long s0 = 0; s0 < OW; s0 += COLBUF) {
        long n = lmin(COLBUF, OW - s0);
        for (long i = 0; i < n; i++)
            col[i] = 0.0f;
        for (long b = 0; b < s->B; b++)
            for (long oy = 0; oy < OH; oy++) {
                const float *dyrow = dy + ((b * K + k) * OH + oy) * OW + s0;
                long i = 0;
                for (; i + 4 <= n; i += 4) /* four columns' sums at a time */
                    v4_store(col + i, v4_load(col + i) + v4_load(dyrow + i));
                for (; i < n; i++)
                    col[i] = col[i] + dyrow[i];
            }
        for (long i = 0; i < n; i++)
            acc = acc + col[i];
    }
    return acc;
}

void repro_conv_bias_k(const conv_ctx *cx, long k)
{
    cx->db[k] = repro_conv_bias_sum(cx, cx->dy, k, cx->accumulate ? cx->db[k] : 0.0f);
}

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
