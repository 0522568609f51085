/* The shard rule's setup and its one-process sum (see model.h,
 * repro_model_set_shards): the same sum the data-parallel reduce
 * (core/dist.h) computes across ranks, so that one process and N give the
 * same bits. */
#include "core/model.h"

#include "util/error.h"

/* One process holds every shard: out = p0, then out = out + p_q in order,
 * with the backend's elementwise add (y = y + x, never fused). */
static int reduce_local(void *ctx, const float *slots, int nlocal, long n, float *out)
{
    repro_model *m = ctx;
    m->be->copy_d2d(m->be_ctx, out, slots, (size_t)n * sizeof(float));
    for (int q = 1; q < nlocal; q++)
        m->be->add(m->be_ctx, out, slots + (long)q * n, n);
    return 0;
}

int repro_model_set_shards(repro_model *m, int rows, int nshards, int first, int stride)
{
    if (rows < 1 || nshards < 1 || (long)rows * nshards > m->capacity)
        return repro_error_set(REPRO_EINVAL, "%d shards of %d samples do not fit a batch of %d",
                               nshards, rows, m->capacity);
    long largest = 0; /* one layer's dw + db */
    for (int i = 0; i < m->nlayers; i++) {
        const repro_layer *l = &m->layers[i];
        if (l->param >= 0) {
            long n = m->params[l->param].numel + m->params[l->param + 1].numel;
            largest = n > largest ? n : largest;
        }
    }
    m->shard_rows = rows;
    m->nshards = nshards;
    m->shard_first = first;
    m->shard_stride = stride;
    m->shard_slots = m->be->alloc(m->be_ctx, (size_t)(largest * nshards + 1) * sizeof(float));
    m->shard_sum = m->be->alloc(m->be_ctx, (size_t)(largest + 1) * sizeof(float));
    if (!m->shard_slots || !m->shard_sum)
        return repro_error_set(REPRO_ENOMEM, "out of memory for %d gradient shards", nshards);
    m->reduce = reduce_local;
    m->reduce_ctx = m;
    return 0;
}
