/* The statistics a trace shows per tensor (l2, sum, max |x|, non-finite
 * count), in the recorder's fixed order (harness/record/stats.c):
 * element i goes to lane i % 4, each lane sums in double in ascending i,
 * a non-finite element adds 0 and is counted, and the lanes combine as
 * (0 + 1) + (2 + 3). Shared by the CPU backend's and the CUDA backend's
 * tensor_leaves, so a statistic computed on the GPU has the host's bits. */
#ifndef REPRO_SHARED_STATS_H
#define REPRO_SHARED_STATS_H

#include "hd.h"

typedef struct {
    double l2, sum, mx;
    int64_t nonfinite;
} repro_hd_lane;

static inline REPRO_HD void repro_hd_lane_add(repro_hd_lane *a, float f)
{
    int finite = (repro_hd_f32_bits(f) & 0x7f800000u) != 0x7f800000u;
    double v = finite ? (double)f : 0.0;
    a->nonfinite += !finite;
    a->l2 += v * v;
    a->sum += v;
    double m = repro_hd_f64_of(repro_hd_f64_bits(v) & 0x7fffffffffffffffULL); /* |v| */
    a->mx = m > a->mx ? m : a->mx;
}

/* Lane j of x[0..n): elements j, j + 4, j + 8, ... */
static inline REPRO_HD repro_hd_lane repro_hd_lane_of(const float *x, size_t n, int j)
{
    repro_hd_lane a = {0.0, 0.0, 0.0, 0};
    for (size_t i = (size_t)j; i < n; i += 4)
        repro_hd_lane_add(&a, x[i]);
    return a;
}

/* The four lanes combined; *l2sq is the sum of squares (l2 = its sqrt). */
static inline REPRO_HD void repro_hd_lanes_combine(const repro_hd_lane *l, double *l2sq,
                                                   double *sum, double *max_abs,
                                                   int64_t *nonfinite)
{
    *l2sq = (l[0].l2 + l[1].l2) + (l[2].l2 + l[3].l2);
    *sum = (l[0].sum + l[1].sum) + (l[2].sum + l[3].sum);
    double m01 = l[0].mx > l[1].mx ? l[0].mx : l[1].mx;
    double m23 = l[2].mx > l[3].mx ? l[2].mx : l[3].mx;
    *max_abs = m01 > m23 ? m01 : m23;
    *nonfinite = l[0].nonfinite + l[1].nonfinite + l[2].nonfinite + l[3].nonfinite;
}

#endif
