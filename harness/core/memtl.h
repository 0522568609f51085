/* The memory timeline of a run (`repro run --memory-timeline FILE`): what
 * each step allocates and frees, by category, with two running totals:
 * allocated (live blocks) and reserved (what a caching allocator holds:
 * live blocks plus freed ones it keeps for reuse).
 *
 * Where the numbers come from:
 *  - modelled: repro's CPU workload allocates every buffer once, at init
 *    (core/memory.h), so its real allocations are flat. The timeline
 *    replays each step as an eager framework with a caching allocator
 *    would allocate it (PyTorch's order): the sizes are the model's own
 *    accounting (repro_memory_account, the figures of `repro run`'s
 *    header), the order is forward (working copies under bf16/fp16,
 *    activations, workspace), backward (gradients when none are resident,
 *    activation gradients), the frees at the end of each micro-batch, the
 *    optimizer state at the first update, and zero_grad = none freeing the
 *    gradients after the update. Reserved grows to the largest allocated
 *    and shrinks only at an explicit release (empty_cache).
 *  - measured: beside each step, what the backend itself reports: the
 *    CUDA backend's caching allocator (in use; in use + cached), or on the
 *    CPU the process's resident set (reserved: none).
 *  - a Python-client run records only what torch reports (memory_allocated
 *    and memory_reserved on CUDA, the resident set on the CPU) and the
 *    categories it can see (parameters, gradients, optimizer state, saved
 *    activations): it is read back from its JSON (analysis/memtl_svg.h).
 * Library code: every failure is -1 with the error slot set. */
#ifndef REPRO_MEMTL_H
#define REPRO_MEMTL_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/model.h"

typedef enum {
    REPRO_MEMTL_PARAMS,
    REPRO_MEMTL_GRADS,
    REPRO_MEMTL_OPTIMIZER,
    REPRO_MEMTL_ACTIVATIONS,
    REPRO_MEMTL_ACTIVATION_GRADS,
    REPRO_MEMTL_WORKSPACE,
    REPRO_MEMTL_WORKING,   /* bf16/fp16 working copies of the weights */
    REPRO_MEMTL_LOADER,
    REPRO_MEMTL_RECORDER,
    REPRO_MEMTL_NCAT
} repro_memtl_cat;

/* Annotated events (bits of repro_memtl_step.marks). */
enum {
    REPRO_MEMTL_MARK_ZERO_NONE = 1 << 0, /* zero_grad = none: gradients freed */
    REPRO_MEMTL_MARK_ZERO_ZERO = 1 << 1, /* zero_grad = zero: gradients kept, memset */
    REPRO_MEMTL_MARK_ACCUM = 1 << 2,     /* accumulation boundary: the update after K */
    REPRO_MEMTL_MARK_WORKING = 1 << 3,   /* bf16/fp16 working copies made */
    REPRO_MEMTL_MARK_CHECKPOINT = 1 << 4,
    REPRO_MEMTL_MARK_RELEASE = 1 << 5,   /* explicit release: reserved back to allocated */
    REPRO_MEMTL_NMARK = 6
};

/* Category names ("parameters", "gradients", "optimizer state", ...) and
 * their short keys in JSON ("params", "grads", ...); mark names. */
const char *repro_memtl_cat_name(int cat);
const char *repro_memtl_cat_key(int cat);
const char *repro_memtl_mark_key(int bit_index); /* "zero_grad_none", ... */
const char *repro_memtl_mark_name(int bit_index);

/* One step (step 0: setup, before the first step). Bytes; -1: unknown. */
typedef struct {
    long step;
    int64_t peak_allocated;      /* the largest allocated during the step */
    int64_t at_peak[REPRO_MEMTL_NCAT]; /* each category's bytes at that moment */
    int64_t allocated, reserved; /* at the end of the step: between steps */
    int64_t at_end[REPRO_MEMTL_NCAT];
    int64_t peak_reserved;       /* the largest reserved during the step */
    int64_t measured_allocated, measured_reserved; /* the backend's own figures */
    int64_t measured_device;     /* the device's used bytes (cudaMemGetInfo) */
    unsigned marks;
} repro_memtl_step;

/* One allocator event (PyTorch's trace entry): action "alloc", "free",
 * "segment_alloc" (reserved grows), "segment_free" (a release). */
typedef struct {
    long step;
    int micro;       /* micro-batch index, -1 outside */
    char action[16];
    int cat;         /* -1 for segments */
    uint64_t addr, bytes;
} repro_memtl_event;

#define REPRO_MEMTL_MAX_EVENTS 200000 /* beyond, steps are kept and events dropped */

typedef struct repro_memtl {
    char source[16];       /* "repro" or "python" */
    char title[256];       /* what ran: the experiment or program */
    char measured[64];     /* what measured_* are: "rss", "cuda caching allocator", ... */
    unsigned cats_known;   /* bit c: category c recorded */
    int cut;               /* the run stopped before its last step */
    char cut_reason[256];
    long planned_steps;
    repro_memtl_step *steps;
    size_t nsteps, steps_cap;
    repro_memtl_event *events;
    size_t nevents, events_cap;
    int events_dropped;
    /* The model (the recorder's state). */
    int64_t live[REPRO_MEMTL_NCAT];
    int64_t allocated, reserved;
    uint64_t next_addr, block_addr[REPRO_MEMTL_NCAT];
    int64_t block_bytes[REPRO_MEMTL_NCAT];
    struct {
        int64_t params, grads, optimizer, activations, activation_grads, workspace, working,
            loader, recorder;
        int accumulation, zero_none, low_precision;
    } size;
    repro_memtl_step cur;
} repro_memtl;

void repro_memtl_init(repro_memtl *tl, const char *source, const char *title);
void repro_memtl_release(repro_memtl *tl);

/* ---- recording a repro run (core/session.c calls these) ---- */
/* Sizes from the model and config; step 0: the setup allocations
 * (parameters, loader, recorder). recorder: whether steps are hashed. */
int repro_memtl_begin(repro_memtl *tl, const repro_model *m, const repro_config *cfg,
                      int recorder);
/* Step `step` done: its allocations by the model above, then `marks`
 * extra (REPRO_MEMTL_MARK_CHECKPOINT); release: an explicit release
 * after it. measured_*: the backend's figures and the device's used bytes
 * (-1: none). */
int repro_memtl_step_done(repro_memtl *tl, long step, unsigned marks, int release,
                          int64_t measured_allocated, int64_t measured_reserved,
                          int64_t measured_device);
/* The run failed or stopped before `planned_steps`. */
void repro_memtl_cut(repro_memtl *tl, const char *reason);

/* ---- building a timeline from numbers (the JSON reader, a client) ---- */
int repro_memtl_push_step(repro_memtl *tl, const repro_memtl_step *s);
int repro_memtl_push_event(repro_memtl *tl, const repro_memtl_event *e);
/* A step with every figure unknown (-1), for filling in. */
void repro_memtl_step_blank(repro_memtl_step *s, long step);

/* The process's resident set in bytes (/proc/self/statm), or -1. */
int64_t repro_memtl_rss_bytes(void);

#endif
