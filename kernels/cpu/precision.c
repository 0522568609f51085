/* float <-> bf16 / fp16 conversion with round-to-nearest-even, on the bit
 * patterns (see precision.h for the contract). */
#include "precision.h"

#include <string.h>

static inline uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t repro_f32_to_bf16_bits(float x)
{
    uint32_t u = bits_of(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign and top payload, make it quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to
     * even; a carry out of the mantissa correctly bumps the exponent (and
     * turns the largest finite values into infinity when they round up). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float repro_bf16_bits_to_f32(uint16_t h)
{
    return float_of((uint32_t)h << 16); /* exact: bf16 is float's top half */
}

uint16_t repro_f32_to_f16_bits(float x)
{
    uint32_t u = bits_of(x);
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

float repro_f16_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) /* inf / NaN, payload kept */
        return float_of(sign | 0x7f800000u | (m << 13));
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 0x1p-24f;
        return float_of(sign | bits_of(v));
    }
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

float repro_round_bf16(float x) { return repro_bf16_bits_to_f32(repro_f32_to_bf16_bits(x)); }
float repro_round_f16(float x) { return repro_f16_bits_to_f32(repro_f32_to_f16_bits(x)); }

void repro_round_buffer(float *x, long n, int precision)
{
    if (precision == 1)
        for (long i = 0; i < n; i++)
            x[i] = repro_round_bf16(x[i]);
    else if (precision == 2)
        for (long i = 0; i < n; i++)
            x[i] = repro_round_f16(x[i]);
}
