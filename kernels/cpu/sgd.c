/* torch.optim.SGD's update (dampening 0, no Nesterov), elementwise in float.
 * Determinism argument: each parameter's update reads and writes only its
 * own p, g, buf, in the fixed expression order below (PyTorch's kernels:
 * add with alpha is a + alpha*b, product rounded then added), and chunks are
 * fixed 16384-element ranges, so threads and vector width change nothing.
 * The per-element update is kernels/shared/optim.h, which the CUDA kernel
 * compiles too; the loop is the vector path's (simd.h: sgd, the same
 * expression per lane). */
#include "ops.h"
#include "simd.h"

enum { CHUNK = 16384 };

typedef struct {
    const repro_simd *simd;
    float *p, *buf;
    const float *g;
    long n;
    float lr, momentum, wd;
    int first_step;
} sgd_ctx;

static void sgd_chunk(void *vctx, long chunk)
{
    const sgd_ctx *c = vctx;
    long i0 = chunk * CHUNK, i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    c->simd->sgd(c->p + i0, c->g + i0, c->buf + i0, i1 - i0, c->lr, c->momentum, c->wd,
                 c->first_step);
}

void repro_sgd_step(repro_pool *pool, float *p, const float *g, float *buf, long n,
                    float lr, float momentum, float wd, int first_step)
{
    sgd_ctx c = {repro_simd_get(), p, buf, g, n, lr, momentum, wd, first_step};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, sgd_chunk, &c);
}
