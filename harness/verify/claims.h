/* Claimed metrics against the re-run: the informational fields of a
 * claimed trace that the step digest does not cover — "loss_value" and
 * every "eval_*" key of a step line or of the trailer (record/trace.h) —
 * checked against the same line of the re-run's trace. Without this an
 * unsigned bundle could claim any eval_accuracy and still be "reproduced":
 * the chain covers the loss tensor's bits, not the printed numbers.
 *
 * The two traces are read line by line in step (header, each step, the
 * trailer), independently of the trace reader: both were already read and
 * judged, so the lines match one for one. Only fields the claim carries
 * are checked; each must be on the re-run's line too, and equal:
 *   bitwise   numbers exactly (the same bits print the same), strings
 *             ("eval_loss_bits") and nulls (a non-finite accuracy) exactly
 *   ulp:N     numbers within N float32 ulps; strings not compared
 *   rtol:X    numbers within relative error X; strings not compared
 * The eval never alters the chain (trace.h): this adds no rule to it.
 *
 * Also collects the re-run's final metrics for the receipt. */
#ifndef REPRO_CLAIMS_H
#define REPRO_CLAIMS_H

#include <stddef.h>

#include <jansson.h>

#include "verify/verify.h"

typedef struct {
    int mismatch;     /* a claimed field differs from the re-run's */
    int unmatched;    /* the lines do not pair up (the claimed file changed
                         after it was judged): text says where */
    long step;        /* its step (the last step for the trailer) */
    char text[600];   /* "step 4: claimed eval_accuracy 0.99, the re-run's 0.668" */
    long checked;     /* claimed fields compared */
    json_t *final;    /* the re-run's final metrics (receipt "rerun_metrics"), owned */
} repro_claims;

/* 0 (c filled), or -1 (error slot: the host could not read a trace). */
int repro_claims_check(const char *claimed_path, const char *rerun_path,
                       const repro_verify_policy *p, repro_claims *c);
void repro_claims_release(repro_claims *c);

#endif
