/* A training session: one run of an experiment in this process, as
 * `repro run EXP` does it, for any caller (the CLI, the benchmark, batch
 * invariance, a library user):
 *   open    the trainer (config -> data, loader, model on its backend,
 *           seeds), the algorithm lock, a resume from a checkpoint, the
 *           recorder (the trace, dumps, quarantine taps) and the
 *           checkpoint directory;
 *   step    one optimizer step, and the checkpoint when one is due;
 *   run     the steps left up to train.steps, then waits for the hasher;
 *   finish  the held-out eval and the trace's trailer: the chain digest;
 *   close   everything.
 * Library code knows no terminal: progress goes to a callback the caller
 * gives (on_step), messages are fields the caller prints. Every failure is
 * -1 with the error slot set (util/error.h), never an exit. */
#ifndef REPRO_SESSION_H
#define REPRO_SESSION_H

#include <signal.h>

#include "core/checkpoint.h"
#include "core/train.h"
#include "core/train_record.h"
#include "util/fault.h"

#define REPRO_SESSION_MAX_DUMP 64

struct repro_dist;
struct repro_memtl;

typedef struct {
    /* Recording. no_recorder: the steps are not hashed at all (a
     * benchmark's "hashing off", batch invariance); no_trace: every step
     * is hashed, no file is written. */
    int no_recorder;
    int no_trace;
    const char *output;     /* the trace; NULL: runs/EXP/<UTC time>-<pid>/trace.jsonl */
    long dump[REPRO_SESSION_MAX_DUMP]; /* steps whose tensors are written as .npy */
    int ndump;
    const char *dump_only;  /* a glob over tensor names, or NULL: all */
    char tap_op[128];       /* quarantine taps (train_record.h), tap_mode 0: none */
    const char *tap_path;
    int tap_mode;
    const char *algo_lock;  /* a trace whose convolution algorithms to replay, or NULL */
    const char *resume;     /* a checkpoint to continue from, or NULL */
    long checkpoint_every;  /* 0: none */
    const char *checkpoint_dir; /* NULL: the trace's directory */
    /* The negative control (util/fault.h), read from the environment by
     * the caller (the core never reads it) and REPRO_FAULT's text for the
     * trace header. */
    repro_fault fault;
    long overflow_step;
    const char *fault_spec;
    int no_eval;            /* finish skips the held-out eval (a benchmark's timing) */
    struct repro_dist *dist; /* data parallel: this process's MPI job, or NULL */
    /* The memory timeline (core/memtl.h), or NULL: rank 0 records each
     * step into it. release_every = K > 0: after every K-th step the
     * backend's cache is emptied (empty_cache) and the timeline marks it. */
    struct repro_memtl *memtl;
    long release_every;
    /* Nonzero (the number of a signal the caller caught): repro_session_run
     * stops before the next step and fails (REPRO_EIO, "interrupted"), so
     * the caller can still write what was recorded. NULL: never. */
    volatile sig_atomic_t *stop;
    /* Called after every step of repro_session_run (step = steps done). */
    void (*on_step)(void *ctx, long step, double loss);
    void *on_step_ctx;
} repro_session_opts;

typedef struct {
    repro_session_opts o;
    repro_trainer t;
    int trainer_ready;
    repro_train_recorder *rec; /* NULL: no recorder, or a rank other than 0 */
    int rank;                  /* data parallel: only rank 0 records and checkpoints */
    char trace_path[1200], dump_dir[1300], ckpt_dir[1300];
    repro_checkpoint_info ck;  /* resumed: the step (and chain) it started after; else 0 */
    int temps_removed;         /* abandoned checkpoint temporaries removed by open */
    double setup_s, train_s;   /* open's seconds, run's seconds (hashing included) */
    double first_loss;         /* the loss of the first step this session took */
    int evaluated;
    double eval_loss, eval_accuracy; /* finish's held-out eval (NaN: no test set) */
    repro_digest chain;        /* finish: the final chain digest */
    double *rank_seconds;      /* data parallel, rank 0 after finish: every rank's */
    long *rank_rss_kib;        /* training seconds and peak resident set, rank order */
} repro_session;

/* Opens a session of cfg (validated already; copied). The session keeps
 * opts by value, and the strings it points to must outlive the session.
 * 0 with *out set, or -1 with the error slot set and *out NULL
 * (everything released). */
int repro_session_open(repro_session **out, const repro_config *cfg,
                       const repro_session_opts *opts);
/* One step, then the checkpoint if checkpoint_every divides it. */
int repro_session_step(repro_session *s);
/* The steps left up to train.steps, then waits until the recorder has
 * hashed (and written) every one; train_s is their time. On failure the
 * trace keeps its valid prefix. */
int repro_session_run(repro_session *s);
/* Data parallel: gathers every rank's statistics (every rank calls it).
 * Rank 0: the held-out eval (unless no_eval), then the trace's trailer
 * (train_seconds and the eval, informational) and s->chain. */
int repro_session_finish(repro_session *s);
void repro_session_close(repro_session *s);

/* Inside an MPI job (its launcher's environment): checks cfg's ranks
 * against the job's size (unset: the job's size is used) and joins it.
 * 0 with *dist NULL outside a job, or the job's handle. */
int repro_session_join_job(repro_config *cfg, struct repro_dist **dist);

/* Option text into opts; `what` names the option in messages
 * ("run: --dump"). Dump steps: STEP[,STEP...], each N, A-B or A-B/K (every
 * K-th from A to B); step 0 is the initial state. A tap: OP=FILE, mode
 * REPRO_TAP_WRITE or REPRO_TAP_READ. */
int repro_session_parse_dump(repro_session_opts *opts, const char *what, const char *spec);
int repro_session_parse_tap(repro_session_opts *opts, const char *what, int mode,
                            const char *spec);

#endif
