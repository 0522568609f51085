/* Inside commit bisection: the state of one bisect and what its three files
 * share. bisect_commits.c (the range, GOOD's reference, the search) calls
 * bisect_probe.c (the worktree, one probe), and both call bisect_child.c
 * (messages, children, interruption); never the other way. Conventions as
 * in bisect_commits.h. */
#ifndef REPRO_BISECT_CTX_H
#define REPRO_BISECT_CTX_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>

#include "bisect/bisect_commits.h"
#include "history/git.h"
#include "record/trace.h"

typedef struct {
    const repro_bisect_opts *o;
    repro_bisect_result *r;
    repro_git *g;             /* the user's repository, through the history layer */
    repro_git_worktree *wt;   /* the temporary linked worktree */
    char tmp[PATH_MAX];       /* mkdtemp root: the worktree and the probes' files */
    char wt_path[PATH_MAX + 8];
    char wt_name[64];
    const char *build;        /* the build command line */
    repro_trace ref;          /* GOOD's reference: its golden, or its run 1 */
    int has_ref;
    const char *ref_label;    /* "GOOD's golden" / "GOOD's run" */
    int probes;               /* probes decided so far */
    char prog_name[128];      /* a program's name, for its runs' messages */
} repro_bisect_ctx;

/* ---- bisect_child.c ----------------------------------------------------- */

/* "bisect: ..." on stderr, unless quiet. */
void repro_bisect_progress(const repro_bisect_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The history layer's message, prefixed "bisect: " (the code kept); -1. */
int repro_bisect_git_error(void);
void repro_bisect_set_verdict(repro_bisect_cand *cd, int verdict, long step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* rm -rf, never following symlinks out of the tree. */
void repro_bisect_remove_tree(const char *path);
/* The last `nlines` lines of a log on stderr, indented (the log itself is
 * in the temporary directory, gone when the bisect ends). */
void repro_bisect_show_tail(const repro_bisect_ctx *c, const char *path, int nlines);
/* A message of several lines on stderr, indented as show_tail does. */
void repro_bisect_show_text(const repro_bisect_ctx *c, const char *text);

/* The signal that interrupted the bisect (0: none), set by the handler
 * repro_bisect_signals_catch installs and forwarded to running children. */
extern volatile sig_atomic_t repro_bisect_interrupted;
typedef struct {
    struct sigaction old_int, old_term;
} repro_bisect_signals;
void repro_bisect_signals_catch(repro_bisect_signals *s);
void repro_bisect_signals_restore(const repro_bisect_signals *s);
/* -1 with the error slot set (code 128 + the signal) once interrupted. */
int repro_bisect_check_interrupted(void);

/* The variables removed from every child's environment (NULL-terminated). */
extern const char *const repro_bisect_scrubbed_env[];
/* Runs `path argv...` in `cwd`, output appended to `log`, and waits:
 * *status is its exit status (127: could not start). -1 only when
 * interrupted or when waiting fails. */
int repro_bisect_spawn_logged(const char *cwd, const char *path, char *const argv[],
                              const char *log, int *status);

/* ---- bisect_probe.c ----------------------------------------------------- */

/* The temporary linked worktree at `at`, under c->tmp. */
int repro_bisect_worktree_create(repro_bisect_ctx *c, const char *at);
/* Removes the worktree and the temporary directory (safe at any point). */
void repro_bisect_worktree_remove(repro_bisect_ctx *c);
/* Judges run 1 against GOOD's reference (no reference yet: good). */
void repro_bisect_match_reference(repro_bisect_ctx *c, repro_bisect_cand *cd,
                                  const repro_trace *run1, int k);
/* One probe: check out, build, run, judge; `keep` gets run 1 when good.
 * -1 only for what stops the whole bisect. */
int repro_bisect_probe(repro_bisect_ctx *c, repro_bisect_cand *cd, repro_trace *keep);

#endif
