/* Which vector instruction set the CPU kernels run on, chosen at run time.
 *
 * The build stays portable (baseline x86-64 = SSE2, no -mavx2, no FMA);
 * the hot kernels also exist compiled for AVX2 and AVX-512F (per-function
 * target attributes) and one path is selected for the whole process: the
 * fastest the CPU has, unless a program says otherwise (the CLI reads
 * REPRO_ISA=sse2|avx2|avx512 and calls repro_isa_select; the numerics core
 * reads no environment).
 *
 * Every path gives the same bits: a vector lane is only ever an independent
 * output element, each output's terms are added in the one order the
 * kernel's contract states, and products are rounded before they are added
 * (separate multiply and add at every width, never an FMA instruction). So
 * the path is a speed setting, recorded in the environment fingerprint
 * (isa_path) but not part of the environment class. Backend-neutral header:
 * harness code may include it. */
#ifndef REPRO_ISA_H
#define REPRO_ISA_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REPRO_ISA_SSE2 = 0,   /* the baseline: 4-float vectors */
    REPRO_ISA_AVX2 = 1,   /* 8-float vectors */
    REPRO_ISA_AVX512 = 2, /* AVX-512F, 16-float vectors */
    REPRO_ISA_COUNT
} repro_isa;

/* "sse2", "avx2", "avx512"; "?" for anything else. */
const char *repro_isa_name(repro_isa isa);
/* The path with that name, or -1. */
int repro_isa_from_name(const char *name);
/* 1 when this CPU (and OS) can run the path. The baseline always can. */
int repro_isa_supported(repro_isa isa);
/* The fastest supported path: the widest, except avx512 on a CPU that
 * splits 512-bit operations into two 256-bit halves (AMD Zen 4), where
 * avx2 is faster. Any supported path can still be selected. */
repro_isa repro_isa_best(void);
/* Selects the path every CPU kernel uses from now on (process-wide). Call it
 * at start-up, before kernels run. Returns 0, or -1 when the CPU lacks it
 * (nothing changes). */
int repro_isa_select(repro_isa isa);
/* The path in use: the selected one, or repro_isa_best() when none was. */
repro_isa repro_isa_current(void);
/* One line for people: "avx2 (8-float vectors; CPU supports sse2 avx2)". */
void repro_isa_describe(char *buf, unsigned long len);

#ifdef __cplusplus
}
#endif
#endif
