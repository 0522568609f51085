/* The optimizers' per-element updates (PyTorch's rules, in float), shared by
 * the CPU kernels (sgd.c, adamw.c) and the CUDA ones. Each element's update
 * reads and writes only its own p, g and state, in the fixed expression
 * order written here; the scalar factors are computed once on the host
 * (repro_adamw_constants) so both backends use the same floats. */
#ifndef REPRO_SHARED_OPTIM_H
#define REPRO_SHARED_OPTIM_H

#include "hd.h"

/* torch.optim.SGD, dampening 0, no Nesterov:
 * g' = g + wd*p; buf = first ? g' : momentum*buf + g'; p = p - lr*buf. */
static inline REPRO_HD void repro_hd_sgd(float *p, float g, float *buf, float lr,
                                         float momentum, float wd, int first_step)
{
    float gg = g + wd * *p;                                /* d_p.add(p, alpha=wd) */
    float b = first_step ? gg : momentum * *buf + gg;      /* buf.mul_(m).add_(d_p) */
    *buf = b;
    *p = *p - lr * b;                                      /* p.add_(buf, alpha=-lr) */
}

/* Correctly rounded sqrtf (= IEEE sqrtf bit for bit) without libm: Newton
 * in double from an exponent-halving guess (4 steps: 6% -> 2e-3 -> 2e-6 ->
 * 1e-12 -> rounding level), rounded to float, then one exact correction:
 * the midpoints between adjacent floats have 25 bits, so their squares are
 * exact in double and comparing them with v decides the rounding exactly. */
static inline REPRO_HD float repro_hd_sqrtf(float v)
{
    if (v != v || v == 0.0f || v > 3.40282346638528859812e38f)
        return v;
    if (v < 0.0f)
        return (float)repro_hd_f64_of(0x7ff8000000000000ULL);
    double d = v;
    double r = repro_hd_f64_of((repro_hd_f64_bits(d) >> 1) + (0x3ff0000000000000ULL >> 1));
    for (int i = 0; i < 4; i++)
        r = 0.5 * (r + d / r);
    float f = (float)r;
    uint32_t fb = repro_hd_f32_bits(f);
    float up = repro_hd_f32_of(fb + 1), dn = repro_hd_f32_of(fb - 1);
    double mid_up = ((double)f + (double)up) * 0.5;
    double mid_dn = ((double)f + (double)dn) * 0.5;
    if (d > mid_up * mid_up)
        return up;
    if (d < mid_dn * mid_dn)
        return dn;
    return f;
}

/* AdamW's per-step scalars, formed in double and rounded to float as
 * PyTorch casts Python scalars for a float tensor (repro_adamw_constants). */
typedef struct {
    float decay;        /* 1 - lr*wd */
    float w;            /* 1 - beta1, the lerp weight */
    float one_minus_b2; /* 1 - beta2 */
    float beta2;
    float neg_step;     /* -(lr / bc1) */
    float bc2_sqrt;     /* sqrt(bc2), correctly rounded */
    float eps;
    int lerp_from_end;  /* !(|w| < 0.5): PyTorch's lerp picks the form */
} repro_adamw_consts;

/* torch.optim.AdamW's single-tensor update of one element, left to right:
 *   p = p * decay;  m = lerp(m, g, w);  v = v*beta2 + ((1-beta2)*g)*g;
 *   p = p + (neg_step*m) / (sqrtf(v)/bc2_sqrt + eps). */
static inline REPRO_HD void repro_hd_adamw(const repro_adamw_consts *c, float g, float *pp,
                                           float *mp, float *vp)
{
    float p = *pp * c->decay;                            /* p.mul_(1 - lr*wd) */
    float m = *mp;
    m = c->lerp_from_end ? g - (g - m) * (1.0f - c->w) : m + c->w * (g - m); /* m.lerp_(g, w) */
    float v = *vp * c->beta2;                            /* v.mul_(beta2) */
    v = v + c->one_minus_b2 * g * g;                     /* .addcmul_(g, g, 1-beta2) */
    float denom = repro_hd_sqrtf(v) / c->bc2_sqrt + c->eps; /* (v.sqrt()/bc2_sqrt).add_(eps) */
    p = p + c->neg_step * m / denom;                     /* p.addcdiv_(m, denom, -step) */
    *pp = p;
    *mp = m;
    *vp = v;
}

#ifdef __cplusplus
extern "C" {
#endif
/* Fills *c for one step (host code, kernels/cpu/adamw.c): bc1 = 1 - beta1^t,
 * bc2 = 1 - beta2^t from the caller. */
void repro_adamw_constants(repro_adamw_consts *c, double lr, double beta1, double beta2, float eps,
                           double wd, double bc1, double bc2);
#ifdef __cplusplus
}
#endif

#endif
