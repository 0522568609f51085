/* Element-level difference of two dumps of the same tensor: how many
 * elements differ bitwise, where (element range and tree-hash leaves), by
 * how much (max |a-b| and max ULP distance, float32, as util/ulp.h
 * defines it). */
#ifndef REPRO_ELEMDIFF_H
#define REPRO_ELEMDIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/compare.h"

/* Compares two equally long arrays of 4-byte elements; `is_float` enables
 * max_abs and ULPs. Fills out (valid = 1). */
void repro_element_diff_compute(const void *a, const void *b, size_t nbytes, int is_float,
                                const char *tensor, repro_element_diff *out);

/* The same from two .npy files. Returns 0 or -1 (error slot). */
int repro_element_diff_files(const char *path_a, const char *path_b, int is_float,
                             const char *tensor, repro_element_diff *out);

#endif
