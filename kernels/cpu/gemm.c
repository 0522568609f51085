/* repro_gemm: C = init + A*B with a fixed per-element summation order, the
 * engine under linear. Determinism argument: every C element starts from its
 * init and adds its products A(m,k)*B(k,n) one by one in ascending k, each
 * product rounded to float before the add (no FMA: -ffp-contract=off, and
 * the vector code below multiplies then adds). Vectorization and register
 * blocking only ever group *different* C elements (4 rows x 8 columns at a
 * time), never terms of one sum, so SSE2 or any other vector width gives the
 * same bits as the plain triple loop. Chunks are fixed tiles of C (16 rows x
 * 256 columns) that depend only on M and N, each written by one chunk, so
 * the thread count changes nothing (pool.h). */
#include "ops.h"

#include <string.h>

/* GCC/Clang vector extension: elementwise IEEE arithmetic on 4 floats. Used
 * instead of hoping the -O2 auto-vectorizer fires (its cheap cost model
 * rarely does for unknown trip counts); each lane is an independent C
 * element, so the arithmetic is exactly the scalar arithmetic. */
#include "vec4.h"

enum { ROWS_PER_CHUNK = 16, COLS_PER_CHUNK = 256 };

typedef struct {
    int M, N, K;
    const float *A;
    long a_rs, a_cs;
    const float *B;
    long ldb;
    float *C;
    long ldc;
    const float *bias;
    int accumulate;
    long col_chunks;
} gemm_ctx;

/* The start value of C(m, n) (ops.h): C itself, bias[n], or 0. */
static inline float init_of(const gemm_ctx *g, long m, long n)
{
    if (g->accumulate)
        return g->C[m * g->ldc + n];
    return g->bias ? g->bias[n] : 0.0f;
}

static inline v4f init4(const gemm_ctx *g, long m, long n)
{
    if (g->accumulate)
        return v4_load(g->C + m * g->ldc + n);
    return g->bias ? v4_load(g->bias + n) : v4_splat(0.0f);
}

/* 4 rows x 8 columns held in 8 vector registers across the whole k loop. */
static void tile_4x8(const gemm_ctx *g, long m, long n)
{
    const float *a0 = g->A + m * g->a_rs, *a1 = a0 + g->a_rs;
    const float *a2 = a1 + g->a_rs, *a3 = a2 + g->a_rs;
    v4f c00 = init4(g, m, n), c01 = init4(g, m, n + 4);
    v4f c10 = init4(g, m + 1, n), c11 = init4(g, m + 1, n + 4);
    v4f c20 = init4(g, m + 2, n), c21 = init4(g, m + 2, n + 4);
    v4f c30 = init4(g, m + 3, n), c31 = init4(g, m + 3, n + 4);
    const float *b = g->B + n;
    long acs = g->a_cs;
    for (int k = 0; k < g->K; k++, b += g->ldb) {
        v4f b0 = v4_load(b), b1 = v4_load(b + 4);
        v4f x0 = v4_splat(a0[k * acs]), x1 = v4_splat(a1[k * acs]);
        v4f x2 = v4_splat(a2[k * acs]), x3 = v4_splat(a3[k * acs]);
        c00 = c00 + x0 * b0;
        c01 = c01 + x0 * b1;
        c10 = c10 + x1 * b0;
        c11 = c11 + x1 * b1;
        c20 = c20 + x2 * b0;
        c21 = c21 + x2 * b1;
        c30 = c30 + x3 * b0;
        c31 = c31 + x3 * b1;
    }
    float *c = g->C + m * g->ldc + n;
    v4_store(c, c00);
    v4_store(c + 4, c01);
    c += g->ldc;
    v4_store(c, c10);
    v4_store(c + 4, c11);
    c += g->ldc;
    v4_store(c, c20);
    v4_store(c + 4, c21);
    c += g->ldc;
    v4_store(c, c30);
    v4_store(c + 4, c31);
}

/* One row, 4 columns. */
static void tile_1x4(const gemm_ctx *g, long m, long n)
{
    const float *a = g->A + m * g->a_rs;
    v4f c = init4(g, m, n);
    const float *b = g->B + n;
    for (int k = 0; k < g->K; k++, b += g->ldb)
        c = c + v4_splat(a[k * g->a_cs]) * v4_load(b);
    v4_store(g->C + m * g->ldc + n, c);
}

/* One element: the reference order itself. */
static void tile_1x1(const gemm_ctx *g, long m, long n)
{
    const float *a = g->A + m * g->a_rs;
    float c = init_of(g, m, n);
    const float *b = g->B + n;
    for (int k = 0; k < g->K; k++, b += g->ldb) {
        float p = a[k * g->a_cs] * *b;
        c = c + p;
    }
    g->C[m * g->ldc + n] = c;
}

static void gemm_chunk(void *vctx, long chunk)
{
    const gemm_ctx *g = vctx;
    long m0 = (chunk / g->col_chunks) * ROWS_PER_CHUNK;
    long n0 = (chunk % g->col_chunks) * COLS_PER_CHUNK;
    long m1 = m0 + ROWS_PER_CHUNK < g->M ? m0 + ROWS_PER_CHUNK : g->M;
    long n1 = n0 + COLS_PER_CHUNK < g->N ? n0 + COLS_PER_CHUNK : g->N;
    long n8 = n0 + (n1 - n0) / 8 * 8;
    long m4 = m0 + (m1 - m0) / 4 * 4;
    /* Column strips outside, row quads inside: one K x 8 strip of B stays
     * in cache while the chunk's rows sweep over it. */
    for (long n = n0; n < n8; n += 8) {
        long m = m0;
        for (; m < m4; m += 4)
            tile_4x8(g, m, n);
        for (; m < m1; m++) {
            tile_1x4(g, m, n);
            tile_1x4(g, m, n + 4);
        }
    }
    for (long n = n8; n < n1; n++) /* the last < 8 columns */
        for (long m = m0; m < m1; m++)
            tile_1x1(g, m, n);
}

void repro_gemm(repro_pool *pool, int M, int N, int K,
                const float *A, long a_rs, long a_cs,
                const float *B, long ldb,
                float *C, long ldc, const float *bias, int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    gemm_ctx g = {M, N, K < 0 ? 0 : K, A, a_rs, a_cs, B, ldb, C, ldc, bias, accumulate,
                  (N + COLS_PER_CHUNK - 1) / COLS_PER_CHUNK};
    long row_chunks = (M + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK;
    repro_pool_run(pool, row_chunks * g.col_chunks, gemm_chunk, &g);
}
