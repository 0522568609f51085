/* The per-element math of the pointwise layers and step kernels, shared by
 * the CPU kernels (relu.c, dropout.c, elementwise.c) and the CUDA ones: each
 * output element is a pure function of its own inputs, so the only thing
 * that could make two backends differ is the arithmetic itself, and this is
 * the one copy of it. */
#ifndef REPRO_SHARED_POINTWISE_H
#define REPRO_SHARED_POINTWISE_H

#include "hd.h"
#include "kernels/philox.h"

/* ReLU: NaN propagates (as torch.relu), -0 and negatives map to +0. */
static inline REPRO_HD float repro_hd_relu(float v)
{
    return (v > 0.0f || v != v) ? v : 0.0f;
}

/* ReLU backward from the forward output y. */
static inline REPRO_HD float repro_hd_relu_grad(float y, float dy)
{
    return y > 0.0f ? dy : 0.0f;
}

/* Dropout: element i is kept iff the unit float of Philox word 0 at
 * counter (i, 0) under key is >= p: a pure function of (key, i). */
static inline REPRO_HD int repro_hd_dropout_keep(uint64_t key, uint64_t i, float p)
{
    return repro_u32_to_unit(repro_philox_at(key, i, 0).v[0]) >= p;
}

/* The inverted-dropout scale, in float: 1 / (1 - p). */
static inline REPRO_HD float repro_hd_dropout_scale(float p)
{
    return 1.0f / (1.0f - p);
}

/* x * (kept ? scale : 0): PyTorch's formula (a dropped NaN stays NaN, a
 * dropped negative gives -0). */
static inline REPRO_HD float repro_hd_dropout_apply(float x, int kept, float scale)
{
    return x * (kept ? scale : 0.0f);
}

/* 1 when v is neither inf nor NaN (on the bits: no libm, no fast-math). */
static inline REPRO_HD int repro_hd_isfinite(float v)
{
    return (repro_hd_f32_bits(v) & 0x7f800000u) != 0x7f800000u;
}

/* GradScaler's unscale of one gradient element, as PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_: the scaled value is tested
 * for inf/NaN (*found = 1) before it is multiplied by inv_scale, and an
 * inv_scale of exactly 1 leaves it untouched. */
static inline REPRO_HD float repro_hd_unscale(float g, float inv, int *found)
{
    if (!repro_hd_isfinite(g))
        *found = 1;
    return inv == 1.0f ? g : g * inv;
}

#endif
