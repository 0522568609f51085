/* The shard rule and data parallelism inside the trainer (see
 * train_dist.h). */
#include "core/train_dist.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/dist.h"
#include "core/tp.h"
#include "repro/digest.h"
#include "util/error.h"

/* Rank 0's copy of the global batch: what one process would hold. */
struct repro_train_global {
    repro_batch batch;
    uint32_t *ids;
    float *x, *logits, *features;
    int32_t *y;
    char *tmp; /* the gathered rows, rank-major, before they are put in shard order */
};

static int nshards_global(const repro_trainer *t)
{
    int S = t->cfg.train_shard_size;
    return S ? t->cfg.train_batch_size / S : 1;
}

/* The data-parallel reduce behind the model's hook. */
static int reduce_dist(void *ctx, const float *slots, int nlocal, long n, float *out)
{
    repro_trainer *t = ctx;
    return repro_dist_reduce_shards(t->dist, t->cfg.variant_allreduce, slots, nlocal, n, out,
                                    t->reduce_scratch);
}

static int global_alloc(repro_trainer *t)
{
    long B = t->cfg.train_batch_size, width = t->model.layers[t->model.nlayers - 1].in_c;
    struct repro_train_global *g = calloc(1, sizeof *g);
    t->global = g;
    if (!g)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    g->ids = malloc((size_t)B * sizeof(uint32_t));
    g->x = malloc((size_t)B * REPRO_IMG_PIXELS * sizeof(float));
    g->y = malloc((size_t)B * sizeof(int32_t));
    g->logits = malloc((size_t)B * REPRO_CLASSES * sizeof(float));
    g->features = malloc((size_t)B * (size_t)width * sizeof(float));
    long widest = width > REPRO_IMG_PIXELS ? width : REPRO_IMG_PIXELS;
    g->tmp = malloc((size_t)B * (size_t)widest * sizeof(float));
    if (!g->ids || !g->x || !g->y || !g->logits || !g->features || !g->tmp)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    return 0;
}

int repro_train_shards_setup(repro_trainer *t)
{
    const repro_config *c = &t->cfg;
    int S = c->train_shard_size, N = t->world, nS = nshards_global(t);
    t->shard_loss = calloc((size_t)nS, sizeof(double));
    if (!t->shard_loss)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (S == 0)
        return 0;
    if (repro_model_set_shards(&t->model, S, nS / N, t->rank, N))
        return -1;
    if (!t->dist)
        return 0;
    if (!t->model.be->host_memory)
        return repro_error_set(REPRO_EUNSUPPORTED,
                               "%s: data parallel (ranks) runs on host-memory backends only "
                               "(backend = cpu)",
                               c->path);
    long largest = 0;
    for (int j = 0; j + 1 < t->model.nparams; j += 2) {
        long n = t->model.params[j].numel + t->model.params[j + 1].numel;
        largest = n > largest ? n : largest;
    }
    t->reduce_scratch = malloc((size_t)(largest * (nS > 2 ? nS : 2)) * sizeof(float));
    if (!t->reduce_scratch)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    t->model.reduce = reduce_dist;
    t->model.reduce_ctx = t;
    return N > 1 && t->rank == 0 ? global_alloc(t) : 0;
}

void repro_train_shards_free(repro_trainer *t)
{
    struct repro_train_global *g = t->global;
    if (g) {
        free(g->ids);
        free(g->x);
        free(g->y);
        free(g->logits);
        free(g->features);
        free(g->tmp);
        free(g);
    }
    free(t->shard_loss);
    free(t->reduce_scratch);
    t->global = NULL;
    t->shard_loss = NULL;
    t->reduce_scratch = NULL;
}

int repro_train_loss(repro_trainer *t, const float *logits, int B, double *loss)
{
    repro_model *m = &t->model;
    int S = t->cfg.train_shard_size, C = REPRO_CLASSES;
    if (S == 0) {
        *loss = m->be->softmax_xent_forward(m->be_ctx, logits, t->labels, t->probs, B, C);
        return 0;
    }
    int nq = B / S, N = t->world, nS = nq * N;
    double local[nq];
    for (int q = 0; q < nq; q++)
        local[q] = m->be->softmax_xent_forward(m->be_ctx, logits + (long)q * S * C,
                                               t->labels + (long)q * S,
                                               t->probs + (long)q * S * C, S, C);
    if (N == 1) {
        memcpy(t->shard_loss, local, sizeof local);
    } else {
        double all[nS]; /* rank-major: rank r's local shard q is shard q * N + r */
        if (repro_dist_allgather(t->dist, local, sizeof local, all))
            return -1;
        for (int r = 0; r < N; r++)
            for (int q = 0; q < nq; q++)
                t->shard_loss[q * N + r] = all[r * nq + q];
    }
    double sum = t->shard_loss[0];
    for (int s = 1; s < nS; s++)
        sum += t->shard_loss[s];
    *loss = nS == 1 ? sum : sum / nS;
    return 0;
}

void repro_train_loss_grad(repro_trainer *t, int B)
{
    repro_model *m = &t->model;
    int S = t->cfg.train_shard_size, C = REPRO_CLASSES;
    if (S == 0) {
        m->be->softmax_xent_backward(m->be_ctx, t->probs, t->labels, t->dlogits, B, C);
        return;
    }
    for (int q = 0; q < B / S; q++)
        m->be->softmax_xent_backward(m->be_ctx, t->probs + (long)q * S * C,
                                     t->labels + (long)q * S, t->dlogits + (long)q * S * C, S, C);
    int nS = nshards_global(t);
    if (nS > 1) /* the mean over shards of each shard's mean */
        m->be->div_scalar(m->be_ctx, t->dlogits, (long)B * C, (float)nS);
}

/* Gathers `rowbytes` per row of every rank's b rows into rank 0's dst in
 * global shard order: rank r's row q * S + j is global row (q * N + r) * S + j. */
static int gather_rows(repro_trainer *t, const void *src, size_t rowbytes, int b, void *dst)
{
    struct repro_train_global *g = t->global;
    if (repro_dist_gather(t->dist, src, rowbytes * (size_t)b, g ? g->tmp : NULL))
        return -1;
    if (!g)
        return 0;
    int S = t->cfg.train_shard_size, N = t->world, nq = b / S;
    for (int r = 0; r < N; r++)
        for (int q = 0; q < nq; q++)
            memcpy((char *)dst + (size_t)((q * N + r) * S) * rowbytes,
                   g->tmp + ((size_t)r * b + (size_t)q * S) * rowbytes, rowbytes * (size_t)S);
    return 0;
}

int repro_train_gather_global(repro_trainer *t, const repro_batch *b, const float **features,
                              const int32_t **labels, int *rows)
{
    repro_model *m = &t->model;
    int width = m->layers[m->nlayers - 1].in_c;
    *features = m->act[m->nlayers - 1];
    *labels = t->labels;
    *rows = b->size;
    t->batch = b;
    if (t->world < 2)
        return 0;
    struct repro_train_global *g = t->global;
    if (gather_rows(t, b->ids, sizeof(uint32_t), b->size, g ? g->ids : NULL) ||
        gather_rows(t, b->x, REPRO_IMG_PIXELS * sizeof(float), b->size, g ? g->x : NULL) ||
        gather_rows(t, b->y, sizeof(int32_t), b->size, g ? g->y : NULL) ||
        gather_rows(t, m->act[m->nlayers], REPRO_CLASSES * sizeof(float), b->size,
                    g ? g->logits : NULL) ||
        gather_rows(t, *features, (size_t)width * sizeof(float), b->size,
                    g ? g->features : NULL))
        return -1;
    if (!g)
        return 0;
    g->batch = *b;
    g->batch.size = t->cfg.train_batch_size;
    g->batch.ids = g->ids;
    g->batch.x = g->x;
    g->batch.y = g->y;
    t->batch = &g->batch;
    t->logits_view = g->logits;
    *features = g->features;
    *labels = g->y;
    *rows = g->batch.size;
    return 0;
}

/* The first element where a and b differ, and how many do. */
static long first_difference(const uint32_t *a, const uint32_t *b, long n, long *count)
{
    long first = -1;
    *count = 0;
    for (long i = 0; i < n; i++)
        if (a[i] != b[i]) {
            if (first < 0)
                first = i;
            ++*count;
        }
    return first;
}

static int report_drift(repro_trainer *t, long step, int rank, int j)
{
    const repro_param *p = &t->model.params[j];
    size_t bytes = (size_t)p->numel * sizeof(float);
    uint32_t *theirs = t->rank == 0 ? malloc(bytes) : NULL;
    if (t->rank == 0 && !theirs)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (repro_dist_send_to_root(t->dist, rank, p->data, theirs, bytes)) {
        free(theirs);
        return -1;
    }
    if (t->rank != 0)
        return repro_error_set(REPRO_EMISMATCH, "replica drift after step %ld (rank 0 reports it)",
                               step);
    long count, i = first_difference(theirs, (const uint32_t *)p->data, p->numel, &count);
    uint32_t ours = i >= 0 ? ((const uint32_t *)p->data)[i] : 0, other = i >= 0 ? theirs[i] : 0;
    float fo, ft;
    memcpy(&fo, &ours, 4);
    memcpy(&ft, &other, 4);
    free(theirs);
    return repro_error_set(REPRO_EMISMATCH,
                           "replica drift: after step %ld's update, rank %d's param.%s left rank "
                           "0's: %ld of %ld elements differ, the first [%ld] is %.9g (0x%08x) on "
                           "rank %d and %.9g (0x%08x) on rank 0. Every rank applies the same "
                           "summed gradient, so a replica that leaves the others was changed "
                           "outside the all-reduce (memory corruption, a rank-local update, or "
                           "an injected fault)",
                           step, rank, p->name, count, p->numel, i, (double)ft, other, rank,
                           (double)fo, ours);
}

int repro_train_check_replicas(repro_trainer *t, long step)
{
    if (!t->dist)
        return 0;
    repro_model *m = &t->model;
    int np = m->nparams, N = t->world;
    repro_digest mine[REPRO_MAX_PARAMS] = {{{0}}}, *all = malloc((size_t)np * (size_t)N * sizeof(repro_digest));
    if (!all)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int j = 0; j < np; j++) {
        repro_param *p = &m->params[j];
        char name[48];
        snprintf(name, sizeof name, "param.%s", p->name);
        size_t bytes = (size_t)p->numel * sizeof(float);
        repro_fault_apply_replica(&t->fault, t->rank, step, name, p->data, bytes);
        if (repro_sha256(p->data, bytes, &mine[j])) {
            free(all);
            return -1;
        }
    }
    if (repro_dist_allgather(t->dist, mine, (size_t)np * sizeof(repro_digest), all)) {
        free(all);
        return -1;
    }
    /* the first tensor, in parameter order, where some rank left rank 0 */
    for (int j = 0; j < np; j++)
        for (int r = 1; r < N; r++)
            if (memcmp(&all[(size_t)r * np + j], &all[j], sizeof(repro_digest))) {
                free(all);
                return report_drift(t, step, r, j);
            }
    free(all);
    return 0;
}

int repro_train_rank_stats(repro_trainer *t, double seconds, double *all_seconds,
                           long *all_rss_kib)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss = ru.ru_maxrss;
    if (!t->dist) {
        all_seconds[0] = seconds;
        all_rss_kib[0] = rss;
        return 0;
    }
    return repro_dist_gather(t->dist, &seconds, sizeof seconds, all_seconds) ||
                   repro_dist_gather(t->dist, &rss, sizeof rss, all_rss_kib)
               ? -1
               : 0;
}

int repro_train_tp_groups(repro_trainer *t, struct repro_dist *job)
{
    int tp = t->cfg.parallel_tp;
    if (tp == 1)
        return 0;
    int size = repro_dist_size(job), p = repro_dist_rank(job);
    if (!job || size % tp)
        return repro_error_set(REPRO_EINVAL,
                               "%s: tp = %d needs an MPI job of ranks x tp processes (repro run "
                               "--tp %d starts one); this one has %d",
                               t->cfg.path, tp, tp, job ? size : 1);
    if (repro_dist_split(job, p / tp, p % tp, &t->tp_group) ||
        repro_dist_split(job, p % tp, p / tp, &t->dp_group))
        return -1;
    t->dist = size / tp > 1 ? t->dp_group : NULL;
    t->rank = repro_dist_rank(t->dp_group);
    t->world = repro_dist_size(t->dp_group);
    return 0;
}

int repro_train_tp_attach(repro_trainer *t)
{
    if (!t->tp_group)
        return 0;
    return repro_tp_attach(&t->model, t->tp_group, t->cfg.variant_linear_tp_reduce);
}

void repro_train_tp_free(repro_trainer *t)
{
    repro_tp_detach(&t->model);
    repro_dist_free_sub(t->tp_group);
    repro_dist_free_sub(t->dp_group);
    t->tp_group = t->dp_group = NULL;
}
