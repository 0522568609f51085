/* Direct convolution on register tiles (conv_tiles.h): the forward and the
 * backward data pass as "each output = start value + its terms in order",
 * the terms read from a zero-padded copy of one sample's input.
 *
 * Two layouts of the same sums. By rows: a tile is 2 output rows x LANES
 * columns, read from one padded copy of the input; a row narrower than a
 * whole number of vectors leaves lanes idle (11 columns in 16 lanes: 31%).
 * Flat: a tile is 2 x LANES consecutive positions of the output plane
 * read as one row of out_h * out_w, so only the plane's last tile has idle
 * lanes. A term (channel, ry, rx) at flat position p = oy * out_w + ox reads
 * input (oy + row shift, ox + column shift); in a copy of the input shifted
 * by that column shift and stored with rows of out_w, that element sits at
 * p + row shift * out_w: one offset for every lane, so the same tile kernel
 * runs on R such copies per channel. Where every column shift keeps a read
 * in its row or carries it into the next row's zero margin (backward data
 * without padding), one padded copy with rows of out_w serves every rx
 * (one_copy_flat). The layout with fewer tiles is used.
 *
 * Determinism argument: an output element's terms are added one by one in
 * the order of the offset table, which lists them in the order ops.h
 * states ((c, ry, rx) for the forward, (k, ry, rx) for backward data), to a
 * start value of bias or +0; the vector lanes of a tile are different
 * output positions, its accumulators different (channel, row or half)
 * pairs, and a sample's outputs are written by the one chunk that owns the
 * sample. Either layout reads each term's input value (or the copy's +0)
 * exactly, so both give the same bits. The padded copy turns a padded
 * position into a term w * 0: the forward's contract (a padded input is a
 * +0 input); for backward data, whose contract skips such terms, adding
 * w * 0 to a sum that started at +0 is the same bits as skipping it when w
 * is finite (the caller checks). */
#include "conv_tiles.h"

#include <string.h>

#include "scratch.h"
#include "simd.h"

enum { TILE_G_MAX = 8, TILE_ROWS = 2 };

static inline long lmin(long a, long b) { return a < b ? a : b; }
static inline long lmax(long a, long b) { return a > b ? a : b; }
static inline long round_up(long a, long m) { return (a + m - 1) / m * m; }

/* One direction's geometry. `in` has in_c planes of in_h x in_w per sample;
 * its padded copy puts element (row, col) at (row + margin, col + margin)
 * of planes ph x ws, zero elsewhere. Term (ch, ry, rx) reads the padded
 * copy at (out row + row_shift(ry), out column + col_shift(rx)), where
 * shift(r) = shift0 + shift_sign * r. Flat, each channel has R shifted
 * planes of ph x ws = out_w (plane (ch * R + rx) shifted by col_shift(rx)). */
typedef struct {
    const float *in;
    float *out;
    long in_c, in_h, in_w, out_c, out_h, out_w;
    long margin, ph, ws;
    long R, shift0, shift_sign;
    int flat;
    long copies; /* flat: R column-shifted copies, or 1 (one_copy_flat) */
    long nt, groups;
    long G;      /* channels a tile: the path's conv_g */
    float *wt;   /* [groups][nt][G]: this call's scratch */
    float *init; /* [groups * G] */
    long *t_off; /* [nt]: a term's offset in the padded copy */
    const repro_simd *simd;
    repro_conv_sample_fn fallback; /* sample b without scratch memory */
    void *fallback_ctx;
} tiles_ctx;

/* The padded copy of sample b (rows and columns past the copy clipped:
 * no tile reads them). */
static void pad_sample(const tiles_ctx *t, long b, float *buf)
{
    long plane = t->ph * t->ws;
    memset(buf, 0, (size_t)(plane * t->in_c) * sizeof *buf);
    long rows = lmin(t->in_h, t->ph - t->margin), cols = lmin(t->in_w, t->ws - t->margin);
    for (long c = 0; c < t->in_c; c++)
        for (long r = 0; r < rows; r++)
            memcpy(buf + c * plane + (r + t->margin) * t->ws + t->margin,
                   t->in + ((b * t->in_c + c) * t->in_h + r) * t->in_w,
                   (size_t)cols * sizeof *buf);
}

/* Sample b's R column-shifted copies per channel (the flat layout): plane
 * (ch * R + rx), element (row, col) = padded input (row, col +
 * col_shift(rx)), zero past the input. */
static void shift_sample(const tiles_ctx *t, long b, float *buf)
{
    long plane = t->ph * t->ws;
    memset(buf, 0, (size_t)(plane * t->in_c * t->R) * sizeof *buf);
    for (long ch = 0; ch < t->in_c; ch++)
        for (long rx = 0; rx < t->R; rx++) {
            float *dst = buf + (ch * t->R + rx) * plane;
            long cs = t->shift0 + t->shift_sign * rx - t->margin; /* input col of col 0 */
            long c0 = lmax(0, -cs), c1 = lmin(t->ws, t->in_w - cs);
            long r1 = lmin(t->in_h, t->ph - t->margin);
            for (long r = 0; r < r1 && c1 > c0; r++)
                memcpy(dst + (r + t->margin) * t->ws + c0,
                       t->in + ((b * t->in_c + ch) * t->in_h + r) * t->in_w + c0 + cs,
                       (size_t)(c1 - c0) * sizeof *buf);
        }
}

/* Flat: positions p0 .. p0 + 2L - 1 of channel group g's planes; a tile
 * past the plane's end or its channels goes through `tile`. */
static void run_flat_tile(const tiles_ctx *t, const float *buf, long b, long g, long p0)
{
    long L = t->simd->lanes, plane = t->out_h * t->out_w;
    float *out = t->out + (b * t->out_c + g * t->G) * plane + p0;
    const float *wt = t->wt + g * t->nt * t->G, *init = t->init + g * t->G;
    long channels = lmin(t->G, t->out_c - g * t->G), n = lmin(TILE_ROWS * L, plane - p0);
    if (channels == t->G && n == TILE_ROWS * L) {
        t->simd->conv_tile(t->nt, wt, t->t_off, buf + p0, L, init, out, plane, L);
        return;
    }
    float tile[TILE_G_MAX * TILE_ROWS * 16]; /* 16: the widest path's lanes */
    t->simd->conv_tile(t->nt, wt, t->t_off, buf + p0, L, init, tile, TILE_ROWS * L, L);
    for (long gi = 0; gi < channels; gi++)
        memcpy(out + gi * plane, tile + gi * TILE_ROWS * L, (size_t)n * sizeof *tile);
}

/* A tile that lies wholly inside the output is stored in place; an edge
 * tile goes through `tile` and only its existing channels, rows and
 * columns are copied out. */
static void run_tile(const tiles_ctx *t, const float *buf, long b, long g, long r0, long c0)
{
    long L = t->simd->lanes, plane = t->out_h * t->out_w;
    float *out = t->out + (b * t->out_c + g * t->G) * plane + r0 * t->out_w + c0;
    const float *wt = t->wt + g * t->nt * t->G, *init = t->init + g * t->G;
    const float *in = buf + r0 * t->ws + c0;
    long channels = lmin(t->G, t->out_c - g * t->G), rows = lmin(TILE_ROWS, t->out_h - r0);
    long cols = lmin(L, t->out_w - c0);
    if (channels == t->G && rows == TILE_ROWS && cols == L) {
        t->simd->conv_tile(t->nt, wt, t->t_off, in, t->ws, init, out, plane, t->out_w);
        return;
    }
    float tile[TILE_G_MAX * TILE_ROWS * 16]; /* 16: the widest path's lanes */
    t->simd->conv_tile(t->nt, wt, t->t_off, in, t->ws, init, tile, TILE_ROWS * L, L);
    for (long gi = 0; gi < channels; gi++)
        for (long ri = 0; ri < rows; ri++)
            for (long l = 0; l < cols; l++)
                out[gi * plane + ri * t->out_w + l] = tile[(gi * TILE_ROWS + ri) * L + l];
}

static void tiles_chunk(void *vctx, long b)
{
    const tiles_ctx *t = vctx;
    long copies = t->flat ? t->copies : 1;
    float *buf = repro_scratch(REPRO_SCRATCH_CONV, (size_t)(t->ph * t->ws * t->in_c * copies));
    if (!buf) {
        t->fallback(t->fallback_ctx, b);
        return;
    }
    if (t->flat) {
        if (copies == 1)
            pad_sample(t, b, buf);
        else
            shift_sample(t, b, buf);
        for (long g = 0; g < t->groups; g++)
            for (long p0 = 0; p0 < t->out_h * t->out_w; p0 += TILE_ROWS * t->simd->lanes)
                run_flat_tile(t, buf, b, g, p0);
        return;
    }
    pad_sample(t, b, buf);
    for (long g = 0; g < t->groups; g++)
        for (long r0 = 0; r0 < t->out_h; r0 += TILE_ROWS)
            for (long c0 = 0; c0 < t->out_w; c0 += t->simd->lanes)
                run_tile(t, buf, b, g, r0, c0);
}

/* Whether flat tiles can read one padded copy with rows of out_w instead
 * of R shifted ones: a term's column shift never takes a read out of its
 * row except into the copy's zero margin (past the row's end into the
 * next row's left margin), and the input's columns fit beside that
 * margin. Backward data without padding (the CNN's: 11 columns of dy, a
 * 2-column margin, rows of 13): there the copy is the rows layout's own,
 * only narrower. */
static int one_copy_flat(const tiles_ctx *t)
{
    long cs_a = t->shift0, cs_b = t->shift0 + t->shift_sign * (t->R - 1);
    long cs_lo = lmin(cs_a, cs_b), cs_hi = lmax(cs_a, cs_b);
    return cs_lo >= 0 && cs_hi <= t->margin && t->margin + t->in_w <= t->out_w;
}

/* Picks the layout and sizes the copies' planes for outputs up to whole
 * tiles and the furthest term (max_shift: the largest row and column shift
 * of a term), and lays out the shared tables in this call's scratch. NULL:
 * no memory (a pool thread that finds none for its copy runs the
 * fallback). Flat needs fewer tiles wherever a row leaves lanes idle, but
 * R copies of the input instead of one (unless one_copy_flat): it is used
 * where it saves at least 5% of the tiles and its copies stay within an
 * L1 data cache (FLAT_MAX_FLOATS). Measured on the CNN's shapes (AVX-512,
 * 64 samples): forward 28x28 -> 8 channels 160 -> 115 us, 13x13x8 -> 16
 * channels 390 -> 272 us; its backward data (16 channels) 450 us either
 * way with three copies of 47 KiB a sample; with one, 385 -> 305 us. */
enum { FLAT_MAX_FLOATS = 8192 };

static float *plan(tiles_ctx *t, long max_shift)
{
    long L = t->simd->lanes, positions = t->out_h * t->out_w;
    long row_tiles = (t->out_h + TILE_ROWS - 1) / TILE_ROWS * ((t->out_w + L - 1) / L);
    long flat_tiles = (positions + TILE_ROWS * L - 1) / (TILE_ROWS * L);
    /* rows of out_w, enough for the last tile's furthest term */
    long flat_ph = lmax((round_up(positions, TILE_ROWS * L) + t->out_w - 1) / t->out_w + max_shift,
                        t->margin + 1);
    t->copies = one_copy_flat(t) ? 1 : t->R;
    t->flat = flat_tiles * 20 < row_tiles * 19 &&
              flat_ph * t->out_w * t->copies * t->in_c <= FLAT_MAX_FLOATS;
    if (t->flat) {
        t->ws = t->out_w;
        t->ph = flat_ph;
    } else {
        t->ph = lmax(round_up(t->out_h, TILE_ROWS) + max_shift, t->margin + 1);
        t->ws = lmax(round_up(t->out_w, L) + max_shift, t->margin + 1);
    }
    t->G = t->simd->conv_g;
    if (t->G < 1 || t->G > TILE_G_MAX) /* the edge tiles' buffers hold TILE_G_MAX */
        return NULL;
    t->groups = (t->out_c + t->G - 1) / t->G;
    size_t nw = (size_t)(t->groups * t->nt * t->G), ni = (size_t)(t->groups * t->G);
    size_t no = (size_t)t->nt * sizeof(long) / sizeof(float) + 1;
    float *tab = repro_scratch(REPRO_SCRATCH_CALL, nw + ni + no);
    if (!tab)
        return NULL;
    t->t_off = (long *)tab; /* scratch is 64-byte aligned */
    t->wt = tab + no;
    t->init = tab + no + nw;
    return tab;
}

/* Where term (ch, ry, rx) reads, from the tile's first position. */
static long term_offset(const tiles_ctx *t, long ch, long ry, long rx)
{
    long plane = t->ph * t->ws, rs = t->shift0 + t->shift_sign * ry;
    if (t->flat && t->copies > 1)
        return (ch * t->R + rx) * plane + rs * t->ws;
    return ch * plane + rs * t->ws + t->shift0 + t->shift_sign * rx;
}

int repro_conv_forward_tiled(repro_pool *pool, const repro_conv_shape *s, const float *x,
                             const float *w, const float *bias, float *y,
                             repro_conv_sample_fn fallback, void *fallback_ctx)
{
    long C = s->C, K = s->K, R = s->R, RR = R * R;
    tiles_ctx t = {.in = x, .out = y, .in_c = C, .in_h = s->H, .in_w = s->W, .out_c = K,
                   .out_h = repro_conv_oh(s), .out_w = repro_conv_ow(s), .margin = s->pad,
                   .R = R, .shift0 = 0, .shift_sign = 1, .nt = C * RR,
                   .simd = repro_simd_get(), .fallback = fallback, .fallback_ctx = fallback_ctx};
    float *tab = plan(&t, R - 1);
    if (!tab || !t.simd->conv_tile)
        return -1;
    long *off = t.t_off;
    float *wt = t.wt, *init = t.init;
    for (long c = 0; c < C; c++) /* terms (c, ry, rx) ascending */
        for (long ry = 0; ry < R; ry++)
            for (long rx = 0; rx < R; rx++)
                off[(c * R + ry) * R + rx] = term_offset(&t, c, ry, rx);
    for (long g = 0; g < t.groups; g++)
        for (long q = 0; q < t.nt; q++)
            for (long gi = 0; gi < t.G; gi++) {
                long k = g * t.G + gi;
                wt[(g * t.nt + q) * t.G + gi] = k < K ? w[k * t.nt + q] : 0.0f;
            }
    for (long k = 0; k < t.groups * t.G; k++)
        init[k] = bias && k < K ? bias[k] : 0.0f;
    repro_pool_run(pool, s->B, tiles_chunk, &t);
    return 0;
}

int repro_conv_backward_data_tiled(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                   const float *w, float *dx, repro_conv_sample_fn fallback,
                                   void *fallback_ctx)
{
    long C = s->C, K = s->K, R = s->R, RR = R * R, pad = s->pad;
    /* dx[c][iy][ix] reads dy[k][iy - ry + pad][ix - rx + pad]: in the copy
     * (margin R - 1) that is row iy + (pad + R - 1 - ry), column likewise */
    tiles_ctx t = {.in = dy, .out = dx, .in_c = K, .in_h = repro_conv_oh(s),
                   .in_w = repro_conv_ow(s), .out_c = C, .out_h = s->H, .out_w = s->W,
                   .margin = R - 1, .R = R, .shift0 = pad + R - 1, .shift_sign = -1,
                   .nt = K * RR, .simd = repro_simd_get(), .fallback = fallback,
                   .fallback_ctx = fallback_ctx};
    float *tab = plan(&t, pad + R - 1);
    if (!tab || !t.simd->conv_tile)
        return -1;
    long *off = t.t_off;
    float *wt = t.wt, *init = t.init;
    for (long k = 0; k < K; k++) /* terms (k, ry, rx) ascending */
        for (long ry = 0; ry < R; ry++)
            for (long rx = 0; rx < R; rx++)
                off[(k * R + ry) * R + rx] = term_offset(&t, k, ry, rx);
    for (long g = 0; g < t.groups; g++)
        for (long q = 0; q < t.nt; q++) {
            long k = q / RR, r = q % RR;
            for (long gi = 0; gi < t.G; gi++) {
                long c = g * t.G + gi;
                wt[(g * t.nt + q) * t.G + gi] = c < C ? w[(k * C + c) * RR + r] : 0.0f;
            }
        }
    for (long c = 0; c < t.groups * t.G; c++)
        init[c] = 0.0f;
    repro_pool_run(pool, s->B, tiles_chunk, &t);
    return 0;
}
