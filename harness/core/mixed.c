/* Loss-gradient scaling for accumulation and fp16 (see mixed.h), through
 * the model's backend. */
#include "core/mixed.h"

#include <math.h>


int repro_scaler_init(repro_scaler *s, const repro_config *cfg)
{
    *s = (repro_scaler){0};
    s->enabled = cfg->train_precision == REPRO_PRECISION_FP16;
    s->scale = s->enabled ? (float)cfg->train_init_scale : 1.0f;
    s->last_scale = s->scale;
    s->growth_factor = cfg->train_growth_factor;
    s->backoff_factor = cfg->train_backoff_factor;
    s->growth_interval = cfg->train_growth_interval;
    /* fault_step stays 0: the test-only overflow fault is read by the CLI
     * (util/fault.h) and set on the scaler there, never from here. */
    return 0;
}

void repro_scale_loss_grad(const repro_scaler *s, repro_model *m, int accumulation_steps,
                           float *dlogits, long n)
{
    /* Division by k (not multiplication by a rounded 1/k): for k a power of
     * two both are exact, for k = 3 the division is the correctly rounded
     * mean PyTorch users write as loss / k. */
    if (accumulation_steps > 1)
        m->be->div_scalar(m->be_ctx, dlogits, n, (float)accumulation_steps);
    if (s->enabled)
        m->be->mul_scalar(m->be_ctx, dlogits, n, s->scale);
}

int repro_scaler_unscale(repro_scaler *s, repro_model *m, long step)
{
    /* TEST-ONLY (fault.h): an injected overflow, as an fp16 backward
     * overflowing would leave it: one gradient element is +inf. */
    if (s->fault_step && step == s->fault_step && m->nparams > 0) {
        float inf = INFINITY;
        m->be->copy_h2d(m->be_ctx, m->params[0].grad, &inf, sizeof inf);
    }
    s->last_scale = s->scale;
    s->last_skipped = 0;
    if (!s->enabled)
        return 0;
    /* GradScaler.unscale_: inv_scale = float(1 / double(scale)); found_inf
     * = any non-finite SCALED gradient (tested before unscaling, as
     * PyTorch does); grads *= inv_scale. */
    float inv = (float)(1.0 / (double)s->scale);
    size_t bytes;
    float *grads = repro_model_arena(m, REPRO_ARENA_GRADS, &bytes);
    int found = bytes ? m->be->unscale_check(m->be_ctx, grads, (long)(bytes / sizeof(float)), inv)
                      : 0;
    s->last_skipped = found;
    s->skipped_total += found;
    return found;
}

void repro_scaler_update(repro_scaler *s)
{
    if (!s->enabled)
        return;
    /* torch._amp_update_scale_: the float scale times the double factor,
     * in double, rounded to float (float x float rounded differently for
     * non-default factors from step 4 on). */
    if (s->last_skipped) {
        s->scale = (float)((double)s->scale * s->backoff_factor);
        s->growth_tracker = 0;
    } else if (s->growth_tracker + 1 == s->growth_interval) {
        float grown = (float)((double)s->scale * s->growth_factor);
        if (isfinite(grown))
            s->scale = grown;
        s->growth_tracker = 0;
    } else {
        s->growth_tracker++;
    }
}
