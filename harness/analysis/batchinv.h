/* Batch invariance, the engine under `repro check --batch-invariance`: does
 * a sample get the same bits whatever else shares its batch? Inference
 * servers batch requests together, and a kernel that picks its reduction
 * split or tile from the batch size gives one request different answers
 * depending on its neighbours (Thinking Machines, "Defeating Nondeterminism
 * in LLM Inference", 2025); in on-policy RL the sampler and the trainer
 * then disagree about the policy's numbers.
 *
 * In process, through the model and backend API (no fresh processes: the
 * property is about one process's kernels, and every composition runs on
 * the same model and the same weights):
 *  - eval: the held-out samples through the eval-mode forward (no dropout)
 *    in batches of each requested size, in order and in shuffled
 *    compositions (the same samples permuted by a seeded generator, then
 *    cut into batches); each sample's logits compared bit for bit with the
 *    reference composition (the first size, in order);
 *  - training: one training step's batch through the forward as a whole
 *    and as micro-batches (64 vs 8 x 8 for the shipped experiments): each
 *    sample's logits, softmax row and loss compared (the gradient sums may
 *    legitimately differ; the forward rows must not). Dropout's mask is
 *    keyed by the element's position in the batch tensor (registered not
 *    batch-invariant, as torch draws a mask per tensor), so a model with
 *    dropout has that forward run in eval mode: the kernels are the same,
 *    only the positional mask is left out (result.train_mode says which);
 *  - for each sample shown, the first op ("fwd.<layer>", the model's op
 *    observer) whose output row for that sample differs, with the registry
 *    op and the variant the config selects for it.
 * Results in a struct, errors in the error slot (util/error.h). */
#ifndef REPRO_BATCHINV_H
#define REPRO_BATCHINV_H

#include <stdint.h>
#include <stdio.h>

#include "core/config.h"

#define REPRO_BATCHINV_MAX_SIZES 16
#define REPRO_BATCHINV_MAX_COMPS (2 * REPRO_BATCHINV_MAX_SIZES)
#define REPRO_BATCHINV_MAX_SHOWN 8 /* mismatching samples located and reported */
#define REPRO_BATCHINV_MAX_BATCH 4096

/* The scope a mismatch is reported under (as multirun's scopes). */
#define REPRO_BATCHINV_SCOPE "batch composition"

typedef struct {
    int sizes[REPRO_BATCHINV_MAX_SIZES]; /* batch sizes, 1..REPRO_BATCHINV_MAX_BATCH */
    int nsizes;
    long train_steps; /* optimizer steps before the check (0: the initialized weights) */
    int samples;      /* held-out samples to evaluate (0: all of them) */
    int micro;        /* micro-batches the training batch is cut into (0: 8) */
    int quiet;        /* no progress on stderr */
} repro_batchinv_opts;

/* The defaults: sizes 1, 7, 64 (alone, below and above the usual split
 * thresholds), no training, every held-out sample, 8 micro-batches. */
void repro_batchinv_opts_init(repro_batchinv_opts *o);
/* Parses "1,7,64" into o->sizes. 0, or -1 (error slot, naming `what`). */
int repro_batchinv_parse_sizes(repro_batchinv_opts *o, const char *what, const char *list);

/* One way of cutting the samples into batches. */
typedef struct {
    char label[48]; /* "batch 7", "shuffled batch 7", "training batch of 64" */
    int size;       /* samples per batch (the last may be shorter) */
    int shuffled;
    int ndiffer;    /* samples whose rows differ from the reference's */
} repro_batchinv_comp;

/* Where a sample sat in one composition. */
typedef struct {
    char label[48]; /* the composition's */
    int batch;      /* which batch, from 0 */
    int pos;        /* its row in that batch */
    int bsize;      /* that batch's size */
} repro_batchinv_place;

/* One sample whose rows differ between two compositions. */
typedef struct {
    long sample;            /* held-out index (eval), row in the training batch (train) */
    long sample_id;         /* training: the dataset's sample id; eval: = sample */
    repro_batchinv_place a, b; /* the reference, and the first composition that differs */
    char what[16];          /* the first differing row: "logits", "probs", "loss" */
    char first_op[64];      /* the first op output whose row differs ("fwd.fc1"),
                               "softmax_xent" when only the loss kernel's rows do */
    char op[32];            /* its registry op ("linear.fwd"), or "" */
    char variant[32];       /* the variant the config selects for it, or "" */
    int batch_invariant;    /* the registry's flag for (op, variant); -2: unknown */
    long nelem, ndiffer_elem; /* the first op's row: elements, and how many differ */
    double max_abs;         /* max |a - b| over that row */
} repro_batchinv_mismatch;

typedef struct {
    char experiment[128];
    long train_steps;
    int nsamples;
    uint64_t shuffle_seed;  /* the seed of the shuffled compositions' generator */
    repro_batchinv_comp comps[REPRO_BATCHINV_MAX_COMPS]; /* [0] is the reference */
    int ncomps;
    int ndiffer;            /* held-out samples that differ in some composition */
    repro_batchinv_mismatch shown[REPRO_BATCHINV_MAX_SHOWN];
    int nshown;
    /* training: one step's batch whole vs in micro-batches */
    int train_checked;
    long train_step;        /* the step whose batch it is (train_steps + 1) */
    int train_batch, train_micro_size, train_nmicro;
    int train_mode;         /* 1: train-mode forward; 0: eval mode (the model has dropout) */
    int train_ndiffer;
    repro_batchinv_mismatch train_shown[REPRO_BATCHINV_MAX_SHOWN];
    int train_nshown;
    int batch_invariant;    /* the verdict: no sample differs anywhere */
} repro_batchinv_result;

/* Runs the check for cfg (loaded and validated). 0 with the verdict in
 * r->batch_invariant, or -1 with the error slot set. */
int repro_batchinv_run(const repro_config *cfg, const repro_batchinv_opts *o,
                       repro_batchinv_result *r);

/* ---- reports (batchinv_report.c) ----------------------------------------- */
void repro_batchinv_print(FILE *out, const repro_batchinv_result *r);
/* A json_t object (new reference), or NULL (out of memory). */
void *repro_batchinv_json(const repro_batchinv_result *r);
/* One JUnit case per composition compared with the reference, and one for
 * the training forward. 0 or -1 (error slot). */
int repro_batchinv_junit(const char *path, const repro_batchinv_result *r);

/* ---- the first differing op (batchinv_locate.c) -------------------------- */
/* Fills m->op, m->variant and m->batch_invariant for m->first_op from the
 * registry and the variants cfg selects. */
void repro_batchinv_name_op(const repro_config *cfg, repro_batchinv_mismatch *m);

#endif
