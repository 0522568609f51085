/* Loss-gradient scaling for accumulation and fp16 (see mixed.h). */
#include "core/mixed.h"

#include <math.h>

#include "util/fault.h"

int repro_scaler_init(repro_scaler *s, const repro_config *cfg)
{
    *s = (repro_scaler){0};
    s->enabled = cfg->train_precision == REPRO_PRECISION_FP16;
    s->scale = s->enabled ? (float)cfg->train_init_scale : 1.0f;
    s->last_scale = s->scale;
    s->growth_factor = (float)cfg->train_growth_factor;
    s->backoff_factor = (float)cfg->train_backoff_factor;
    s->growth_interval = cfg->train_growth_interval;
    return repro_fault_overflow_from_env(&s->fault_step);
}

void repro_scale_loss_grad(const repro_scaler *s, int accumulation_steps, float *dlogits, long n)
{
    /* Division by k (not multiplication by a rounded 1/k): for k a power of
     * two both are exact, for k = 3 the division is the correctly rounded
     * mean PyTorch users write as loss / k. */
    if (accumulation_steps > 1) {
        float k = (float)accumulation_steps;
        for (long i = 0; i < n; i++)
            dlogits[i] = dlogits[i] / k;
    }
    if (s->enabled)
        for (long i = 0; i < n; i++)
            dlogits[i] = dlogits[i] * s->scale;
}

int repro_scaler_unscale(repro_scaler *s, repro_model *m, long step)
{
    /* TEST-ONLY (fault.h): an injected overflow, as an fp16 backward
     * overflowing would leave it: one gradient element is +inf. */
    if (s->fault_step && step == s->fault_step && m->nparams > 0)
        m->params[0].grad[0] = INFINITY;
    s->last_scale = s->scale;
    s->last_skipped = 0;
    if (!s->enabled)
        return 0;
    /* GradScaler.unscale_: inv_scale = float(1 / double(scale)), grads *=
     * inv_scale, found_inf = any non-finite result. */
    float inv = (float)(1.0 / (double)s->scale);
    int found = 0;
    for (int i = 0; i < m->nparams; i++) {
        repro_param *p = &m->params[i];
        for (long j = 0; j < p->numel; j++) {
            float g = p->grad[j] * inv;
            p->grad[j] = g;
            found |= !isfinite(g);
        }
    }
    s->last_skipped = found;
    s->skipped_total += found;
    return found;
}

void repro_scaler_update(repro_scaler *s)
{
    if (!s->enabled)
        return;
    /* torch._amp_update_scale_ */
    if (s->last_skipped) {
        s->scale = s->scale * s->backoff_factor;
        s->growth_tracker = 0;
    } else if (s->growth_tracker + 1 == s->growth_interval) {
        float grown = s->scale * s->growth_factor;
        if (isfinite(grown))
            s->scale = grown;
        s->growth_tracker = 0;
    } else {
        s->growth_tracker++;
    }
}
