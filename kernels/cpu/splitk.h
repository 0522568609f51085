/* The split-K linear forward (backend.h, linear_forward's SPLITK variant):
 * the negative control of batch invariance. Like a BLAS library or cuBLAS's
 * heuristics, it cuts the reduction over the inputs into a number of chunks
 * chosen from the row count (repro_splitk_chunks: more chunks for skinny
 * batches, where one chunk per row would leave the machine idle) and adds
 * the partial sums at the end. Every call with the same shape rounds the
 * same way, so it is deterministic run to run and for any thread count; but
 * a sample's row is summed in 4 pieces when it is served alone and in one
 * piece inside a batch of 64, so its bits depend on what else is in the
 * batch: NOT batch-invariant. */
#ifndef REPRO_SPLITK_H
#define REPRO_SPLITK_H

#include "pool.h"

/* y = x w^T + b in the SPLITK order of backend.h: with n =
 * repro_splitk_chunks(B) chunks of L = ceil(in / n) inputs, partial j sums
 * x[b][i]*w[o][i] over its inputs in ascending i, starting from b[o] for
 * j = 0 and from +0 otherwise; y[b][o] = ((p0 + p1) + p2) + p3. For n = 1
 * this is repro_linear_forward's sum exactly. wt_scratch holds in*out
 * floats (w transposed). */
void repro_linear_forward_splitk(repro_pool *pool, const float *x, const float *w,
                                 const float *b, float *y, int B, int in, int out,
                                 float *wt_scratch);

#endif
