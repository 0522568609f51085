/* The sandbox a stranger's program runs in (a competition's submission:
 * its build and its training run), made with bubblewrap (`bwrap`), on top
 * of child.h (argv-only child, own process group, rlimits, time limit,
 * death with its parent). What the program sees:
 *
 * - no network: its own network namespace with nothing but its own
 *   loopback, so no connection leaves it: 127.0.0.1 is the sandbox's
 *   (nothing of the host listens there), any other address unreachable;
 * - its own pid namespace: it sees only its own processes, and when it
 *   ends (or repro does, or the time runs out) every process it started
 *   is killed with it, also one that left its process group (setsid);
 * - the file system: /usr (and /bin, /lib* as their links or binds), the
 *   few files of /etc a toolchain and an interpreter read, ro_paths, all
 *   read-only at their host paths; scratch_dir read-write at its host path
 *   (its working directory), also when it lies inside a read-only path; a
 *   private /tmp and /dev/shm (each a tmpfs of tmp_bytes); a read-only
 *   /proc of its pid namespace (so /proc/sys, which uid 0 could write
 *   without any capability, cannot be changed); a read-only /dev of bwrap's few nodes (null, zero,
 *   random, urandom, tty...). Nothing else of the host exists there: not
 *   $HOME, not /work, not /root. The root itself is read-only. With
 *   python_client, the package repro/ in it, read-only, at
 *   REPRO_SANDBOX_CLIENT_DIR/repro, a directory that holds nothing else;
 * - no capabilities, none to regain (root inside is an ordinary user of
 *   its own files): its own user namespace (our uid mapped to itself) with
 *   an empty bounding set and its own keyrings, no user namespaces of its
 *   own; its own IPC and UTS namespaces, a new session (no terminal to
 *   type into);
 * - the environment: only PATH=/usr/local/bin:/usr/bin:/bin,
 *   HOME=scratch_dir, TMPDIR=/tmp, and env_set (which may replace them);
 *   bwrap itself is started with that environment and no other, since it
 *   is the sandbox's pid 1 and its /proc/1/environ is readable there: no
 *   variable of the host's is anywhere in the sandbox's /proc;
 * - limits: RLIMIT_AS, RLIMIT_CPU (per process: SIGXCPU at it, fatal
 *   unless handled, SIGKILL 5 s of CPU later), RLIMIT_FSIZE (SIGXFSZ past
 *   it) and RLIMIT_CORE 0 (no core dump: it would not heed the file size),
 *   the scratch directory's total size where the caller capped it
 *   (sandbox_disk.h: a tmpfs; a write past it fails with ENOSPC)
 *   set before bwrap runs (they survive its exec), the wall clock (the whole sandbox killed), and the number of
 *   processes and threads (a pids cgroup, sandbox_pids.h; where none can
 *   be made, that limit is not enforced and describe() says so). Its
 *   output to the host files passes through repro, which keeps the first
 *   and last repro_child_capture_limit() bytes of each.
 *
 * With gpu (sandbox_gpu.h): the NVIDIA device nodes bound into /dev, the
 * driver's libraries read-only (under /usr already, or their directory),
 * and no RLIMIT_AS (CUDA reserves tens of GiB of address space at start):
 * a memory cgroup holds the program's memory instead (sandbox_pids.h),
 * or, where none can be made, memory is not limited and describe() says
 * so. A host without the nodes refuses the run, naming what is missing.
 *
 * no_sandbox runs the program directly (same limits, environment and
 * working directory, but the host's network, files and processes): the
 * caller records it. */
#ifndef REPRO_SANDBOX_H
#define REPRO_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#define REPRO_SANDBOX_DEFAULT_AS (4ULL << 30)     /* 4 GiB of address space */
#define REPRO_SANDBOX_DEFAULT_CPU 3600ULL         /* seconds of CPU, per process */
#define REPRO_SANDBOX_DEFAULT_FSIZE (1ULL << 30)  /* 1 GiB, the largest file */
#define REPRO_SANDBOX_DEFAULT_PROCS 512ULL        /* processes + threads */
#define REPRO_SANDBOX_DEFAULT_WALL 3600.0         /* seconds */
#define REPRO_SANDBOX_DEFAULT_TMP (1ULL << 30)    /* 1 GiB of /tmp (tmpfs: memory) */
#define REPRO_SANDBOX_DEFAULT_DISK (4ULL << 30)   /* 4 GiB in all in scratch_dir */

typedef struct {
    const char *scratch_dir;       /* host dir, bound read-write at the same path; the program's cwd */
    const char *const *ro_paths;   /* NULL-terminated host paths bound read-only at the same path
                                      (the unpacked bundle, repro's install prefix/stage: binary,
                                      headers, librepro, Python client); NULL: none */
    uint64_t as_bytes;             /* RLIMIT_AS (0: default REPRO_SANDBOX_DEFAULT_AS) */
    uint64_t cpu_seconds;          /* RLIMIT_CPU (0: default) */
    uint64_t fsize_bytes;          /* RLIMIT_FSIZE (0: default) */
    uint64_t max_procs;            /* process/thread count limit (0: default) */
    double wall_seconds;           /* killed past it (0: default) */
    int no_sandbox;                /* run unsandboxed (the caller records it in the receipt) */
    uint64_t tmp_bytes;            /* size of the private /tmp, and of /dev/shm (0: default) */
    const char *python_client;     /* host dir holding a Python package repro/ (the verifying
                                      repro's client): repro/ bound read-only at
                                      REPRO_SANDBOX_CLIENT_DIR/repro; NULL: none. The caller
                                      puts that dir (unsandboxed: this one) on PYTHONPATH */
    uint64_t disk_bytes;           /* the most scratch_dir holds in all (0: default); enforced
                                      only where the caller capped it (sandbox_disk.h) */
    int disk_capped;               /* the caller mounted a tmpfs of disk_bytes on scratch_dir */
    int gpu;                       /* a GPU program: the NVIDIA device nodes bound
                                      (sandbox_gpu.h; none here: the run is refused,
                                      REPRO_EUNSUPPORTED), and as_bytes is a memory
                                      cgroup's limit instead of RLIMIT_AS (UINT64_MAX:
                                      none) */
    const char *gpu_dev_dir;       /* where the device nodes are looked for (NULL:
                                      /dev; a test's scratch directory of fake ones) */
} repro_sandbox_opts;

/* Where the sandbox shows python_client: a directory holding only repro/. */
#define REPRO_SANDBOX_CLIENT_DIR "/run/repro/python"

/* The documented defaults (every limit 0: its default; no_sandbox 0). */
void repro_sandbox_opts_init(repro_sandbox_opts *o);

/* 1 when bwrap is on PATH and can make a sandbox here (it is tried); 0
 * with `why` saying what is missing and what to install. */
int repro_sandbox_available(char *why, size_t why_len);

typedef struct {
    int exited, code;      /* exited: its exit status in code */
    int signal;            /* killed by this signal (0: none) */
    int timed_out;         /* killed at wall_seconds */
    int limit_hit;         /* a limit ended (or broke) the run: limit_name says which */
    char limit_name[32];   /* "wall time", "cpu time", "file size", "memory", "process count" */
    char what[256];        /* one line: how it ended, and why where known */
    double wall_used_s;    /* wall-clock time of the run */
} repro_sandbox_result;

/* Runs argv (argv[0] searched in PATH inside the sandbox) with cwd =
 * scratch_dir, env = env_set only (plus a minimal PATH/HOME/TMPDIR),
 * stdout/stderr to host files out_path/err_path (NULL: discarded). 0
 * with *res filled (any way the program ended is a result, not an
 * error), -1 (error slot) when it could not start: no bwrap (the message
 * says what to install), a sandbox bwrap could not set up (its message),
 * no scratch_dir, or the child could not be started.
 *
 * Inside the sandbox a death by signal N reaches us as bwrap's exit
 * status 128 + N (as a shell reports it): such a status is read as the
 * signal. Limits are named by their evidence: SIGXFSZ (file size);
 * SIGXCPU, or unsandboxed SIGKILL with the CPU time at the limit (cpu time);
 * the time limit (wall time); forks refused at the process limit (process
 * count); a failed gpu run whose memory cgroup's OOM killer killed a
 * task (memory); a failed run whose output says the memory ran out, as malloc,
 * C++, Python and the shell word it (memory); a failed run in a capped
 * scratch directory whose output says "No space left on device" (disk). */
int repro_sandbox_run(const repro_sandbox_opts *o, char *const argv[], const char *const *env_set,
                      const char *out_path, const char *err_path, repro_sandbox_result *res);

/* The GPU a gpu sandbox would bind, from opts->gpu_dev_dir: 1, or 0 with
 * why naming the missing device nodes (nothing to do without gpu: 1). */
int repro_sandbox_gpu_ready(const repro_sandbox_opts *o, char *why, size_t len);

/* The limits actually applied, for the receipt: one line, e.g.
 * "bubblewrap: no network, ...; address space 4.0 GiB, cpu 3600 s,
 * file size 1.0 GiB, processes 512 (cgroup pids.max), wall 3600 s, /tmp
 * 1.0 GiB, scratch 4.0 GiB in all (tmpfs)" (or "no sandbox
 * (--no-sandbox): ..."). */
void repro_sandbox_describe(const repro_sandbox_opts *o, char *buf, size_t len);

#endif
