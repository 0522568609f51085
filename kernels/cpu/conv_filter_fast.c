/* The convolution's filter and bias gradients, vectorized (conv_filter.h):
 * the same sums in the same order as conv_filter.c's plain loops (ops.h),
 * with vector lanes across output columns (column strips) or across
 * filters (lanes across the filters), never across the terms of one sum.
 * Determinism argument: every output element is written by exactly one
 * chunk (the rows of a group of filters for one channel c, plus their db in the
 * c = 0 chunk; under the shard rule one shard's partial sums per chunk, or
 * its biases in a chunk of their own, added in shard order after the
 * chunks), chunk boundaries depend only on
 * the shape and the thread count's few-chunks rule (never on which thread
 * runs what). Padding: the padded positions are real terms whose input
 * value is +0, read from zero-padded copies. */
#include "conv_filter.h"
#include "conv_filter_bias.h"

#include <string.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "scratch.h"
#include "simd.h"

typedef repro_conv_filter_ctx conv_ctx;

static inline long lmin(long a, long b) { return a < b ? a : b; }

/* ---- backward filter, vectorized over output columns --------------------
 * The same sums in the same order as bwd_filter_chunk: col[rx][ox] = +0 +
 * the (b, oy) terms ascending, then dw = start + col[.][ox] for ox
 * ascending. Here a chunk (k, c, ry) keeps col in vector registers across
 * the whole (b, oy) loop (simd.h: colsum), one strip of up to 3 vectors of
 * output columns at a time. The input is copied once per call into a
 * zero-padded image with slack after it (so padded positions are real +0
 * terms, as the contract says, and the last lanes of a strip may read past
 * a row). dy is read in place: a partial strip's last lanes read into the
 * next row and are dropped, and only the very last row of dy, which has no
 * next row, goes through a copy (see last_row). */
enum { FAST_COLS = 1024, FAST_R = 8, FAST_K = 4 /* the most filters a group: colsum_nk */ };

typedef struct {
    const conv_ctx *cx;         /* cx->s: one shard's shape (B = its samples) */
    const repro_simd *simd;
    float *xpad; /* this call's scratch: the copy chunks write it, every shard's samples */
    const long *x_off, *dy_off; /* per row j = b*OH + oy of a shard */
    long Hp, Wp;
    int nq;      /* shards (1 when not sharded) */
    int sharded; /* the shard rule: each shard from +0, then summed in order */
    long nry;    /* filter rows a chunk takes: all R, or 1 where that leaves few chunks */
    float *parts; /* sharded: shard q's dw at q * part_len, then its db (K floats) */
    long part_len;
    float *dyT;   /* lanes across filters (klanes_chunk): dy transposed, or NULL */
    int x_in_place; /* klanes_chunk, unpadded: x read where it is (x_off into cx->x) */
    int group;      /* filters a chunk takes at once (the path's colsum_nk) */
} bwdf_ctx;

/* The groups of `group` filters among K (the last may be smaller). */
static long group_count(long K, int group)
{
    return (K + group - 1) / group;
}

/* The filters of the group starting at k0. */
static int group_size(const bwdf_ctx *f, long k0)
{
    return (int)lmin(f->group, f->cx->s->K - k0);
}

enum { TAIL_ROWS = 8 };

/* Rows j0 .. j0+g-1 of a strip (n of its w lanes real) through a
 * zero-padded copy, for rows whose read would run past dy's end. */
static void colsum_copied_rows(const bwdf_ctx *f, int nk, int nv, long j0, long g,
                               const float *dys, long dy_k, long n, long w, const float *xs,
                               float *acc)
{
    float rows[FAST_K * TAIL_ROWS * 3 * 16]; /* nk x g rows of w <= 3 vectors of the widest path */
    long offs[TAIL_ROWS];
    for (long i = 0; i < g; i++) {
        offs[i] = i * w;
        for (int kk = 0; kk < nk; kk++)
            for (long l = 0; l < w; l++)
                rows[(kk * g + i) * w + l] = l < n ? dys[kk * dy_k + f->dy_off[j0 + i] + l] : 0.0f;
    }
    f->simd->colsum((int)f->cx->s->R, nv, nk, g, rows, g * w, offs, xs, f->x_off + j0, acc);
}

/* Filters k0 .. k0+nk-1, channel c, row ry over shard q's samples:
 * res[kk * R + rx] = start (NULL: +0) + the column sums in ascending ox
 * (each strip's columns folded as it ends: the strips run in ascending ox). */
static void filter_rows(const bwdf_ctx *f, long k0, int nk, long c, long ry, long q,
                        const float *start, float *res)
{
    const conv_ctx *cx = f->cx;
    const repro_conv_shape *s = cx->s;
    long R = s->R, OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long lanes = f->simd->lanes, nrows = (long)s->B * OH, dy_k = OH * OW;
    long dy_len = (long)s->B * s->K * dy_k; /* floats of the shard's dy */
    const float *xb = f->xpad + (c * f->nq + q) * s->B * f->Hp * f->Wp + ry * f->Wp;
    const float *dyb = cx->dy + q * dy_len + k0 * dy_k;
    /* Two or more filters: strips of 2 vectors (their register paths); one: 3. */
    long strip = (nk >= 2 ? 2 : 3) * lanes;
    float acc[FAST_K * FAST_R * 3 * 16];
    for (long kr = 0; kr < nk * R; kr++)
        res[kr] = start ? start[kr] : 0.0f;
    for (long s0 = 0; s0 < OW; s0 += strip) {
        long n = lmin(strip, OW - s0);
        int nv = (int)((n + lanes - 1) / lanes);
        long w = nv * lanes;
        for (long i = 0; i < nk * R * w; i++)
            acc[i] = 0.0f;
        /* A partial strip's last lanes read into the rows after each row;
         * the final rows of dy have too few after them (several rows when
         * OW < w). Those come from zero-padded copies, summed after the
         * others: acc carries each sum across the calls exactly, in row
         * order, so the sums are the same. */
        long body = nrows;
        while (n < w && body > 0 && f->dy_off[body - 1] + (k0 + nk - 1) * dy_k + s0 + w > dy_len)
            body--;
        f->simd->colsum((int)R, nv, nk, body, dyb + s0, dy_k, f->dy_off, xb + s0, f->x_off, acc);
        for (long j0 = body; j0 < nrows; j0 += TAIL_ROWS)
            colsum_copied_rows(f, nk, nv, j0, lmin(TAIL_ROWS, nrows - j0), dyb + s0, dy_k, n, w,
                               xb + s0, acc);
        for (long kr = 0; kr < nk * R; kr++) /* kr = kk * R + rx */
            for (long ox = 0; ox < n; ox++)
                res[kr] = res[kr] + acc[kr * w + ox];
    }
}

/* Filters k0 .. k0+nk-1 of channel c, filter rows ry0 .. ry0+nry-1, over
 * shard q: res[(i * nk + kk) * R + rx] (row ry0 + i) = start[same] (start
 * NULL: +0) + the column sums in ascending ox. The rows run inside a
 * shard, so its x plane and dy stay in the L1 cache across them. */
static void filter_rows_of_shard(const bwdf_ctx *f, long k0, int nk, long c, long ry0, long q,
                                 const float *start, float *res)
{
    long per = nk * f->cx->s->R;
    for (long i = 0; i < f->nry; i++)
        filter_rows(f, k0, nk, c, ry0 + i, q, start ? start + i * per : NULL, res + i * per);
}

/* Chunk (kg, c, ry0): the group of filters from k = kg * f->group (the
 * last group smaller when K is not a multiple), so each row of x is
 * loaded once for all of them (simd.h: colsum), filter rows ry0 .. ry0 +
 * nry - 1 (all R, or one each where the groups and channels make few
 * chunks: the models' first convolution has 2 to 4 groups, one channel).
 * Sharded, the chunk runs every shard in turn and sums them in shard
 * order (dw = P_0, then dw + P_1, ...; with accumulate the old dw + that
 * sum): the adds the model's shard buffers get, in one job instead of one
 * per shard plus the adds. */
static void bwd_filter_fast_chunk(void *vctx, long chunk)
{
    const bwdf_ctx *f = vctx;
    const conv_ctx *cx = f->cx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, R = s->R, K = s->K, nry = f->nry, nrc = R / nry;
    long ry0 = chunk % nrc * nry, c = chunk / nrc % C, k0 = f->group * (chunk / (nrc * C));
    int nk = group_size(f, k0);
    long dy_q = (long)s->B * K * repro_conv_oh(s) * repro_conv_ow(s), per = nk * R;
    float cur[FAST_K * FAST_R * FAST_R], sum[FAST_K * FAST_R * FAST_R];
    for (int kk = 0; kk < nk && cx->db && c == 0 && ry0 == 0; kk++) {
        long k = k0 + kk;
        if (!f->sharded) {
            repro_conv_bias_k(cx, k);
            continue;
        }
        float b = repro_conv_bias_sum(cx, cx->dy, k, 0.0f);
        for (int q = 1; q < f->nq; q++)
            b = b + repro_conv_bias_sum(cx, cx->dy + q * dy_q, k, 0.0f);
        cx->db[k] = cx->accumulate ? cx->db[k] + b : b;
    }
    /* dw row (k0 + kk, c, ry0 + i) <-> sum[(i * nk + kk) * R ...] */
#define DWROW(i, kk) (cx->dw + (((k0 + (kk)) * C + c) * R + ry0 + (i)) * R)
    if (!f->sharded) {
        for (long i = 0; i < nry; i++)
            for (int kk = 0; kk < nk; kk++)
                memcpy(cur + (i * nk + kk) * R, DWROW(i, kk), (size_t)R * sizeof *cur);
        filter_rows_of_shard(f, k0, nk, c, ry0, 0, cx->accumulate ? cur : NULL, sum);
    } else {
        filter_rows_of_shard(f, k0, nk, c, ry0, 0, NULL, sum);
        for (int q = 1; q < f->nq; q++) {
            filter_rows_of_shard(f, k0, nk, c, ry0, q, NULL, cur);
            for (long i = 0; i < nry * per; i++)
                sum[i] = sum[i] + cur[i];
        }
        for (long i = 0; i < nry && cx->accumulate; i++)
            for (int kk = 0; kk < nk; kk++)
                for (long rx = 0; rx < R; rx++)
                    sum[(i * nk + kk) * R + rx] = DWROW(i, kk)[rx] + sum[(i * nk + kk) * R + rx];
    }
    for (long i = 0; i < nry; i++)
        for (int kk = 0; kk < nk; kk++)
            memcpy(DWROW(i, kk), sum + (i * nk + kk) * R, (size_t)R * sizeof *sum);
#undef DWROW
}

/* Sharded, chunk (q, kg): shard q's partial sums of filter group kg,
 * every channel and filter row, and of their biases, into f->parts;
 * sum_shards adds the shards in order after the chunks. Chunk q * groups
 * + kg: the pool's caller claims from the low
 * end, its other threads from the high end, so each thread sums the
 * samples it mostly produced itself in the passes before (which split by
 * sample the same way) instead of reading half of dy from the other core's
 * cache (the filter gradient scaled 1.62x on 2 threads inside a CNN step,
 * 1.87x on hot data). */
static void bwd_filter_shard_chunk(void *vctx, long chunk)
{
    const bwdf_ctx *f = vctx;
    const conv_ctx *cx = f->cx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, R = s->R, K = s->K, groups = group_count(K, f->group);
    long q = chunk / groups, k0 = f->group * (chunk % groups);
    int nk = group_size(f, k0);
    long dy_q = (long)s->B * K * repro_conv_oh(s) * repro_conv_ow(s);
    float *part = f->parts + q * f->part_len, res[FAST_K * FAST_R * FAST_R];
    for (long c = 0; c < C; c++) {
        filter_rows_of_shard(f, k0, nk, c, 0, q, NULL, res); /* f->nry == R */
        for (long ry = 0; ry < R; ry++)
            for (int kk = 0; kk < nk; kk++)
                memcpy(part + (((k0 + kk) * C + c) * R + ry) * R, res + (ry * nk + kk) * R,
                       (size_t)R * sizeof *res);
    }
    for (int kk = 0; kk < nk && cx->db; kk++)
        part[K * C * R * R + k0 + kk] = repro_conv_bias_sum(cx, cx->dy + q * dy_q, k0 + kk, 0.0f);
}

/* dw = P_0 + P_1 + ... in shard order (with accumulate: old dw + that
 * sum), db likewise: bwd_filter_fast_chunk's adds, in the same order. */
static void sum_shards(const bwdf_ctx *f)
{
    const conv_ctx *cx = f->cx;
    long nw = (long)cx->s->K * cx->s->C * cx->s->R * cx->s->R, n = nw + (cx->db ? cx->s->K : 0);
    for (long i = 0; i < n; i++) {
        float sum = f->parts[i];
        for (int q = 1; q < f->nq; q++)
            sum = sum + f->parts[q * f->part_len + i];
        float *out = i < nw ? cx->dw + i : cx->db + (i - nw);
        *out = cx->accumulate ? *out + sum : sum;
    }
}

/* ---- sharded, lanes across the filters ----------------------------------
 * Where K is one or two vectors (the CNN's second convolution: 16 filters,
 * 11 output columns), a lane is a filter instead of an output column: the
 * column sums col[k][c][ry][rx][ox] of chunk (q, c) run K filters a vector
 * over every column (simd.h: colsum_k) from a transposed dy (dyT[row][ox]
 * [k], made with the input copies), so no lane idles where the columns are
 * not a whole number of vectors. Each sum is the same: +0, the shard's rows
 * ascending, then the columns folded in ascending ox; the biases' sums
 * likewise, from the same transposed rows (simd.h: rowsum). */
enum { KLANES_COLS = 64, FEW_CHUNKS = 8 /* see bwd_filter_fast */ };

/* Chunks per shard: one per channel, then one for the biases (when db). */
static long klanes_per_shard(const conv_ctx *cx)
{
    return cx->s->C + (cx->db ? 1 : 0);
}

/* Chunk q * klanes_per_shard + c: shard q, channel c, every filter and
 * row, or (c = C) the biases, into f->parts, as bwd_filter_shard_chunk.
 * The biases have a chunk of their own: in the c = 0 chunks they made
 * those twice the others, and the last ones claimed left a thread idle. */
static void klanes_chunk(void *vctx, long chunk)
{
    const bwdf_ctx *f = vctx;
    const conv_ctx *cx = f->cx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, B = s->B, OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long q = chunk / klanes_per_shard(cx), c = chunk % klanes_per_shard(cx), dy_q = B * K * OH * OW;
    float *part = f->parts + q * f->part_len, out[3 * KLANES_COLS * 32];
    const float *dyT = f->dyT + q * dy_q;
    if (c == C) { /* db: the columns over the transposed rows, every filter a lane */
        f->simd->rowsum(B * OH, OW * K / f->simd->lanes, dyT, OW * K, out);
        for (long k = 0; k < K; k++) {
            float a = 0.0f;
            for (long ox = 0; ox < OW; ox++)
                a = a + out[ox * K + k];
            part[K * C * 9 + k] = a;
        }
        return;
    }
    for (long ry = 0; ry < 3; ry++) {
        const float *xb = f->x_in_place
                              ? cx->x + ((q * B * C + c) * s->H + ry) * s->W
                              : f->xpad + (c * f->nq + q) * B * f->Hp * f->Wp + ry * f->Wp;
        f->simd->colsum_k((int)(K / f->simd->lanes), B * OH, OW, dyT, OW * K, xb, f->x_off, out);
        for (long rx = 0; rx < 3; rx++)
            for (long k = 0; k < K; k++) {
                float a = 0.0f;
                for (long ox = 0; ox < OW; ox++)
                    a = a + out[(rx * OW + ox) * K + k];
                part[((k * C + c) * 3 + ry) * 3 + rx] = a;
            }
    }
}

/* Sample b's dy (K planes of n positions) into dyT[pos][k]. */
static void transpose_dy(const float *dy, float *dyT, long K, long n)
{
    long pos = 0;
#if defined(__SSE2__)
    for (; pos + 4 <= n; pos += 4) /* 4 x 4 blocks: (k .. k+3) x (pos .. pos+3) */
        for (long k = 0; k < K; k += 4) {
            __m128 r0 = _mm_loadu_ps(dy + k * n + pos), r1 = _mm_loadu_ps(dy + (k + 1) * n + pos);
            __m128 r2 = _mm_loadu_ps(dy + (k + 2) * n + pos), r3 = _mm_loadu_ps(dy + (k + 3) * n + pos);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dyT + pos * K + k, r0);
            _mm_storeu_ps(dyT + (pos + 1) * K + k, r1);
            _mm_storeu_ps(dyT + (pos + 2) * K + k, r2);
            _mm_storeu_ps(dyT + (pos + 3) * K + k, r3);
        }
#endif
    for (; pos < n; pos++)
        for (long k = 0; k < K; k++)
            dyT[pos * K + k] = dy[k * n + pos];
}

/* Whether chunks (shard, channel) with lanes across the filters apply. */
static int klanes_fits(const repro_simd *simd, const repro_conv_shape *s, int nq, int threads)
{
    long K = s->K, lanes = simd->lanes;
    return simd->colsum_k && s->R == 3 && K % 4 == 0 && (K == lanes || K == 2 * lanes) &&
           repro_conv_ow(s) <= KLANES_COLS && nq * s->C >= FEW_CHUNKS * threads;
}

/* The copies, shared by the threads (done by the caller alone they left
 * the other threads idle; perf put them at 4% of a 2-thread CNN step): unit
 * c*B + b pads plane (c, b) of the input image. A chunk is COPY_UNITS
 * units: one unit is a fraction of a microsecond, less than a claim costs
 * when two threads contend for it. FEW_CHUNKS: see bwd_filter_fast. */
enum { COPY_UNITS = 8 };

static void bwd_filter_copy_unit(const bwdf_ctx *f, long unit)
{
    const repro_conv_shape *s = f->cx->s;
    long B = s->B * f->nq, C = s->C, H = s->H, W = s->W, pad = s->pad;
    long c = unit / B, b = unit % B;
    float *plane = f->xpad + unit * f->Hp * f->Wp; /* unit == c*B + b */
    if (pad > 0) /* unpadded, the rows below cover the plane: no zeros to write */
        memset(plane, 0, (size_t)(f->Hp * f->Wp) * sizeof *plane);
    for (long iy = 0; iy < H; iy++)
        memcpy(plane + (iy + pad) * f->Wp + pad, f->cx->x + ((b * C + c) * H + iy) * W,
               (size_t)W * sizeof *plane);
}

/* Chunks run the units shard by shard (q, c, b), so that, as with the
 * sums (bwd_filter_shard_chunk), a thread mostly copies the samples it
 * will read. */
static void bwd_filter_copy_chunk(void *vctx, long chunk)
{
    const bwdf_ctx *f = vctx;
    const repro_conv_shape *s = f->cx->s;
    long xc = f->x_in_place ? 0 : s->C, Bq = s->B, per_q = (xc + (f->dyT ? 1 : 0)) * Bq;
    long units = per_q * f->nq, n = repro_conv_oh(s) * repro_conv_ow(s);
    for (long u = chunk * COPY_UNITS; u < units && u < (chunk + 1) * COPY_UNITS; u++) {
        long q = u / per_q, c = u % per_q / Bq, b = u % Bq;
        if (c < xc) /* then, with lanes across filters, sample (q, b)'s dy transposed */
            bwd_filter_copy_unit(f, c * Bq * f->nq + q * Bq + b);
        else
            transpose_dy(f->cx->dy + (q * Bq + b) * s->K * n, f->dyT + (q * Bq + b) * s->K * n,
                         s->K, n);
    }
}

/* Copies and offsets into the calling thread's scratch; 0, or -1 when it
 * is not available (the caller then runs the plain kernel). nq shards of
 * cx->s->B samples each (nq = 1, sharded = 0: the plain sum). */
int repro_conv_filter_fast(repro_pool *pool, const conv_ctx *cx, int nq, int sharded)
{
    const repro_conv_shape *s = cx->s;
    long B = s->B, C = s->C, K = s->K, H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    long Hp = H + 2 * pad, Wp = W + 2 * pad, rows = B * OH;
    if (R > FAST_R || OW > FAST_COLS)
        return -1;
    size_t nx = (size_t)(C * nq * B * Hp * Wp);
    size_t noff = (size_t)(2 * rows) * sizeof(long) / sizeof(float) + 16;
    long part_len = K * C * R * R + K, threads = repro_pool_threads(pool);
    int klanes = sharded && klanes_fits(repro_simd_get(), s, nq, (int)threads);
    size_t nparts = sharded ? (size_t)(nq * part_len) : 0;
    size_t ndyT = klanes ? (size_t)(nq * B * K * OH * OW) : 0;
    float *buf = repro_scratch(REPRO_SCRATCH_CALL, noff + nx + 64 + nparts + ndyT);
    if (!buf)
        return -1;
    long *x_off = (long *)buf, *dy_off = x_off + rows;
    float *xpad = buf + noff;
    /* Unpadded, the lanes across filters read x in place: their loads stay
     * inside each row (ox + rx < W), so no copy needs slack after it. */
    int x_in_place = klanes && pad == 0;
    for (long j = 0; j < rows; j++) {
        long b = j / OH, oy = j % OH;
        x_off[j] = x_in_place ? (b * C * H + oy) * W : (b * Hp + oy) * Wp;
        dy_off[j] = b * K * OH * OW + oy * OW;
    }
    memset(xpad + nx, 0, 64 * sizeof *xpad); /* the slack the last strip may read */
    /* A chunk per filter row where groups x channels are fewer than
     * FEW_CHUNKS a thread: so few large chunks leave one thread idle
     * whenever the other starts late. */
    const repro_simd *simd = repro_simd_get();
    int group = (int)lmin(simd->colsum_nk, FAST_K); /* the buffers hold FAST_K */
    long groups = group_count(K, group);
    long nry = groups * C < FEW_CHUNKS * threads ? 1 : R;
    /* Sharded with at least FEW_CHUNKS a thread as (shard, group) chunks:
     * by shard (bwd_filter_shard_chunk); else the shards inside each chunk */
    int by_shard = sharded && nq * groups >= FEW_CHUNKS * threads;
    bwdf_ctx f = {cx, simd, xpad, x_off, dy_off, Hp, Wp, nq, sharded,
                  by_shard ? R : nry, xpad + nx + 64, part_len,
                  klanes ? xpad + nx + 64 + nparts : NULL, x_in_place, group};
    long copy_units = ((x_in_place ? 0 : C) + (klanes ? 1 : 0)) * nq * B;
    repro_pool_run(pool, (copy_units + COPY_UNITS - 1) / COPY_UNITS, bwd_filter_copy_chunk,
                   &f); /* copies: no sums */
    if (klanes) {
        repro_pool_run(pool, nq * klanes_per_shard(cx), klanes_chunk, &f);
        sum_shards(&f);
        return 0;
    }
    if (by_shard) {
        repro_pool_run(pool, nq * groups, bwd_filter_shard_chunk, &f);
        sum_shards(&f);
        return 0;
    }
    repro_pool_run(pool, groups * C * (R / nry), bwd_filter_fast_chunk, &f);
    return 0;
}

