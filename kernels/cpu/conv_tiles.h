/* Direct convolution on the vector paths' register tiles (simd.h:
 * conv_tile): the forward (bias, then terms (c, ry, rx) ascending) and the
 * backward data pass (+0, then terms (k, ry, rx) ascending), the orders of
 * ops.h, with one pool chunk per sample. Same bits as conv2d.c's plain
 * loops; backward data only for finite weights (a padded term is added as
 * w * 0 instead of skipped, which is the same bits only then). */
#ifndef REPRO_CONV_TILES_H
#define REPRO_CONV_TILES_H

#include "ops.h"

/* Computes sample b's outputs some other way (the plain loops), for a pool
 * thread that has no scratch memory for the padded copy. */
typedef void (*repro_conv_sample_fn)(void *ctx, long b);

/* 0, or -1 (nothing written) when the call's tables do not fit in memory. */
int repro_conv_forward_tiled(repro_pool *pool, const repro_conv_shape *s, const float *x,
                             const float *w, const float *bias, float *y,
                             repro_conv_sample_fn fallback, void *fallback_ctx);
int repro_conv_backward_data_tiled(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                   const float *w, float *dx, repro_conv_sample_fn fallback,
                                   void *fallback_ctx);

#endif
