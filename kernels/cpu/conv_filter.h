/* What the two halves of the convolution's filter gradient share:
 * conv_filter.c (the plain loops, the bias sums, the public entry points)
 * and conv_filter_fast.c (the vectorized sums: column strips, the shard
 * rule by shard, lanes across the filters). Internal to kernels/cpu. */
#ifndef REPRO_CONV_FILTER_H
#define REPRO_CONV_FILTER_H

#include "ops.h"

typedef struct {
    const repro_conv_shape *s;
    const float *x, *dy;
    float *dw, *db;
    int accumulate;
} repro_conv_filter_ctx;

/* db[k]'s sum over the samples of cx->s (dy: their gradient) from `acc`,
 * in ops.h's order: columns summed over (b, oy), then folded in ox. */
float repro_conv_bias_sum(const repro_conv_filter_ctx *cx, const float *dy, long k, float acc);

/* db[k] = that sum from +0, or from db[k] when accumulating. */
void repro_conv_bias_k(const repro_conv_filter_ctx *cx, long k);

/* The vectorized sums (conv_filter_fast.c) for nq shards of cx->s->B
 * samples each (nq = 1, sharded = 0: the plain sum): 0, or -1 (nothing
 * written) when the shape or the scratch memory does not allow them. */
int repro_conv_filter_fast(repro_pool *pool, const repro_conv_filter_ctx *cx, int nq,
                           int sharded);

#endif
