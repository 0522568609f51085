/* Two-thread leaf hashing (leaf_hasher.h): one job at a time, handed to the
 * helper under a mutex; the helper's half and the caller's half are
 * disjoint leaf ranges, each written by one thread. */
#include "record/leaf_hasher.h"

#include <pthread.h>
#include <stdlib.h>

#include "record/hash.h"
#include "util/error.h"

struct repro_leaf_hasher {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the job: leaves [0, n) of data */
    const unsigned char *data;
    size_t nbytes, n;
    repro_digest *leaves;
    int pending, done, failed, quit;
};

/* Leaves [i0, i1) of data into leaves; 0 or -1 (no error slot: any thread). */
static int hash_range(const unsigned char *data, size_t nbytes, size_t i0, size_t i1,
                      repro_digest *leaves)
{
    for (size_t i = i0; i < i1; i++) {
        size_t off = i * REPRO_LEAF_BYTES;
        size_t len = nbytes - off < REPRO_LEAF_BYTES ? nbytes - off : REPRO_LEAF_BYTES;
        if (repro_sha256(data + off, len, &leaves[i]))
            return -1;
    }
    return 0;
}

static void *helper_main(void *arg)
{
    repro_leaf_hasher *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->quit && !h->pending)
            pthread_cond_wait(&h->cv, &h->mu);
        if (h->quit)
            break;
        h->pending = 0;
        pthread_mutex_unlock(&h->mu);
        int rc = hash_range(h->data, h->nbytes, 0, h->n, h->leaves);
        pthread_mutex_lock(&h->mu);
        h->failed = rc != 0;
        h->done = 1;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int repro_leaf_hasher_new(repro_leaf_hasher **out)
{
    *out = NULL;
    repro_leaf_hasher *h = calloc(1, sizeof *h);
    if (!h)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (pthread_create(&h->thread, NULL, helper_main, h) != 0) {
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
        free(h);
        return repro_error_set(REPRO_EIO, "cannot start the leaf hashing thread");
    }
    *out = h;
    return 0;
}

void repro_leaf_hasher_free(repro_leaf_hasher *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

int repro_leaf_hasher_run(repro_leaf_hasher *h, const void *data, size_t nbytes,
                          repro_digest *leaves)
{
    size_t n = repro_leaf_count(nbytes), half = n / 2;
    pthread_mutex_lock(&h->mu);
    h->data = data;
    h->nbytes = nbytes;
    h->n = half;
    h->leaves = leaves;
    h->done = 0;
    h->pending = half > 0;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    int rc = hash_range(data, nbytes, half, n, leaves);
    pthread_mutex_lock(&h->mu);
    while (half > 0 && !h->done)
        pthread_cond_wait(&h->cv, &h->mu);
    rc |= half > 0 && h->failed;
    pthread_mutex_unlock(&h->mu);
    return rc ? repro_error_set(REPRO_EIO, "OpenSSL SHA-256 failed hashing leaves") : 0;
}
