/* Watching the ranks of an MPI job from outside it: the processes mpirun
 * started, found by OMPI_COMM_WORLD_RANK in their environment, and which
 * of them ended first and how. mpirun itself says little when a rank dies
 * (with --quiet nothing, or a surviving rank's "Read -1, expected ..."),
 * so `repro run --ranks N` (cli/run_ranks.c) and a program's ranks
 * (analysis/external_ranks.c) look for themselves, every tick of the
 * child's wait (util/child.h). */
#ifndef REPRO_UTIL_RANK_WATCH_H
#define REPRO_UTIL_RANK_WATCH_H

#include <sys/types.h>

#include "util/child.h"

typedef struct {
    const repro_child *job; /* mpirun */
    int ranks;
    pid_t *pid;             /* per rank; 0 until seen */
    int first_gone;         /* the rank seen gone first, -1: none yet */
    int ngone_first;        /* how many were gone at that first sight */
    int status;             /* its wait status when caught as a zombie, -1: unknown */
    int *first_status;      /* per rank: status at that first sight (-1 unknown, -2 running) */
    double first_gone_at;   /* monotonic seconds of that first sight */
} repro_rank_watch;

/* Sets w up for job (started or not) of `ranks` processes: 0, or -1 (out
 * of memory, error slot). */
int repro_rank_watch_init(repro_rank_watch *w, const repro_child *job, int ranks);
void repro_rank_watch_release(repro_rank_watch *w);
/* One look (a repro_child tick: arg is the repro_rank_watch): ranks not
 * seen yet, and the first sight of a rank gone. */
void repro_rank_watch_tick(void *arg);
/* After the job: of the ranks gone at the first sight, the one whose end
 * agrees with mpirun's exit status (mpirun knows which failed first)
 * becomes first_gone. */
void repro_rank_watch_settle(repro_rank_watch *w, const repro_child_status *mpirun);
/* How the first rank gone ended, as far as the watch saw it, else as
 * mpirun's exit status says (128 + a signal, or an exit code). */
repro_child_status repro_rank_watch_status(const repro_rank_watch *w,
                                           const repro_child_status *mpirun);

#endif
