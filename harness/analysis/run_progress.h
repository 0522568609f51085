/* The live progress line of the runs a multirun has going (multirun.c):
 * on a terminal one line, redrawn by each running child's tick, showing
 * every run in flight with its step and the ETA of the slowest. Runs may
 * go at once (multirun.h: jobs), so the line belongs to no one run: each
 * run joins the board when it starts and leaves it when it ends. */
#ifndef REPRO_RUN_PROGRESS_H
#define REPRO_RUN_PROGRESS_H

#include <sys/types.h>

typedef struct {
    const char *trace, *what; /* the trace the child writes; the run's label */
    long total, steps;        /* steps the run will take; lines seen so far */
    off_t read_to;            /* how far the trace has been read */
    double start;
} repro_run_progress;

/* Joins the board (nothing is drawn until the first tick). */
void repro_run_progress_join(repro_run_progress *p);
/* The child's tick (util/child.h): reads p's trace on, redraws the line. */
void repro_run_progress_tick(void *p);
/* Leaves the board; the line is cleared when no run is left on it. */
void repro_run_progress_leave(repro_run_progress *p);
/* Around other output on stderr while runs may be drawing ("run 3 ...",
 * a failed run's stderr): holds the line back and clears it, so what is
 * written starts on a clean line and is never cut by a redraw. */
void repro_run_progress_hold(void);
void repro_run_progress_release(void);

#endif
