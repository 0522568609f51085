/* replay.every = K (config_keys.h): every K-th step's forward and backward
 * are computed a second time from the same state (parameters, batch,
 * dropout stream) before the optimizer commits, and the two gradients are
 * compared bit for bit. On a deterministic workload they cannot differ;
 * when they do, a core, GPU or link computed wrong once, or a kernel is
 * nondeterministic, and the run stops before the update. train.c drives
 * the second computation; this file keeps the first one's gradients and
 * compares. The negative control: a REPRO_FAULT flip of a grad.* tensor
 * at a replayed step lands in the second computation's copy. */
#ifndef REPRO_TRAIN_REPLAY_H
#define REPRO_TRAIN_REPLAY_H

#include <stddef.h>

#include "core/model.h"
#include "util/fault.h"

typedef struct {
    float *first, *second; /* host copies of the gradient arena */
    size_t bytes;
} repro_replay;

/* Copies the gradient arena (the first computation). 0 or -1 (error slot). */
int repro_replay_save(repro_replay *r, const repro_model *m);
/* Copies the arena again (the second computation), applies the fault to
 * it (grad.NAME at `step`), and compares parameter by parameter. 0 when
 * equal; -1 with REPRO_EMISMATCH naming step, rank, the first differing
 * gradient (also into differs), its differing elements and max ULP
 * distance. */
int repro_replay_compare(repro_replay *r, const repro_model *m, const repro_fault *f, long step,
                         int rank, char *differs, size_t len);
void repro_replay_release(repro_replay *r);

#endif
