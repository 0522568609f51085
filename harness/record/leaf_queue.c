/* Queued leaf hashing (leaf_queue.h). A unit is claimed with one atomic
 * add, by a thread counted in its batch's `helpers` (under mu), so the
 * owner, which takes the batch out only when no helper is inside, never
 * lets a late helper claim a unit against a batch reused since. Each leaf
 * digest is written by the one thread that claimed its unit. */
#include "record/leaf_queue.h"

#include <stdlib.h>

#include "record/hash.h"
#include "util/error.h"

void repro_leaf_queue_init(repro_leaf_queue *q, pthread_mutex_t *mu, pthread_cond_t *cv,
                           repro_digest_fn fn)
{
    q->mu = mu;
    q->cv = cv;
    q->fn = fn;
    q->unit_leaves = 16;
    q->nq = 0;
    atomic_init(&q->posted, 0);
}

int repro_leaf_batch_init(repro_leaf_batch *b, int cap)
{
    b->t = calloc((size_t)(cap > 0 ? cap : 1), sizeof *b->t);
    b->cap = cap;
    repro_leaf_batch_clear(b);
    return b->t ? 0 : repro_error_set(REPRO_ENOMEM, "out of memory");
}

void repro_leaf_batch_release(repro_leaf_batch *b)
{
    free(b->t);
    b->t = NULL;
    b->cap = 0;
}

void repro_leaf_batch_clear(repro_leaf_batch *b)
{
    b->ntensors = 0;
    b->task = NULL;
    b->task_arg = NULL;
    b->ntasks = 0;
    b->nunits = 0;
    b->helpers = 0;
    atomic_init(&b->next, 0);
    atomic_init(&b->done, 0);
    atomic_init(&b->failed, 0);
}

int repro_leaf_batch_add(repro_leaf_batch *b, const void *data, size_t nbytes,
                         repro_digest *leaves)
{
    if (b->ntensors == b->cap)
        return repro_error_set(REPRO_EINVAL, "leaf batch: more than %d tensors", b->cap);
    b->t[b->ntensors].data = data;
    b->t[b->ntensors].nbytes = nbytes;
    b->t[b->ntensors].nleaves = repro_leaf_count(nbytes);
    b->t[b->ntensors].leaves = leaves;
    b->ntensors++;
    return 0;
}

void repro_leaf_batch_tasks(repro_leaf_batch *b, void (*task)(void *arg, int k), void *arg,
                            int ntasks)
{
    b->task = task;
    b->task_arg = arg;
    b->ntasks = task ? ntasks : 0;
}

static int post(repro_leaf_queue *q, repro_leaf_batch *b, int first)
{
    size_t u = (size_t)b->ntasks; /* the tasks' units come first */
    for (int i = 0; i < b->ntensors; i++) { /* units never span two tensors */
        b->t[i].first_unit = u;
        u += (b->t[i].nleaves + q->unit_leaves - 1) / q->unit_leaves;
    }
    b->nunits = u;
    atomic_store(&b->next, 0);
    atomic_store(&b->done, 0);
    atomic_store(&b->failed, 0);
    b->helpers = 0;
    pthread_mutex_lock(q->mu);
    if (q->nq == REPRO_LEAF_QUEUE_MAX) {
        pthread_mutex_unlock(q->mu);
        return repro_error_set(REPRO_EINVAL, "leaf queue: more than %d batches posted",
                               REPRO_LEAF_QUEUE_MAX);
    }
    for (int i = q->nq; first && i > 0; i--)
        q->q[i] = q->q[i - 1];
    q->q[first ? 0 : q->nq] = b;
    q->nq++;
    atomic_store(&q->posted, q->nq);
    pthread_mutex_unlock(q->mu);
    return 0;
}

int repro_leaf_queue_post(repro_leaf_queue *q, repro_leaf_batch *b)
{
    return post(q, b, 0);
}

int repro_leaf_queue_post_first(repro_leaf_queue *q, repro_leaf_batch *b)
{
    return post(q, b, 1);
}

/* Runs unit u of b (claimed by this thread): a task, or leaves. */
static void hash_unit(const repro_leaf_queue *q, repro_leaf_batch *b, size_t u)
{
    if (u < (size_t)b->ntasks) {
        b->task(b->task_arg, (int)u);
        atomic_fetch_add(&b->done, 1);
        return;
    }
    int i = 0;
    while (i + 1 < b->ntensors && b->t[i + 1].first_unit <= u)
        i++;
    size_t i0 = (u - b->t[i].first_unit) * q->unit_leaves;
    size_t i1 = i0 + q->unit_leaves < b->t[i].nleaves ? i0 + q->unit_leaves : b->t[i].nleaves;
    if (repro_leaf_range(q->fn, b->t[i].data, b->t[i].nbytes, i0, i1, b->t[i].leaves))
        atomic_store(&b->failed, 1);
    atomic_fetch_add(&b->done, 1);
}

/* Claims and hashes one unit of b: 0 when none was left. */
static int claim(const repro_leaf_queue *q, repro_leaf_batch *b)
{
    size_t u = atomic_fetch_add(&b->next, 1);
    if (u >= b->nunits)
        return 0;
    hash_unit(q, b, u);
    return 1;
}

int repro_leaf_queue_unit(repro_leaf_queue *q)
{
    if (!atomic_load(&q->posted)) /* the common case for an idle thread: one load */
        return 0;
    pthread_mutex_lock(q->mu);
    repro_leaf_batch *b = NULL;
    for (int i = 0; i < q->nq && !b; i++)
        if (atomic_load(&q->q[i]->next) < q->q[i]->nunits)
            b = q->q[i];
    if (!b) {
        pthread_mutex_unlock(q->mu);
        return 0;
    }
    b->helpers++;
    pthread_mutex_unlock(q->mu);
    int did = claim(q, b);
    pthread_mutex_lock(q->mu);
    /* The owner may wait in finish for the last unit or the last helper. */
    if (--b->helpers == 0 || atomic_load(&b->done) == b->nunits)
        pthread_cond_broadcast(q->cv);
    pthread_mutex_unlock(q->mu);
    return did;
}

int repro_leaf_queue_finish(repro_leaf_queue *q, repro_leaf_batch *b)
{
    while (claim(q, b))
        ;
    pthread_mutex_lock(q->mu);
    while (atomic_load(&b->done) < b->nunits || b->helpers > 0)
        pthread_cond_wait(q->cv, q->mu);
    int k = 0;
    for (int i = 0; i < q->nq; i++)
        if (q->q[i] != b)
            q->q[k++] = q->q[i];
    q->nq = k;
    atomic_store(&q->posted, q->nq);
    pthread_mutex_unlock(q->mu);
    return atomic_load(&b->failed) ? repro_error_set(REPRO_EIO, "SHA-256 (OpenSSL) failed "
                                                                "hashing leaves")
                                   : 0;
}
