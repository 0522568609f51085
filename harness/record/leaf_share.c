/* Shared leaf hashing (leaf_share.h). Chunks are claimed with one atomic
 * add; each leaf digest is written by the one thread that claimed it. The
 * poster retires a tensor only when every leaf is hashed and no helper is
 * inside its work loop, so a helper never claims leaves of the next tensor
 * against the previous one's data. */
#include "record/leaf_share.h"

#include "record/hash.h"
#include "util/error.h"

/* Leaves per claim: 64 KiB, ~4 us of XXH3-128 or ~15-50 us of SHA-256, so a claim's atomic add
 * is noise while the tail a late thread leaves the other is short. A
 * multiple of sixteen, so that full leaves go sixteen at a time in AVX-512
 * lanes, or four at a time on SHA-NI (leaf_sha.h): a claim of fewer would
 * never reach the sixteen-lane path. */
enum { CHUNK = 16 };

void repro_leaf_share_init(repro_leaf_share *s, pthread_mutex_t *mu, pthread_cond_t *cv)
{
    s->mu = mu;
    s->cv = cv;
    s->data = NULL;
    s->nbytes = s->n = 0;
    s->leaves = NULL;
    s->fn = REPRO_DIGEST_XXH3;
    atomic_init(&s->active, 0);
    s->helpers = 0;
    atomic_init(&s->next, 0);
    atomic_init(&s->done, 0);
    atomic_init(&s->failed, 0);
}

/* Claims and hashes one chunk of the posted tensor: 0 when none was left. */
static int one_chunk(repro_leaf_share *s)
{
    size_t i0 = atomic_fetch_add(&s->next, CHUNK);
    if (i0 >= s->n)
        return 0;
    size_t i1 = i0 + CHUNK < s->n ? i0 + CHUNK : s->n;
    if (repro_leaf_range(s->fn, s->data, s->nbytes, i0, i1, s->leaves))
        atomic_store(&s->failed, 1);
    if (atomic_fetch_add(&s->done, i1 - i0) + (i1 - i0) == s->n) {
        pthread_mutex_lock(s->mu); /* the poster may be waiting for the last chunk */
        pthread_cond_broadcast(s->cv);
        pthread_mutex_unlock(s->mu);
    }
    return 1;
}

/* Claims and hashes chunks of the posted tensor until none are left. */
static void work(repro_leaf_share *s)
{
    while (one_chunk(s))
        ;
}

int repro_leaf_share_run(repro_leaf_share *s, const void *data, size_t nbytes,
                         repro_digest *leaves, void (*while_shared)(void *), void *arg)
{
    pthread_mutex_lock(s->mu);
    s->data = data;
    s->nbytes = nbytes;
    s->n = repro_leaf_count(nbytes);
    s->leaves = leaves;
    atomic_store(&s->next, 0);
    atomic_store(&s->done, 0);
    atomic_store(&s->failed, 0);
    s->active = 1;
    pthread_cond_broadcast(s->cv); /* a waiting training thread may help */
    pthread_mutex_unlock(s->mu);
    if (while_shared)
        while_shared(arg);
    work(s);
    pthread_mutex_lock(s->mu);
    while (atomic_load(&s->done) < s->n || s->helpers > 0)
        pthread_cond_wait(s->cv, s->mu);
    s->active = 0;
    pthread_mutex_unlock(s->mu);
    return atomic_load(&s->failed) ? repro_error_set(REPRO_EIO, "SHA-256 (OpenSSL) failed hashing leaves")
                                   : 0;
}

/* With mu held and leaves left: hashes them as a
 * helper, without mu, so the poster cannot retire the tensor meanwhile;
 * returns with mu held. `all`: every leaf left, else one chunk. */
static void as_helper(repro_leaf_share *s, int all)
{
    s->helpers++;
    pthread_mutex_unlock(s->mu);
    if (all)
        work(s);
    else
        one_chunk(s);
    pthread_mutex_lock(s->mu);
    s->helpers--;
    pthread_cond_broadcast(s->cv); /* the poster waits for helpers == 0 */
}

static int leaves_left(const repro_leaf_share *s)
{
    return s->active && atomic_load(&s->next) < s->n;
}

int repro_leaf_share_help(repro_leaf_share *s)
{
    if (!leaves_left(s))
        return 0;
    as_helper(s, 1);
    return 1;
}

int repro_leaf_share_unit(repro_leaf_share *s)
{
    if (!atomic_load(&s->active)) /* the common case for an idle thread: one load */
        return 0;
    pthread_mutex_lock(s->mu);
    int did = leaves_left(s);
    if (did)
        as_helper(s, 0);
    pthread_mutex_unlock(s->mu);
    return did;
}
