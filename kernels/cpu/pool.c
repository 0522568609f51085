/* The chunk-running thread pool (see pool.h). Chunks are claimed from an
 * atomic counter, so the assignment of chunks to threads varies from run to
 * run; pool.h's rule is what makes that harmless. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct repro_pool {
    int threads;
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    /* the job in flight */
    repro_chunk_fn fn;
    void *ctx;
    long nchunks;
    atomic_long next;
    int generation; /* bumped per job so sleeping workers notice a new one */
    int busy;       /* workers still inside the current job */
    int quit;
};

static void pool_drain(repro_pool *p, repro_chunk_fn fn, void *ctx, long nchunks)
{
    for (;;) {
        long c = atomic_fetch_add(&p->next, 1);
        if (c >= nchunks)
            return;
        fn(ctx, c);
    }
}

static void *pool_worker(void *arg)
{
    repro_pool *p = arg;
    int seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->quit)
            break;
        seen = p->generation;
        repro_chunk_fn fn = p->fn;
        void *ctx = p->ctx;
        long n = p->nchunks;
        pthread_mutex_unlock(&p->mu);
        pool_drain(p, fn, ctx, n);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int repro_pool_new(repro_pool **out, int threads)
{
    *out = NULL;
    if (threads < 1)
        return -1;
    repro_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    if (threads > 1) {
        p->tids = calloc((size_t)threads - 1, sizeof *p->tids);
        if (!p->tids) {
            repro_pool_free(p);
            return -1;
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->tids[i], NULL, pool_worker, p) != 0) {
                p->threads = i + 1; /* free joins only what started */
                repro_pool_free(p);
                return -1;
            }
        }
    }
    *out = p;
    return 0;
}

void repro_pool_free(repro_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->tids && i < p->threads - 1; i++)
        pthread_join(p->tids[i], NULL);
    free(p->tids);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p);
}

int repro_pool_threads(const repro_pool *p)
{
    return p ? p->threads : 1;
}

void repro_pool_run(repro_pool *p, long nchunks, repro_chunk_fn fn, void *ctx)
{
    if (nchunks <= 0)
        return;
    if (!p || p->threads == 1 || nchunks == 1) {
        for (long c = 0; c < nchunks; c++)
            fn(ctx, c);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->nchunks = nchunks;
    atomic_store(&p->next, 0);
    p->busy = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);

    pool_drain(p, fn, ctx, nchunks);

    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
