/* Test helpers for processes that must not outlive repro: find a process
 * by a unique marker in its command line (e.g. `sleep 301.123`), and wait
 * with a deadline for it to be gone. Not a suite: no check_ prefix. */
#ifndef REPRO_TU_PROCS_H
#define REPRO_TU_PROCS_H

#include <sys/types.h>

/* A live (not zombie) process whose argv[0] ends in `prog` and whose
 * argv[1] is `arg`: its pid, or 0. */
pid_t tu_find_process(const char *prog, const char *arg);
/* Polls until no such process is left (1) or `seconds` passed (0). */
int tu_process_gone_within(const char *prog, const char *arg, double seconds);
/* Polls until such a process appears: its pid, or 0 after `seconds`. */
pid_t tu_process_appears_within(const char *prog, const char *arg, double seconds);
/* $REPRO_BIN (default ./build/repro) as an absolute path, for tests that
 * run it from another directory (make check gives it relative). */
const char *tu_repro_bin(void);
/* Peak resident memory (KiB) of a child and its waited-for descendants,
 * its output sent to /dev/null: `repro` run with argv (NULL-terminated,
 * argv[0] "repro"), or, with argv NULL, the child reading the trace at
 * whole_trace whole (repro_trace_read; exit 3 when it cannot). *status
 * gets its wait status. */
long tu_peak_kib(const char *const *argv, const char *whole_trace, int *status);
/* This process's resident memory now (VmRSS, KiB): what a child inherits,
 * a floor under any child's peak. */
long tu_own_rss_kib(void);
/* SIGKILLs every such process (a failed test's leftovers). */
void tu_kill_processes(const char *prog, const char *arg);

#endif
