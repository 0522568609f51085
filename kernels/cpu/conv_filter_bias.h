/* The bias gradient of a 2-D convolution, the one sum the filter
 * gradient's plain loops (conv_filter.c) and vectorized sums
 * (conv_filter_fast.c) share. Internal to kernels/cpu. */
#ifndef REPRO_CONV_FILTER_BIAS_H
#define REPRO_CONV_FILTER_BIAS_H

#include "conv_filter.h"

/* db[k]'s sum over the samples of cx->s (dy: their gradient) from `acc`,
 * in ops.h's order: columns summed over (b, oy), then folded in ox. */
float repro_conv_bias_sum(const repro_conv_filter_ctx *cx, const float *dy, long k, float acc);

/* db[k] = that sum from +0, or from db[k] when accumulating. */
void repro_conv_bias_k(const repro_conv_filter_ctx *cx, long k);

#endif
