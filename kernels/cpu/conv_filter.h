/* The convolution's filter gradient, inside kernels/cpu: the context
 * conv_filter.c (the public entry points and the plain loops) hands to
 * conv_filter_fast.c (the vectorized sums: column strips, the shard rule
 * by shard, lanes across the filters); both take db from
 * conv_filter_bias.h. */
#ifndef REPRO_CONV_FILTER_H
#define REPRO_CONV_FILTER_H

#include "ops.h"

typedef struct {
    const repro_conv_shape *s;
    const float *x, *dy;
    float *dw, *db;
    int accumulate;
} repro_conv_filter_ctx;

/* The vectorized sums (conv_filter_fast.c) for nq shards of cx->s->B
 * samples each (nq = 1, sharded = 0: the plain sum): 0, or -1 (nothing
 * written) when the shape or the scratch memory does not allow them. */
int repro_conv_filter_fast(repro_pool *pool, const repro_conv_filter_ctx *cx, int nq,
                           int sharded);

#endif
