/* Tolerances for comparing two traces' tensor values (`repro diff
 * --tolerance`): a port is never bitwise, so it is held to a bound.
 *
 * Grammar of one --tolerance SPEC (repeatable):
 *   SPEC := [GLOB "="] RULE
 *   RULE := "ulp:" N [",atol:" Y]    every element at most N float ULPs apart
 *                                    (util/ulp.h's distance; f64 on its own line),
 *                                    or, with atol, |a - b| <= Y (a floor for
 *                                    values near zero, where a rounding error of
 *                                    the larger terms they cancel from spans
 *                                    thousands of their ULPs)
 *         | "rtol:" X [",atol:" Y]   |a - b| <= Y + X * |a| for every element,
 *                                    A the reference (numpy.allclose's test)
 *         | "atol:" Y                |a - b| <= Y
 *         | "exact"                  bitwise equal
 * GLOB (fnmatch, on A's tensor name) makes it an override: `grad.*=ulp:64`.
 * For each tensor the last matching override wins, else the last SPEC
 * without GLOB, else "exact". NaN only matches the same NaN bits; integer
 * tensors must be equal whatever the rule (a rule bounds rounding, and
 * integers do not round). */
#ifndef REPRO_TOLERANCE_H
#define REPRO_TOLERANCE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { REPRO_TOL_EXACT, REPRO_TOL_ULP, REPRO_TOL_REL } repro_tol_kind;

typedef struct {
    repro_tol_kind kind;
    uint64_t ulp;      /* REPRO_TOL_ULP */
    double rtol;       /* REPRO_TOL_REL */
    double atol;       /* REPRO_TOL_REL, and REPRO_TOL_ULP's floor (0: none) */
    char text[64];     /* as given ("ulp:4"), or "exact" */
} repro_tol_rule;

typedef struct {
    char glob[64]; /* "" for the default */
    repro_tol_rule rule;
} repro_tol_entry;

typedef struct {
    repro_tol_entry v[32];
    int n;
} repro_tolerance;

/* Parses one SPEC and adds it. 0, or -1 (REPRO_EINVAL) with a message
 * naming the argument: "diff: --tolerance 'ulp:x': ...". */
int repro_tolerance_add(repro_tolerance *t, const char *spec);
/* The rule for a tensor (A's name); never NULL. */
const repro_tol_rule *repro_tolerance_for(const repro_tolerance *t, const char *name);

/* How far two values of one tensor are apart, element by element. */
typedef struct {
    long numel;
    long differ;      /* elements whose bits differ */
    long outside;     /* elements past the rule */
    long first_outside; /* index of the first, -1 */
    uint64_t max_ulp; /* REPRO_ULP_NAN when a NaN met anything but its bits;
                         integer tensors: 0 equal, else REPRO_ULP_NAN */
    double max_rel;   /* max |a-b|/|a| over differing elements (inf where a = 0
                         or a value is not finite) */
    double max_abs;   /* max |a-b| over differing finite pairs */
} repro_tol_measure;

/* a and b: nbytes of the dtype ("f32", "f64", "i32", "u32", "i64", "u8").
 * 0, or -1 (REPRO_EINVAL) for another dtype. */
int repro_tol_measure_values(const repro_tol_rule *rule, const char *dtype, const void *a,
                             const void *b, size_t nbytes, repro_tol_measure *m);

#endif
