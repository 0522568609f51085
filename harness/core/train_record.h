/* The built-in workload's recording: feeds every tensor of every step
 * (trace.h lists which, and in what order) to the public recorder
 * (repro/repro.h), the same API an external program uses.
 *
 * Hashing runs off the critical path, on one hasher thread, without copying
 * the big tensors: forward and backward only read the weights and only the
 * optimizer writes them, so
 *   job G(n) hashes step n's gradients (plus small copies of the batch,
 *            logits, loss, RNG state) while the optimizer of step n reads them;
 *   job P(n) hashes step n's parameters and optimizer state while step n+1's
 *            forward and backward run, then writes step n's trace line;
 * and the training thread waits only where a buffer is about to be
 * overwritten: for G(n-1) before backward(n) and, before optimizer(n),
 * until P(n-1) has read its tensors (its trace line may still be in the
 * writing). The small copies are double-buffered by step parity. */
#ifndef REPRO_TRAIN_RECORD_H
#define REPRO_TRAIN_RECORD_H

#include "core/train.h"
#include "record/hash.h"
#include "record/trace.h"
#include "util/fault.h"

typedef struct repro_train_recorder repro_train_recorder;

typedef struct {
    const char *trace_path; /* NULL: digests only, no file */
    int level;              /* REPRO_TRACE_* */
    int every;              /* detail every K-th step (and the last) */
    int digest;             /* repro_digest_fn of the tensor leaves */
    long total_steps;
    const long *dump_steps; /* steps whose tensors are written as .npy (0: the
                               initial parameters and optimizer state) */
    int ndump;
    const char *dump_only;  /* fnmatch glob over tensor names, or NULL: all */
    const char *dump_dir;   /* where: <dump_dir>/step-000037/<tensor>.npy */
    /* Quarantine taps (bisect --quarantine): every output of the op(s)
     * `tap_op` selects (opnames.h) is appended to `tap_path` (mode write), or
     * replaced by the next block read from it (mode read) before it is
     * hashed and used, so a run continues with a reference run's values. */
    const char *tap_op;
    const char *tap_path;
    int tap_mode;           /* 0 none, REPRO_TAP_WRITE, REPRO_TAP_READ */
    /* Resuming (checkpoint.h): the trainer starts after step `start_step`
     * whose chain digest is *start_chain, so the trace continues the chain
     * with lines start_step + 1 ... and its header carries
     * "resumed_from": {"path": resumed_from, "step", "chain"}. 0/NULL: a
     * run from step 0. */
    long start_step;
    const repro_digest *start_chain;
    const char *resumed_from;
    /* The negative control in force (REPRO_FAULT's text, or NULL): recorded
     * in the trace header as "fault", so a fault-injected trace says so. */
    const char *fault_spec;
    /* 1: every job is waited for as soon as it is queued (no overlap with
     * training): the reference the overlapped pipeline must equal (tests). */
    int synchronous;
    /* Who runs the jobs (REPRO_HASHER_*): AUTO is a hasher thread where it
     * has a CPU of its own (the kernel threads leave one free, or a device
     * backend computes), else INLINE: a queued job's large tensors go to a
     * leaf queue (record/leaf_queue.h) that the kernel threads hash
     * between their jobs (train.h, repro_trainer_set_idle_first), and the
     * training thread runs the job where it would wait for the hasher,
     * hashing the leaves left. Same digests, same trace. */
    int hasher;
} repro_train_recorder_opts;

enum { REPRO_TAP_WRITE = 1, REPRO_TAP_READ = 2 };
enum { REPRO_HASHER_AUTO = 0, REPRO_HASHER_THREAD = 1, REPRO_HASHER_INLINE = 2 };

/* Whether r runs its jobs inline (REPRO_HASHER_INLINE, as chosen). */
int repro_train_recorder_inline(const repro_train_recorder *r);

/* Builds the tensor list for the trainer's model, opens the public
 * recorder and starts the hasher. Installs itself as the trainer's
 * observer (t->observer; repro_trainer_release frees it). `fault`: the negative control's settings (util/fault.h; may be
 * NULL: none). */
int repro_train_recorder_new(repro_train_recorder **out, repro_trainer *t,
                             const repro_train_recorder_opts *opts, const repro_fault *fault);

/* The trainer's hooks for step n = t->step + 1 are its observer
 * (train.h), which repro_train_recorder_new installs: the trainer calls
 * them through that table and knows nothing of this file. Under
 * accumulation_steps K > 1, on a dumped step, the micro_batch hook writes
 * micro-batch j's inputs (batch.ids, batch.x, batch.y) and dropout masks as
 * NAME.mbJ.npy: the trace hashes only the last micro-batch's (batch.x =
 * batch.x.mb<K-1>); the others are overwritten before the step ends, so
 * they are written there or not at all. */

/* Waits for the hasher, writes the trailer, returns the final chain digest.
 * trailer_extra (a json_t object, may be NULL; borrowed) adds informational
 * keys to the trailer. */
int repro_train_recorder_finish(repro_train_recorder *r, repro_digest *chain,
                               void *trailer_extra);
/* Waits until every completed step is hashed (and written). */
int repro_train_recorder_sync(repro_train_recorder *r);
/* Stops the hasher; leaves a trace without trailer if not finished. */
void repro_train_recorder_free(repro_train_recorder *r);

/* The chain digest so far and the step it covers (call after sync or
 * finish, when the hasher has caught up): what a checkpoint saves. */
long repro_train_recorder_chain(const repro_train_recorder *r, repro_digest *chain);

#endif
