/* The program half of commit bisection (`repro bisect --commits GOOD..BAD
 * -- PROGRAM ARGS...`): one probed commit's K runs of the user's program,
 * each a fresh process started through the runner protocol (the multirun
 * engine's external runs, analysis/external.c) with the commit's worktree
 * as its working directory, so that `./build/prog` is that commit's build.
 * Judging the runs (agreement, GOOD's reference) is bisect_commits.c's. */
#ifndef REPRO_BISECT_PROGRAM_H
#define REPRO_BISECT_PROGRAM_H

#include <signal.h>
#include <stddef.h>

#include "record/trace.h"

typedef struct {
    char *const *argv;        /* PROGRAM ARGS..., NULL-terminated (never a shell) */
    const char *name;         /* a label for messages: the program's name */
    const char *cwd;          /* the worktree: relative paths resolve there */
    const char *dir;          /* absolute: run-1/, run-2/, ... are made under it */
    int repeat;               /* K >= 1 */
    double timeout_s;         /* kill a run after this long (0: never) */
    char *const *pass;        /* --steps/--seed/--set pairs for every run */
    int npass;
    const char *const *env_unset; /* removed from the program's environment */
    volatile sig_atomic_t *interrupt; /* forwarded to the running program */
} repro_bisect_program_spec;

/* Runs the program K times and reads the traces into runs[0..K) (the
 * caller releases them). 0 when all K ran and left complete traces; 1 when
 * the commit cannot be tested (a run failed, timed out, or left no valid
 * trace, as `repro check -- PROGRAM` would exit 3): `why` gets one line and
 * `detail` (may be NULL) the whole message, with the end of the program's
 * stderr; -1 with the error slot set for what must stop the bisect (out of
 * memory, an interruption). */
int repro_bisect_program_runs(const repro_bisect_program_spec *s, repro_trace *runs, char *why,
                              size_t len, char *detail, size_t dlen);

#endif
