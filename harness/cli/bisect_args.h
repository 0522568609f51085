/* `repro bisect`'s command line, parsed once for its three searches (the
 * commit search, the op level of an experiment, the op level of a
 * program): the common options and bisect's own, and which own options
 * were given, so each search refuses the ones that do not apply to it. */
#ifndef REPRO_CLI_BISECT_ARGS_H
#define REPRO_CLI_BISECT_ARGS_H

#include "analysis/batchinv.h"
#include "cli/common_opts.h"

enum { BI_COMMITS = 1, BI_BUILD, BI_REPEAT, BI_NAME, BI_TIMEOUT, BI_QUARANTINE, BI_BATCHINV,
       BI_BATCH_SIZES };

typedef struct {
    repro_common co;
    const char *commits, *build, *quarantine;
    const char *repeat;      /* --repeat K, read by the search (its range), or NULL */
    double timeout_s;
    char name[128];          /* --name, or "" */
    int batch_invariance;
    repro_batchinv_opts bi;  /* --batch-sizes */
    unsigned given;          /* 1 << id of each own option given */
} repro_bisect_args;

/* Refuses (-1, error slot) an own option given that is not in `allowed`
 * (a mask of 1 << BI_*), naming the search `what` it does not apply to. */
int repro_bisect_args_only(const repro_bisect_args *a, unsigned allowed, const char *what);

/* --repeat's value in lo..hi, else def: 0 or -1 (error slot). */
int repro_bisect_args_repeat(const repro_bisect_args *a, int lo, int hi, int def, int *out);

/* The op-level search of a program (cmd_bisect_program.c). */
int repro_cmd_bisect_program(const repro_bisect_args *a, int argc, char **argv, char **program);

#endif
