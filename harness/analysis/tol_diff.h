/* `repro diff A B --tolerance`: two traces, possibly of different producers
 * (the built-in workload, a C program, the Python client), compared tensor
 * by tensor under a tolerance instead of bit for bit.
 *
 * A trace holds digests; the values come from `dump/` beside each trace
 * (values.h: `repro run --dump STEP`, repro_recorder_values, the Python
 * client's values=True). The comparison walks both traces as streams, step
 * by step: at every step with tensor detail on both sides, each tensor of A
 * is paired with B's (under the map, else by name), and measured from the
 * two .npy files. A pair needs no values only when both sides name it the
 * same, hash it with the same function and the digests are equal (then it
 * is bitwise equal); any other pair without values is an input error
 * naming the file that is missing. Memory: one step of each trace, and per
 * tensor at most REPRO_TOL_ROWS rows plus its first step past the
 * tolerance and its last. */
#ifndef REPRO_TOL_DIFF_H
#define REPRO_TOL_DIFF_H

#include <stdio.h>

#include "analysis/tensor_map.h"
#include "analysis/tolerance.h"
#include "record/trace.h"

#define REPRO_TOL_ROWS 64

typedef struct {
    long step;
    repro_tol_measure m;
    int from_digest; /* bitwise equal by digest, no values read */
} repro_tol_row;

typedef struct {
    char name[64];   /* A's */
    char name_b[64]; /* B's */
    int map_line;    /* the map line that paired them, 0: same name */
    char dtype[8];
    int ndim;
    long shape[8];
    repro_tol_rule rule;
    long steps;      /* steps compared */
    long differ_steps; /* ... at which some bits differed */
    uint64_t max_ulp;
    double max_rel, max_abs;
    long first_past; /* first step past the rule, 0: none */
    repro_tol_row rows[REPRO_TOL_ROWS];
    int nrows;
    repro_tol_row past_row, last_row; /* when not among rows */
} repro_tol_tensor;

typedef struct {
    long first_a, last_a, count_a; /* step numbers and counts of each side */
    long first_b, last_b, count_b;
    long compared_steps;           /* steps with detail on both sides */
    repro_tol_tensor *t;           /* in A's order at the first step that had them */
    int n, cap;
    char (*only_a)[64], (*only_b)[64]; /* tensors never paired */
    int n_only_a, n_only_b, cap_only_a, cap_only_b;
    long first_past;               /* the first step past the tolerance, 0: none */
    char first_tensor[64];         /* the first tensor past it there, in A's order */
    int bitwise;                   /* every compared value bitwise equal */
} repro_tol_result;

/* Streams A and B (headers into *a and *b, the caller releases them also
 * on error). Errors (exit 2): unreadable or truncated traces, different
 * step numbers or counts, a dtype or shape that differs between paired
 * tensors, missing values, a map entry whose tensor neither trace has, no
 * step with detail on both sides, no tensor in common. */
int repro_tol_diff_files(const char *path_a, const char *path_b, const repro_tolerance *tol,
                         repro_tensor_map *map, repro_trace *a, repro_trace *b,
                         repro_tol_result *out);
void repro_tol_result_release(repro_tol_result *r);

/* Reports (tol_report.c): text, and JSON (jansson) with the same fields. */
void repro_tol_report_text(FILE *out, const repro_trace *a, const repro_trace *b,
                           const repro_tolerance *tol, const repro_tensor_map *map,
                           const repro_tol_result *r);
int repro_tol_report_json(FILE *out, const repro_trace *a, const repro_trace *b,
                          const repro_tolerance *tol, const repro_tensor_map *map,
                          const repro_tol_result *r);

#endif
