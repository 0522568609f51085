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
    double rel_l2_all;        /* the same over every recorded tensor (the walk keeps both
                                 until it knows which one the curve uses) */
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
    int first_has_loss;       /* loss on both sides at first_step (every step of a
                                 version 2 trace, detail steps of version 1) */
    long detail_step;         /* the step the tensor lists below are from: first_step
                                 when it has detail, else the first later step with
                                 detail on both sides (0: none) */
    int ntensors;             /* differing tensors at detail_step, in order */
    repro_tensor_diff *tensors;
    int nops;                 /* differing op outputs at detail_step (level op) */
    repro_tensor_diff *ops;
    uint32_t first_loss_bits_a, first_loss_bits_b; /* at first_step (first_has_loss) */
    double first_loss_a, first_loss_b;
    long ncurve;              /* points kept: every one up to REPRO_CURVE_MAX, then a
                                 sample (every 2^k-th) plus first_step's and the last */
    long curve_steps;         /* common steps with detail on both sides: the whole curve */
    repro_curve_point *curve;
    int curve_all_tensors;    /* no param.* on either side: the curve is over all tensors */
    repro_digest final_chain_a, final_chain_b;
    repro_element_diff element;
    char scope[64];           /* "fresh-process run to run", "thread count", ... ("" = unknown) */
    char scope_note[384];     /* what the runs' recorded thread counts say of it ("": nothing) */
    /* The traces' tensor order says nothing of where a difference began (a
     * program's, recorded in the order it chose): the first differing tensor
     * is "first in digest order", never "the likely origin"; an op output
     * recorded at level op is, being in execution order. */
    int order_unknown;
} repro_divergence;

/* Checks the two traces are of the same experiment (name and numerics
 * digest) — else -1, exit 2, naming both files — and compares them. */
int repro_compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out);
/* The same for two configs of one experiment on purpose (`repro compare
 * --vary`): only the experiment name must match. */
int repro_compare_variants(const repro_trace *a, const repro_trace *b, repro_divergence *out);
void repro_divergence_release(repro_divergence *d);

/* The most curve points a comparison keeps (+2: first divergent, last), so
 * that its memory does not grow with the number of steps. */
#define REPRO_CURVE_MAX 4096

/* The comparison as a walk over the common steps in order, one pair at a
 * time: what the whole-trace comparison and the streaming one share. */
typedef struct {
    repro_divergence *out;
    long stride;
    repro_curve_point first_point, last_point;
    int seen_params; /* a param.* tensor on either side so far */
} repro_compare_walk;
/* Same experiment (and, with same_config, same numerics)? Else -1, exit 2,
 * naming both files. */
int repro_compare_headers(const repro_trace *a, const repro_trace *b, int same_config);
void repro_compare_walk_begin(repro_compare_walk *w, repro_divergence *out);
/* sa and sb are the same step number. */
int repro_compare_walk_step(repro_compare_walk *w, const repro_trace_step *sa,
                            const repro_trace_step *sb);
/* After the walk, with both traces read to the end (last_*: chain of each
 * one's last step, NULL when it has none). */
void repro_compare_walk_end(repro_compare_walk *w, const repro_trace *a, const repro_trace *b,
                            const repro_digest *last_a, const repro_digest *last_b);

/* Streams the trace files A and B (compare_stream.c): memory independent of
 * their number of steps. Their headers land in *a and *b (the caller
 * releases them, also on error); with require_trailer, a trace without one
 * is an input error (exit 2), checked before the headers are compared, as
 * `repro diff` has always done. */
int repro_compare_files(const char *path_a, const char *path_b, repro_trace *a, repro_trace *b,
                        int same_config, int require_trailer, repro_divergence *out);

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
/* The same chart as an <svg> element to put inside an HTML page (no XML
 * declaration, no namespace: the page's parser supplies it). */
void repro_plot_svg_element(FILE *f, const repro_divergence *d, const char *title);

#endif
