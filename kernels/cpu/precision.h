/* Reduced-precision rounding for the mixed-precision emulation: float ->
 * bfloat16 / IEEE binary16 -> float, round to nearest, ties to even, written
 * here with integer operations on the bit patterns (no compiler or hardware
 * conversion, whose availability and NaN handling vary), so every machine
 * produces the same bits.
 *
 *  - NaN stays NaN: sign and the top payload bits kept, quiet bit set (as
 *    x86 and PyTorch's c10::BFloat16 do); never rounds to infinity.
 *  - Overflow: bf16 shares float's exponent range, so only values within
 *    half an ulp of FLT_MAX's neighbourhood round to infinity; fp16 rounds
 *    |x| >= 65520 (halfway between 65504 and 2^16, tie to even) to infinity.
 *  - Subnormals of the target format are produced with correct rounding;
 *    values below half the smallest subnormal round to a zero of x's sign.
 *
 * The "round" helpers return the nearest representable value as a float;
 * the buffer helper rounds in place (one pass, elementwise, so the thread
 * count plays no role). */
#ifndef REPRO_PRECISION_H
#define REPRO_PRECISION_H

#include <stdint.h>

uint16_t repro_f32_to_bf16_bits(float x);
float repro_bf16_bits_to_f32(uint16_t h);
uint16_t repro_f32_to_f16_bits(float x);
float repro_f16_bits_to_f32(uint16_t h);

float repro_round_bf16(float x);
float repro_round_f16(float x);

/* Rounds x[0..n) in place to REPRO_PRECISION_BF16 (1) or _FP16 (2);
 * precision 0 (fp32) leaves it alone. */
void repro_round_buffer(float *x, long n, int precision);

#endif
