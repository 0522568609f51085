/* The planned runs of a multirun, one after another or several at once
 * (multirun.h: jobs). Every run is a fresh process writing only its own
 * directory, so running them at once changes no bit of any trace: what it
 * changes is a check's wall time where the machine has cores the runs
 * leave idle (two 1-thread mlp runs at once on 2 cores take ~1.5x one
 * run, not 2x; the cnn ~1.3x). Runs start in plan order; the caller's
 * thread runs them too, beside jobs - 1 more. */
#include "analysis/multirun.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/run_progress.h"
#include "util/cpus.h"
#include "util/error.h"
#include "util/progress.h"

typedef struct {
    repro_multirun *m;
    pthread_mutex_t lock;
    int next;                      /* the next run to start */
    int stop;                      /* a run failed: start no more */
    double t0;                     /* when the first run began */
    int rc[REPRO_MULTIRUN_MAX];    /* each run's result (run_one's) */
    int code[REPRO_MULTIRUN_MAX];  /* and its error, when rc < 0 (the */
    char msg[REPRO_MULTIRUN_MAX][1024]; /* error slot is per thread) */
} run_queue;

/* The next run in plan order, announced, or -1 when none is left to start. */
static int claim(run_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int i = q->stop || q->next >= q->m->nplan ? -1 : q->next++;
    if (i >= 0) {
        repro_run_plan *p = &q->m->plan[i];
        p->started = repro_now() - q->t0;
        p->state = REPRO_RUN_RUNNING;
        if (!q->m->quiet) {
            repro_run_progress_hold();
            fprintf(stderr, "repro: %s (%d/%d) ...\n", p->label, i + 1, q->m->nplan);
            repro_run_progress_release();
        }
    }
    pthread_mutex_unlock(&q->lock);
    return i;
}

static void *run_claimed(void *arg)
{
    run_queue *q = arg;
    int i;
    while ((i = claim(q)) >= 0) {
        repro_run_plan *p = &q->m->plan[i];
        double t0 = repro_now();
        int rc = repro_multirun_run_one(q->m, i, p->dir, 0);
        pthread_mutex_lock(&q->lock);
        p->seconds = repro_now() - t0;
        p->rc = rc;
        p->state = REPRO_RUN_DONE;
        pthread_mutex_unlock(&q->lock);
        q->rc[i] = rc;
        if (rc < 0) {
            q->code[i] = repro_error_code();
            snprintf(q->msg[i], sizeof q->msg[i], "%s", repro_error_message());
        }
        if (rc) {
            pthread_mutex_lock(&q->lock);
            q->stop = 1;
            pthread_mutex_unlock(&q->lock);
        }
    }
    return NULL;
}

/* The first failure in plan order (runs after it may not have started). */
static int first_failure(const run_queue *q)
{
    for (int i = 0; i < q->m->nplan; i++) {
        int rc = q->rc[i];
        if (rc < 0)
            return repro_error_set(q->code[i], "%s", q->msg[i]);
        if (rc > 0)
            return rc == 2 || rc == 3 ? rc : 3; /* the child repro's exit status, passed through */
    }
    return 0;
}

int repro_multirun_run_planned(repro_multirun *m)
{
    run_queue *q = calloc(1, sizeof *q);
    if (!q)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    q->m = m;
    pthread_mutex_init(&q->lock, NULL);
    for (int i = 0; i < m->nplan; i++)
        snprintf(m->plan[i].dir, sizeof m->plan[i].dir, "%s/run-%d", m->root, i + 1);
    int extra = (m->jobs < m->nplan ? m->jobs : m->nplan) - 1, started = 0;
    pthread_t th[REPRO_MULTIRUN_MAX];
    q->t0 = repro_now();
    for (int k = 0; k < extra; k++) /* a thread that does not start leaves its runs to us */
        started += pthread_create(&th[started], NULL, run_claimed, q) == 0;
    run_claimed(q);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    int rc = first_failure(q);
    pthread_mutex_destroy(&q->lock);
    free(q);
    return rc;
}

/* A run's own --threads or --ranks value in place of the config's. */
static int own_count(const repro_run_plan *p, const char *flag, int fallback)
{
    if (strcmp(p->extra[0], flag) != 0)
        return fallback;
    long v = strtol(p->extra[1], NULL, 10); /* checked when the plan was made */
    return v >= 1 && v <= 4096 ? (int)v : fallback;
}

int repro_multirun_auto_jobs(const repro_multirun *m, int threads, int ranks)
{
    long widest = 1;
    for (int i = 0; i < m->nplan; i++) {
        long w = (long)own_count(&m->plan[i], "--threads", threads > 0 ? threads : 1) *
                 own_count(&m->plan[i], "--ranks", ranks > 0 ? ranks : 1) *
                 own_count(&m->plan[i], "--tp", 1);
        widest = w > widest ? w : widest;
    }
    long jobs = repro_cpus_available() / widest;
    if (jobs > m->nplan)
        jobs = m->nplan;
    return jobs >= 1 ? (int)jobs : 1;
}
