/* The split-K linear forward (splitk.h): deterministic, not batch-invariant
 * on purpose. The inner loops run across output columns (independent sums),
 * never across the terms of one sum, so each partial is added in ascending
 * input order whatever the compiler vectorizes; pool chunks are fixed blocks
 * of rows, so threads change nothing. Only the number of K chunks, chosen
 * from B, changes the rounding: that is the point. */
#include "splitk.h"

#include "kernels/backend.h"

enum { ROWS_PER_CHUNK = 8, COLS = 256 };

typedef struct {
    const float *x, *wt, *b;
    float *y;
    int B, in, out, nk, klen;
} splitk_ctx;

/* part[o - o0] = init + sum over i in [i0, i1) ascending of x[i] * wt[i][o]. */
static void partial(const splitk_ctx *c, const float *x, int i0, int i1, int o0, int o1,
                    const float *init, float *part)
{
    for (int o = o0; o < o1; o++)
        part[o - o0] = init ? init[o] : 0.0f;
    for (int i = i0; i < i1; i++) {
        float xi = x[i];
        const float *row = c->wt + (long)i * c->out;
        for (int o = o0; o < o1; o++) {
            float p = xi * row[o];
            part[o - o0] = part[o - o0] + p;
        }
    }
}

static void rows_chunk(void *vctx, long chunk)
{
    const splitk_ctx *c = vctx;
    long r0 = chunk * ROWS_PER_CHUNK;
    long r1 = r0 + ROWS_PER_CHUNK < c->B ? r0 + ROWS_PER_CHUNK : c->B;
    float tot[COLS], part[COLS];
    for (long r = r0; r < r1; r++) {
        const float *x = c->x + r * c->in;
        float *y = c->y + r * c->out;
        for (int o0 = 0; o0 < c->out; o0 += COLS) {
            int o1 = o0 + COLS < c->out ? o0 + COLS : c->out;
            /* chunk 0 starts from the bias, the others from +0 */
            partial(c, x, 0, c->klen < c->in ? c->klen : c->in, o0, o1, c->b, tot);
            for (int j = 1; j < c->nk; j++) {
                int i0 = j * c->klen, i1 = i0 + c->klen < c->in ? i0 + c->klen : c->in;
                if (i0 >= c->in)
                    break;
                partial(c, x, i0, i1, o0, o1, NULL, part);
                for (int o = o0; o < o1; o++)
                    tot[o - o0] = tot[o - o0] + part[o - o0];
            }
            for (int o = o0; o < o1; o++)
                y[o] = tot[o - o0];
        }
    }
}

void repro_linear_forward_splitk(repro_pool *pool, const float *x, const float *w,
                                 const float *b, float *y, int B, int in, int out,
                                 float *wt_scratch)
{
    /* w [out][in] -> wt [in][out]: a pure copy, so the column loop above
     * reads contiguous weights */
    for (long o = 0; o < out; o++)
        for (long i = 0; i < in; i++)
            wt_scratch[i * out + o] = w[o * in + i];
    int nk = repro_splitk_chunks(B);
    splitk_ctx c = {x, wt_scratch, b, y, B, in, out, nk, (in + nk - 1) / nk};
    repro_pool_run(pool, (B + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK, rows_chunk, &c);
}
