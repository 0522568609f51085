/* The summary stats a trace line carries per tensor (L2 norm, sum, max |x|,
 * non-finite count): computed in double, in a fixed order written in the
 * code, over the finite elements. Informational (not hashed) but exact, so
 * two runs of the same bits show the same stats. */
#ifndef REPRO_RECORD_STATS_H
#define REPRO_RECORD_STATS_H

#include <stddef.h>

#include "repro/repro.h" /* repro_tensor_stats */

/* dtype: a trace dtype name ("f32", "f64", "f16", "bf16", "i32", "i64",
 * "u8", "u32"); an unknown dtype gives zeros. */
void repro_tensor_stats_compute(const char *dtype, const void *data, size_t nbytes, double *l2,
                                double *sum, double *max_abs, long *nonfinite);

/* Two float32 tensors' stats at once, bitwise each one's
 * repro_tensor_stats_compute: the same adds in the same order per tensor,
 * the two tensors' add chains interleaved so they overlap (about twice
 * the speed of two calls on the AVX2 and AVX-512 paths; the baseline path
 * makes two calls). */
void repro_tensor_stats_f32_pair(const float *x, size_t nx, repro_tensor_stats *sx,
                                 const float *y, size_t ny, repro_tensor_stats *sy);

#endif
