/* Several runs of one experiment, each a fresh `repro run` process, and
 * their comparison with the first: the engine under `repro check` and
 * `repro bless`. Each run has a label and the scope of the determinism
 * contract a mismatch against run 1 would break. */
#ifndef REPRO_MULTIRUN_H
#define REPRO_MULTIRUN_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>

#include "analysis/compare.h"
#include "core/config.h"
#include "record/trace.h"
#include "util/junit.h"

#define REPRO_MULTIRUN_MAX 64
#define REPRO_MULTIRUN_MAX_PASS 128

typedef struct {
    char label[64];
    const char *scope;  /* "fresh-process run to run", "thread count", "worker count" */
    char extra[2][1100]; /* one extra option for this run, e.g. "--threads" "2" */
    long resume_at;      /* > 0: two processes, one training to this step with a
                            checkpoint, a fresh one resuming from it to the end
                            (its trace covers resume_at + 1 .. N) */
    char dir[1100];
    double seconds;      /* the run's wall time */
    double started;      /* when it began, seconds after the first run began */
    int state;           /* REPRO_RUN_PLANNED, _RUNNING or _DONE (what a report cut
                            short by a signal or a failed run can say of it) */
    int rc;              /* once done: 0, the child's exit status, or -1 */
} repro_run_plan;

enum { REPRO_RUN_PLANNED = 0, REPRO_RUN_RUNNING, REPRO_RUN_DONE };

typedef struct {
    const char *exp;
    /* An external program (`-- CMD ARGS...`, NULL-terminated) run in place
     * of `repro run EXP`, with the options as protocol variables
     * (repro/repro.h); exp is then only a label. */
    char *const *cmd;
    double timeout_s;   /* external: kill a run after this long (0: never) */
    /* External runs only (all may stay NULL): the program's working
     * directory (root must then be absolute, since the trace path given to
     * the program is root/run-N/trace.jsonl), environment variables removed
     * from its environment, and a flag a signal handler sets, forwarded to
     * the program's process group (util/child.h). `repro bisect --commits`
     * runs each commit's program in its worktree with these. */
    const char *cwd;
    const char *const *env_unset;
    volatile sig_atomic_t *interrupt;
    char *pass[REPRO_MULTIRUN_MAX_PASS]; /* options given to every `repro run` */
    int npass;
    repro_run_plan plan[REPRO_MULTIRUN_MAX];
    int nplan;
    char root[1024];    /* runs/<exp>/<kind>-<stamp>-<pid> */
    int quiet;          /* no progress on stderr */
    long total_steps;   /* steps per run, for the progress line (0: unknown) */
    int no_element_detail; /* skip the re-runs for element-level detail */
    /* Keep only each trace's header and trailer (repro_trace_scan) and
     * compare the files as streams (repro_compare_files): memory that
     * does not grow with the number of steps. traces[i].steps is NULL
     * then: for commands that need nothing else of a step (check). */
    int stream;
    /* Each run of an experiment also writes its memory timeline to
     * DIR/memory.json (`repro run --memory-timeline`): for the memory
     * section of `repro check --report`. Recording it changes no bit. */
    int memory_timeline;
    /* Runs at once (0 or 1: one after another). Each run is its own
     * process with its own directory, so this moves wall time, never
     * bits; see repro_multirun_auto_jobs for what fits the machine. */
    int jobs;
    /* results */
    repro_trace *traces;      /* nplan */
    repro_divergence *divs;   /* nplan; [0] unused */
    int ntraces;
    struct repro_trace_read_job *reads; /* nplan: the parallel reads (multirun.c) */
    int failed;               /* runs that differ from run 1 */
} repro_multirun;

/* The `repro run` options a command forwards to every run it starts
 * (check, compare, bisect, submit): --steps N, --seed S, --set K=V, and
 * --threads T, --workers W for a command that takes them as single values.
 * Counts and seeds are checked as they are collected (util/numparse.h:
 * decimal only), so a bad one is refused by the command it was given to,
 * naming that command and the flag. The strings are borrowed (argv). */
#define REPRO_RUN_PASS_MAX 64 /* leaves multirun room for its own options */

typedef struct {
    char *argv[REPRO_RUN_PASS_MAX];
    int n;
    int overridden; /* --seed or --set: not the committed config's run */
} repro_run_pass;

/* `name` is the long option without its dashes ("steps"), `cmd` the
 * command for messages ("check"). Returns 1 when it is a pass-through
 * option (checked and kept), 0 when it is not one, -1 (error slot). */
int repro_run_pass_add(repro_run_pass *p, const char *cmd, const char *name, const char *value);
/* 1 when `name` (without dashes) is a pass-through option, else 0. */
int repro_run_pass_takes(const char *name);

/* Applies pass-through options (pairs as collected above) to cfg,
 * validating each as the config would. */
int repro_config_apply_run_options(repro_config *cfg, char *const *pass, int npass);

/* Sets up m for experiment `exp` (already validated by the caller), with
 * its working directory under runs/<name>/<kind>-<stamp>-<pid>. */
void repro_multirun_init(repro_multirun *m, const char *exp, const char *name, const char *kind);
/* Gives every run the pass-through options (after any already there). */
void repro_multirun_add_pass(repro_multirun *m, const repro_run_pass *p);
/* Adds a run. flag/value may be NULL. */
int repro_multirun_add(repro_multirun *m, const char *label, const char *scope, const char *flag,
                       const char *value);
/* Adds n runs with the experiment's own settings, "run 1" .. "run n"
 * (scope: fresh-process run to run). */
int repro_multirun_add_runs(repro_multirun *m, int n);
/* Adds the runs of a "--threads 1,2,3"-style list. */
int repro_multirun_add_list(repro_multirun *m, const char *flag, const char *list,
                            const char *scope, const char *what);
/* Runs everything, reads the traces, compares each with run 1, and for
 * each mismatch re-runs both sides to the divergent step with dumps for
 * element detail. Returns 0, a child's failing exit code (2 or 3), or -1
 * with the error slot set. */
int repro_multirun_execute(repro_multirun *m);
/* Starts the planned runs (multirun_jobs.c), m->jobs at a time in plan
 * order, into root/run-N. Once one fails no further run starts; the first failure in
 * plan order is returned: 0, the child's exit code (2 or 3), or -1 with
 * the error slot set. Called by repro_multirun_execute. */
int repro_multirun_run_planned(repro_multirun *m);
/* How many of m's planned runs fit the machine at once: the CPUs this
 * process may run on (its affinity mask) over the widest run's threads x
 * ranks (`threads` and `ranks` as the config gives them, a run's own
 * --threads or --ranks taking their place), at least 1, at most nplan. */
int repro_multirun_auto_jobs(const repro_multirun *m, int threads, int ranks);
/* One more `repro run` of run `idx`'s settings into dir (multirun_one.c),
 * up to and dumping `dump_step` when > 0. Returns 0, the child's exit code, or -1. */
int repro_multirun_run_one(repro_multirun *m, int idx, const char *dir, long dump_step);

/* ---- external programs (external.c) ---------------------------------- */
/* Run idx of m->cmd into dir with the runner protocol in its environment.
 * 0, or -1 with the error slot set: REPRO_EIO ("could not be tested",
 * exit 3) when the program fails, times out or writes no trace, quoting
 * the end of its stderr. */
int repro_multirun_run_external(repro_multirun *m, int idx, const char *dir);
/* The environment run idx of m->cmd gets ("K=V" strings, NULL-terminated,
 * each and the array malloc'd; NULL with the error slot set), as
 * repro_multirun_run_external sets it: `repro submit -- PROGRAM` records
 * it so that `repro verify` can run the program the same way. */
char **repro_multirun_external_env(const repro_multirun *m, int idx, const char *trace);
/* The trace run idx left: complete, and of the seed it was given. */
int repro_multirun_check_external_trace(const repro_multirun *m, int idx, const repro_trace *t);
/* A name for the program's goldens and runs: the basename of argv[0], or
 * of the script when argv[0] is an interpreter, without its extension. */
void repro_program_name(char *const *cmd, char *buf, size_t len);

/* The thread count a program's run declares when no option gives one:
 * REPRO_THREADS and the math runtimes' variables (OMP_NUM_THREADS,
 * MKL_NUM_THREADS, OPENBLAS_NUM_THREADS) are set to it, so that a golden
 * does not depend on the machine's core count. */
#define REPRO_DEFAULT_THREADS "1"

/* ---- scopes (multirun_scopes.c) ---------------------------------------- */
/* The value run idx is given for "threads", "workers" or "ranks": the last
 * of the pass-through options (--threads V, --set threads=V or
 * train.threads=V, ...) and the run's own option; for threads
 * REPRO_DEFAULT_THREADS when none gives one, else NULL. */
const char *repro_multirun_setting(const repro_multirun *m, int idx, const char *what);
/* The value option pair (flag, value) gives `what` ("--threads" "2" or
 * "--set" "train.threads=2": "2"), or NULL when it gives none. */
const char *repro_run_option_setting(const char *flag, const char *value, const char *what);

/* The --threads and --workers scopes of m (and a program's --ranks) that
 * were not exercised: their runs and run 1 all recorded the same counts
 * ("threads_used" and every "thread_pools" entry, "workers_used", or
 * "world_size_used"), or one recorded none. Their number, and one line
 * per scope in msg. */
int repro_multirun_unexercised(const repro_multirun *m, char *msg, size_t len);

/* What the thread counts say about run idx's comparison with run 1 in the
 * thread-count scope, in words (msg, "" when nothing is to be said):
 * "" when one of them records no count; when every recorded count and
 * pool agree, that the difference cannot be the thread count; when a
 * pool differs, which one ("blas.openblas 2 vs 1"), and that the
 * program's own count did not, if it did not. Returns 1 when every count
 * and pool agree (the divergence is run to run, not the scope's), else 0. */
int repro_multirun_thread_note(const repro_multirun *m, int idx, char *msg, size_t len);

/* A program's failing comparison idx that names no op output at its first
 * divergent step (multirun_hint.c): the `repro bisect` command that re-runs
 * that comparison at trace level op and names the first divergent op in
 * execution order, with the options of the runs, the program's words
 * quoted for a shell. 1 with the command in buf, 0 when there is none to
 * give (no program, op outputs already there, a scope bisect cannot run). */
int repro_multirun_op_command(const repro_multirun *m, int idx, char *buf, size_t len);
/* The same as a paragraph of the report, on out (nothing when none). */
void repro_multirun_op_hint(const repro_multirun *m, int idx, FILE *out);

/* Reports: the text of every failing comparison; JSON runs + comparisons. */
void repro_multirun_print(const repro_multirun *m, FILE *out);
json_t *repro_multirun_json(const repro_multirun *m);
int repro_multirun_junit(const repro_multirun *m, const char *path);
/* The same with one more case after the comparisons (may be NULL). */
int repro_multirun_junit_with(const repro_multirun *m, const char *path,
                              const repro_junit_case *extra);
/* The text report of one comparison, malloc'd (NULL on failure). */
char *repro_divergence_text(const repro_trace *a, const repro_trace *b, const repro_divergence *d);
json_t *repro_divergence_json(const repro_trace *a, const repro_trace *b, const repro_divergence *d);

void repro_multirun_release(repro_multirun *m);

#endif
