/* The loader's cooperative mode (loader.h, repro_loader_help): the same
 * batches, bit for bit, as num_workers worker threads, whoever fills the
 * rows (the consumer alone, or helper threads racing it), in both
 * augmentation modes, across an epoch boundary and after a restore; the
 * prefetch bound holds; helpers really fill rows; help is 0 outside the
 * mode. The negative control: the comparison catches a loader whose
 * worker-mode streams differ (another num_workers). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dataset.h"
#include "core/loader.h"

/* Test hook exported by loader.c (deliberately not in loader.h). */
int repro_loader_max_in_flight(repro_loader *l);

enum { PIX = REPRO_IMG_PIXELS, NB = 14, BS = 6 };

static repro_dataset ds;

static void setup(void)
{
    ck_assert_int_eq(repro_dataset_synthetic(&ds, 9, REPRO_SPLIT_TRAIN, 64), 0);
}

static void teardown(void)
{
    repro_dataset_release(&ds);
}

static repro_loader_config cfg_of(repro_augment_seed mode, int workers)
{
    repro_loader_config c;
    memset(&c, 0, sizeof c);
    c.seed = 77;
    c.batch_size = BS; /* 10 batches per epoch of 64: NB crosses into epoch 1 */
    c.num_workers = workers;
    c.prefetch = 2;
    c.shuffle = 1;
    c.augment_seed = mode;
    c.shift = 2;
    c.flip = 1;
    c.noise = 0.1f;
    return c;
}

/* Helper threads calling repro_loader_help until told to stop. */
typedef struct {
    repro_loader *l;
    atomic_int stop;
    atomic_long rows;
    pthread_t tid[2];
    int n;
} helpers;

static void *help_loop(void *arg)
{
    helpers *h = arg;
    while (!atomic_load(&h->stop))
        if (repro_loader_help(h->l))
            atomic_fetch_add(&h->rows, 1);
    return NULL;
}

static void helpers_start(helpers *h, repro_loader *l, int n)
{
    memset(h, 0, sizeof *h);
    h->l = l;
    h->n = n;
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(pthread_create(&h->tid[i], NULL, help_loop, h), 0);
}

static void helpers_stop(helpers *h)
{
    atomic_store(&h->stop, 1);
    for (int i = 0; i < h->n; i++)
        pthread_join(h->tid[i], NULL);
}

typedef struct {
    uint32_t ids[NB][BS];
    float x[NB][BS * PIX];
    int32_t y[NB][BS];
    int index_in_epoch[NB];
} run_out;

static void take(repro_loader *l, run_out *r, int k)
{
    const repro_batch *b;
    ck_assert_int_eq(repro_loader_next(l, &b), 0);
    ck_assert_int_eq(b->size, BS);
    memcpy(r->ids[k], b->ids, sizeof r->ids[k]);
    memcpy(r->x[k], b->x, sizeof r->x[k]);
    memcpy(r->y[k], b->y, sizeof r->y[k]);
    r->index_in_epoch[k] = b->index_in_epoch;
}

/* A fresh loader of c, switched to cooperative mode when coop. */
static repro_loader *open_loader(const repro_loader_config *c, int coop)
{
    repro_loader *l;
    ck_assert_int_eq(repro_loader_new(&l, &ds, c), 0);
    if (coop)
        ck_assert_int_eq(repro_loader_set_cooperative(l), 1);
    return l;
}

/* NB batches; with nhelp helper threads beside the consumer. */
static run_out *collect(const repro_loader_config *c, int coop, int nhelp)
{
    run_out *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    repro_loader *l = open_loader(c, coop);
    helpers h;
    helpers_start(&h, l, nhelp);
    for (int k = 0; k < NB; k++)
        take(l, r, k);
    helpers_stop(&h);
    repro_loader_free(l);
    return r;
}

START_TEST(test_same_bits_as_worker_threads)
{
    for (int mode = 0; mode < 2; mode++)
        for (int w = 1; w <= 3; w += 2) {
            repro_augment_seed m = mode ? REPRO_AUGMENT_SEED_WORKER : REPRO_AUGMENT_SEED_SAMPLE;
            repro_loader_config c = cfg_of(m, w);
            run_out *want = collect(&c, 0, 0);
            run_out *alone = collect(&c, 1, 0);
            run_out *raced = collect(&c, 1, 2);
            ck_assert_msg(memcmp(want, alone, sizeof *want) == 0,
                          "mode %d, %d workers: cooperative (consumer alone) differs", mode, w);
            ck_assert_msg(memcmp(want, raced, sizeof *want) == 0,
                          "mode %d, %d workers: cooperative with 2 helpers differs", mode, w);
            ck_assert_int_eq(want->index_in_epoch[NB - 1], NB - 1 - 10); /* epoch 1 */
            free(want);
            free(alone);
            free(raced);
        }
}
END_TEST

START_TEST(test_helpers_fill_rows)
{
    /* Helpers that keep calling fill the prefetched batches ahead of the
     * consumer: with a pause before each next, nearly all rows are theirs. */
    repro_loader_config c = cfg_of(REPRO_AUGMENT_SEED_WORKER, 2);
    repro_loader *l = open_loader(&c, 1);
    run_out *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    take(l, r, 0); /* starts the epoch */
    helpers h;
    helpers_start(&h, l, 1);
    for (int k = 1; k < NB; k++) {
        struct timespec t = {0, 2000000};
        nanosleep(&t, NULL);
        take(l, r, k);
    }
    helpers_stop(&h);
    long rows = atomic_load(&h.rows);
    ck_assert_msg(rows >= (NB - 2) * BS, "helpers filled %ld rows of %d", rows, NB * BS);
    /* the prefetch bound: workers x prefetch batches in flight at most */
    ck_assert_int_eq(repro_loader_max_in_flight(l), 2 * 2);
    repro_loader_free(l);
    free(r);
}
END_TEST

START_TEST(test_negative_control_streams_differ)
{
    /* The comparison above can fail: worker mode with another worker
     * count (other RNG streams) is caught, cooperative or not. */
    repro_loader_config c1 = cfg_of(REPRO_AUGMENT_SEED_WORKER, 1);
    repro_loader_config c3 = cfg_of(REPRO_AUGMENT_SEED_WORKER, 3);
    run_out *a = collect(&c1, 1, 1), *b = collect(&c3, 1, 1);
    ck_assert(memcmp(a->x, b->x, sizeof a->x) != 0);
    ck_assert_mem_eq(a->ids, b->ids, sizeof a->ids); /* the order is the same */
    free(a);
    free(b);
}
END_TEST

START_TEST(test_restore_mid_epoch)
{
    /* Stopped after m batches and restored into a cooperative loader with
     * a helper: the next batches are the uninterrupted threads' ones. */
    repro_loader_config c = cfg_of(REPRO_AUGMENT_SEED_WORKER, 3);
    run_out *want = collect(&c, 0, 0);
    for (int m = 1; m <= 10; m += 4) {
        repro_loader *l = open_loader(&c, 1);
        const repro_batch *b;
        for (int k = 0; k < m; k++)
            ck_assert_int_eq(repro_loader_next(l, &b), 0);
        repro_loader_position pos;
        repro_loader_get_position(l, &pos);
        uint32_t perm[64];
        memcpy(perm, repro_loader_permutation(l), sizeof perm);
        repro_loader_free(l);

        l = open_loader(&c, 1);
        ck_assert_int_eq(repro_loader_restore(l, &pos, perm), 0);
        helpers h;
        helpers_start(&h, l, 1);
        run_out *rest = calloc(1, sizeof *rest);
        ck_assert_ptr_nonnull(rest);
        for (int k = m; k < NB; k++) {
            take(l, rest, k);
            ck_assert_msg(memcmp(rest->x[k], want->x[k], sizeof want->x[k]) == 0 &&
                              memcmp(rest->ids[k], want->ids[k], sizeof want->ids[k]) == 0,
                          "restored at %d: batch %d differs", m, k);
        }
        helpers_stop(&h);
        repro_loader_free(l);
        free(rest);
    }
    free(want);
}
END_TEST

START_TEST(test_help_outside_the_mode)
{
    /* Worker threads, or num_workers = 0 (which cannot switch): help has
     * nothing to do. */
    for (int w = 0; w <= 2; w += 2) {
        repro_loader_config c = cfg_of(REPRO_AUGMENT_SEED_SAMPLE, w);
        repro_loader *l = open_loader(&c, 0);
        if (w == 0)
            ck_assert_int_eq(repro_loader_set_cooperative(l), 0);
        const repro_batch *b;
        ck_assert_int_eq(repro_loader_next(l, &b), 0);
        ck_assert_int_eq(repro_loader_help(l), 0);
        repro_loader_free(l);
    }
    /* Cooperative before the first batch (no epoch yet): nothing either;
     * asking again keeps it cooperative. */
    repro_loader_config c = cfg_of(REPRO_AUGMENT_SEED_SAMPLE, 2);
    repro_loader *l = open_loader(&c, 1);
    ck_assert_int_eq(repro_loader_help(l), 0);
    ck_assert_int_eq(repro_loader_set_cooperative(l), 1);
    repro_loader_free(l);
}
END_TEST

START_TEST(test_switch_only_when_fresh)
{
    /* A loader that drew a batch (its worker threads run) or was restored
     * mid-epoch (they started) stays as it is: 0, and its batches are
     * still the threads' ones. */
    repro_loader_config c = cfg_of(REPRO_AUGMENT_SEED_WORKER, 2);
    run_out *want = collect(&c, 0, 0);
    run_out *got = calloc(1, sizeof *got);
    ck_assert_ptr_nonnull(got);
    repro_loader *l = open_loader(&c, 0);
    take(l, got, 0);
    ck_assert_int_eq(repro_loader_set_cooperative(l), 0);
    ck_assert_int_eq(repro_loader_help(l), 0);
    for (int k = 1; k < 4; k++)
        take(l, got, k);
    repro_loader_position pos;
    repro_loader_get_position(l, &pos);
    uint32_t perm[64];
    memcpy(perm, repro_loader_permutation(l), sizeof perm);
    repro_loader_free(l);
    l = open_loader(&c, 0);
    ck_assert_int_eq(repro_loader_restore(l, &pos, perm), 0);
    ck_assert_int_eq(repro_loader_set_cooperative(l), 0);
    for (int k = 4; k < NB; k++)
        take(l, got, k);
    repro_loader_free(l);
    ck_assert(memcmp(want, got, sizeof *want) == 0);
    free(want);
    free(got);
}
END_TEST

Suite *loader_coop_suite(void)
{
    Suite *s = suite_create("loader_coop");
    TCase *tc = tcase_create("loader_coop");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_same_bits_as_worker_threads);
    tcase_add_test(tc, test_helpers_fill_rows);
    tcase_add_test(tc, test_negative_control_streams_differ);
    tcase_add_test(tc, test_restore_mid_epoch);
    tcase_add_test(tc, test_help_outside_the_mode);
    tcase_add_test(tc, test_switch_only_when_fresh);
    suite_add_tcase(s, tc);
    return s;
}
