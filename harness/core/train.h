/* One training run in process: data, loader, model, optimizer and the step
 * loop. A session (session.h) drives it step by step, with its recorder as
 * the observer; tests drive it directly to compare final parameters bit
 * for bit. */
#ifndef REPRO_TRAIN_H
#define REPRO_TRAIN_H

#include "core/config.h"
#include "core/dataset.h"
#include "core/loader.h"
#include "core/mixed.h"
#include "core/model.h"
#include "record/hash.h"
#include "util/fault.h"

/* What watches the steps: the recorder (train_record.h) installs itself
 * here. The trainer calls each hook where a buffer the watcher may still
 * be reading is about to be overwritten, or has just been written, and
 * knows nothing else of it: recording depends on training, never the
 * other way round. Hooks return 0, or -1 with the error slot set. */
typedef struct {
    int (*before_backward)(void *ctx);  /* step n's first backward will overwrite the grads */
    int (*micro_batch)(void *ctx, int j); /* micro-batch j's backward done (K > 1) */
    int (*after_backward)(void *ctx);   /* step n's gradients are final */
    int (*before_update)(void *ctx);    /* the optimizer will overwrite the parameters */
    int (*after_update)(void *ctx);     /* step n is done (t->step counts it) */
    /* The chain digest certified so far, once every finished step is
     * hashed (what a checkpoint saves): the steps it covers, or -1. */
    long (*chain)(void *ctx, repro_digest *chain);
    void (*release)(void *ctx); /* detaches and frees the watcher */
} repro_train_observer_ops;

typedef struct {
    const repro_train_observer_ops *ops; /* NULL: no observer */
    void *ctx;
} repro_train_observer;

typedef struct repro_trainer_s {
    repro_config cfg;
    repro_dataset train_set, test_set;
    repro_loader *loader;
    int loader_shared;      /* the loader's workers are cooperative streams (loader.h) */
    int loader_helped;      /* the backend's idle kernel threads fill their rows */
    int (*idle_first)(void *arg); /* their work before loader rows (the recorder's
                                     leaves: repro_trainer_set_idle_first), or NULL */
    void *idle_first_arg;
    repro_model model;
    long step;              /* optimizer steps done */
    const repro_batch *batch; /* the last step's batch */
    double loss;            /* the last step's mean loss (double accumulation) */
    /* Backend memory (the model's backend; host pointers on the CPU): */
    float *probs, *dlogits; /* batch x classes */
    float *class_features;  /* classes x features: penultimate activations summed per
                               label (index-add; a trace metric) */
    int32_t *labels;        /* batch: the batch's labels, uploaded for the kernels */
    double beta1_pow, beta2_pow; /* adamw: beta^t kept by multiplication */
    repro_train_observer observer; /* per-step hashing (train_record.h), or none */
    /* Accumulation and mixed precision (mixed.h). A checkpoint must carry
     * `updates` (sgd's first step and adamw's bias correction count updates,
     * not steps: fp16 skips some) and the scaler's scale and growth_tracker. */
    long updates;           /* optimizer updates applied (step minus skipped) */
    repro_scaler scaler;
    /* train.eval_every = N: after every N-th step's update, the held-out
     * eval of that step (repro_trainer_evaluate; the trace line carries it). */
    long eval_step;         /* the step of the last eval, 0 if none */
    double eval_loss, eval_accuracy;
    /* Data parallel (train_dist.h): the MPI group, or NULL in one process. */
    struct repro_dist *dist;
    int rank, world;        /* 0 and 1 in one process */
    /* Tensor parallel (parallel.tp > 1, core/tp.h): the job's processes
     * are ranks x tp, process p being tensor-parallel rank p % tp of
     * replica p / tp; dist is then the replica's data-parallel group
     * (NULL with ranks = 1), tp_group its tensor-parallel group. */
    struct repro_dist *tp_group, *dp_group;
    repro_fault fault;      /* a replica fault (util/fault.h), set before the first step;
                               replay.every: a grad.* flip lands in the replay */
    char replay_differs[48]; /* replay.every: the gradient whose two computations
                                differed (the step failed, REPRO_EMISMATCH); "" */
    struct repro_train_global *global; /* rank 0 of world > 1: the global batch the
                                          recorder hashes (gathered from every rank) */
    const float *logits_view; /* the recorder's logits: the global ones on rank 0 of
                                 world > 1, else NULL (the model's own) */
    double *shard_loss;     /* nshards: each shard's mean loss, global shard order */
    float *reduce_scratch;  /* the data-parallel reduce's buffer */
} repro_trainer;

/* Validates the config, loads or generates the data, builds and initializes
 * the model on its backend (today always "cpu": the config key that picks
 * another comes with it). Returns 0, or -1 with the error slot set. */
int repro_trainer_init(repro_trainer *t, const repro_config *cfg);
/* The same as rank repro_dist_rank(dist) of a data-parallel job (dist may
 * be NULL: one process): the loader gives this rank its shards of every
 * global batch, and the gradient is summed across ranks (core/dist.h). */
int repro_trainer_init_ranked(repro_trainer *t, const repro_config *cfg, struct repro_dist *dist);
/* One optimizer step: accumulation_steps micro-batches (next batch,
 * forward, loss, backward accumulating), then the update (skipped when the
 * fp16 scaler finds inf/NaN). t->batch is the last micro-batch, t->loss the
 * mean of the micro-batch losses. */
int repro_trainer_step(repro_trainer *t);
/* Makes the loader's workers cooperative streams (loader.h,
 * repro_loader_help) when the kernel threads plus `extra_threads` (the
 * recorder's hasher) are at least the CPUs this process may use: worker
 * threads could then only run by preempting one of them, mid-chunk or
 * mid-hash, which stalls the step. The kernel threads fill rows while
 * they wait; the training thread while it waits for its batch; a caller
 * that passes extra_threads should have them call repro_loader_help when
 * idle. Only before the first step (init calls it with 0). Returns 1 if
 * the loader is cooperative. The batches are the same bits either way. */
int repro_trainer_share_loader(repro_trainer *t, int extra_threads);
/* Gives the backend's idle kernel threads (backend.h, set_idle_work) `fn`
 * to run before any loader rows: one short unit per call, nonzero if it
 * did any. fn = NULL withdraws it, returning once no thread is still in a
 * call of it. Returns 0 where the backend has no idle threads to give (a
 * device backend, or 1 thread), else 1. */
int repro_trainer_set_idle_first(repro_trainer *t, int (*fn)(void *arg), void *arg);
/* Loss and accuracy on the held-out split, in eval mode (no dropout), in
 * fixed batches of the config's batch size. Does not touch training state. */
void repro_trainer_evaluate(repro_trainer *t, double *loss, double *accuracy);
void repro_trainer_release(repro_trainer *t);

#endif
