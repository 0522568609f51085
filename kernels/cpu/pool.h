/* A pthread pool that runs "chunks" of work. Determinism rule for every
 * kernel: the caller splits the work into chunks whose boundaries depend only
 * on the problem size, each chunk writes outputs no other chunk writes, and
 * each output is reduced in a fixed order inside its chunk. Which thread runs
 * which chunk then cannot change a single bit, so results are identical for
 * any thread count (docs/DESIGN.md, determinism contract). */
#ifndef REPRO_POOL_H
#define REPRO_POOL_H

typedef struct repro_pool repro_pool;

typedef void (*repro_chunk_fn)(void *ctx, long chunk);

/* threads >= 1; 1 runs everything on the caller's thread. */
int repro_pool_new(repro_pool **out, int threads);
void repro_pool_free(repro_pool *pool);
int repro_pool_threads(const repro_pool *pool);

/* Runs fn(ctx, c) for c in [0, nchunks), on the caller and the pool's
 * threads, and returns when all are done. pool may be NULL (inline). Not
 * reentrant: a chunk must not call repro_pool_run on the same pool. */
void repro_pool_run(repro_pool *pool, long nchunks, repro_chunk_fn fn, void *ctx);

/* Background work for the pool's threads while they wait for a job: fn(arg)
 * does one short unit (microseconds: a job waits for the unit in hand) and
 * returns nonzero if it did any, 0 when it has none (the thread then spins
 * and sleeps as before). Never called on the caller's thread, nor by a
 * 1-thread pool. fn = NULL clears it; set and clear return only once no
 * thread is still in a call of the previous function, so `arg` may be
 * freed after clearing. Results of jobs never depend on it. */
typedef int (*repro_idle_fn)(void *arg);
void repro_pool_set_idle(repro_pool *pool, repro_idle_fn fn, void *arg);

#endif
