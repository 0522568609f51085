/* Commit bisection, the engine under `repro bisect --commits GOOD..BAD EXP`
 * and `repro bisect --commits GOOD..BAD -- PROGRAM ARGS...`: finds the
 * first commit on BAD's first-parent chain after GOOD whose runs stop
 * reproducing (its K runs disagree) or stop matching GOOD's reference
 * (GOOD's golden for this environment class, else GOOD's own run). Every
 * probe checks a commit out into one temporary linked worktree of the
 * repository of the current directory, builds it with the user's command,
 * and runs it K times — its own `./repro run EXP`, or the user's program
 * through the runner protocol with the worktree as its working directory
 * (bisect_program.h) — and compares the traces here. A commit that does not
 * build or whose runs cannot be tested is skipped, as `git bisect skip`
 * does, and the search goes around it.
 *
 * Conventions as in git.h: -1 with the error slot set (exit 2 for a bad
 * range, an unknown rev, GOOD not an ancestor of BAD, GOOD not good; exit 3
 * outside a repository or when the worktree cannot be made). */
#ifndef REPRO_BISECT_COMMITS_H
#define REPRO_BISECT_COMMITS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "history/git.h"

/* A probed commit's verdict. */
enum {
    REPRO_BISECT_UNTESTED = 0,
    REPRO_BISECT_GOOD,
    REPRO_BISECT_BAD,
    REPRO_BISECT_SKIP
};

/* The outcome, which is also the exit code. */
enum {
    REPRO_BISECT_FOUND = 0,      /* first_bad names the first bad commit */
    REPRO_BISECT_NOTHING = 1,    /* BAD reproduces and matches GOOD: nothing to bisect */
    REPRO_BISECT_UNRESOLVED = 125 /* only skipped commits are left: a range, not a commit */
};

typedef struct {
    const char *range; /* "GOOD..BAD", any revs git accepts on each side */
    const char *exp;   /* the experiment file, absolute or relative to the cwd */
    const char *build; /* shell command line run in the worktree; NULL: "make" */
    int repeat;        /* runs per commit (>= 1; 2 catches run-to-run differences) */
    FILE *steps;       /* each probe's line as it is decided (NULL: none) */
    int quiet;         /* no progress on stderr */
    /* A program instead of exp (NULL-terminated argv; a relative path is
     * the worktree's). Its goldens are golden/<name>/<class>.jsonl, name =
     * `name` or, when NULL, the experiment name GOOD's program records;
     * GOOD is always built and run (a program's golden records no tree
     * ids that could show it still describes GOOD). */
    char *const *program;
    const char *name;
    double timeout_s;  /* kill a run of the program after this long (0: never) */
    char *const *pass; /* --steps/--seed/--set/... pairs given to every run (of a
                          program, or EXP's `./repro run`: then no golden applies) */
    int npass;
    int overridden;    /* --seed or --set: a golden does not apply */
} repro_bisect_opts;

typedef struct {
    repro_git_commit commit;
    int verdict;      /* REPRO_BISECT_* above */
    long step;        /* the step where runs or reference parted, 0 if none */
    char reason[768]; /* "2 runs agree, match GOOD's golden", "build failed (exit 2)", ... */
} repro_bisect_cand;

typedef struct {
    int outcome;               /* REPRO_BISECT_FOUND / NOTHING / UNRESOLVED */
    char *exp_rel;             /* the experiment, repo-relative (NULL for a program) */
    char *const *program;      /* the program bisected, or NULL (borrowed from the opts) */
    char exp_name[128];        /* golden/<exp_name>/: the experiment's stem, the program's name */
    char env_class[64];        /* this process's environment class */
    char reference[512];       /* what GOOD's reference was, in words */
    repro_bisect_cand good;    /* tested only when GOOD has no golden */
    size_t ncand;
    repro_bisect_cand *cand;   /* after GOOD up to BAD, oldest first; last is BAD */
    size_t nsteps;
    long *steps;               /* probe order: index into cand, -1 for GOOD */
    long first_bad;            /* index into cand (FOUND), else -1 */
    long range_lo, range_hi;   /* UNRESOLVED: cand[range_lo..range_hi] may hold the first bad */
    size_t npaths;
    char **paths;              /* numerics paths first_bad changed vs its first parent
                                  (for a program: every path it changed) */
    int builds, runs;          /* work done */
    double seconds;
} repro_bisect_result;

/* Splits "GOOD..BAD" into two malloc'd revs; exit 2 for anything else
 * ("GOOD...BAD", a missing side, no ".."). */
int repro_bisect_parse_range(const char *arg, char **good, char **bad);

/* Runs the whole bisection. Returns the outcome (0, 1, 125), or -1 with the
 * error slot set (its code 128 + the signal after a SIGINT or SIGTERM,
 * which is forwarded to the running build or program); r is filled as far
 * as the search got either way and must be released. The temporary
 * worktree is gone when this returns. */
int repro_bisect_commits(const repro_bisect_opts *o, repro_bisect_result *r);
void repro_bisect_result_release(repro_bisect_result *r);

const char *repro_bisect_verdict_name(int verdict);
/* "probe 2/4: a1b2c3d subject — good (2 runs agree, match GOOD's golden)" */
void repro_bisect_print_probe(FILE *out, const repro_bisect_cand *c, const char *role, int n,
                              int total);
/* The closing report: first bad commit (or the range), skipped, work done. */
void repro_bisect_print_summary(FILE *out, const repro_bisect_result *r);
/* The same as one JSON object (new reference). */
json_t *repro_bisect_json(const repro_bisect_result *r);

#endif
