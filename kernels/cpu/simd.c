/* The inner-loop table of the selected vector path (simd.h). */
#include "simd.h"

#include <stddef.h>

const repro_simd *repro_simd_for(repro_isa isa)
{
    static const repro_simd *const tables[REPRO_ISA_COUNT] = {
        &repro_simd_sse2, &repro_simd_avx2, &repro_simd_avx512};
    if ((int)isa < 0 || isa >= REPRO_ISA_COUNT || !tables[isa]->gemm_tile[1])
        return NULL;
    return tables[isa];
}

const repro_simd *repro_simd_get(void)
{
    const repro_simd *s = repro_simd_for(repro_isa_current());
    return s ? s : &repro_simd_sse2;
}
