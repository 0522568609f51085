/* The workload's memory, by category, for `repro run` and `make bench`:
 * what the model's buffers hold, counted the way a real implementation
 * would store them.
 *
 * Honesty notes (printed with the report):
 *  - The CPU workload allocates every buffer once, at init, so its peak is
 *    the sum of all categories; nothing is freed between steps.
 *  - Under bf16/fp16 the emulation keeps reduced-precision values in float
 *    buffers (4 bytes). The report counts those buffers (activations, their
 *    gradients, the cast working weights, the input cast) at 2 bytes per
 *    element: the bytes a real bf16/fp16 implementation would use. Master
 *    weights, gradients and optimizer state stay fp32 (4 bytes).
 *  - zero_grad = none (set_to_none): PyTorch frees the gradients after the
 *    update and reallocates them in the next backward, so they are not
 *    resident between steps; `grads_released` says how many bytes that is.
 *    The peak (during backward and the update) is unchanged. */
#ifndef REPRO_MEMORY_H
#define REPRO_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "core/model.h"

typedef struct {
    int elem_bytes;          /* activations etc.: 4 (fp32) or 2 (bf16/fp16) */
    size_t params;           /* fp32 master weights */
    size_t working_weights;  /* bf16/fp16: the cast copies (0 under fp32) */
    size_t grads;            /* fp32 parameter gradients */
    size_t optimizer;        /* sgd momentum, or adamw's two moments */
    size_t activations;      /* input batch and every layer output kept for backward,
                                plus dropout masks (1 byte) and maxpool indices (4 bytes) */
    size_t activation_grads; /* every layer's input gradient */
    size_t workspace;        /* transposed weights, conv workspaces, accumulation scratch */
    size_t peak;             /* the sum: everything is resident at once */
    size_t grads_released;   /* zero_grad = none: bytes not resident between steps */
} repro_memory;

/* zero_grad: REPRO_ZERO_GRAD_*. */
void repro_memory_account(const repro_model *m, int zero_grad, repro_memory *out);

/* A few lines, each starting with `indent`. */
void repro_memory_print(FILE *f, const repro_memory *mem, const char *indent);

/* ---- the estimate from the config alone ------------------------------------
 * What `repro run` of cfg will allocate, computed from the config without
 * building the model, creating a backend or allocating anything: `repro
 * verify` refuses a submission whose estimate is over the host's limit
 * before any training. Unlike the accounting above it counts the bytes
 * this implementation allocates — 4 per element under bf16/fp16 too (the
 * emulation keeps floats), arenas padded as model.h lays them out, conv
 * workspaces by the CPU backend's rules (the largest any eligible
 * algorithm needs) — and adds what a model does not hold: the loader's
 * batch slots, both datasets, the step and eval buffers, the recorder's
 * copies. Every sum saturates at UINT64_MAX: a config asking for more
 * than 2^64 bytes reads as "too much", never wraps to a small number.
 * Not counted: code, libraries, thread stacks (the caller's headroom). */
typedef struct {
    uint64_t params, grads, optimizer, working_weights; /* the arenas */
    uint64_t activations; /* every layer output and its gradient, maxpool argmax,
                             dropout masks, the input batch's copy */
    uint64_t workspace;   /* linear and conv workspaces, accumulation scratch */
    uint64_t loader;      /* batch slots (num_workers x prefetch, or 1), permutation */
    uint64_t dataset;     /* training and held-out images and labels (idx: from
                             train_size and test_size, as a stand-in) */
    uint64_t other;       /* step and eval buffers, the recorder's copies */
    uint64_t recorder;    /* of `other`: the recorder's copies (not in total twice) */
    uint64_t total;
} repro_memory_estimate;

void repro_memory_estimate_config(const repro_config *cfg, repro_memory_estimate *out);

#endif
