/* How far apart two runs' parameters really are, from their .npy dumps of
 * one step: the relative L2 distance ||A - B|| / ||A|| over all param.*
 * tensors (in double, element order), and the float32 ULP distances of
 * the elements — median, 99th percentile and max — with sign crossings
 * (one side < 0, the other > 0) counted apart, since their ULP distance on
 * the ordered-integer line is huge but says only "crossed zero". The norm
 * gap | ||A|| - ||B|| | / ||A|| of the trace stats is not a distance: two
 * different parameter sets can score 0. */
#ifndef REPRO_PARAMDIST_H
#define REPRO_PARAMDIST_H

#include <stdint.h>

#include "record/trace.h"

typedef struct {
    int valid;               /* dumps found for every param.* tensor */
    long elements;
    double rel_l2;           /* ||A - B|| / ||A|| */
    uint64_t ulp_p50, ulp_p99, ulp_max; /* over elements without a sign crossing */
    long sign_crossings;
    long nan_pairs;          /* not comparable (NaN on a side) */
} repro_param_distance;

/* a and b are traces whose directories hold dump/step-NNNNNN/param.*.npy
 * for `step`. 0 (out->valid says whether dumps were there), or -1. */
int repro_param_distance_at(const repro_trace *a, const repro_trace *b, long step,
                            repro_param_distance *out);

#endif
