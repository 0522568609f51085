/* float -> bfloat16 / IEEE binary16 -> float, round to nearest, ties to
 * even, with integer operations on the bit patterns (no compiler or hardware
 * conversion, whose availability and NaN handling vary), shared by the CPU
 * (kernels/cpu/precision.c) and the CUDA kernels. The contract (NaN, overflow,
 * subnormals) is kernels/cpu/precision.h's. */
#ifndef REPRO_SHARED_ROUND_H
#define REPRO_SHARED_ROUND_H

#include "hd.h"

static inline REPRO_HD uint16_t repro_hd_f32_to_bf16_bits(float x)
{
    uint32_t u = repro_hd_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and top payload, make it quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to
     * even; a carry out of the mantissa correctly bumps the exponent (and
     * turns the largest finite values into infinity when they round up). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline REPRO_HD float repro_hd_bf16_bits_to_f32(uint16_t h)
{
    return repro_hd_f32_of((uint32_t)h << 16); /* exact: bf16 is float's top half */
}

static inline REPRO_HD uint16_t repro_hd_f32_to_f16_bits(float x)
{
    uint32_t u = repro_hd_f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 (incl. inf): rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: a normal half */
        a += 0xfffu + ((a >> 13) & 1u); /* nearest, ties to even; carries into the exponent */
        return (uint16_t)(sign | ((a - 0x38000000u) >> 13)); /* rebias 127 -> 15 */
    }
    if (a <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: the tie goes to even 0 */
        return sign;
    /* Subnormal half: m * 2^-24 with m = mant * 2^(e - 126), e the biased
     * float exponent (102..112 here), so shift = 126 - e in 14..24. */
    uint32_t e = a >> 23;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;
    uint32_t m = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (m & 1u)))
        m++; /* m = 1024 is the smallest normal's encoding: still right */
    return (uint16_t)(sign | m);
}

static inline REPRO_HD float repro_hd_f16_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) /* inf / NaN, payload kept */
        return repro_hd_f32_of(sign | 0x7f800000u | (m << 13));
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 0x1p-24f;
        return repro_hd_f32_of(sign | repro_hd_f32_bits(v));
    }
    return repro_hd_f32_of(sign | ((e + 112u) << 23) | (m << 13));
}

static inline REPRO_HD float repro_hd_round_bf16(float x)
{
    return repro_hd_bf16_bits_to_f32(repro_hd_f32_to_bf16_bits(x));
}

static inline REPRO_HD float repro_hd_round_f16(float x)
{
    return repro_hd_f16_bits_to_f32(repro_hd_f32_to_f16_bits(x));
}

/* format 1 = bf16, 2 = fp16 (backend.h's REPRO_ROUND_*); others: x. */
static inline REPRO_HD float repro_hd_round_to(float x, int format)
{
    return format == 1 ? repro_hd_round_bf16(x) : format == 2 ? repro_hd_round_f16(x) : x;
}

#endif
