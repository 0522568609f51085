/* The forward of 2 x 2 max pooling, stride 2, on the AVX-512 path: whole
 * planes, sixteen windows a vector (maxpool_k2_avx512.c). The rule is
 * maxpool.c's: the first maximum in row-major window order wins, the
 * first NaN over everything. Internal to kernels/cpu. */
#ifndef REPRO_MAXPOOL_K2_H
#define REPRO_MAXPOOL_K2_H

#include <stdint.h>

/* 1 when the AVX-512 planes below may run (the path is selected). */
int repro_maxpool_k2_avx512_on(void);

/* `planes` consecutive planes H x W, each into OH x OW = H/2 x W/2
 * windows: y, argmax (offsets into the window's plane); relu: the ReLU
 * applied to each maximum. */
void repro_maxpool_k2_avx512_fwd(const float *x, long planes, int H, int W, float *y,
                                 int32_t *argmax, int relu);

#endif
