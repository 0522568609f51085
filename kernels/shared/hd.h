/* REPRO_HD: marks the per-element math that the CPU kernels and the CUDA
 * kernels share (the headers of kernels/shared). Under nvcc it is __host__ __device__,
 * so one source compiles for both; under a C compiler it is empty. Every
 * shared function is `static inline REPRO_HD`: one definition, no link-time
 * symbol, the same operations in the same order on either side (the CPU
 * build uses -ffp-contract=off, the CUDA build --fmad=false, so neither
 * fuses a*b + c behind our back and the bits agree). */
#ifndef REPRO_SHARED_HD_H
#define REPRO_SHARED_HD_H

#ifdef __CUDACC__
#define REPRO_HD __host__ __device__
#else
#define REPRO_HD
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bit casts (memcpy is exact and allowed in device code too). */
static inline REPRO_HD uint32_t repro_hd_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline REPRO_HD float repro_hd_f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline REPRO_HD uint64_t repro_hd_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline REPRO_HD double repro_hd_f64_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#endif
