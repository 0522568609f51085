/* Batch invariance of a program repro did not write (`repro check
 * --batch-invariance -- PROGRAM`): one fresh run per batch size through the
 * multirun engine, each given `--set batch_size=N` (REPRO_BATCH_SIZE=N in
 * its environment, repro/repro.h), then the per-sample rows the program
 * recorded compared sample by sample across the runs.
 *
 * The protocol (docs/PROTOCOL.md): the program evaluates a fixed set of
 * samples in batches of REPRO_BATCH_SIZE and records each sample's output
 * as its own tensor named "row.<sample-id>" (at trace level tensor, in any
 * step; ids are the program's, so the runs may batch and order the samples
 * however they like). Rows are matched by (step, name) and compared by
 * digest: bitwise. Everything else the runs record must agree, or a row
 * difference could come from training that depends on the batch size
 * rather than from the batch composition: such runs could not be tested. */
#ifndef REPRO_BATCHINV_ROWS_H
#define REPRO_BATCHINV_ROWS_H

#include <stdio.h>

#include "analysis/batchinv.h"
#include "analysis/multirun.h"

#define REPRO_ROW_PREFIX "row."

typedef struct {
    char id[64];      /* the sample id: the tensor name after "row." */
    long step;
    int a, b;         /* the runs: the reference (0) and the first that differs */
    repro_trace_tensor ta, tb; /* each side's record: digest, shape and stats */
} repro_batchinv_row_diff;

typedef struct {
    char experiment[128];
    int nruns;
    char labels[REPRO_BATCHINV_MAX_SIZES][48]; /* "batch 8" */
    int sizes[REPRO_BATCHINV_MAX_SIZES];
    int ndiffer_run[REPRO_BATCHINV_MAX_SIZES]; /* rows of run i that differ from run 0's */
    long nrows;       /* rows per run */
    long ndiffer;     /* samples whose row differs in some run */
    repro_batchinv_row_diff shown[REPRO_BATCHINV_MAX_SHOWN];
    int nshown;
    int batch_invariant;
} repro_batchinv_rows_result;

/* Plans one run of cmd per size in o (label "batch N", scope batch
 * composition), with the pass-through options. 0 or -1 (error slot). */
int repro_batchinv_rows_plan(repro_multirun *m, const char *name, char *const *cmd,
                             double timeout_s, const repro_run_pass *pass,
                             const repro_batchinv_opts *o);
/* After repro_multirun_execute: the rows compared. 0 with the verdict in
 * r, or -1: REPRO_EIO (could not be tested: no rows, rows missing from a
 * run, or the runs differ outside their rows), REPRO_ENOMEM. */
int repro_batchinv_rows_compare(const repro_multirun *m, repro_batchinv_rows_result *r);

void repro_batchinv_rows_print(FILE *out, const repro_batchinv_rows_result *r);
void *repro_batchinv_rows_json(const repro_batchinv_rows_result *r); /* json_t *, new */
int repro_batchinv_rows_junit(const char *path, const repro_batchinv_rows_result *r);

#endif
