/* runs/ retention: every run and check keeps its traces, logs and dumps
 * under runs/<name>/<run-dir>/, which grows without end unless pruned.
 * `repro gc` and the automatic pruning after each check use this. */
#ifndef REPRO_UTIL_RUNS_H
#define REPRO_UTIL_RUNS_H

#include <stdio.h>

/* Deletes all but the `keep` newest (by modification time) run
 * directories under dir (runs/<name>). With `dry_run` it only reports.
 * Each removal is reported to `report` (may be NULL). *freed (may be NULL)
 * receives the bytes removed. 0 or -1 (error slot). A missing dir is 0. */
int repro_runs_prune(const char *dir, int keep, int dry_run, FILE *report, long long *freed);

/* Removes one run directory and everything in it. 0 or -1 (error slot). */
int repro_runs_remove(const char *run_dir);

/* How many run directories to keep per name: $REPRO_KEEP_RUNS, else 20. */
int repro_runs_keep_default(void);

#endif
