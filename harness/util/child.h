/* Child processes, as git's run-command does them: one description of the
 * child (an argument vector — never a shell —, working directory, extra and
 * removed environment variables, where its output goes, resource limits, a
 * time limit), then start / wait / kill, and one decoding of how it ended.
 * Every child repro starts (`repro run` re-runs, `repro verify`'s re-run,
 * bisect's builds and runs) goes through here, so they all behave alike:
 *
 * - stdin is /dev/null; stdout and stderr go to files (mode 0644), created
 *   or truncated (or appended to, with `append`); stderr may share stdout's
 *   file (`err_to_out`), as a build log wants.
 * - each child leads its own process group, so a timeout or an interruption
 *   kills everything it started (make's compilers, a shell's children).
 * - nothing a child starts outlives it: when the child ends, wait kills
 *   what is left in its group (a `sleep &` a script left behind) before it
 *   reaps the child; and in a process that adopts orphans (orphans.h:
 *   repro does), once no child runs any more, what left the group
 *   (`setsid`, a double fork) and came to us is killed and reaped too.
 * - children die with their parent: on Linux the child asks the kernel for
 *   SIGKILL when its parent goes (PR_SET_PDEATHSIG), so a `repro check`
 *   killed with -9 leaves no `repro run` training on; and a small guard
 *   process per child kills the child's whole group when repro dies
 *   without a word (SIGKILL), so its grandchildren go too. The signal follows
 *   the parent *thread* that started the child: start children from a
 *   thread that outlives them (every caller uses the main thread).
 * - the argument vector has no length limit but memory.
 *
 * Errors: -1 with the error slot set (error.h): REPRO_EIO when the child
 * cannot be started (the message names the program and the reason, e.g.
 * "cannot start /x/repro: No such file or directory") or waited for,
 * REPRO_ENOMEM when out of memory. */
#ifndef REPRO_CHILD_H
#define REPRO_CHILD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Limits applied in the child before it runs (setrlimit, soft = hard);
 * 0 leaves a limit as inherited. */
typedef struct {
    uint64_t as_bytes;     /* RLIMIT_AS: address space */
    uint64_t cpu_seconds;  /* RLIMIT_CPU: the kernel sends SIGKILL past it */
    uint64_t cpu_kill_seconds; /* > cpu_seconds: RLIMIT_CPU's hard limit instead, so
                                  that SIGXCPU (fatal unless handled) comes at
                                  cpu_seconds and SIGKILL only here */
    uint64_t fsize_bytes;  /* RLIMIT_FSIZE: a larger write gets SIGXFSZ */
    int no_core_dumps;     /* RLIMIT_CORE 0, soft and hard (a core dump
                              ignores RLIMIT_FSIZE) */
} repro_child_limits;

typedef struct {
    /* --- what to run (set by the caller; memset the struct to 0 first) */
    const char *path;         /* the program file; NULL: argv[0], searched in
                                 PATH when it has no '/' (as execvp does) */
    char *const *argv;        /* NULL-terminated; argv[0] is the program's name */
    const char *cwd;          /* NULL: ours */
    const char *const *env_set;   /* NULL-terminated "K=V": added, replacing any K */
    const char *const *env_unset; /* NULL-terminated names "K": removed */
    int env_clear;            /* non-zero: none of ours, env_set only. For a
                                 sandbox's bwrap: its pid 1 is the sandbox's,
                                 and /proc/1/environ there shows what it was
                                 started with */
    const char *out_path;     /* stdout; NULL: /dev/null */
    const char *err_path;     /* stderr; NULL: /dev/null (ignored with err_to_out) */
    int append;               /* open the files O_APPEND instead of truncating */
    int err_to_out;           /* stderr to the same file as stdout */
    int inherit_output;       /* stdout and stderr are ours (out/err_path ignored):
                                 a child whose output is the command's own */
    /* > 0: stdout and stderr pass through repro on their way to their
     * files, which keep only the first and the last capture_limit bytes
     * of each, with a line saying how many bytes were dropped between
     * (a program writing gigabytes leaves megabytes). 0: the child writes
     * its files itself, unbounded. repro_child_capture_limit() is the
     * configured value. Ignored with inherit_output or without a file. */
    uint64_t capture_limit;
    repro_child_limits limits;
    /* Optional: a cgroup's cgroup.procs file the child moves itself into
     * before exec (so that everything it starts is counted there from
     * its first fork: a pids.max). NULL: stay. Failing is an error of start. */
    const char *cgroup_procs;
    const char *cgroup_procs2; /* a second one, in another v1 hierarchy (memory) */
    /* Non-zero: the signals repro itself ignores (SIGXFSZ, SIGPIPE) get
     * their default action back in the child, as a shell would start it:
     * a program past the file-size limit is then ended by SIGXFSZ, which
     * names the limit, instead of seeing EFBIG. */
    int default_signals;
    double timeout_s;         /* > 0: wait kills the group after this long */
    /* When not NULL and it becomes non-zero (a SIGINT/SIGTERM handler sets
     * it), wait sends that signal to the child's group, once, and goes on
     * waiting for it. */
    volatile sig_atomic_t *interrupt;
    /* Optional: called about every 200 ms while wait() waits (progress
     * displays); wait then polls. */
    void (*tick)(void *arg);
    void *tick_arg;
    /* --- state (set by start) */
    pid_t pid;                /* also the process group id; 0 when not running */
    struct repro_capture *capture; /* the output being captured (capture_limit) */
    pid_t guard;              /* the group's guard (see child.c); 0: none */
    int guard_fd;             /* our end of its pipe */
    double deadline;          /* monotonic seconds; 0: none */
} repro_child;

/* How a child ended. */
typedef enum {
    REPRO_CHILD_EXITED,    /* code: its exit status 0..255 */
    REPRO_CHILD_SIGNALED,  /* code: the signal that killed it */
    REPRO_CHILD_TIMED_OUT  /* killed by wait at timeout_s (code: SIGKILL) */
} repro_child_how;

typedef struct {
    repro_child_how how;
    int code;
} repro_child_status;

/* Starts the child. 0 with c->pid set, or -1 (nothing left running). An
 * exec failure (no such program, not executable) is reported here, not as
 * an exit status. */
int repro_child_start(repro_child *c);
/* Waits for a started child (killing its group at the deadline) and reaps
 * it: 0 with *st filled, or -1 if waitpid fails. c->pid is 0 afterwards. */
int repro_child_wait(repro_child *c, repro_child_status *st);
/* Start and wait. */
int repro_child_run(repro_child *c, repro_child_status *st);
/* Sends sig to the child's whole process group. 0 or -1 (errno kept). */
int repro_child_kill(const repro_child *c, int sig);

/* For a command-line tool: SIGINT and SIGTERM reach the children, not
 * just repro (each child leads its own process group, so a terminal's
 * Ctrl-C never reaches it). While any child runs, the handler only notes
 * the signal; every wait (whose child has no `interrupt` of its own)
 * forwards it to its child's group, SIGKILL following after a grace of
 * 5 s, and no new child starts (start fails, REPRO_EIO). With no child
 * running the signal acts as it would untrapped. A signal the parent
 * ignored stays ignored. The caller exits 128 + repro_child_interrupted()
 * once the work unwound. */
void repro_child_trap_signals(void);
/* The signal that interrupted repro while a child ran, or 0. */
int repro_child_interrupted(void);
/* From now on a trapped signal with no child running is only noted, as
 * with one running, never acted on: for a command that must write what it
 * has before it exits (`check --report`, whose page says it was cut). The
 * work unwinds by itself, since no new child starts. */
void repro_child_trap_hold(void);

/* How much of a program's captured output is kept at each end (see
 * capture_limit): $REPRO_CAPTURE_LIMIT in bytes, with an optional K, M or
 * G (KiB, MiB, GiB) suffix; 0 there means unbounded (returned as
 * UINT64_MAX). Unset or not a size: 1 MiB. */
uint64_t repro_child_capture_limit(void);

/* The status as one shell-style number: the exit status, or 128 + signal
 * (a timeout reads as 128 + SIGKILL). */
int repro_child_status_code(const repro_child_status *st);
/* "exited 3", "killed by signal 9 (Killed)", "timed out after 2.5 s". */
const char *repro_child_status_text(const repro_child_status *st, const repro_child *c,
                                    char *buf, size_t len);

/* After a child failed: when its error output, the file err_path, is
 * empty or missing, the likely cause is that nothing could be written
 * where it ran (a full disk, a file-size limit), its error message
 * included. Fills buf with what the parent sees — "its error output
 * runs/x/stderr.txt is empty; writing in runs/x fails: cannot write: No
 * space left on device (0 bytes free there)" — and returns 1; 0 (buf "")
 * when the file holds something to show. */
int repro_child_explain_silence(const char *err_path, char *buf, size_t len);

/* The running executable's path (/proc/self/exe), for re-running repro
 * itself: 0 or -1 (REPRO_EIO). */
int repro_child_self_path(char *buf, size_t len);

/* Runs repro itself as a fresh process, `repro args...` (args[0] is the
 * subcommand, NULL-terminated), with env_set added (may be NULL) and
 * stdout and stderr to the given files; waits. Returns the status as
 * repro_child_status_code gives it, or -1 (error slot) if it could not
 * start. */
int repro_child_run_self(char *const args[], const char *const *env_set, const char *out_path,
                         const char *err_path);
/* The same with a tick (see repro_child.tick; may be NULL). */
int repro_child_run_self_tick(char *const args[], const char *const *env_set,
                              const char *out_path, const char *err_path,
                              void (*tick)(void *), void *tick_arg);

#endif
