/* float <-> bf16 / fp16 conversion with round-to-nearest-even, on the bit
 * patterns (see precision.h for the contract). The code is
 * kernels/shared/round.h, which the CUDA kernels compile too; these are the
 * CPU kernels' names for it. */
#include "precision.h"

#include "kernels/shared/round.h"

uint16_t repro_f32_to_bf16_bits(float x) { return repro_hd_f32_to_bf16_bits(x); }
float repro_bf16_bits_to_f32(uint16_t h) { return repro_hd_bf16_bits_to_f32(h); }
uint16_t repro_f32_to_f16_bits(float x) { return repro_hd_f32_to_f16_bits(x); }
float repro_f16_bits_to_f32(uint16_t h) { return repro_hd_f16_bits_to_f32(h); }
float repro_round_bf16(float x) { return repro_hd_round_bf16(x); }
float repro_round_f16(float x) { return repro_hd_round_f16(x); }

void repro_round_buffer(float *x, long n, int precision)
{
    if (precision == 1)
        for (long i = 0; i < n; i++)
            x[i] = repro_hd_round_bf16(x[i]);
    else if (precision == 2)
        for (long i = 0; i < n; i++)
            x[i] = repro_hd_round_f16(x[i]);
}
