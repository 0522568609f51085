/* torch.optim.SGD's update (dampening 0, no Nesterov), elementwise in float.
 * Determinism argument: each parameter's update reads and writes only its
 * own p, g, buf, in the fixed expression order below (PyTorch's kernels:
 * add with alpha is a + alpha*b, product rounded then added), and chunks are
 * fixed 16384-element ranges, so threads and vector width change nothing.
 * The per-element update is kernels/shared/optim.h, which the CUDA kernel
 * compiles too. */
#include "ops.h"

#include "kernels/shared/optim.h"

enum { CHUNK = 16384 };

typedef struct {
    float *p, *buf;
    const float *g;
    long n;
    float lr, momentum, wd;
    int first_step;
} sgd_ctx;

static void sgd_chunk(void *vctx, long chunk)
{
    const sgd_ctx *c = vctx;
    long i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    for (long i = chunk * CHUNK; i < i1; i++)
        repro_hd_sgd(&c->p[i], c->g[i], &c->buf[i], c->lr, c->momentum, c->wd, c->first_step);
}

void repro_sgd_step(repro_pool *pool, float *p, const float *g, float *buf, long n,
                    float lr, float momentum, float wd, int first_step)
{
    sgd_ctx c = {p, buf, g, n, lr, momentum, wd, first_step};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, sgd_chunk, &c);
}
