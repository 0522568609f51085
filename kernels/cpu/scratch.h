/* Per-thread scratch memory the kernels reuse from call to call (packed GEMM
 * panels, unfolded convolution inputs): grown on a thread's first use of a
 * size and then kept, so training steps after the first allocate nothing.
 * Freed when the thread exits. Each slot is one independent buffer, so a
 * kernel holding one slot may call another kernel that uses a different
 * slot. Contents are unspecified on return. */
#ifndef REPRO_SCRATCH_H
#define REPRO_SCRATCH_H

#include <stddef.h>

enum {
    REPRO_SCRATCH_GEMM_A = 0, /* GEMM: packed A panel */
    REPRO_SCRATCH_GEMM_B,     /* GEMM: packed B block */
    REPRO_SCRATCH_GEMM_T,     /* GEMM: a block of C computed as its transpose */
    REPRO_SCRATCH_CONV,       /* conv: one sample's unfolded input */
    REPRO_SCRATCH_CALL,       /* one call's shared buffer (made before the chunks run) */
    REPRO_SCRATCH_NSLOTS
};

/* At least `floats` floats, 64-byte aligned, of the calling thread's slot;
 * NULL when out of memory. */
float *repro_scratch(int slot, size_t floats);

#endif
