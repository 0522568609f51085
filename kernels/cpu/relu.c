/* ReLU forward and backward, elementwise. Determinism argument: each element
 * is a pure function of its own inputs (no sums at all), and chunks are fixed
 * ranges of 16384 elements, so neither thread count nor vector width can
 * change a bit. NaN inputs propagate (as torch.relu does); -0 maps to +0. */
#include "ops.h"

#include <string.h>

#include "vec4.h"

enum { CHUNK = 16384 };

typedef struct {
    const float *x, *y, *dy;
    float *out;
    long n;
} relu_ctx;

/* Four lanes at a time: the result's bits are x's where the rule keeps x
 * and all-zero (+0.0f) elsewhere, so a mask gives exactly the scalar
 * answer (no arithmetic at all). */
typedef int v4i __attribute__((vector_size(16)));

static void fwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    long i = chunk * CHUNK;
    for (; i + 4 <= i1; i += 4) {
        v4f v = v4_load(c->x + i);
        v4i keep = (v > 0.0f) | (v != v), bits;
        memcpy(&bits, &v, sizeof bits);
        bits &= keep;
        memcpy(&v, &bits, sizeof v);
        v4_store(c->out + i, v);
    }
    for (; i < i1; i++) {
        float v = c->x[i];
        c->out[i] = (v > 0.0f || v != v) ? v : 0.0f;
    }
}

static void bwd_chunk(void *vctx, long chunk)
{
    const relu_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    long i = chunk * CHUNK;
    for (; i + 4 <= i1; i += 4) {
        v4f d = v4_load(c->dy + i);
        v4i bits;
        memcpy(&bits, &d, sizeof bits);
        bits &= v4_load(c->y + i) > 0.0f;
        memcpy(&d, &bits, sizeof d);
        v4_store(c->out + i, d);
    }
    for (; i < i1; i++)
        c->out[i] = c->y[i] > 0.0f ? c->dy[i] : 0.0f;
}

void repro_relu_forward(repro_pool *pool, const float *x, float *y, long n)
{
    relu_ctx c = {.x = x, .out = y, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, fwd_chunk, &c);
}

void repro_relu_backward(repro_pool *pool, const float *y, const float *dy, float *dx, long n)
{
    relu_ctx c = {.y = y, .dy = dy, .out = dx, .n = n};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, bwd_chunk, &c);
}
