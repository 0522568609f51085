/* Op-level bisect, the engine under `repro bisect EXP` (without --commits):
 * where does a run stop reproducing, and which kernel variant is responsible?
 *  (a) locate: two runs at trace level op; the first differing op output at
 *      the first divergent step, with its step, phase, layer, op and the
 *      variant that produced it;
 *  (b) culprits: the nondeterministic variants in use are replaced by their
 *      deterministic defaults in subsets (delta debugging, Zeller's ddmin),
 *      each subset tested by K fresh runs; a minimal failing set is found,
 *      removed, and the search repeated until the rest reproduces, so
 *      several independent culprits are all named;
 *  (c) quarantine OP substitutes the reference run's output of OP in the
 *      other run at every step (train_record.h taps), so the comparison goes on
 *      past a known-nondeterministic op and finds what else differs.
 * A library: results in a struct, errors in the error slot, reports in
 * words and JSON (bisect_ops_report.c); cli/cmd_bisect.c parses the options.
 * Runs live under runs/<experiment>/. */
#ifndef REPRO_BISECT_OPS_H
#define REPRO_BISECT_OPS_H

#include <jansson.h>
#include <stdio.h>

#include "analysis/batchinv.h"
#include "analysis/multirun.h"
#include "core/config.h"

#define REPRO_BISECT_OPS_MAX_CAND 16

typedef struct {
    const char *exp;
    repro_run_pass pass;    /* --steps, --seed, --set for every run */
    int repeat;             /* fresh runs per culprit test (2..32) */
    const char *quarantine; /* a variant op or op output name, or NULL */
    int quiet;              /* no progress on stderr */
    /* A scope bisect (`--threads A,B`): the run option and its two values;
     * scope_flag NULL for the repeat bisect. (a) then runs A, A again and
     * B: the first pair tells a run-to-run difference from the scope's. */
    const char *scope_flag, *scope_a, *scope_b;
} repro_bisect_ops_opts;

typedef struct {
    repro_config cfg;       /* the experiment with the options applied */
    int cand[REPRO_BISECT_OPS_MAX_CAND]; /* nondeterministic variant keys in use */
    int ncand;              /* (minus the quarantined one) */
    long runs;              /* fresh runs spent */
    /* (a) */
    int diverged;
    long steps;             /* the reference run's steps */
    long first_step;
    char name[64];          /* the first differing op output, or tensor */
    int no_op_differs;      /* no op output differs there: name is a tensor */
    int inputs_identical;   /* every op output before it and every batch tensor of the
                               step agree (and the previous step did): identical
                               inputs, different outputs — a nondeterministic op */
    char phase[32], layer[32];
    char op[64];            /* the variant op that produced it, or "" */
    char variant[64];       /* its variant in this config, or "" */
    int has_info;           /* the registry knows it: deterministic is valid */
    int deterministic;
    int repeat_differs;     /* scope bisect: the two runs at A already differ (the
                               first op above is theirs, not the scope's) */
    /* (b) */
    long test_steps;        /* steps per culprit test */
    int culprits[REPRO_BISECT_OPS_MAX_CAND];
    int nculprits;
} repro_bisect_ops_result;

/* Loads and validates the experiment with the options; finds the
 * candidates. 0 or -1 (error slot). */
int repro_bisect_ops_prepare(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r);
/* (a). 0 with r->diverged and the first op filled; a child's failing exit
 * status (2 or 3, as multirun.h returns it); or -1 (error slot). */
int repro_bisect_ops_locate(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r);
/* (b), after a divergence, with at least one candidate. 0 with the
 * culprits (none: no candidate differs on its own within test_steps x
 * repeat runs), or -1 (error slot). */
int repro_bisect_ops_culprits(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r);

/* The reports (bisect_ops_report.c): each fills doc (or cul, a JSON array)
 * and, when out is not NULL, writes the same in words. The first divergent
 * op of (a); the culprits of (b), found with `repeat` runs per test. */
void repro_bisect_ops_report_first(FILE *out, const repro_bisect_ops_result *r, json_t *doc);
void repro_bisect_ops_report_culprits(FILE *out, const repro_bisect_ops_result *r, int repeat,
                                      json_t *cul);
/* The first divergent op's first line alone, "first divergence: step N,
 * forward, layer L, NAME (op O, variant V, deterministic)", on out. */
void repro_bisect_ops_print_first(FILE *out, const repro_bisect_ops_result *r);

/* ---- batch invariance (bisect_batchinv.c) ---------------------------------
 * `repro bisect EXP --batch-invariance`: the batch-invariance check
 * (batchinv.h) with the experiment's variants; when it fails, each variant
 * in use that the registry marks not batch-invariant is switched to its
 * default on its own and the check repeated: the variants whose switch
 * makes it pass are the culprits (all of them together when no single
 * switch does). In process, like the check. */
typedef struct {
    repro_config cfg;
    repro_batchinv_result check; /* with the experiment's own variants */
    int cand[REPRO_BISECT_OPS_MAX_CAND]; /* variant keys in use, not batch-invariant */
    int ncand;
    int culprits[REPRO_BISECT_OPS_MAX_CAND];
    int nculprits;
    int jointly;            /* no single switch passes; switching them all does */
    int tests;              /* checks run */
} repro_bisect_batchinv_result;

/* 0 with the result (r->check.batch_invariant: nothing to bisect), or -1
 * (error slot). `bo` gives the batch sizes; o the experiment and options. */
int repro_bisect_batchinv(const repro_bisect_ops_opts *o, const repro_batchinv_opts *bo,
                          repro_bisect_batchinv_result *r);
/* A failed check (!r->check.batch_invariant): the first divergent op and
 * the culprits, into doc and, when out is not NULL, in words. */
void repro_bisect_batchinv_report(FILE *out, const repro_bisect_batchinv_result *r, json_t *doc);

/* ---- the op level of a program (bisect_program_ops.c) ----------------------
 * `repro bisect -- PROGRAM ARGS...`: the program's K runs at trace level op
 * (the caller runs them through multirun.h). Reports the first pair of
 * runs that differ, its first divergent op and whether that op's inputs
 * were identical (then the op is nondeterministic), into doc when it is
 * not NULL (--json), else in words on out. 1 when some runs differ, 0 when
 * all agree. */
int repro_bisect_program_ops_report(FILE *out, const repro_multirun *m, json_t *doc);

/* ---- the scope bisect (bisect_scope.c) ---------------------------------------
 * `repro bisect --threads A,B` (or --workers, --ranks), for the built-in
 * workload through repro_bisect_ops_locate with scope_flag set, for a
 * program through a multirun of three runs at trace level op: A, A again,
 * B. The report says where A and B part, whether the op there had
 * identical inputs (then its bits depend on the setting: for the
 * built-in workload the variant and why, for a program the module's class
 * and the thread pool that differed), or whether A already differs from
 * itself (run to run). */
/* Adds the trace-level options and the three runs to m (its pass-through
 * options already there). 0 or -1 (error slot). */
int repro_bisect_scope_plan_program(repro_multirun *m, const char *flag, const char *a,
                                    const char *b);
/* After the runs: doc always (JSON), words on out when it is not NULL. 1
 * when the runs differ, 0 when all three agree. */
int repro_bisect_scope_report_program(FILE *out, const repro_multirun *m, const char *flag,
                                      const char *a, const char *b, json_t *doc);
/* A built-in divergence (r->diverged) found with o->scope_flag: doc, and
 * words on out when it is not NULL. */
void repro_bisect_scope_report_builtin(FILE *out, const repro_bisect_ops_opts *o,
                                       const repro_bisect_ops_result *r, json_t *doc);

#endif
