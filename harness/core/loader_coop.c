/* Cooperative batch filling (loader.h, repro_loader_help): the workers
 * without threads. Worker w's stream of batches (w, w + W, ...) is filled
 * a row at a time by whichever thread takes its `busy` flag, in the order
 * a worker thread would fill them, so the bits are the worker threads'.
 *
 * Why: with training threads on every core, worker threads must preempt
 * them to run, and a kernel thread preempted in the middle of its chunk
 * holds up the whole step (timed in a 2-thread CNN step on 2 cores: the
 * second thread started the conv filter gradient 65 us late on average,
 * the step 10-15% slower than without augmentation). Rows filled in the
 * kernel threads' waits and by the consumer cost no preemption.
 *
 * The epoch's fields (perm, base_seed, epoch, the slots) change only
 * between stop and start: stop closes the gate and waits until no helper
 * is inside, start reopens it after the workers' streams are set. */
#include "core/loader_impl.h"

#include "util/seeds.h"

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void repro_loader_coop_start(repro_loader *l)
{
    for (int w = 0; w < l->nw; w++) {
        coop_worker *cw = &l->cw[w];
        repro_rng_init(&cw->rng, repro_loader_worker_seed(l->base_seed, l->epoch, l->rank,
                                                          l->world, w));
        int k = w;
        for (; k < l->first_k; k += l->nw) /* resumed mid-epoch: catch the stream up */
            repro_loader_replay_batch(l, k, &cw->rng);
        cw->k = k;
        cw->row = 0;
        atomic_store(&cw->busy, 0);
    }
    atomic_store(&l->coop_next, l->first_k);
    atomic_store(&l->coop_open, 1);
}

void repro_loader_coop_stop(repro_loader *l)
{
    atomic_store(&l->coop_open, 0);
    while (atomic_load(&l->coop_inside) > 0)
        relax();
}

/* One row of worker w's stream if its next batch may start (its slot
 * released) and nobody else holds the stream: 1, else 0. */
static int fill_one_row(repro_loader *l, coop_worker *cw)
{
    if (atomic_exchange(&cw->busy, 1))
        return 0;
    int did = 0;
    int k = cw->k;
    if (k < l->bpe && k < atomic_load(&l->released) + l->nslots) {
        slot *s = &l->slots[k % l->nslots];
        if (cw->row == 0) {
            pthread_mutex_lock(&l->mu);
            repro_loader_count_start(l);
            pthread_mutex_unlock(&l->mu);
        }
        repro_loader_fill_row(l, s, k, cw->row, &cw->rng);
        if (++cw->row == l->rows) {
            repro_loader_finish_batch(l, s, k);
            atomic_store(&s->ready_k, k); /* publishes the rows (seq_cst) */
            cw->k = k + l->nw;
            cw->row = 0;
        }
        did = 1;
    }
    atomic_store(&cw->busy, 0);
    return did;
}

int repro_loader_help(repro_loader *l)
{
    if (!l->coop)
        return 0;
    atomic_fetch_add(&l->coop_inside, 1);
    int did = 0;
    if (atomic_load(&l->coop_open)) {
        /* The stream of the batch the consumer needs first, then the
         * next ones: the earliest batches are the most urgent. */
        int first = atomic_load(&l->coop_next);
        for (int i = 0; i < l->nw && !did; i++)
            did = fill_one_row(l, &l->cw[(first + i) % l->nw]);
    }
    atomic_fetch_sub(&l->coop_inside, 1);
    return did;
}

void repro_loader_coop_wait(repro_loader *l, slot *s, int k)
{
    atomic_store(&l->coop_next, k);
    while (atomic_load(&s->ready_k) != k)
        if (!repro_loader_help(l))
            relax();
}
