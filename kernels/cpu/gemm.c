/* repro_gemm: C = init + A*B with a fixed per-element summation order, the
 * engine under linear and convolution. Determinism argument: every C
 * element starts from its init and adds its products A(m,k)*B(k,n) one by
 * one in ascending k, each product rounded to float before the add (no FMA:
 * -ffp-contract=off, and the register tile multiplies then adds).
 *
 * How it is fast under that order (simd.h's register tiles per vector
 * path): M is cut into panels of at most mr rows as evenly as can be, each
 * run on the tile of its own height (no zero rows), B into nr-column
 * panels; the tile keeps rows x nr sums in registers (many independent
 * accumulators keep the multiply and add pipes busy), and K is cut into
 * blocks of KC: between blocks each sum is stored to C and reloaded,
 * exactly, so its order stays ascending in k. A narrow C (the 10 logits)
 * or one whose B would need a transposing copy (linear's weights) may run
 * as its transpose, C^T = B^T A^T, lanes along M (transposed_faster).
 * Vector lanes and tiles only ever group *different* C elements, so every
 * path (SSE2, AVX2, AVX-512) and the plain triple loop give the same bits.
 * Chunks are fixed blocks of C, each written by one chunk, so the thread
 * count changes nothing (pool.h). */
#include "ops.h"

#include <string.h>

#include "scratch.h"
#include "simd.h"
#include "vec4.h"

enum { KC = 256, NC_PANELS = 8, MC_PANELS = 16, MC_PANELS_IN_PLACE = 64,
       MC_PANELS_SHARDED = 64 };
/* Products of fewer multiply-adds than this run on the calling thread. */
#define SHARE_MIN_MACS 1e6

static inline long lmin(long a, long b) { return a < b ? a : b; }

/* C's start value (ops.h): C itself with accumulate, else bias[n] or +0. */
static void write_init(int M, int N, float *C, long ldc, const float *bias)
{
    for (long m = 0; m < M; m++) {
        float *c = C + m * ldc;
        if (bias)
            memcpy(c, bias, (size_t)N * sizeof *c);
        else
            memset(c, 0, (size_t)N * sizeof *c); /* all-zero bits: +0.0f */
    }
}

/* The reference order itself, for when scratch memory is not available. */
static void gemm_plain(int M, int N, int K, const float *A, long a_rs, long a_cs, const float *B,
                       long b_rs, long b_cs, float *C, long ldc)
{
    for (long m = 0; m < M; m++)
        for (long n = 0; n < N; n++) {
            float c = C[m * ldc + n];
            for (long k = 0; k < K; k++) {
                float p = A[m * a_rs + k * a_cs] * B[k * b_rs + n * b_cs];
                c = c + p;
            }
            C[m * ldc + n] = c;
        }
}

/* The sharded order itself (repro_gemm_sharded), element by element. */
static void gemm_plain_sharded(int M, int N, int K, const float *A, long a_rs, long a_cs,
                               const float *B, long b_rs, long b_cs, float *C, long ldc, int S,
                               int accumulate)
{
    for (long m = 0; m < M; m++)
        for (long n = 0; n < N; n++) {
            float total = 0.0f;
            for (long k0 = 0; k0 < K; k0 += S) {
                float part = 0.0f;
                for (long k = k0; k < k0 + S && k < K; k++)
                    part = part + A[m * a_rs + k * a_cs] * B[k * b_rs + n * b_cs];
                total = k0 == 0 ? part : total + part;
            }
            float *c = C + m * ldc + n;
            *c = accumulate ? *c + total : total;
        }
}

/* Ap[k*rows + r] = A(m0 + r, k0 + k), a panel of `rows` rows (its own
 * tile's height: no zero rows). A row-major A (a_cs = 1) is read row by
 * row, contiguously; the writes land `rows` floats apart inside the panel,
 * which stays in L1. A transposed A (a_rs = 1: the weight gradient's
 * dy^T) has each k's rows contiguous: a short copy per k, inline (a
 * memcpy call per 6 floats cost more than the copy). */
static void pack_a(const float *A, long a_rs, long a_cs, long m0, int rows, long k0, long kc,
                   float *Ap)
{
    if (a_cs == 1 && a_rs != 1) {
        for (int r = 0; r < rows; r++) {
            const float *a = A + (m0 + r) * a_rs + k0;
            for (long k = 0; k < kc; k++)
                Ap[k * rows + r] = a[k];
        }
        return;
    }
    if (a_rs == 1) {
        const float *a = A + m0 + k0 * a_cs;
        long k = 0;
        if (rows >= 4) /* whole copies of 4: a row of up to 12 in three (x86: movups) */
            for (; k < kc; k++, a += a_cs, Ap += rows) {
                int r = 0;
                for (; r + 4 <= rows; r += 4)
                    v4_store(Ap + r, v4_load(a + r));
                if (r < rows)
                    v4_store(Ap + rows - 4, v4_load(a + rows - 4));
            }
        for (; k < kc; k++, a += a_cs, Ap += rows)
            for (int r = 0; r < rows; r++)
                Ap[r] = a[r];
        return;
    }
    for (long k = 0; k < kc; k++) {
        const float *a = A + m0 * a_rs + (k0 + k) * a_cs;
        float *d = Ap + k * rows;
        for (int r = 0; r < rows; r++)
            d[r] = a[r * a_rs];
    }
}

/* Panel p of Bp: [kc][nr] = B(k0 + k, n0 + p*nr + j) with B(k, n) =
 * B[k*b_rs + n*b_cs], columns past N as 0. Rows of B contiguous (b_cs = 1)
 * copy row pieces; a transposed B (b_rs = 1: linear's weights [out][in])
 * reads each column's run of k contiguously. */
static void pack_b(const repro_simd *s, const float *B, long b_rs, long b_cs, long k0, long kc,
                   long n0, long ncols, int nr, float *Bp)
{
    for (long p = 0; p * nr < ncols; p++) {
        long cols = lmin(nr, ncols - p * nr);
        float *d = Bp + p * kc * nr;
        if (b_cs == 1) {
            for (long k = 0; k < kc; k++, d += nr) {
                repro_fcopy(d, B + (k0 + k) * b_rs + n0 + p * nr, cols);
                repro_fzero(d + cols, nr - cols);
            }
            continue;
        }
        /* column outer: a transposed B (b_rs = 1: linear's weights) is read
         * along each column's contiguous run of k, through the path's
         * register transpose; the writes land nr floats apart inside the
         * panel, which stays in L1 */
        const float *b = B + k0 * b_rs + (n0 + p * nr) * b_cs;
        long j = 0;
        if (b_rs == 1) {
            s->transpose(b, b_cs, kc, cols, d, nr);
            j = cols;
        }
        for (; j < nr; j++) {
            const float *bj = b + j * b_cs;
            if (j >= cols)
                for (long k = 0; k < kc; k++)
                    d[k * nr + j] = 0.0f;
            else
                for (long k = 0; k < kc; k++)
                    d[k * nr + j] = bj[k * b_rs];
        }
    }
}

/* The `rows`-row register tile on A packed (lda = 0) or read in place
 * (lda: its row stride; simd.h: gemm_tile_rows); init: NULL (C holds the
 * running sums) or the nr start values of every row. */
static void tile(const repro_simd *s, int rows, long kc, const float *A, long lda,
                 const float *Bp, long ldb, float *C, long ldc, const float *init)
{
    if (lda)
        s->gemm_tile_rows[rows](kc, A, lda, Bp, ldb, C, ldc, init);
    else
        s->gemm_tile[rows](kc, A, Bp, ldb, C, ldc, init);
}

/* One tile, B's panel row k at Bp + k*ldb: a full-width tile in place, a
 * narrower one through a padded copy of C (its running sums copied in
 * only where they are the start). */
static void run_tile(const repro_simd *s, long kc, const float *A, long lda, const float *Bp,
                     long ldb, float *C, long ldc, int rows, int cols, const float *init)
{
    if (cols == s->nr) {
        tile(s, rows, kc, A, lda, Bp, ldb, C, ldc, init);
        return;
    }
    float t[REPRO_MR_MAX * REPRO_NR_MAX];
    if (!init)
        for (int r = 0; r < rows; r++)
            memcpy(t + r * s->nr, C + r * ldc, (size_t)cols * sizeof *t);
    tile(s, rows, kc, A, lda, Bp, ldb, t, s->nr, init);
    for (int r = 0; r < rows; r++)
        memcpy(C + r * ldc, t + r * s->nr, (size_t)cols * sizeof *t);
}

/* Sharded mode (repro_gemm_sharded): the tile's K range is shards of S;
 * the register tile (simd.h: gemm_tile_shards) sums each shard from +0
 * (ascending k within the shard) and adds the partials in shard order,
 * total = P0 then total + P1 ...; C becomes total, or C + total with
 * accumulate. A full-width tile without accumulate keeps total in C
 * itself; otherwise total lives in an L1 buffer and C is read and written
 * once. */
static void run_tile_sharded(const repro_simd *s, long kc, int S, const float *Ap,
                             const float *Bp, long ldb, float *C, long ldc, int rows, int cols,
                             int accumulate)
{
    if (!accumulate && cols == s->nr) {
        s->gemm_tile_shards[rows](kc, S, Ap, Bp, ldb, C, ldc);
        return;
    }
    float total[REPRO_MR_MAX * REPRO_NR_MAX];
    int nr = s->nr; /* a multiple of 4 on every path */
    s->gemm_tile_shards[rows](kc, S, Ap, Bp, ldb, total, nr);
    for (int r = 0; r < rows; r++) {
        float *c = C + r * ldc;
        const float *t = total + r * nr;
        if (!accumulate) {
            repro_fcopy(c, t, cols);
            continue;
        }
        int j = 0;
        for (; j + 4 <= cols; j += 4)
            v4_store(c + j, v4_load(c + j) + v4_load(t + j));
        for (; j < cols; j++)
            c[j] = c[j] + t[j];
    }
}

/* Panel p of M rows cut into np panels as evenly as can be (the first M %
 * np one row taller), np = ceil(M / mr): every panel runs on a tile of its
 * own height, so no lane multiplies a zero row. */
static int panel_rows(long M, long np, long p)
{
    return (int)(M / np + (p < M % np));
}

/* The first row of panel p (panel_rows' cut). */
static long panel_start(long M, long np, long p)
{
    return p * (M / np) + lmin(p, M % np);
}

/* A short K whose B fits in L1 (the logits' backward data: K = 10, B 10 x
 * 128 read in place): each panel of A runs its whole row of full-width
 * tiles in one call (simd.h: gemm_strip_rows), without the engine's
 * per-tile decisions and the tile's set-up each time, which for 10 k-steps
 * cost about half as much as the products. Only the loop nest differs from
 * gemm_serial_ex: every element's sum is the same, in the same order. */
static void gemm_strips(const repro_simd *s, int M, long np, long nt, int K, const float *A,
                        long lda, const float *B, long ldb, float *C, long ldc, const float *bias,
                        int accumulate)
{
    static const float zeros[REPRO_NR_MAX]; /* +0 */
    const float *init = accumulate ? NULL : bias ? bias : zeros;
    long istep = bias && !accumulate ? s->nr : 0;
    for (long p = 0; p < np; p++) {
        long m0 = panel_start(M, np, p);
        s->gemm_strip_rows[panel_rows(M, np, p)](nt, K, A + m0 * lda, lda, B, ldb, C + m0 * ldc,
                                                 ldc, init, istep);
    }
}

/* A sharded gradient of fewer than 4 panels (the logits' weight gradient:
 * 10 rows) with B's rows read in place, as gemm_serial_ex would read them:
 * each packed panel runs its whole row of nt full-width tiles in one call
 * (simd.h: gemm_strip_shards), C written, never read. The same sums, in
 * the same shard order, as the engine's own loop. */
static void gemm_shard_strips(const repro_simd *s, int M, long np, long nt, int K,
                              const float *A, long a_rs, long a_cs, const float *B, long ldb,
                              float *C, long ldc, int shard)
{
    float *Ap = repro_scratch(REPRO_SCRATCH_GEMM_A, (size_t)KC * M);
    if (!Ap) {
        gemm_plain_sharded(M, (int)(nt * s->nr), K, A, a_rs, a_cs, B, ldb, 1, C, ldc, shard, 0);
        return;
    }
    for (long p = 0; p < np; p++) {
        long m0 = panel_start(M, np, p);
        int rows = panel_rows(M, np, p);
        pack_a(A, a_rs, a_cs, m0, rows, 0, K, Ap);
        s->gemm_strip_shards[rows](nt, K, shard, Ap, B, ldb, C + m0 * ldc, ldc);
    }
}

/* The most floats of B (K x N) for gemm_strips: half of a 32 KiB L1. */
#define STRIP_MAX_B 4096

/* The serial engine, B(k, n) = B[k*b_rs + n*b_cs]. Loops as BLIS orders
 * them: per K block and group of up to MC_PANELS panels of A (packed once
 * for the group, or read in place), per nr-wide tile of B (packed: kc x
 * nr contiguous, so it stays in L1 whatever B's row stride; a row stride
 * of 1 KiB mapped a B read in place onto 4 of L1's 64 sets), every panel
 * of the group. Where B's rows are contiguous, a full-width tile is read
 * in place beside an A read in place, or by fewer than 4 packed panels
 * (measured on the mlp's and cnn's shapes: the copy paid where a packed A
 * streams past many panels, the weight gradients, and lost elsewhere). */
static void gemm_serial_ex(int M, int N, int K, const float *A, long a_rs, long a_cs,
                           const float *B, long b_rs, long b_cs, float *C, long ldc,
                           const float *bias, int accumulate, int shard)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {
        if (!accumulate)
            write_init(M, N, C, ldc, bias);
        return;
    }
    /* Without accumulate the first K block's tiles start their sums from
     * the bias or +0 in registers (the same start write_init would store),
     * sharded tiles from their first shard: C is written, never read. */
    const repro_simd *s = repro_simd_get();
    /* a row-major A is read in place (each row its own stream: at most
     * mr_rows of them); a transposed one, or any under shards, packed */
    int in_place = !shard && a_cs == 1 && a_rs != 1;
    int mr = in_place ? s->mr_rows : s->mr, nr = s->nr;
    long np = (M + mr - 1) / mr;
    /* strips: B's rows in place, one K block, at least one full-width tile */
    int strips = b_cs == 1 && K <= KC && N >= nr;
    int rows_strips = strips && in_place && (long)K * N <= STRIP_MAX_B;
    if (rows_strips || (strips && shard && !accumulate && np < 4)) {
        long nt = N / nr; /* the full-width tiles in strips, the rest below */
        if (rows_strips)
            gemm_strips(s, M, np, nt, K, A, a_rs, B, b_rs, C, ldc, bias, accumulate);
        else
            gemm_shard_strips(s, M, np, nt, K, A, a_rs, a_cs, B, b_rs, C, ldc, shard);
        if (nt * nr < N)
            gemm_serial_ex(M, (int)(N - nt * nr), K, A, a_rs, a_cs, B + nt * nr, b_rs, b_cs,
                           C + nt * nr, ldc, bias ? bias + nt * nr : NULL, accumulate, shard);
        return;
    }
    /* panels per group: a packed group stays in L2; an A read in place is
     * no copy, and a sharded one (a weight gradient: K is one batch) is
     * small, so their groups are larger (the B tile packed fewer times) */
    long gp = in_place ? MC_PANELS_IN_PLACE : shard ? MC_PANELS_SHARDED : MC_PANELS;
    long group = lmin(np, gp) * mr;
    float *Ap = in_place ? NULL : repro_scratch(REPRO_SCRATCH_GEMM_A, (size_t)KC * group);
    float *Bp = repro_scratch(REPRO_SCRATCH_GEMM_B, (size_t)KC * nr);
    if ((!in_place && !Ap) || !Bp) {
        if (shard)
            gemm_plain_sharded(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, shard, accumulate);
        else
            gemm_plain(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc);
        return;
    }
    for (long k0 = 0; k0 < K; k0 += KC) {
        long kc = lmin(KC, K - k0);
        for (long g0 = 0; g0 < np; g0 += gp) {
            long g1 = lmin(np, g0 + gp), gm0 = panel_start(M, np, g0);
            /* each panel's first row and height, once */
            long pm0[MC_PANELS_IN_PLACE];
            int prows[MC_PANELS_IN_PLACE];
            for (long p = g0; p < g1; p++) {
                pm0[p - g0] = panel_start(M, np, p);
                prows[p - g0] = panel_rows(M, np, p);
                if (!in_place)
                    pack_a(A, a_rs, a_cs, pm0[p - g0], prows[p - g0], k0, kc,
                           Ap + (pm0[p - g0] - gm0) * kc);
            }
            for (long n = 0; n < N; n += nr) {
                int cols = (int)lmin(nr, N - n);
                static const float zeros[REPRO_NR_MAX]; /* +0 */
                float padded[REPRO_NR_MAX];
                const float *init = NULL;
                if (k0 == 0 && !accumulate && !shard) {
                    init = bias ? bias + n : zeros;
                    if (bias && cols < nr) {
                        memcpy(padded, bias + n, (size_t)cols * sizeof *padded);
                        memset(padded + cols, 0, (size_t)(nr - cols) * sizeof *padded);
                        init = padded;
                    }
                }
                const float *bt = Bp;
                long ldbt = nr;
                if (b_cs == 1 && cols == nr && (in_place || g1 - g0 < 4))
                    bt = B + k0 * b_rs + n, ldbt = b_rs;
                else
                    pack_b(s, B, b_rs, b_cs, k0, kc, n, cols, nr, Bp);
                for (long p = 0; p < g1 - g0; p++) {
                    float *c = C + pm0[p] * ldc + n;
                    const float *at = in_place ? A + pm0[p] * a_rs + k0 : Ap + (pm0[p] - gm0) * kc;
                    if (shard)
                        run_tile_sharded(s, kc, shard, at, bt, ldbt, c, ldc, prows[p], cols,
                                         accumulate);
                    else
                        run_tile(s, kc, at, in_place ? a_rs : 0, bt, ldbt, c, ldc, prows[p],
                                 cols, init);
                }
            }
        }
    }
}

/* The same C computed as its transpose, C^T = B^T A^T, in a per-thread
 * buffer T (N x M), then copied into C: the lanes run along M. Each
 * element's sum is the same: its start value (C^T, bias[n] along T's row,
 * or +0), then the products A(m, k) * B(k, n) = B(k, n) * A(m, k) (IEEE
 * multiplication commutes) in ascending k; sharded, the same shards in
 * the same order. Chosen by transposed_faster. */
static void gemm_serial_transposed(int M, int N, int K, const float *A, long a_rs, long a_cs,
                                   const float *B, long b_rs, long b_cs, float *C, long ldc,
                                   const float *bias, int accumulate, int shard)
{
    float *T = M > 0 && N > 0 ? repro_scratch(REPRO_SCRATCH_GEMM_T, (size_t)M * N) : NULL;
    if (!T) {
        gemm_serial_ex(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, bias, accumulate, shard);
        return;
    }
    const repro_simd *s = repro_simd_get();
    if (accumulate)
        s->transpose(C, ldc, N, M, T, M);
    else if (!shard)
        for (long n = 0; n < N; n++) {
            v4f v = v4_splat(bias ? bias[n] : 0.0f);
            float *t = T + n * M;
            long m = 0;
            for (; m + 4 <= M; m += 4)
                v4_store(t + m, v);
            for (; m < M; m++)
                t[m] = v[0];
        }
    gemm_serial_ex(N, M, K, B, b_cs, b_rs, A, a_cs, a_rs, T, M, NULL, shard ? accumulate : 1,
                   shard);
    s->transpose(T, M, M, N, C, ldc);
}

/* Whether C^T = B^T A^T is the cheaper way for this shape on this path, in
 * a rough count of vector multiply-adds: the lanes a tile fills (N in
 * whole tiles of nr columns one way, M the other), plus half a one per
 * float a transposing pack copies (a B read across k: linear's weights;
 * turned, an A read across m) and two per float of C turned around and
 * back (fitted to the mlp's and cnn's shapes on AVX2 and AVX-512). Only
 * speed depends on it: both ways give the same bits. */
static int transposed_faster(const repro_simd *s, long M, long N, long K, long a_rs, long b_cs)
{
    long nr = s->nr, lanes = s->lanes;
    double normal = (double)M * ((N + nr - 1) / nr * nr / lanes) * K;
    double turned = (double)N * ((M + nr - 1) / nr * nr / lanes) * K;
    if (b_cs != 1)
        normal += 0.5 * K * N;
    if (a_rs != 1)
        turned += 0.5 * K * M;
    turned += 2.0 * M * N;
    return turned < normal;
}

void repro_gemm_serial(int M, int N, int K, const float *A, long a_rs, long a_cs,
                       const float *B, long ldb, float *C, long ldc, const float *bias,
                       int accumulate)
{
    gemm_serial_ex(M, N, K, A, a_rs, a_cs, B, ldb, 1, C, ldc, bias, accumulate, 0);
}

typedef struct {
    int M, N, K;
    const float *A;
    long a_rs, a_cs;
    const float *B;
    long b_rs, b_cs;
    float *C;
    long ldc;
    const float *bias;
    int accumulate;
    long row_block, col_block, col_chunks;
    int shard;      /* sharded mode's S, or 0 */
    int transposed; /* each block computed as its transpose (transposed_faster) */
} gemm_ctx;

static void gemm_chunk(void *vctx, long chunk)
{
    const gemm_ctx *g = vctx;
    long m0 = (chunk / g->col_chunks) * g->row_block;
    long n0 = (chunk % g->col_chunks) * g->col_block;
    int rows = (int)lmin(g->row_block, g->M - m0), cols = (int)lmin(g->col_block, g->N - n0);
    (g->transposed ? gemm_serial_transposed : gemm_serial_ex)(rows, cols, g->K, g->A + m0 * g->a_rs, g->a_rs, g->a_cs, g->B + n0 * g->b_cs,
                   g->b_rs, g->b_cs, g->C + m0 * g->ldc + n0, g->ldc,
                   g->bias ? g->bias + n0 : NULL, g->accumulate, g->shard);
}

/* Blocks of C: whole tiles, rows split evenly in up to MC_PANELS-panel
 * blocks; on one thread every column in one block (each row block's A
 * packed once); on more, columns in NC_PANELS-panel blocks, narrower when
 * that leaves fewer chunks than `want` and the work is worth sharing: 8
 * per thread, so the last
 * chunk a thread finishes is short and the other waits little for it
 * (MLP at 2 threads: 4 -> 16 chunks, +7% steps/s; 32 was slower). Only
 * speed depends on them (each element's order never does). */
static void gemm_run(repro_pool *pool, int M, int N, int K, const float *A, long a_rs,
                     long a_cs, const float *B, long b_rs, long b_cs, float *C, long ldc,
                     const float *bias, int accumulate, int shard)
{
    if (M <= 0 || N <= 0)
        return;
    const repro_simd *s = repro_simd_get();
    /* Small products on the calling thread, cut as on one thread: the cnn's
     * classifier (64 x 10 x 400 three ways) took 43 us a step on one thread
     * and 63 on two, its operands having been written on both cores. */
    if ((double)M * N * K < SHARE_MIN_MACS)
        pool = NULL;
    long threads = repro_pool_threads(pool), want = threads > 1 ? 8 * threads : 1;
    /* A weight gradient on one thread: up to MC_PANELS_SHARDED panels in one
     * row block, so B (the layer's input, x) is read and packed once, not
     * once per 16 panels, each time from L3 after the gradient's own stores
     * evicted it (fc1: 256 rows, 3 reads of x's 200 KB before) */
    long mc = shard && threads <= 1 ? MC_PANELS_SHARDED : MC_PANELS;
    long mr = s->mr, nr = s->nr, nc = nr * NC_PANELS;
    long row_blocks = (M + mr * mc - 1) / (mr * mc);
    long rows = (M + row_blocks - 1) / row_blocks;
    rows = (rows + mr - 1) / mr * mr;
    if (threads <= 1) /* one block of columns: A packed once per row block */
        nc = (N + nr - 1) / nr * nr;
    long have = row_blocks * ((N + nc - 1) / nc);
    if (have < want && (double)M * N * K >= 1e5) { /* narrower column blocks */
        long per = (N + want / row_blocks - 1) / (want / row_blocks > 0 ? want / row_blocks : 1);
        nc = per < nr ? nr : (per + nr - 1) / nr * nr;
    }
    gemm_ctx g = {M, N, K < 0 ? 0 : K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, bias, accumulate,
                  rows, nc, (N + nc - 1) / nc, shard,
                  transposed_faster(s, lmin(rows, M), lmin(nc, N), K, a_rs, b_cs)};
    long nchunks = ((M + rows - 1) / rows) * g.col_chunks;
    repro_pool_run(pool, nchunks, gemm_chunk, &g);
}

void repro_gemm_ex(repro_pool *pool, int M, int N, int K, const float *A, long a_rs, long a_cs,
                   const float *B, long b_rs, long b_cs, float *C, long ldc, const float *bias,
                   int accumulate)
{
    gemm_run(pool, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, bias, accumulate, 0);
}

void repro_gemm_sharded(repro_pool *pool, int M, int N, int K, int S, const float *A, long a_rs,
                        long a_cs, const float *B, long ldb, float *C, long ldc, int accumulate)
{
    if (K > KC || S < 1 || K % S) { /* one K block of whole shards; else the reference */
        if (M > 0 && N > 0)
            gemm_plain_sharded(M, N, K, A, a_rs, a_cs, B, ldb, 1, C, ldc, S < 1 ? 1 : S,
                               accumulate);
        return;
    }
    gemm_run(pool, M, N, K, A, a_rs, a_cs, B, ldb, 1, C, ldc, NULL, accumulate, S);
}

void repro_gemm(repro_pool *pool, int M, int N, int K,
                const float *A, long a_rs, long a_cs,
                const float *B, long ldb,
                float *C, long ldc, const float *bias, int accumulate)
{
    repro_gemm_ex(pool, M, N, K, A, a_rs, a_cs, B, ldb, 1, C, ldc, bias, accumulate);
}
