/* The loss-gradient side of a training step: the 1/k scaling of gradient
 * accumulation and fp16's dynamic loss scaler (torch.cuda.amp.GradScaler
 * semantics), plus the test-only overflow fault. train.c calls these in a
 * fixed place so their rounding is part of the stated numerics:
 *
 *   dlogits = (probs - onehot) / B          (softmax_xent_backward, float)
 *   dlogits = dlogits / k                   only when accumulation_steps k > 1
 *   dlogits = dlogits * scale               only when precision = fp16
 *   ... backward of every micro-batch, gradients accumulate in fp32 ...
 *   grad = grad * (float)(1.0 / scale)      fp16: unscale once per step
 *   any grad inf/NaN -> skip the update, scale *= backoff_factor, tracker = 0
 *   else update; after growth_interval good steps in a row scale *= growth_factor
 *
 * The scale is a float, as GradScaler's is; with the default factors (2,
 * 0.5) and a power-of-two init_scale it stays a power of two, so scaling and
 * unscaling are exact unless they under/overflow. */
#ifndef REPRO_MIXED_H
#define REPRO_MIXED_H

#include "core/config.h"
#include "core/model.h"

typedef struct {
    int enabled;          /* precision = fp16 */
    float scale;          /* the scale the current step's backward uses */
    int growth_tracker;   /* consecutive good steps since the last change */
    double growth_factor, backoff_factor; /* Python floats in PyTorch: doubles */
    int growth_interval;
    int last_skipped;     /* the last step's update was skipped (found inf/NaN) */
    float last_scale;     /* the scale that step's backward used (recorded) */
    long skipped_total;
    long fault_step;      /* TEST-ONLY: REPRO_FAULT=overflow:step=N, else 0 */
} repro_scaler;

/* Reads the scaler keys and REPRO_FAULT=overflow. Returns 0, or -1 with the
 * error slot set (malformed REPRO_FAULT). */
int repro_scaler_init(repro_scaler *s, const repro_config *cfg);

/* Scales one micro-batch's loss gradient (n floats of m's backend memory)
 * as stated above, through m's backend. */
void repro_scale_loss_grad(const repro_scaler *s, repro_model *m, int accumulation_steps,
                           float *dlogits, long n);

/* After the last micro-batch's backward of step `step` (1-based): applies
 * the overflow fault, unscales (fp16) and checks for inf/NaN, in one pass
 * over the gradient arena (its padding is zero and stays zero). Returns 1
 * if the update must be skipped (fp16 only; other precisions never skip). */
int repro_scaler_unscale(repro_scaler *s, repro_model *m, long step);

/* After the (possibly skipped) update: GradScaler.update(). */
void repro_scaler_update(repro_scaler *s);

#endif
