/* Unordered-accumulation kernel variants: the CPU analogue of CUDA
 * atomicAdd reductions (cuDNN's nondeterministic backward-filter algorithms,
 * PyTorch's index_add_ / scatter_add_ on CUDA). They exist so that repro can
 * demonstrate, detect and bisect the nondeterminism a user opts into with
 * `deterministic = off`; kernels/variants.c names each one.
 *
 * Why they are NONdeterministic: each chunk (pool.h) computes a partial sum
 * and adds it into the shared output with an atomic read-modify-write, in the
 * order the threads happen to arrive. Float addition is not associative, so
 * ((d + P0) + P1) + P2 and ((d + P2) + P0) + P1 can differ in the last bits:
 * the result depends on thread scheduling and changes from run to run. This
 * deliberately breaks the pool.h rule (one writer per output element).
 * With a 1-thread pool the chunks run in ascending order on the caller's
 * thread, so the result happens to be deterministic (though it can differ from
 * the ordered variant, whose sum is grouped differently).
 *
 * The math is that of the ordered kernels in ops.h; only the order of the
 * float additions differs, so results agree with them to within rounding
 * (a relative error of a few ulps of the sum of |terms|). */
#ifndef REPRO_ATOMIC_H
#define REPRO_ATOMIC_H

#include <stdint.h>

#include "ops.h"
#include "pool.h"

/* Samples per chunk in the linear backward variants. 4 gives B/4 chunks, so
 * a batch of 64 has 16 partial sums per output element. With only 2 chunks
 * and a zero start the result would be P0 + P1 = P1 + P0 (two-term float sums
 * commute), i.e. deterministic by accident; from 3 terms on, the grouping
 * depends on arrival order. */
enum { ATOMIC_BATCH_CHUNK = 4 };
/* Input rows per chunk in repro_index_add_atomic: a batch of 64 gives 8
 * chunks. */
enum { ATOMIC_INDEX_CHUNK = 2 };

/* *dst += v as one atomic read-modify-write (a compare-exchange loop on the
 * float's 32 bits, relaxed order). dst must be 4-byte aligned. Concurrent
 * calls on the same dst never lose an update; their order is unspecified.
 * Plain (non-atomic) accesses to dst must be ordered against these by other
 * means (repro_pool_run's join does that for the kernels below). */
void repro_atomic_add_f32(float *dst, float v);

/* NONdeterministic. dw (+)= dy^T x, as repro_linear_backward_weight, but each
 * chunk of ATOMIC_BATCH_CHUNK samples sums its slice (ascending b, via
 * repro_gemm) and atomically adds the partial into dw in scheduler order.
 * Without accumulate, dw is zeroed first. Deterministic with 1 thread. */
void repro_linear_backward_weight_atomic(repro_pool *pool, const float *dy, const float *x,
                                         float *dw, int B, int in, int out, int accumulate);

/* NONdeterministic. db (+)= sum over the batch of dy, as
 * repro_linear_backward_bias, with per-chunk partials (ATOMIC_BATCH_CHUNK
 * samples each, ascending inside) added atomically in scheduler order.
 * Deterministic with 1 thread. */
void repro_linear_backward_bias_atomic(repro_pool *pool, const float *dy, float *db, int B,
                                       int out, int accumulate);

/* NONdeterministic. dw (+)= and db (+)= (db may be NULL) as
 * repro_conv2d_backward_filter, with one chunk per sample: the chunk computes
 * that sample's partial dw/db (in the ordered kernel's order) and atomically
 * adds it in scheduler order. Deterministic with 1 thread. */
void repro_conv2d_backward_filter_atomic(repro_pool *pool, const repro_conv_shape *s,
                                         const float *dy, const float *x, float *dw, float *db,
                                         int accumulate);

/* Deterministic. out[index[i]*width + j] += src[i*width + j] for i in [0, n),
 * j in [0, width); every output element receives its terms in ascending i.
 * Chunks own disjoint column ranges of out, so thread count changes no bit.
 * Accumulates into out (the caller zeroes it). Contract: every index[i] is in
 * [0, nrows); the caller guarantees it (asserted, never silently skipped). */
void repro_index_add(repro_pool *pool, float *out, int nrows, const int32_t *index,
                     const float *src, long n, int width);

/* NONdeterministic. The same sum, but chunks of ATOMIC_INDEX_CHUNK input rows
 * add their terms atomically into out (as index_add_ does on CUDA): when
 * several inputs share an output row, the order of their additions follows
 * thread scheduling. Same contract as repro_index_add. Deterministic with 1
 * thread. */
void repro_index_add_atomic(repro_pool *pool, float *out, int nrows, const int32_t *index,
                            const float *src, long n, int width);

#endif
