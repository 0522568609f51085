/* One core's arithmetic ceiling per vector path, for `make bench`: the
 * multiply+add peak (separate multiplies and adds, the only arithmetic
 * repro's kernels use: products are rounded before the add, never fused)
 * and, for the record, the FMA peak (what BLAS libraries run on).
 *
 * Register-resident: every operand lives in a register for the whole
 * loop, so memory never limits it. The mul+add loop runs NCHAIN multiply
 * chains and NCHAIN add chains side by side (as many multiplies as adds,
 * the GEMM's mix), the FMA loop 2 * NCHAIN fused chains; NCHAIN is enough
 * independent chains to cover each unit's latency times its throughput
 * (4 cycles x 2 units on today's x86), and few enough that the chains and
 * their two constants fit the path's registers (16 ymm, 32 zmm): the
 * disassembly (objdump -d build/bench/train.o, peak_*) shows no load or
 * store inside the loops. The multiplier is 1 - 2^-24 and the addend
 * 2^-20: over a billion iterations no chain reaches an infinity or a
 * subnormal (either would slow it down).
 *
 * Header-only: included by bench/train.c, and by tests/check_bench_goals.c,
 * which checks the loops compute what they count. The FMA instructions
 * here are in the bench's object only, never in a kernel (make
 * portability checks those). */
#ifndef REPRO_BENCH_PEAK_H
#define REPRO_BENCH_PEAK_H

#include <string.h>

#include "kernels/isa.h"
#include "util/progress.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PEAK_X86 1
#endif

/* The chains of one loop: a sum over every lane of every chain, so the
 * compiler cannot drop a chain, and the caller can check the arithmetic. */
typedef struct {
    double checksum;
    double flops; /* floating-point operations done: a lane's mul, add or fma is 1, 1 or 2 */
} peak_result;

#ifdef PEAK_X86

#define PEAK_CHAINS_AVX2 6    /* 6 mul + 6 add chains, 2 constants: 14 of 16 ymm */
#define PEAK_CHAINS_AVX512 12 /* 12 + 12 chains, 2 constants: 26 of 32 zmm */

/* Defines peak_muladd_SFX and peak_fma_SFX for one vector width. */
#define PEAK_LOOPS(SFX, TGT, TGT_FMA, VT, LANES, NCH, SET1, ADD, MUL, FMADD, STORE)            \
    TGT static peak_result peak_muladd_##SFX(long iters)                                       \
    {                                                                                          \
        VT m[NCH], a[NCH];                                                                     \
        VT mul_by = SET1(1.0f - 0x1p-24f), add_by = SET1(0x1p-20f);                             \
        for (int i = 0; i < NCH; i++)                                                          \
            m[i] = SET1(1.0f + (float)i), a[i] = SET1((float)i);                               \
        for (long it = 0; it < iters; it++) {                                                  \
            _Pragma("GCC unroll 16") for (int i = 0; i < NCH; i++)                             \
            {                                                                                  \
                m[i] = MUL(m[i], mul_by);                                                      \
                a[i] = ADD(a[i], add_by);                                                      \
            }                                                                                  \
        }                                                                                      \
        float lane[LANES];                                                                     \
        double sum = 0;                                                                        \
        for (int i = 0; i < NCH; i++) {                                                        \
            STORE(lane, ADD(m[i], a[i]));                                                      \
            for (int l = 0; l < LANES; l++)                                                    \
                sum += lane[l];                                                                \
        }                                                                                      \
        return (peak_result){sum, 2.0 * NCH * LANES * (double)iters};                          \
    }                                                                                          \
    TGT_FMA static peak_result peak_fma_##SFX(long iters)                                      \
    {                                                                                          \
        VT f[2 * NCH];                                                                         \
        VT mul_by = SET1(1.0f - 0x1p-24f), add_by = SET1(0x1p-20f);                             \
        for (int i = 0; i < 2 * NCH; i++)                                                      \
            f[i] = SET1(1.0f + (float)i);                                                      \
        for (long it = 0; it < iters; it++) {                                                  \
            _Pragma("GCC unroll 32") for (int i = 0; i < 2 * NCH; i++) f[i] =                  \
                FMADD(f[i], mul_by, add_by);                                                   \
        }                                                                                      \
        float lane[LANES];                                                                     \
        double sum = 0;                                                                        \
        for (int i = 0; i < 2 * NCH; i++) {                                                    \
            STORE(lane, f[i]);                                                                 \
            for (int l = 0; l < LANES; l++)                                                    \
                sum += lane[l];                                                                \
        }                                                                                      \
        return (peak_result){sum, 2.0 * 2 * NCH * LANES * (double)iters};                      \
    }

PEAK_LOOPS(avx2, __attribute__((target("avx2"))), __attribute__((target("avx2,fma"))), __m256, 8,
           PEAK_CHAINS_AVX2, _mm256_set1_ps, _mm256_add_ps, _mm256_mul_ps, _mm256_fmadd_ps,
           _mm256_storeu_ps)
PEAK_LOOPS(avx512, __attribute__((target("avx512f"))), __attribute__((target("avx512f"))),
           __m512, 16, PEAK_CHAINS_AVX512, _mm512_set1_ps, _mm512_add_ps, _mm512_mul_ps,
           _mm512_fmadd_ps, _mm512_storeu_ps)
#undef PEAK_LOOPS
#endif

/* The loop of a path: fma 0 = mul+add, 1 = FMA; NULL where this build has
 * none (sse2 has no FMA, and is not a goal path). */
static peak_result (*peak_loop(repro_isa isa, int fma))(long)
{
#ifdef PEAK_X86
    if (isa == REPRO_ISA_AVX2)
        return fma ? peak_fma_avx2 : peak_muladd_avx2;
    if (isa == REPRO_ISA_AVX512)
        return fma ? peak_fma_avx512 : peak_muladd_avx512;
#endif
    (void)isa, (void)fma;
    return NULL;
}

/* GFLOP/s of the loop, the best of `repeats` runs of ~`seconds` each (the
 * best: on a shared machine every slower run is someone else's time).
 * 0 where the path has no loop or the CPU cannot run it. */
static double peak_gflops(repro_isa isa, int fma, int repeats, double seconds)
{
    peak_result (*loop)(long) = peak_loop(isa, fma);
    if (!loop || !repro_isa_supported(isa))
        return 0;
    long iters = 1 << 16;
    double t0 = repro_now();
    peak_result r = loop(iters);
    double t = repro_now() - t0;
    if (t > 0 && t < seconds) /* size the loop to ~seconds */
        iters = (long)(iters * (seconds / t));
    double best = 0;
    for (int i = 0; i < repeats; i++) {
        t0 = repro_now();
        r = loop(iters);
        t = repro_now() - t0;
        if (t > 0 && r.flops / t > best)
            best = r.flops / t;
    }
    return best * 1e-9;
}

#endif
