/* 2-D convolution (stride 1, zero padding), direct: forward, backward data,
 * backward filter/bias, each in the exact per-element order ops.h states.
 * Determinism argument: every output element is written by exactly one chunk
 * (forward: a (b, k) plane; backward data: a (b, c) plane; backward filter:
 * a (k, c, ry) filter row, plus db[k] in the (k, 0, 0) chunk), chunk
 * boundaries depend only on the shape, and the loops that vectorize run
 * across output positions (ox / ix), never across the terms of one sum.
 * Padding: in forward and backward filter the padded positions are real
 * terms whose input value is +0 (w*0 resp. dy*0 is added, exactly as "zero
 * padding" reads, so the sign of a zero result or a non-finite weight behaves
 * like the padded tensor would); in backward data out-of-range terms are
 * skipped, as ops.h says. Sums without an "accumulate" start value start
 * from +0 (or the bias), like repro_gemm. */
#include "ops.h"

#include <string.h>

typedef float v4f __attribute__((vector_size(16)));

static inline v4f v4_load(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v4_store(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

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

void repro_conv2d_forward(repro_pool *pool, const repro_conv_shape *s, const float *x,
                          const float *w, const float *b, float *y)
{
    if (repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0)
        return;
    conv_ctx cx = {.s = s, .x = x, .w = w, .b = b, .y = y};
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

void repro_conv2d_backward_data(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                const float *w, float *dx)
{
    conv_ctx cx = {.s = s, .dy = dy, .w = w, .dx = dx};
    repro_pool_run(pool, (long)s->B * s->C, bwd_data_chunk, &cx);
}

/* ---- backward filter: chunk = (k, c, ry), owning dw[k][c][ry][0..R) ------- */
/* Column accumulators: col[rx][ox] is the sum over (b, oy) ascending for one
 * output column; output columns are processed in segments that fit this
 * stack buffer, and the column sums are folded into dw in ascending ox
 * across segments, so segmenting does not change the order. */
enum { COLBUF = 4096, RX_GROUP = 32 };

static void bwd_bias_k(const conv_ctx *cx, long k)
{
    const repro_conv_shape *s = cx->s;
    long K = s->K, OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    float col[COLBUF];
    float acc = cx->accumulate ? cx->db[k] : 0.0f;
    for (long s0 = 0; s0 < OW; s0 += COLBUF) {
        long n = lmin(COLBUF, OW - s0);
        for (long i = 0; i < n; i++)
            col[i] = 0.0f;
        for (long b = 0; b < s->B; b++)
            for (long oy = 0; oy < OH; oy++) {
                const float *dyrow = cx->dy + ((b * K + k) * OH + oy) * OW + s0;
                for (long i = 0; i < n; i++)
                    col[i] = col[i] + dyrow[i];
            }
        for (long i = 0; i < n; i++)
            acc = acc + col[i];
    }
    cx->db[k] = acc;
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
        bwd_bias_k(cx, k);
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
    repro_pool_run(pool, (long)s->K * s->C * s->R, bwd_filter_chunk, &cx);
}
