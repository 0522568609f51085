/* The data loader (see loader.h): shuffles, batches and augments a dataset
 * with worker threads, delivering batches in sampler order.
 *
 * Determinism: the only order-dependent state is the shuffle generator, and
 * only the consumer's thread touches it (per epoch: base_seed, then the
 * permutation). Which worker fills a batch is fixed (batch k of an epoch ->
 * worker k % W) and each worker consumes its own RNG over its own batches in
 * order, so thread scheduling never changes a bit; only the worker count
 * does, and only in augment_seed = worker mode, as in PyTorch.
 *
 * Cooperative mode (repro_loader_set_cooperative) keeps the workers and their order but
 * runs no threads: loader_coop.c. What a batch holds, row by row, is
 * loader_fill.c's, the same whoever fills it.
 *
 * Threads follow PyTorch's non-persistent workers: a fresh set per epoch,
 * started when the consumer asks for the epoch's first batch and joined when
 * it asks for the next epoch's. Each epoch has a ring of W * prefetch slots;
 * batch k goes to slot k % nslots, and a worker waits until the batch that
 * last used that slot has been released by the consumer before refilling it,
 * so at most W * prefetch batches are in flight (being filled, ready, or held
 * by the caller).
 *
 * Data parallel: every rank runs this same loader on the same permutation
 * and fills only its rows of each global batch (row_position); nothing else
 * about the threads or the ring changes, and slots hold b = B / world rows. */
#include "core/loader.h"
#include "core/loader_impl.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/seeds.h"

#define MAX_WORKERS 64
#define MAX_PREFETCH 256
#define MAX_WORLD 65536 /* repro_seed_derive takes rank < 2^16 */

/* Test hook (not in loader.h on purpose): the most batches that were ever in
 * flight at once, to check the prefetch bound from tests. */
int repro_loader_max_in_flight(repro_loader *l);

int repro_loader_max_in_flight(repro_loader *l)
{
    pthread_mutex_lock(&l->mu);
    int m = l->max_in_flight;
    pthread_mutex_unlock(&l->mu);
    return m;
}

static uint64_t worker_seed(const repro_loader *l, int worker)
{
    return repro_loader_worker_seed(l->base_seed, l->epoch, l->rank, l->world, worker);
}

static void fill_batch(repro_loader *l, slot *s, int k, repro_rng *wrng)
{
    for (int b = 0; b < l->rows; b++)
        repro_loader_fill_row(l, s, k, b, wrng);
    repro_loader_finish_batch(l, s, k);
}

/* The calling worker thread as a batch job to the scheduler (Linux's
 * SCHED_BATCH; a hint, so a refusal is ignored): woken when a slot frees,
 * it no longer preempts a training thread at once, which at 2 training
 * threads on 2 cores stalled the whole step about once a step (context
 * switches 3.3 -> 1.3 a step, mlp and cnn at 2 threads +6%). It still gets
 * its share of the CPU, and far ahead of need: prefetch keeps batches
 * ready. Speed only; batches are the same bits whoever runs when. */
static void prefer_batch_scheduling(void)
{
#ifdef SCHED_BATCH
    struct sched_param sp = {0};
    (void)sched_setscheduler(0, SCHED_BATCH, &sp);
#endif
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    repro_loader *l = w->l;
    prefer_batch_scheduling();
    /* PyTorch's worker seed base_seed + worker id, or per (rank, worker)
     * when data parallel. The epoch fields (perm, base_seed, epoch, first_k)
     * were written before this thread was created. */
    repro_rng rng;
    repro_rng_init(&rng, worker_seed(l, w->id));
    int k = w->id;
    for (; k < l->first_k; k += l->nw) /* resumed mid-epoch: catch the stream up */
        repro_loader_replay_batch(l, k, &rng);
    for (; k < l->bpe; k += l->nw) {
        pthread_mutex_lock(&l->mu);
        while (!l->stop && k >= l->released + l->nslots)
            pthread_cond_wait(&w->slot_cv, &l->mu);
        if (l->stop) {
            pthread_mutex_unlock(&l->mu);
            break;
        }
        repro_loader_count_start(l);
        pthread_mutex_unlock(&l->mu);

        slot *s = &l->slots[k % l->nslots];
        fill_batch(l, s, k, &rng);

        pthread_mutex_lock(&l->mu);
        s->ready_k = k;
        pthread_cond_broadcast(&l->ready_cv);
        pthread_mutex_unlock(&l->mu);
    }
    return NULL;
}

/* Stops and joins the current epoch's workers (they may be blocked). */
static void stop_workers(repro_loader *l, int count)
{
    if (l->coop) {
        repro_loader_coop_stop(l);
        l->running = 0;
        return;
    }
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    for (int i = 0; i < l->nw; i++)
        pthread_cond_broadcast(&l->workers[i].slot_cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < count; i++)
        pthread_join(l->workers[i].thread, NULL);
    l->stop = 0;
    l->running = 0;
}

/* Starts the current epoch's workers from batch first_k (batches before it
 * count as produced and released). */
static int start_threads(repro_loader *l)
{
    l->released = l->first_k;
    l->started = l->first_k;
    for (int s = 0; s < l->nslots; s++)
        l->slots[s].ready_k = -1;
    if (l->nw == 0) {
        repro_rng_init(&l->sync_rng, worker_seed(l, 0));
        for (int k = 0; k < l->first_k; k++)
            repro_loader_replay_batch(l, k, &l->sync_rng);
        return 0;
    }
    if (l->coop) {
        repro_loader_coop_start(l);
        l->running = 1;
        return 0;
    }
    for (int i = 0; i < l->nw; i++) {
        int rc = pthread_create(&l->workers[i].thread, NULL, worker_main, &l->workers[i]);
        if (rc != 0) {
            stop_workers(l, i);
            errno = rc; /* EAGAIN: out of memory or of threads */
            return repro_error_set_errno(REPRO_EIO, "loader: cannot start worker thread %d", i);
        }
    }
    l->running = 1;
    return 0;
}

/* Consumer side: draws the epoch's base_seed and permutation from the
 * shuffle generator (in that order, as PyTorch's sampler does), then starts
 * the workers. */
static int start_epoch(repro_loader *l)
{
    l->epoch++;
    l->next_k = 0;
    l->base_seed = repro_rng_u64(&l->gen);
    int n = l->ds->n;
    if (l->cfg.shuffle) {
        repro_rng_permute(&l->gen, l->perm, (uint32_t)n);
    } else {
        for (int i = 0; i < n; i++)
            l->perm[i] = (uint32_t)i;
    }
    l->first_k = 0;
    return start_threads(l);
}

/* Checks rank, world and shard_size against batch_size (loader.h's rules);
 * on success sets *world (>= 1) and *shard (S). */
static int check_parallel(const repro_loader_config *cfg, int *world, int *shard)
{
    if (cfg->world < 0 || cfg->world > MAX_WORLD)
        return repro_error_set(REPRO_EINVAL, "loader: world %d out of range (must be 0..%d)",
                               cfg->world, MAX_WORLD);
    *world = cfg->world > 1 ? cfg->world : 1;
    if (cfg->rank < 0 || cfg->rank >= *world)
        return repro_error_set(REPRO_EINVAL,
                               "loader: rank %d out of range (must be 0..%d, world %d)", cfg->rank,
                               *world - 1, cfg->world);
    if (cfg->shard_size < 0 || cfg->shard_size > cfg->batch_size ||
        (cfg->shard_size > 0 && cfg->batch_size % cfg->shard_size != 0))
        return repro_error_set(REPRO_EINVAL,
                               "loader: shard_size %d does not divide batch_size %d (the global "
                               "batch)",
                               cfg->shard_size, cfg->batch_size);
    *shard = cfg->shard_size > 0 ? cfg->shard_size : cfg->batch_size;
    int nshards = cfg->batch_size / *shard;
    if (nshards % *world != 0)
        return repro_error_set(REPRO_EINVAL,
                               "loader: world %d does not divide the %d shards of the global "
                               "batch (batch_size %d / shard_size %d)",
                               *world, nshards, cfg->batch_size, *shard);
    return 0;
}

int repro_loader_new(repro_loader **out, const repro_dataset *ds, const repro_loader_config *cfg)
{
    *out = NULL;
    if (!ds || ds->n < 1 || !ds->images || !ds->labels)
        return repro_error_set(REPRO_EINVAL, "loader: empty dataset");
    if (cfg->batch_size < 1 || cfg->batch_size > ds->n)
        return repro_error_set(REPRO_EINVAL,
                               "loader: batch_size %d out of range (must be 1..%d, the dataset size)",
                               cfg->batch_size, ds->n);
    if (cfg->num_workers < 0 || cfg->num_workers > MAX_WORKERS)
        return repro_error_set(REPRO_EINVAL, "loader: num_workers %d out of range (must be 0..%d)",
                               cfg->num_workers, MAX_WORKERS);
    /* As in PyTorch, prefetch only means something with worker threads. */
    if (cfg->num_workers > 0 && (cfg->prefetch < 1 || cfg->prefetch > MAX_PREFETCH))
        return repro_error_set(REPRO_EINVAL, "loader: prefetch %d out of range (must be 1..%d)",
                               cfg->prefetch, MAX_PREFETCH);
    if (cfg->augment_seed != REPRO_AUGMENT_SEED_SAMPLE && cfg->augment_seed != REPRO_AUGMENT_SEED_WORKER)
        return repro_error_set(REPRO_EINVAL, "loader: bad augment_seed %d", (int)cfg->augment_seed);
    if (cfg->shift < 0 || cfg->shift >= REPRO_IMG_ROWS)
        return repro_error_set(REPRO_EINVAL, "loader: shift %d out of range (must be 0..%d)",
                               cfg->shift, REPRO_IMG_ROWS - 1);
    if (!(cfg->noise >= 0.0f && cfg->noise <= 1e6f)) /* also rejects NaN */
        return repro_error_set(REPRO_EINVAL, "loader: noise %g out of range (must be >= 0)",
                               (double)cfg->noise);
    int world = 1, shard = 1;
    if (check_parallel(cfg, &world, &shard) != 0)
        return -1;

    repro_loader *l = calloc(1, sizeof *l);
    if (!l)
        return repro_error_set(REPRO_ENOMEM, "loader: out of memory");
    l->ds_copy = *ds;
    l->ds = &l->ds_copy;
    l->cfg = *cfg;
    l->cfg.flip = cfg->flip != 0;
    l->cfg.shuffle = cfg->shuffle != 0;
    l->nw = cfg->num_workers;
    l->bpe = ds->n / cfg->batch_size;
    l->world = world;
    l->rank = cfg->rank;
    l->shard = shard;
    l->nshards = cfg->batch_size / shard;
    l->rows = cfg->batch_size / world;
    l->nslots = l->nw == 0 ? 1 : l->nw * cfg->prefetch;
    l->epoch = -1;
    repro_rng_init(&l->gen, repro_seed_derive(cfg->seed, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->ready_cv, NULL);

    size_t bs = (size_t)l->rows;
    l->perm = malloc(sizeof(uint32_t) * (size_t)ds->n);
    l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
    l->workers = calloc(l->nw ? (size_t)l->nw : 1, sizeof *l->workers);
    for (int i = 0; l->workers && i < l->nw; i++)
        pthread_cond_init(&l->workers[i].slot_cv, NULL);
    l->cw = l->nw > 0 ? calloc((size_t)l->nw, sizeof *l->cw) : NULL; /* for either mode */
    int ok = l->perm && l->slots && l->workers && (l->cw || l->nw == 0);
    for (int s = 0; ok && s < l->nslots; s++) {
        l->slots[s].ids = malloc(sizeof(uint32_t) * bs);
        l->slots[s].x = malloc(sizeof(float) * bs * REPRO_IMG_PIXELS);
        l->slots[s].y = malloc(sizeof(int32_t) * bs);
        l->slots[s].ready_k = -1;
        ok = l->slots[s].ids && l->slots[s].x && l->slots[s].y;
    }
    if (!ok) {
        repro_loader_free(l);
        return repro_error_set(REPRO_ENOMEM, "loader: out of memory for %d batch slots of %d",
                               l->nslots, l->rows);
    }
    for (int i = 0; i < l->nw; i++) {
        l->workers[i].l = l;
        l->workers[i].id = i;
    }
    *out = l;
    return 0;
}

int repro_loader_next(repro_loader *l, const repro_batch **out)
{
    *out = NULL;
    /* Release the batch the caller held: its slot may now be refilled. */
    if (l->held) {
        pthread_mutex_lock(&l->mu);
        l->released++;
        /* Only batch released + nslots - 1 can start now; wake its worker
         * alone (waking every worker each step cost context switches on
         * the cores the training threads use). */
        if (l->nw > 0 && !l->coop)
            pthread_cond_signal(&l->workers[(l->released + l->nslots - 1) % l->nw].slot_cv);
        pthread_mutex_unlock(&l->mu);
        l->held = 0;
    }
    if (l->epoch < 0 || l->next_k == l->bpe) {
        /* All of the epoch's batches were produced: the workers have exited. */
        if (l->running)
            stop_workers(l, l->nw);
        if (start_epoch(l) != 0)
            return -1;
    }
    int k = l->next_k;
    slot *s = &l->slots[k % l->nslots];
    if (l->nw == 0) {
        repro_loader_count_start(l);
        fill_batch(l, s, k, &l->sync_rng);
    } else if (l->coop) {
        repro_loader_coop_wait(l, s, k);
    } else {
        pthread_mutex_lock(&l->mu);
        while (s->ready_k != k)
            pthread_cond_wait(&l->ready_cv, &l->mu);
        pthread_mutex_unlock(&l->mu);
    }
    s->batch.index = l->index++;
    l->next_k++;
    l->held = 1;
    *out = &s->batch;
    return 0;
}

void repro_loader_get_position(const repro_loader *l, repro_loader_position *out)
{
    out->gen_key = l->gen.key;
    out->gen_block = l->gen.block;
    out->gen_used = l->gen.used;
    out->epoch = l->epoch;
    out->base_seed = l->base_seed;
    out->index = l->index;
    out->next_in_epoch = l->epoch < 0 ? 0 : l->next_k;
}

const uint32_t *repro_loader_permutation(const repro_loader *l)
{
    return l->perm;
}

int repro_loader_dataset_size(const repro_loader *l)
{
    return l->ds->n;
}

int repro_loader_restore(repro_loader *l, const repro_loader_position *p, const uint32_t *perm)
{
    if (l->epoch != -1 || l->index != 0 || l->running)
        return repro_error_set(REPRO_EINVAL, "loader: restore needs a fresh loader");
    if (p->gen_key != l->gen.key)
        return repro_error_set(REPRO_EINVAL,
                               "loader position: shuffle generator of another seed");
    if (p->gen_used < 0 || p->gen_used > 4 || (p->gen_used < 4 && p->gen_block == 0) ||
        p->epoch < -1 || p->index < 0 || p->next_in_epoch < 0 || p->next_in_epoch > l->bpe ||
        p->index != (p->epoch < 0 ? 0 : (long)p->epoch * l->bpe + p->next_in_epoch))
        return repro_error_set(REPRO_EINVAL,
                               "loader position (epoch %d, batch %d of %d, %ld drawn) does not "
                               "fit this loader",
                               p->epoch, p->next_in_epoch, l->bpe, p->index);
    if (p->epoch < 0)
        return 0; /* nothing drawn yet: the fresh loader is already there */
    int n = l->ds->n;
    uint8_t *seen = calloc((size_t)n, 1);
    if (!seen)
        return repro_error_set(REPRO_ENOMEM, "loader: out of memory");
    for (int i = 0; i < n; i++) {
        if (perm[i] >= (uint32_t)n || seen[perm[i]]) {
            free(seen);
            return repro_error_set(REPRO_EINVAL,
                                   "loader position: the saved order is not a permutation of "
                                   "the %d samples",
                                   n);
        }
        seen[perm[i]] = 1;
    }
    free(seen);
    memcpy(l->perm, perm, sizeof(uint32_t) * (size_t)n);
    /* The generator's buffer is a pure function of (key, block - 1). */
    l->gen.block = p->gen_block;
    l->gen.used = p->gen_used;
    if (p->gen_used < 4) {
        repro_philox_ctr c = repro_philox_at(l->gen.key, p->gen_block - 1, 0);
        for (int i = 0; i < 4; i++)
            l->gen.buf[i] = c.v[i];
    }
    l->epoch = p->epoch;
    l->base_seed = p->base_seed;
    l->index = p->index;
    l->next_k = p->next_in_epoch;
    if (l->next_k == l->bpe)
        return 0; /* epoch done: the next call starts the next one, as it would have */
    l->first_k = l->next_k;
    return start_threads(l);
}

int repro_loader_set_cooperative(repro_loader *l)
{
    /* Written only here, before any helper exists (helpers read it
     * unlocked): once cooperative, never written again. */
    if (l->coop)
        return 1;
    if (l->nw == 0 || l->running || l->epoch != -1 || l->index != 0)
        return l->coop;
    l->coop = 1;
    return 1;
}

int repro_loader_batches_per_epoch(const repro_loader *l)
{
    return l->bpe;
}

void repro_loader_free(repro_loader *l)
{
    if (!l)
        return;
    if (l->running)
        stop_workers(l, l->nw);
    if (l->slots)
        for (int s = 0; s < l->nslots; s++) {
            free(l->slots[s].ids);
            free(l->slots[s].x);
            free(l->slots[s].y);
        }
    free(l->slots);
    for (int i = 0; l->workers && i < l->nw; i++)
        pthread_cond_destroy(&l->workers[i].slot_cv);
    free(l->workers);
    free(l->cw);
    free(l->perm);
    pthread_cond_destroy(&l->ready_cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
