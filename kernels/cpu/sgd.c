/* torch.optim.SGD's update (dampening 0, no Nesterov), elementwise in float.
 * Determinism argument: each parameter's update reads and writes only its
 * own p, g, buf, in the fixed expression order below (PyTorch's kernels:
 * add with alpha is a + alpha*b, product rounded then added), and chunks are
 * fixed 16384-element ranges, so threads and vector width change nothing. */
#include "ops.h"
#include "vec4.h"

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
    long i = chunk * CHUNK;
    /* Four parameters per step, each lane the scalar expression below. */
    v4f wd = v4_splat(c->wd), mom = v4_splat(c->momentum), lr = v4_splat(c->lr);
    for (; i + 4 <= i1; i += 4) {
        v4f p = v4_load(c->p + i);
        v4f g = v4_load(c->g + i) + wd * p;
        v4f b = c->first_step ? g : mom * v4_load(c->buf + i) + g;
        v4_store(c->buf + i, b);
        v4_store(c->p + i, p - lr * b);
    }
    for (; i < i1; i++) {
        float g = c->g[i] + c->wd * c->p[i];              /* d_p.add(p, alpha=wd) */
        float b = c->first_step ? g : c->momentum * c->buf[i] + g; /* buf.mul_(m).add_(d_p) */
        c->buf[i] = b;
        c->p[i] = c->p[i] - c->lr * b;                    /* p.add_(buf, alpha=-lr) */
    }
}

void repro_sgd_step(repro_pool *pool, float *p, const float *g, float *buf, long n,
                    float lr, float momentum, float wd, int first_step)
{
    sgd_ctx c = {p, buf, g, n, lr, momentum, wd, first_step};
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, sgd_chunk, &c);
}
