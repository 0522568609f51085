/* The thread pool (kernels/cpu/pool.h): every chunk of every job runs
 * exactly once, whatever the thread count and however the machine is
 * oversubscribed, and a worker that wakes late never runs a stale job's
 * function on a newer job's chunk (pool.c claims chunks per job). */
#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_chunk_once);
    tcase_add_test(tc, test_oversubscribed);
    tcase_add_test(tc, test_null_and_empty);
    suite_add_tcase(s, tc);
    return s;
}
