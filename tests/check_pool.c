/* The thread pool (kernels/cpu/pool.h): every chunk of every job runs
 * exactly once, whatever the thread count and however the machine is
 * oversubscribed, and a worker that wakes late never runs a stale job's
 * function on a newer job's chunk (pool.c claims chunks per job). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/pool.h"

enum { MAXC = 7 };

typedef struct {
    atomic_int count[MAXC];
    int id;
} job_ctx;

/* Two different functions, so a stale function on the wrong job's context
 * shows as a count in the wrong place. */
static void mark_a(void *vctx, long c)
{
    job_ctx *j = vctx;
    if (j->id == 0)
        atomic_fetch_add(&j->count[c], 1);
    else
        atomic_fetch_add(&j->count[c], 1000); /* A's function on B's job */
}

static void mark_b(void *vctx, long c)
{
    job_ctx *j = vctx;
    if (j->id == 1)
        atomic_fetch_add(&j->count[c], 1);
    else
        atomic_fetch_add(&j->count[c], 1000);
}

static void run_jobs(int threads, int jobs)
{
    repro_pool *p;
    ck_assert_int_eq(repro_pool_new(&p, threads), 0);
    ck_assert_int_eq(repro_pool_threads(p), threads);
    for (int k = 0; k < jobs; k++) {
        job_ctx j;
        memset(&j, 0, sizeof j);
        j.id = k & 1;
        long n = 2 + k % (MAXC - 1); /* 2 .. MAXC chunks */
        repro_pool_run(p, n, j.id ? mark_b : mark_a, &j);
        for (long c = 0; c < MAXC; c++)
            ck_assert_msg(atomic_load(&j.count[c]) == (c < n),
                          "%d threads, job %d, chunk %ld of %ld ran %d times (1000s: another "
                          "job's function)",
                          threads, k, c, n, atomic_load(&j.count[c]));
    }
    repro_pool_free(p);
}

START_TEST(test_every_chunk_once)
{
    run_jobs(1, 1000);
    run_jobs(2, 20000);
}
END_TEST

START_TEST(test_oversubscribed)
{
    /* More threads than this machine has cores: workers are often off
     * their core when a job starts (the case the caller must not wait
     * for), and often wake to find their job over. */
    run_jobs(8, 20000);
}
END_TEST

START_TEST(test_null_and_empty)
{
    job_ctx j;
    memset(&j, 0, sizeof j);
    repro_pool_run(NULL, 3, mark_a, &j); /* inline */
    for (int c = 0; c < 3; c++)
        ck_assert_int_eq(atomic_load(&j.count[c]), 1);
    repro_pool *p;
    ck_assert_int_eq(repro_pool_new(&p, 2), 0);
    repro_pool_run(p, 0, mark_a, &j); /* nothing */
    for (int c = 0; c < 3; c++)
        ck_assert_int_eq(atomic_load(&j.count[c]), 1);
    repro_pool_free(p);
    ck_assert_int_eq(repro_pool_new(&p, 0), -1);
    ck_assert_int_eq(repro_pool_threads(NULL), 1);
}
END_TEST

/* Idle work: units counted by a function that also says, while a unit
 * runs, that it is inside one (clearing must wait for it). */
typedef struct {
    atomic_long units;   /* units done */
    atomic_long budget;  /* units left to hand out */
    atomic_int inside;
    atomic_int caller_ran; /* set if the caller's thread ever ran a unit */
    pthread_t caller;
} idle_ctx;

static int idle_unit(void *arg)
{
    idle_ctx *c = arg;
    if (pthread_equal(pthread_self(), c->caller))
        atomic_store(&c->caller_ran, 1);
    if (atomic_fetch_sub(&c->budget, 1) <= 0) {
        atomic_fetch_add(&c->budget, 1);
        return 0;
    }
    atomic_fetch_add(&c->inside, 1);
    for (volatile int i = 0; i < 2000; i++) /* a short unit */
        ;
    atomic_fetch_add(&c->units, 1);
    atomic_fetch_sub(&c->inside, 1);
    return 1;
}

START_TEST(test_idle_work)
{
    /* Workers run idle units between jobs; jobs still run every chunk
     * once; clearing returns with no unit in progress, and no unit runs
     * after it; the caller's thread never runs one; a 1-thread pool
     * ignores it. */
    repro_pool *p;
    ck_assert_int_eq(repro_pool_new(&p, 3), 0);
    idle_ctx c;
    memset(&c, 0, sizeof c);
    c.caller = pthread_self();
    atomic_store(&c.budget, 20000);
    repro_pool_set_idle(p, idle_unit, &c);
    for (int k = 0; k < 2000; k++) {
        job_ctx j;
        memset(&j, 0, sizeof j);
        repro_pool_run(p, 5, mark_a, &j);
        for (long ch = 0; ch < 5; ch++)
            ck_assert_int_eq(atomic_load(&j.count[ch]), 1);
    }
    for (int spins = 0; atomic_load(&c.units) < 20000 && spins < 20000; spins++)
        usleep(100); /* the workers go on with the units between jobs */
    ck_assert_int_eq(atomic_load(&c.units), 20000);
    atomic_store(&c.budget, 1L << 40); /* endless: the workers are busy in it */
    usleep(2000);
    repro_pool_set_idle(p, NULL, NULL);
    ck_assert_int_eq(atomic_load(&c.inside), 0);
    long after = atomic_load(&c.units);
    usleep(2000);
    ck_assert_int_eq(atomic_load(&c.units), after);
    ck_assert_int_eq(atomic_load(&c.caller_ran), 0);
    repro_pool_free(p);

    ck_assert_int_eq(repro_pool_new(&p, 1), 0);
    memset(&c, 0, sizeof c);
    atomic_store(&c.budget, 10);
    repro_pool_set_idle(p, idle_unit, &c);
    usleep(2000);
    ck_assert_int_eq(atomic_load(&c.units), 0);
    repro_pool_free(p);
}
END_TEST

/* Idle work set while every worker sleeps (no job for far longer than
 * their spin) wakes them: before, it waited for the next job, and the
 * backend's idle-work test hung on a loaded machine where the caller was
 * descheduled past the spin. */
START_TEST(test_idle_work_wakes_sleeping_workers)
{
    repro_pool *p;
    ck_assert_int_eq(repro_pool_new(&p, 2), 0);
    usleep(50000); /* the spin is ~120 us: the worker is asleep now */
    idle_ctx c;
    memset(&c, 0, sizeof c);
    c.caller = pthread_self();
    atomic_store(&c.budget, 100);
    repro_pool_set_idle(p, idle_unit, &c);
    for (int spins = 0; atomic_load(&c.units) < 100 && spins < 20000; spins++)
        usleep(100);
    ck_assert_int_eq(atomic_load(&c.units), 100);
    repro_pool_set_idle(p, NULL, NULL);
    repro_pool_free(p);
}
END_TEST

Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_chunk_once);
    tcase_add_test(tc, test_oversubscribed);
    tcase_add_test(tc, test_null_and_empty);
    tcase_add_test(tc, test_idle_work);
    tcase_add_test(tc, test_idle_work_wakes_sleeping_workers);
    suite_add_tcase(s, tc);
    return s;
}
