/* The chunk-running thread pool (see pool.h). Chunks are claimed from an
 * atomic counter, so the assignment of chunks to threads varies from run to
 * run; pool.h's rule is what makes that harmless.
 *
 * Cheap for small ops: a training step runs a few dozen short jobs, so a
 * worker that finished one spins briefly (a pause loop, about a hundred
 * microseconds) watching for the next before it sleeps on the condition
 * variable, and the caller likewise spins before it sleeps waiting for the
 * chunks. The mutex is only touched to wake sleepers.
 *
 * Robust when the machine is oversubscribed (a recorder's hasher thread
 * beside 2 compute threads on 2 cores): the caller waits for the chunks,
 * never for the workers. A worker that is off its core when a job starts
 * simply claims nothing, and the caller runs every chunk itself instead of
 * waiting a scheduler time slice for the worker to say so. For that, a
 * claim names its job: the claim word holds the job number and the
 * unclaimed range [lo, hi) (the caller takes lo, workers hi - 1), and a
 * claim is a compare-and-swap that fails once another job has started. A
 * job's function, context and chunk count live in one of two descriptors,
 * by the job number's parity: while the claim word still shows job g,
 * the caller may already be filling job g+1's descriptor, but never g's
 * (it refills that one only for g+2, after g+1 was published), so a
 * worker that read g's descriptor between seeing job g and claiming in
 * job g read g's fields, all of them. (With one
 * descriptor a late worker could pair job g's exhausted claim word with
 * job g+1's larger chunk count and run a chunk twice; TSan's scheduling
 * found that.)
 *
 * Idle work (repro_pool_set_idle): a worker waiting for the next job runs
 * the caller's background units in its spin, one unit between two looks
 * at the claim word, so a new job waits at most one unit for it. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* Pause loops: about 120 us on Zen 3 (a pause is ~30 ns there). A training
 * step runs ~43 jobs with serial work between them; at 1000 loops (~30 us)
 * the workers often slept and every job paid a futex wake: medians of 7
 * interleaved runs, 2 threads, gave cnn 196 -> 233 and mlp 684 -> 736
 * steps/s going to 4000 (12000 was no better). */
enum { SPIN = 4000 };

struct repro_pool {
    int threads;
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    /* Job g's descriptor is jobs[g & 1]: stored before the claim word
     * publishes g; atomic because a worker far behind may read one while
     * it is refilled (its claim then fails: the job number moved on). */
    struct {
        _Atomic(repro_chunk_fn) fn;
        _Atomic(void *) ctx;
        atomic_long nchunks;
    } jobs[2];
    _Atomic uint64_t claim; /* job number << 40 | lo << 20 | hi: chunks [lo, hi)
                               are unclaimed */
    atomic_long done;       /* chunks of the current job finished */
    atomic_int quit;
    /* repro_pool_set_idle's function and argument; idle_inside counts the
     * workers between reading them and returning from the call, so that
     * clearing can wait until no call is left (seq_cst on both sides: a
     * worker either sees the cleared function or is counted). */
    _Atomic(repro_idle_fn) idle_fn;
    _Atomic(void *) idle_arg;
    atomic_int idle_inside;
    /* Counts repro_pool_set_idle calls that set a function: a worker asleep
     * since before one wakes for it (else idle work set while every worker
     * sleeps would wait for the next job, and a test on a loaded machine
     * for ever). */
    atomic_uint idle_gen;
};

/* The claim word's fields. 24 bits of job number: a worker would have to
 * stall between reading the word and its compare-and-swap for 16M jobs
 * (minutes of training) to mistake an old job for the current one. 20 bits
 * per chunk index: a job of more chunks runs on the caller alone. */
enum { JOB_SHIFT = 40, LO_SHIFT = 20 };
#define CHUNK_MASK ((1ULL << LO_SHIFT) - 1)
#define MAX_CHUNKS ((long)CHUNK_MASK)

static inline uint32_t job_of(uint64_t w)
{
    return (uint32_t)(w >> JOB_SHIFT);
}

static inline long lo_of(uint64_t w)
{
    return (long)((w >> LO_SHIFT) & CHUNK_MASK);
}

static inline long hi_of(uint64_t w)
{
    return (long)(w & CHUNK_MASK);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claims and runs chunks of job `job` until none are left; the thread that
 * finishes the last chunk wakes a caller asleep waiting for it. The caller
 * claims from the low end, the workers from the high end: every op splits
 * its outputs into chunks in memory order, so the same thread tends to write
 * and then read the same part of each tensor (a GEMM's block of C, then the
 * update of those parameters, then the next forward's rows), instead of
 * fetching lines the other core just wrote. */
static void drain(repro_pool *p, uint32_t job, repro_chunk_fn fn, void *ctx, long nchunks,
                  int from_low)
{
    for (;;) {
        uint64_t w = atomic_load(&p->claim);
        long lo = lo_of(w), hi = hi_of(w);
        if (job_of(w) != job || lo >= hi)
            return;
        uint64_t next = from_low ? w + (1ULL << LO_SHIFT) : w - 1;
        if (!atomic_compare_exchange_weak(&p->claim, &w, next))
            continue;
        fn(ctx, from_low ? lo : hi - 1);
        if (atomic_fetch_add(&p->done, 1) + 1 == nchunks) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* One unit of idle work, if a function is set: returns what it returned
 * (nonzero: it did some work), or 0. */
static int run_idle(repro_pool *p)
{
    if (!atomic_load(&p->idle_fn))
        return 0;
    atomic_fetch_add(&p->idle_inside, 1);
    repro_idle_fn fn = atomic_load(&p->idle_fn);
    int did = fn ? fn(atomic_load(&p->idle_arg)) : 0;
    atomic_fetch_sub(&p->idle_inside, 1);
    return did;
}

/* Waits until the job number differs from `seen` (or quit): spin, running
 * idle work while there is some, then sleep until a job comes or idle work
 * is set anew. Returns the claim word seen. */
static uint64_t wait_job(repro_pool *p, uint32_t seen)
{
    for (;;) {
        unsigned gen = atomic_load(&p->idle_gen);
        for (int i = 0; i < SPIN; i++) {
            uint64_t w = atomic_load(&p->claim);
            if (job_of(w) != seen || atomic_load(&p->quit))
                return w;
            if (run_idle(p))
                i = 0; /* useful work: no reason to sleep yet */
            else
                cpu_relax();
        }
        pthread_mutex_lock(&p->mu);
        while (!atomic_load(&p->quit) && job_of(atomic_load(&p->claim)) == seen &&
               atomic_load(&p->idle_gen) == gen)
            pthread_cond_wait(&p->work_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        uint64_t w = atomic_load(&p->claim);
        if (job_of(w) != seen || atomic_load(&p->quit))
            return w;
    }
}

static void *pool_worker(void *arg)
{
    repro_pool *p = arg;
    uint32_t seen = 0;
    for (;;) {
        uint64_t w = wait_job(p, seen);
        if (atomic_load(&p->quit))
            break;
        seen = job_of(w);
        /* Read after the job number: if a claim in this job succeeds,
         * these are its fields (the header's argument). */
        int d = (int)(seen & 1);
        drain(p, seen, atomic_load(&p->jobs[d].fn), atomic_load(&p->jobs[d].ctx),
              atomic_load(&p->jobs[d].nchunks), 0);
    }
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
    for (int d = 0; d < 2; d++) {
        atomic_init(&p->jobs[d].fn, NULL);
        atomic_init(&p->jobs[d].ctx, NULL);
        atomic_init(&p->jobs[d].nchunks, 0);
    }
    atomic_init(&p->claim, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->idle_fn, NULL);
    atomic_init(&p->idle_arg, NULL);
    atomic_init(&p->idle_inside, 0);
    atomic_init(&p->idle_gen, 0);
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
    atomic_store(&p->quit, 1);
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

void repro_pool_set_idle(repro_pool *p, repro_idle_fn fn, void *arg)
{
    if (!p || p->threads == 1)
        return;
    atomic_store(&p->idle_fn, NULL);
    while (atomic_load(&p->idle_inside) > 0) /* calls of the old function finish */
        cpu_relax();
    if (fn) {
        atomic_store(&p->idle_arg, arg); /* before the function: a worker that
                                            sees the function sees its argument */
        atomic_store(&p->idle_fn, fn);
        /* Under the lock a worker checks the count before it sleeps: the
         * broadcast cannot fall between its check and its wait. */
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->idle_gen, 1);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

void repro_pool_run(repro_pool *p, long nchunks, repro_chunk_fn fn, void *ctx)
{
    if (nchunks <= 0)
        return;
    if (!p || p->threads == 1 || nchunks == 1 || nchunks > MAX_CHUNKS) {
        for (long c = 0; c < nchunks; c++)
            fn(ctx, c);
        return;
    }
    uint32_t job = (job_of(atomic_load(&p->claim)) + 1) & ((1u << (64 - JOB_SHIFT)) - 1);
    int d = (int)(job & 1);
    atomic_store(&p->jobs[d].fn, fn);
    atomic_store(&p->jobs[d].ctx, ctx);
    atomic_store(&p->jobs[d].nchunks, nchunks);
    atomic_store(&p->done, 0);
    /* publishes the job (seq_cst) */
    atomic_store(&p->claim, (uint64_t)job << JOB_SHIFT | (uint64_t)nchunks);
    /* Sleepers check the job number under the mutex before they wait, so
     * taking it here before the broadcast loses no wake-up. */
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);

    drain(p, job, fn, ctx, nchunks, 1);

    /* Only chunks a worker claimed and is still running are waited for. */
    for (int i = 0; i < SPIN && atomic_load(&p->done) < nchunks; i++)
        cpu_relax();
    if (atomic_load(&p->done) < nchunks) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->done) < nchunks)
            pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
