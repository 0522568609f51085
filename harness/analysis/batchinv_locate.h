/* The engine's op-level view (batchinv.h): one sample's row of every op
 * output of a forward, captured through the model's op observer, and the
 * first op where two captures of the same sample (in different batches)
 * part. Shared by the eval and the training checks. */
#ifndef REPRO_BATCHINV_LOCATE_H
#define REPRO_BATCHINV_LOCATE_H

#include "analysis/batchinv.h"
#include "core/model.h"
#include "core/train.h"

typedef struct {
    int n;
    char name[REPRO_MAX_LAYERS + 1][64]; /* "fwd.fc1", in execution order */
    float *row[REPRO_MAX_LAYERS + 1];    /* host copies of the sample's row */
    long len[REPRO_MAX_LAYERS + 1];      /* floats per row */
} repro_op_rows;

/* Runs m's forward on x (B rows, host memory) and keeps row `pos` of every
 * op output (copied off the backend as the observer sees it). train, seed
 * and step as repro_model_forward's. 0, or -1 (error slot). */
int repro_batchinv_capture(repro_model *m, const float *x, int B, int pos, int train,
                           uint64_t seed, long step, repro_op_rows *out);
void repro_op_rows_free(repro_op_rows *r);

/* The first op output whose rows differ between a and b: fills
 * m->first_op, nelem, ndiffer_elem, max_abs, and the registry fields.
 * Returns 1 when one differs, 0 when every row agrees. */
int repro_batchinv_first_op(const repro_op_rows *a, const repro_op_rows *b,
                            const repro_config *cfg, repro_batchinv_mismatch *m);

/* The training half (batchinv_train.c): the batch of the trainer's next
 * step through the forward whole and in o->micro micro-batches; each
 * sample's logits, softmax row and loss compared; r's train_* fields
 * filled. 0 or -1 (error slot). */
int repro_batchinv_train_check(repro_trainer *t, const repro_batchinv_opts *o,
                               repro_batchinv_result *r);

#endif
