/* Comparing two traces: are they bitwise identical, and if not, where do
 * they part (first divergent step, by binary search over the chain), which
 * tensors differ there (in step-digest order: the first is the likely
 * origin), how far apart they are (from the per-tensor stats), and the
 * divergence curve over all common steps. Used by `repro diff` and
 * `repro check`. */
#ifndef REPRO_COMPARE_H
#define REPRO_COMPARE_H

#include <stdio.h>

#include "record/trace.h"
#include "util/ulp.h"

typedef struct {
    char name[64];
    int in_a, in_b;           /* present on each side */
    repro_trace_tensor a, b;  /* stats of each side (valid when present) */
} repro_tensor_diff;

typedef struct {
    long step;
    double rel_l2;            /* | ||P_a|| - ||P_b|| | / ||P_a|| over all param.* tensors
                                 (every recorded tensor when neither side has one) */
    double loss_a, loss_b;
} repro_curve_point;

/* Element-level detail at the first divergent step, from tensor dumps
 * (filled by `repro check`, which re-runs both sides to that step). */
typedef struct {
    int valid;
    char tensor[64];
    long count;               /* elements that differ bitwise */
    long numel;
    long first, last;         /* element range of the differences */
    long first_leaf, last_leaf; /* the same in 4 KiB tree-hash leaves */
    double max_abs;           /* max |a - b| over differing finite pairs */
    uint64_t max_ulp;         /* max ULP distance (float32, util/ulp.h); REPRO_ULP_NAN
                                 when a NaN met anything but the same NaN */
} repro_element_diff;

typedef struct {
    int identical;            /* every common step digest and chain equal, same length */
    long common_steps;        /* steps recorded on both sides */
    long steps_a, steps_b;    /* last step of each */
    int truncated_a, truncated_b; /* no trailer */
    long first_step;          /* first divergent step, 0 if none */
    int first_has_detail;     /* tensor lists available at first_step */
    int ntensors;             /* differing tensors at first_step, in order */
    repro_tensor_diff *tensors;
    int nops;                 /* differing op outputs at first_step (level op) */
    repro_tensor_diff *ops;
    long ncurve;
    repro_curve_point *curve;
    int curve_all_tensors;    /* no param.* on either side: the curve is over all tensors */
    repro_digest final_chain_a, final_chain_b;
    repro_element_diff element;
    char scope[64];           /* "fresh-process run to run", "thread count", ... ("" = unknown) */
} repro_divergence;

/* Checks the two traces are of the same experiment (name and numerics
 * digest) — else -1, exit 2, naming both files — and compares them. */
int repro_compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out);
/* The same for two configs of one experiment on purpose (`repro compare
 * --vary`): only the experiment name must match. */
int repro_compare_variants(const repro_trace *a, const repro_trace *b, repro_divergence *out);
void repro_divergence_release(repro_divergence *d);

/* Reports (report.c). Text for people; JSON (jansson) with the same fields;
 * JUnit XML (one testsuite, one testcase per comparison) for CI systems. */
void repro_report_text(FILE *out, const repro_trace *a, const repro_trace *b,
                       const repro_divergence *d);
int repro_report_json(FILE *out, const repro_trace *a, const repro_trace *b,
                      const repro_divergence *d);
/* What the curve measures, for labels: "||params||" or "||all recorded tensors||". */
const char *repro_curve_measure(const repro_divergence *d);
/* SVG line chart of the divergence curve, log scale (plot.c). */
int repro_plot_svg(const char *path, const repro_divergence *d, const char *title);

#endif
