/* The ranks of a program repro did not write (`repro check --ranks 1,2 --
 * python3 ddp.py`): the torch.distributed environment protocol, one
 * process at world size 1, N processes through Open MPI's mpirun above
 * it, and what to say when a rank fails or a world size changes the bits.
 * external.c builds the run's environment and judges what it left; this
 * file only starts it (docs/PROTOCOL.md, "Ranks"). */
#ifndef REPRO_EXTERNAL_RANKS_H
#define REPRO_EXTERNAL_RANKS_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/multirun.h"
#include "util/child.h"

/* The world size run idx of m asks for: the last of the pass-through
 * options' --ranks N (or --set ranks=N, train.ranks=N, as `repro compare
 * --vary ranks=1,2` gives it), then the run's own; 1 when none. */
int repro_external_ranks(const repro_multirun *m, int idx);
/* The tensor-parallel size of run idx (--tp N, --set tp=N or
 * parallel.tp=N; 1 when none): repro_external_ranks counts ranks x tp
 * processes, and each gets REPRO_TP and REPRO_TP_RANK (its MPI rank
 * modulo tp: the group of process p is p / tp). */
int repro_external_tp(const repro_multirun *m, int idx);

/* The torch.distributed variables every process of a run at `ranks` gets
 * from the run's environment: WORLD_SIZE, REPRO_WORLD_SIZE, MASTER_ADDR,
 * and at world size 1 RANK, LOCAL_RANK, REPRO_RANK = 0 (above 1 each
 * process sets its own from mpirun's OMPI_COMM_WORLD_RANK). MASTER_PORT
 * is chosen free when the run starts. Fills kv, returns how many. */
typedef struct {
    const char *key;
    char value[24];
} repro_env_pair;
enum { REPRO_DIST_ENV_MAX = 10 };
int repro_external_dist_env(int ranks, int tp, repro_env_pair kv[REPRO_DIST_ENV_MAX]);

/* Runs c, set up by external.c for run idx into dir (argv, environment,
 * output files, timeout), with a free MASTER_PORT: directly at world size
 * 1, else as `mpirun -np N` with each rank's output under dir/ranks/ and
 * its RANK set. A port taken between choosing and binding it starts the
 * run again on another. When a rank failed (exited non-zero, was killed,
 * or ended while the others were left waiting past $REPRO_RANK_WAIT
 * seconds, default 30), `why` says which rank and how, and err_path is
 * that rank's stderr; else why is "". Returns what repro_child_run
 * returns, with st filled. */
int repro_external_launch(const repro_multirun *m, int idx, const char *dir, repro_child *c,
                          repro_child_status *st, char *why, size_t why_len, char *err_path,
                          size_t err_len);

/* For a program's check: when a world-size comparison failed and its first
 * divergent tensor is a gradient, a "cause:" line on what DistributedData-
 * Parallel does and the way out (repro.ddp). Returns 1 when it printed. */
int repro_external_ranks_cause(const repro_multirun *m, FILE *out);

#endif
