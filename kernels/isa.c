/* Run-time selection of the CPU kernels' vector path (isa.h): detection with
 * the compiler's CPU-feature builtins, one process-wide choice. */
#include "isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const names[REPRO_ISA_COUNT] = {"sse2", "avx2", "avx512"};
static const int lanes[REPRO_ISA_COUNT] = {4, 8, 16};

/* -1: not selected yet (the best supported path is used). */
static atomic_int selected = -1;

const char *repro_isa_name(repro_isa isa)
{
    return (int)isa >= 0 && isa < REPRO_ISA_COUNT ? names[isa] : "?";
}

int repro_isa_from_name(const char *name)
{
    for (int i = 0; name && i < REPRO_ISA_COUNT; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -1;
}

int repro_isa_supported(repro_isa isa)
{
    switch (isa) {
    case REPRO_ISA_SSE2:
        return 1;
#if defined(__x86_64__) || defined(__i386__)
    /* __builtin_cpu_supports checks CPUID and that the OS saves the wider
     * registers (XGETBV), as the compiler's own dispatch does. */
    case REPRO_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") ? 1 : 0;
    case REPRO_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") ? 1 : 0;
#endif
    default:
        return 0;
    }
}

/* 1 on a CPU that runs each 512-bit operation as two 256-bit halves: AMD
 * family 19h (Zen 4; Zen 3, the same family, has no AVX-512). There the
 * avx512 path does the avx2 path's work with more shuffling and wider
 * remainders: measured on a Zen 4 VM, the mlp 920 vs 1024 steps/s and the
 * cnn 392 vs 423 (make bench, medians of 7). Zen 5 (family 1Ah) and Intel
 * run 512 bits at full width. */
static int avx512_split_in_halves(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u) /* "Auth"enticAMD */
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned family = (a >> 8) & 0xf;
    if (family == 0xf)
        family += (a >> 20) & 0xff;
    return family == 0x19;
#else
    return 0;
#endif
}

repro_isa repro_isa_best(void)
{
    for (int i = REPRO_ISA_COUNT - 1; i > 0; i--) {
        if (i == REPRO_ISA_AVX512 && avx512_split_in_halves())
            continue;
        if (repro_isa_supported((repro_isa)i))
            return (repro_isa)i;
    }
    return REPRO_ISA_SSE2;
}

int repro_isa_select(repro_isa isa)
{
    if ((int)isa < 0 || isa >= REPRO_ISA_COUNT || !repro_isa_supported(isa))
        return -1;
    atomic_store(&selected, (int)isa);
    return 0;
}

repro_isa repro_isa_current(void)
{
    int s = atomic_load(&selected);
    if (s < 0) {
        s = (int)repro_isa_best();
        int expect = -1;
        atomic_compare_exchange_strong(&selected, &expect, s);
        s = atomic_load(&selected);
    }
    return (repro_isa)s;
}

void repro_isa_describe(char *buf, unsigned long len)
{
    repro_isa cur = repro_isa_current();
    char sup[64] = "";
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        if (repro_isa_supported((repro_isa)i)) {
            strncat(sup, sup[0] ? " " : "", sizeof sup - strlen(sup) - 1);
            strncat(sup, names[i], sizeof sup - strlen(sup) - 1);
        }
    snprintf(buf, len, "%s (%d-float vectors, selected at run time; CPU supports %s%s)",
             names[cur], lanes[cur], sup,
             repro_isa_supported(REPRO_ISA_AVX512) && avx512_split_in_halves()
                 ? "; avx512 runs as two 256-bit halves here, so avx2 is the default"
                 : "");
}
