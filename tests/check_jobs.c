/* `repro check` runs its runs at once where the CPUs hold them, by default
 * (analysis/multirun_jobs.c): as many runs at once as the CPUs this
 * process may use divided by each run's threads (times ranks), never more
 * than the runs; with one CPU, or runs as wide as the machine, one after
 * another. Running at once moves wall time, never bits. The CPUs are
 * pinned here (sched_setaffinity, inherited by the repro processes), so the
 * answer does not depend on the machine's size; each test runs in its own
 * forked process, so the pinning ends with it. */
#include <check.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/multirun.h"
#include "testutil.h"
#include "util/cpus.h"

static char out[1 << 20], err[1 << 16];

static cpu_set_t allowed; /* the CPUs the test process was given */

static void save_allowed(void)
{
    ck_assert_int_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
}

/* Restricts this process to the first k CPUs it was given; 0 when it was
 * given fewer than k. */
static int pin_cpus(int k)
{
    cpu_set_t some;
    CPU_ZERO(&some);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < k; c++)
        if (CPU_ISSET(c, &allowed)) {
            CPU_SET(c, &some);
            n++;
        }
    if (n < k)
        return 0;
    ck_assert_int_eq(sched_setaffinity(0, sizeof some, &some), 0);
    ck_assert_int_eq(repro_cpus_available(), k);
    return 1;
}

/* A plan of n plain runs (no per-run --threads or --ranks). */
static repro_multirun *plan_of(int n)
{
    static repro_multirun m; /* large: off the stack */
    memset(&m, 0, sizeof m);
    m.nplan = n;
    return &m;
}

START_TEST(test_jobs_fit_the_cpus)
{
    repro_multirun *m = plan_of(2);
    ck_assert(pin_cpus(1));
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 1), 1);
    if (!pin_cpus(2)) /* a 1-CPU machine: nothing more can run at once */
        return;
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 1), 2);
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 2, 1), 1); /* 2 threads x 2 runs > 2 CPUs */
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 2), 1); /* ranks count as threads */
    m->nplan = 3;
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 1), 2); /* never more than the CPUs */
    m->nplan = 1;
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 1), 1); /* nor than the runs */
    /* The widest run decides: one run of the plan at 2 threads. */
    m->nplan = 2;
    snprintf(m->plan[1].extra[0], sizeof m->plan[1].extra[0], "--threads");
    snprintf(m->plan[1].extra[1], sizeof m->plan[1].extra[1], "2");
    ck_assert_int_eq(repro_multirun_auto_jobs(m, 1, 1), 1);
}
END_TEST

/* `repro check --json` with args: whether run 2 began before run 1 ended
 * (the runs' "started" and "seconds"); both runs' chains into chain. */
static int runs_overlap(const char *args, char chain[65])
{
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
    json_t *runs = json_object_get(doc, "runs");
    ck_assert_int_eq(json_array_size(runs), 2);
    json_t *r1 = json_array_get(runs, 0), *r2 = json_array_get(runs, 1);
    double end1 = json_real_value(json_object_get(r1, "started")) +
                  json_real_value(json_object_get(r1, "seconds"));
    ck_assert(json_real_value(json_object_get(r1, "seconds")) > 0);
    int overlapped = json_real_value(json_object_get(r2, "started")) < end1;
    snprintf(chain, 65, "%s", json_string_value(json_object_get(r1, "chain")));
    ck_assert_str_eq(chain, json_string_value(json_object_get(r2, "chain")));
    json_decref(doc);
    return overlapped;
}

/* No --jobs: on 2 CPUs two 1-thread runs overlap in time; on one CPU, or
 * at 2 threads a run on 2 CPUs, they run one after another; the bits are
 * the same every way. */
START_TEST(test_check_runs_at_once_by_default)
{
    char alone[65], at_once[65], wide[65];
    ck_assert(pin_cpus(1));
    ck_assert_msg(!runs_overlap("check experiments/mlp.ini --steps 30 --no-golden --json", alone),
                  "1 CPU: run 2 began before run 1 ended");
    if (!pin_cpus(2)) /* a 1-CPU machine: the overlap cannot be shown here */
        return;
    ck_assert_msg(runs_overlap("check experiments/mlp.ini --steps 30 --no-golden --json", at_once),
                  "2 CPUs, 1 thread a run: run 2 began after run 1 ended");
    ck_assert_str_eq(alone, at_once);
    ck_assert_msg(!runs_overlap("check experiments/mlp.ini --steps 30 --no-golden --json "
                                "--set threads=2",
                                wide),
                  "2 CPUs, 2 threads a run: run 2 began before run 1 ended");
    ck_assert_str_eq(alone, wide); /* the thread count changes no bit */
}
END_TEST

Suite *jobs_suite(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("jobs");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, save_allowed, NULL);
    tcase_add_test(tc, test_jobs_fit_the_cpus);
    tcase_add_test(tc, test_check_runs_at_once_by_default);
    suite_add_tcase(s, tc);
    return s;
}
