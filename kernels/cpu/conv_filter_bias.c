/* The bias gradient of a 2-D convolution (conv_filter_bias.h): db[k] as
 * ops.h orders it, columns summed over (b, oy) ascending from +0, then
 * folded in ascending ox. Both ways to the filter gradient use it, the
 * plain loops (conv_filter.c) and the vectorized sums (conv_filter_fast.c),
 * so both give the same bits for db; it calls neither. */
#include "conv_filter_bias.h"

#include "vec4.h"

static inline long lmin(long a, long b) { return a < b ? a : b; }

typedef repro_conv_filter_ctx conv_ctx;

/* Column sums of rows wider than REG_COLS go through this stack buffer in
 * segments; folded in ascending ox across segments, so segmenting does not
 * change the order. */
enum { COLBUF = 4096 };

/* Rows of at most REG_COLS (the models' convolutions): the column
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
