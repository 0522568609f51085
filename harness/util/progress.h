/* Progress on stderr for long runs: a live line on a terminal, otherwise a
 * plain line every `every` steps (logs, CI). Timing is wall clock, for the
 * reader only: it never touches the numerics. */
#ifndef REPRO_PROGRESS_H
#define REPRO_PROGRESS_H

#include <stdio.h>

typedef struct {
    FILE *out;
    int tty;
    long total, every;
    double start, last_draw;
} repro_progress;

double repro_now(void); /* monotonic seconds */
void repro_progress_init(repro_progress *p, FILE *out, long total, long every, int quiet);
void repro_progress_update(repro_progress *p, long step, double loss);
void repro_progress_finish(repro_progress *p);

/* One stage of a long command on stderr, "repro: WHAT: message", unless
 * quiet (the stage lines of parity and batch invariance). */
void repro_progress_note(int quiet, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
