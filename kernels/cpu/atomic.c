/* Unordered-accumulation variants (see atomic.h): per-chunk partial sums
 * added into shared outputs with C11 atomic compare-exchange, in whatever
 * order the pool's threads arrive. Real implementations, the kind one picks
 * for speed: no sleeps, no artificial jitter; the nondeterminism is only the
 * scheduler's. Plus the deterministic index_add they are compared against. */
#include "atomic.h"

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

/* ---- the atomic float add --------------------------------------------------
 * C11 has no atomic float add (atomic_fetch_add is for integer types), so
 * this is the usual compare-exchange loop on the float's bit pattern, as
 * CUDA's atomicAdd was before sm_20. The shared buffer is plain float[]; we
 * view each element as an _Atomic uint32_t. C11 allows an atomic type to
 * differ in size and representation from its plain type, so the static
 * assertions below pin down what the cast relies on: same size and alignment
 * as float, and lock-free (ATOMIC_INT_LOCK_FREE == 2, i.e. the atomic object
 * is the bare 32-bit word, not a word plus a hidden lock). This is what GCC
 * and Clang document for their __atomic builtins on plain objects, and what
 * every C++20 atomic_ref<float> implementation does. Comparing bits (not
 * float values) also makes the loop terminate for NaN and keeps -0.0 apart
 * from +0.0. Relaxed order suffices: the adds need atomicity only; the plain
 * accesses before and after (zeroing, reading the result) are ordered by
 * repro_pool_run's mutex and join. */
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(float), "atomic word must be float-sized");
_Static_assert(_Alignof(_Atomic uint32_t) == _Alignof(float), "and float-aligned");
_Static_assert(sizeof(unsigned int) == 4 && ATOMIC_INT_LOCK_FREE == 2,
               "32-bit atomics must be lock-free");

void repro_atomic_add_f32(float *dst, float v)
{
    _Atomic uint32_t *a = (_Atomic uint32_t *)(void *)dst;
    uint32_t old = atomic_load_explicit(a, memory_order_relaxed), upd;
    do {
        float f;
        memcpy(&f, &old, sizeof f);
        f = f + v;
        memcpy(&upd, &f, sizeof upd);
        /* on failure `old` is reloaded with the current bits */
    } while (!atomic_compare_exchange_weak_explicit(a, &old, upd, memory_order_relaxed,
                                                    memory_order_relaxed));
}

static inline long lmin(long a, long b) { return a < b ? a : b; }

static void zero(float *p, long n)
{
    for (long i = 0; i < n; i++)
        p[i] = 0.0f;
}

/* Partials live in a stack tile of this many floats, so the variants never
 * allocate and cannot fail. */
enum { TILE = 4096 };

/* ---- linear backward weight ------------------------------------------------ */
typedef struct {
    const float *dy, *x;
    float *dw, *db;
    int B, in, out;
} lin_ctx;

/* Chunk = samples [4c, 4c+4). For each tile of dw (rows o0.., columns i0..)
 * the partial sum over the chunk's samples (ascending, from +0: repro_gemm's
 * order) goes into the stack tile, then each element is added atomically.
 * repro_gemm runs inline (NULL pool): a chunk may not reenter the pool. */
static void lin_weight_chunk(void *vctx, long chunk)
{
    const lin_ctx *c = vctx;
    long b0 = chunk * ATOMIC_BATCH_CHUNK;
    int nb = (int)lmin(ATOMIC_BATCH_CHUNK, c->B - b0);
    long ni = lmin(c->in, TILE), rows = TILE / ni;
    float part[TILE];
    for (long o0 = 0; o0 < c->out; o0 += rows) {
        long no = lmin(rows, c->out - o0);
        for (long i0 = 0; i0 < c->in; i0 += ni) {
            long nc = lmin(ni, c->in - i0);
            repro_gemm(NULL, (int)no, (int)nc, nb, c->dy + b0 * c->out + o0, 1, c->out,
                       c->x + b0 * c->in + i0, c->in, part, nc, NULL, 0);
            for (long o = 0; o < no; o++)
                for (long i = 0; i < nc; i++)
                    repro_atomic_add_f32(&c->dw[(o0 + o) * c->in + i0 + i], part[o * nc + i]);
        }
    }
}

void repro_linear_backward_weight_atomic(repro_pool *pool, const float *dy, const float *x,
                                         float *dw, int B, int in, int out, int accumulate)
{
    if (!accumulate)
        zero(dw, (long)in * out); /* before the parallel part: plain stores */
    if (B <= 0 || in <= 0 || out <= 0)
        return;
    lin_ctx c = {.dy = dy, .x = x, .dw = dw, .B = B, .in = in, .out = out};
    repro_pool_run(pool, (B + ATOMIC_BATCH_CHUNK - 1) / ATOMIC_BATCH_CHUNK, lin_weight_chunk,
                   &c);
}

/* ---- linear backward bias --------------------------------------------------- */
/* Chunk = samples [4c, 4c+4): column sums of its rows (ascending b, from +0)
 * per tile of outputs, each then added atomically. */
static void lin_bias_chunk(void *vctx, long chunk)
{
    const lin_ctx *c = vctx;
    long b0 = chunk * ATOMIC_BATCH_CHUNK, b1 = lmin(b0 + ATOMIC_BATCH_CHUNK, c->B);
    float part[TILE];
    for (long o0 = 0; o0 < c->out; o0 += TILE) {
        long no = lmin(TILE, c->out - o0);
        zero(part, no);
        for (long b = b0; b < b1; b++) {
            const float *row = c->dy + b * c->out + o0;
            for (long o = 0; o < no; o++)
                part[o] = part[o] + row[o];
        }
        for (long o = 0; o < no; o++)
            repro_atomic_add_f32(&c->db[o0 + o], part[o]);
    }
}

void repro_linear_backward_bias_atomic(repro_pool *pool, const float *dy, float *db, int B,
                                       int out, int accumulate)
{
    if (!accumulate)
        zero(db, out);
    if (B <= 0 || out <= 0)
        return;
    lin_ctx c = {.dy = dy, .db = db, .B = B, .out = out};
    repro_pool_run(pool, (B + ATOMIC_BATCH_CHUNK - 1) / ATOMIC_BATCH_CHUNK, lin_bias_chunk, &c);
}

/* ---- conv2d backward filter ------------------------------------------------- */
typedef struct {
    const repro_conv_shape *s;
    const float *dy, *x;
    float *dw, *db;
} conv_ctx;

/* Filters up to this size reuse the ordered kernel on a one-plane slice;
 * larger ones (no real network has them) take the scalar path, so the stack
 * tile stays bounded. */
enum { CONV_RMAX = 32 };

/* Sample b's partial for dw[k][c][..][..] (and db[k] when dbp), computed by
 * the scalar definition: per (ry, rx), terms over (oy, ox) ascending, padded
 * positions contributing dy * +0 as in the ordered kernel. */
static void conv_partial_scalar(const repro_conv_shape *s, const float *dyp, const float *xp,
                                float *dwp, float *dbp)
{
    long H = s->H, W = s->W, R = s->R, pad = s->pad;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    for (long ry = 0; ry < R; ry++)
        for (long rx = 0; rx < R; rx++) {
            float acc = 0.0f;
            for (long oy = 0; oy < OH; oy++)
                for (long ox = 0; ox < OW; ox++) {
                    long iy = oy + ry - pad, ix = ox + rx - pad;
                    float xv = iy >= 0 && iy < H && ix >= 0 && ix < W ? xp[iy * W + ix] : 0.0f;
                    acc = acc + dyp[oy * OW + ox] * xv;
                }
            repro_atomic_add_f32(&dwp[ry * R + rx], acc);
        }
    if (dbp) {
        float acc = 0.0f;
        for (long i = 0; i < OH * OW; i++)
            acc = acc + dyp[i];
        repro_atomic_add_f32(dbp, acc);
    }
}

/* Chunk = sample b. For every (k, c) the R x R partial of this sample is
 * computed by the ordered kernel on a B = C = K = 1 slice (dy's (b, k)
 * plane, x's (b, c) plane: both contiguous), then added atomically into
 * dw[k][c]; db[k]'s partial comes with c == 0. */
static void conv_filter_chunk(void *vctx, long b)
{
    const conv_ctx *cx = vctx;
    const repro_conv_shape *s = cx->s;
    long C = s->C, K = s->K, HW = (long)s->H * s->W, RR = (long)s->R * s->R;
    long OHW = (long)repro_conv_oh(s) * repro_conv_ow(s);
    repro_conv_shape one = {1, 1, s->H, s->W, 1, s->R, s->pad};
    float part[CONV_RMAX * CONV_RMAX], dbpart;
    for (long k = 0; k < K; k++) {
        const float *dyp = cx->dy + (b * K + k) * OHW;
        for (long c = 0; c < C; c++) {
            const float *xp = cx->x + (b * C + c) * HW;
            float *dwp = cx->dw + (k * C + c) * RR;
            float *dbk = cx->db && c == 0 ? &cx->db[k] : NULL;
            if (s->R > CONV_RMAX) {
                conv_partial_scalar(s, dyp, xp, dwp, dbk);
                continue;
            }
            repro_conv2d_backward_filter(NULL, &one, dyp, xp, part, dbk ? &dbpart : NULL, 0);
            for (long i = 0; i < RR; i++)
                repro_atomic_add_f32(&dwp[i], part[i]);
            if (dbk)
                repro_atomic_add_f32(dbk, dbpart);
        }
    }
}

void repro_conv2d_backward_filter_atomic(repro_pool *pool, const repro_conv_shape *s,
                                         const float *dy, const float *x, float *dw, float *db,
                                         int accumulate)
{
    if (!accumulate) {
        zero(dw, (long)s->K * s->C * s->R * s->R);
        if (db)
            zero(db, s->K);
    }
    if (repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0 || s->B <= 0)
        return; /* no terms: the sums are their start values */
    conv_ctx cx = {s, dy, x, dw, db};
    repro_pool_run(pool, s->B, conv_filter_chunk, &cx);
}

/* ---- index_add ----------------------------------------------------------------- */
typedef struct {
    float *out;
    const int32_t *index;
    const float *src;
    long n;
    int width;
} index_ctx;

/* The contract check, before any thread touches out. */
static void index_check(int nrows, const int32_t *index, long n)
{
    for (long i = 0; i < n; i++)
        assert(index[i] >= 0 && index[i] < nrows && "index_add: index out of [0, nrows)");
    (void)nrows;
    (void)index;
}

/* Ordered: chunk = 64 columns of out, all rows. It walks the inputs in
 * ascending i, so each output element gets its terms in ascending i, and no
 * other chunk writes its columns. */
enum { INDEX_COLS = 64, INDEX_SERIAL_TERMS = 1 << 16 };

static void index_chunk(void *vctx, long chunk)
{
    const index_ctx *c = vctx;
    long j0 = chunk * INDEX_COLS, j1 = lmin(j0 + INDEX_COLS, c->width);
    for (long i = 0; i < c->n; i++) {
        float *orow = c->out + (long)c->index[i] * c->width;
        const float *srow = c->src + i * c->width;
        for (long j = j0; j < j1; j++)
            orow[j] = orow[j] + srow[j];
    }
}

void repro_index_add(repro_pool *pool, float *out, int nrows, const int32_t *index,
                     const float *src, long n, int width)
{
    index_check(nrows, index, n);
    if (n <= 0 || width <= 0)
        return;
    index_ctx c = {out, index, src, n, width};
    /* Small ones on the calling thread: the cnn's class features (64 rows
     * of 400) took 12 us a step on one thread and 19 on two, where half of
     * every row the other core had just written travelled across. */
    if (n * width < INDEX_SERIAL_TERMS)
        pool = NULL;
    repro_pool_run(pool, (width + INDEX_COLS - 1) / INDEX_COLS, index_chunk, &c);
}

/* Atomic: chunk = ATOMIC_INDEX_CHUNK input rows, each term added atomically
 * straight into its output element (as CUDA's index_add_ kernel does). */
static void index_atomic_chunk(void *vctx, long chunk)
{
    const index_ctx *c = vctx;
    long i0 = chunk * ATOMIC_INDEX_CHUNK, i1 = lmin(i0 + ATOMIC_INDEX_CHUNK, c->n);
    for (long i = i0; i < i1; i++) {
        float *orow = c->out + (long)c->index[i] * c->width;
        const float *srow = c->src + i * c->width;
        for (long j = 0; j < c->width; j++)
            repro_atomic_add_f32(&orow[j], srow[j]);
    }
}

void repro_index_add_atomic(repro_pool *pool, float *out, int nrows, const int32_t *index,
                            const float *src, long n, int width)
{
    index_check(nrows, index, n);
    if (n <= 0 || width <= 0)
        return;
    index_ctx c = {out, index, src, n, width};
    repro_pool_run(pool, (n + ATOMIC_INDEX_CHUNK - 1) / ATOMIC_INDEX_CHUNK, index_atomic_chunk,
                   &c);
}
