/* repro_sandbox_run (see sandbox.h): prepare, run through child.h, and
 * read how the run ended, naming the limit that ended it. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sandbox.h"
#include "util/sandbox_args.h"
#include "util/sandbox_gpu.h"
#include "util/sandbox_impl.h"
#include "util/sandbox_pids.h"

/* Everything one run holds, freed by run_free. */
typedef struct {
    repro_sandbox_opts o;      /* effective: defaults filled in */
    char scratch[PATH_MAX];
    char **ro;                 /* absolute ro_paths */
    char *client;              /* absolute python_client (NULL: none) */
    repro_argv argv;           /* what the child runs */
    repro_argv env;            /* the whole environment the child starts with */
    repro_pids_cgroup pids;
    int have_pids;
    repro_sandbox_gpu gpu;     /* with o.gpu: what is bound */
    repro_pids_cgroup mem;     /* with o.gpu: the memory limit */
    int have_mem;
} sandbox_run;

static void run_free(sandbox_run *r)
{
    for (size_t i = 0; r->ro && r->ro[i]; i++)
        free(r->ro[i]);
    free(r->ro);
    free(r->client);
    repro_argv_free(&r->argv);
    repro_argv_free(&r->env);
    repro_pids_cgroup_remove(&r->mem); /* first: it may be the pids one */
    repro_pids_cgroup_remove(&r->pids);
}

/* Host paths as absolute, symlink-free paths (bwrap binds at the same path). */
static int resolve_paths(sandbox_run *r)
{
    if (!r->o.scratch_dir || !r->o.scratch_dir[0])
        return repro_error_set(REPRO_EINVAL, "sandbox: no scratch directory given");
    if (!realpath(r->o.scratch_dir, r->scratch))
        return repro_error_set_errno(REPRO_EIO, "sandbox scratch directory %s", r->o.scratch_dir);
    size_t n = 0;
    while (r->o.ro_paths && r->o.ro_paths[n])
        n++;
    if (!(r->ro = calloc(n + (size_t)r->gpu.nlibs + 1, sizeof *r->ro)))
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (!(r->ro[i] = realpath(r->o.ro_paths[i], NULL)))
            return repro_error_set_errno(REPRO_EIO, "sandbox read-only path %s",
                                         r->o.ro_paths[i]);
    for (int i = 0; i < r->gpu.nlibs; i++) /* the driver's libraries outside /usr */
        if (!(r->ro[n + (size_t)i] = strdup(r->gpu.libs[i])))
            return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (r->o.python_client && !(r->client = realpath(r->o.python_client, NULL)))
        return repro_error_set_errno(REPRO_EIO, "sandbox: the Python client %s",
                                     r->o.python_client);
    return 0;
}

/* The program's environment, and the one the child starts with, in both
 * modes: none of ours, PATH/HOME/TMPDIR and env_set (which wins). In the
 * sandbox the child is bwrap, and bwrap is the sandbox's pid 1: its
 * /proc/1/environ is readable inside, so bwrap itself must never hold the
 * host's variables (tokens, credentials), only what the program gets. */
static void program_env(sandbox_run *r, const char *const *env_set)
{
    char home[PATH_MAX + 8];
    snprintf(home, sizeof home, "HOME=%s", r->scratch);
    const char *defaults[] = {"PATH=/usr/local/bin:/usr/bin:/bin", home, "TMPDIR=/tmp", NULL};
    for (int i = 0; defaults[i]; i++) {
        size_t k = strcspn(defaults[i], "=");
        int replaced = 0;
        for (int j = 0; env_set && env_set[j]; j++)
            replaced |= !strncmp(env_set[j], defaults[i], k + 1);
        if (!replaced)
            repro_argv_add(&r->env, defaults[i]);
    }
    for (int j = 0; env_set && env_set[j]; j++)
        repro_argv_add(&r->env, env_set[j]);
}

/* The limits held by cgroups: the process count, and with a GPU the
 * memory (its address space is not limited: see sandbox.h). Where one
 * cannot be made, that limit is not enforced (describe() says so). */
static void make_cgroups(sandbox_run *r)
{
    char why[200];
    r->have_pids = repro_pids_cgroup_make(&r->pids, r->o.max_procs, why, sizeof why) == 0;
    if (r->o.gpu && r->o.as_bytes != UINT64_MAX)
        r->have_mem = repro_mem_cgroup_make(&r->mem, r->have_pids ? &r->pids : NULL,
                                            r->o.as_bytes, why, sizeof why) == 0;
}

static int prepare(sandbox_run *r, char *const argv[], const char *const *env_set)
{
    const char *nodes[REPRO_GPU_NODES_MAX + 1] = {NULL}, *libs[REPRO_GPU_LIBS_MAX + 1];
    char why[300];
    if (!argv || !argv[0])
        return repro_error_set(REPRO_EINVAL, "sandbox: no program to run");
    if (r->o.gpu) {
        if (repro_sandbox_gpu_find(r->o.gpu_dev_dir, NULL, &r->gpu, why, sizeof why))
            return repro_error_set(REPRO_EUNSUPPORTED, "cannot run %s with a GPU: %s", argv[0],
                                   why);
        repro_sandbox_gpu_lists(&r->gpu, nodes, libs);
    }
    if (resolve_paths(r))
        return -1;
    program_env(r, env_set);
    if (!r->o.no_sandbox) {
        char bwrap[PATH_MAX];
        if (!repro_sandbox_find_bwrap(bwrap, sizeof bwrap))
            return repro_error_set(REPRO_EIO, "cannot run %s in a sandbox: bubblewrap (bwrap) "
                                   "is not on PATH: " REPRO_SANDBOX_INSTALL_HINT, argv[0]);
        if (repro_sandbox_args(&r->argv, bwrap, r->scratch, (const char *const *)r->ro,
                               r->client, nodes, r->o.tmp_bytes, env_set))
            return -1;
    }
    for (int i = 0; argv[i]; i++)
        repro_argv_add(&r->argv, argv[i]);
    if (r->argv.failed || r->env.failed)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    make_cgroups(r);
    return 0;
}

/* SIGXCPU comes at the CPU limit, SIGKILL this much CPU later (a program
 * that handles SIGXCPU gets that long to save and go). */
#define CPU_GRACE_S 5

/* The CPU time of our reaped children and theirs. Unsandboxed that is the
 * program's; bwrap's pid-1 is not reaped by the bwrap we start, so inside
 * the sandbox it reads ~0 and only SIGXCPU names the CPU limit. */
static double children_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* Does the end of a file hold one of words (case-insensitive)? */
static int says_one_of(const char *path, const char *const *words)
{
    enum { TAIL = 65536 };
    FILE *f = path ? fopen(path, "r") : NULL;
    char *tail = f ? malloc(TAIL + 1) : NULL;
    if (!tail) {
        if (f)
            fclose(f);
        return 0;
    }
    if (fseek(f, -TAIL, SEEK_END) != 0)
        rewind(f);
    size_t n = fread(tail, 1, TAIL, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) /* make it one string */
        if (!tail[i])
            tail[i] = ' ';
    tail[n] = '\0';
    int found = 0;
    for (int i = 0; words[i] && !found; i++)
        found = strcasestr(tail, words[i]) != NULL;
    free(tail);
    return found;
}

/* Does it say the memory ran out (as malloc's strerror, glibc, C++,
 * Python, bash and the kernel word it)? */
static int says_out_of_memory(const char *path)
{
    static const char *const words[] = {"cannot allocate memory", "out of memory",
                                        "memoryerror", "bad_alloc", "memory exhausted",
                                        "failed to allocate", NULL};
    return says_one_of(path, words);
}

/* Did a write find the capped scratch directory full? Its output says so
 * (ENOSPC's strerror; Python's "[Errno 28]"), or, since its output files
 * may lie in that directory and then lose what came last, the directory
 * has less than 64 KiB left. */
static int disk_was_full(const sandbox_run *r, const char *out_path, const char *err_path)
{
    static const char *const words[] = {"no space left on device", "errno 28", NULL};
    struct statvfs fs;
    if (says_one_of(err_path, words) || says_one_of(out_path, words))
        return 1;
    return statvfs(r->scratch, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < (64u << 10);
}

static void name_limit(repro_sandbox_result *res, const char *name, const char *detail)
{
    res->limit_hit = 1;
    snprintf(res->limit_name, sizeof res->limit_name, "%s", name);
    size_t k = strlen(res->what);
    snprintf(res->what + k, sizeof res->what - k, ": the %s limit (%s)", name, detail);
}

/* Which limit ended the run, from the evidence (see sandbox.h). */
static void name_the_limit(const sandbox_run *r, repro_sandbox_result *res, double cpu_used_s,
                           const char *out_path, const char *err_path)
{
    char d[96];
    int failed = !(res->exited && res->code == 0);
    uint64_t refused = r->have_pids ? repro_pids_cgroup_refused(&r->pids) : 0;
    uint64_t oom_kills = r->have_mem ? repro_mem_cgroup_oom_kills(&r->mem) : 0;
    if (res->timed_out) {
        snprintf(d, sizeof d, "%g s", r->o.wall_seconds);
        name_limit(res, "wall time", d);
    } else if (res->signal == SIGXFSZ) {
        repro_sandbox_human_bytes(r->o.fsize_bytes, d, sizeof d);
        name_limit(res, "file size", d);
    } else if (res->signal == SIGXCPU ||
               (res->signal == SIGKILL && cpu_used_s >= (double)r->o.cpu_seconds - 0.05)) {
        snprintf(d, sizeof d, "%llu s per process", (unsigned long long)r->o.cpu_seconds);
        name_limit(res, "cpu time", d);
    } else if (failed && refused > 0) {
        snprintf(d, sizeof d, "%llu; %llu forks refused", (unsigned long long)r->o.max_procs,
                 (unsigned long long)refused);
        name_limit(res, "process count", d);
    } else if (failed && r->o.disk_capped && disk_was_full(r, out_path, err_path)) {
        repro_sandbox_human_bytes(r->o.disk_bytes, d, sizeof d);
        name_limit(res, "disk", d);
    } else if (failed && oom_kills > 0) {
        char m[32];
        repro_sandbox_human_bytes(r->o.as_bytes, m, sizeof m);
        snprintf(d, sizeof d, "%.31s by cgroup; %llu killed", m, (unsigned long long)oom_kills);
        name_limit(res, "memory", d);
    } else if (failed && (says_out_of_memory(err_path) || says_out_of_memory(out_path))) {
        repro_sandbox_human_bytes(r->o.as_bytes, d, sizeof d);
        name_limit(res, "memory", d);
    }
}

/* The child's status as the program's: bwrap reports a death by signal N
 * as its exit status 128 + N. */
static void read_status(const sandbox_run *r, const repro_child_status *st,
                        repro_sandbox_result *res)
{
    if (st->how == REPRO_CHILD_TIMED_OUT) {
        res->timed_out = 1;
        res->signal = SIGKILL;
        snprintf(res->what, sizeof res->what, "killed after %.1f s", res->wall_used_s);
        return;
    }
    if (st->how == REPRO_CHILD_SIGNALED)
        res->signal = st->code;
    else if (!r->o.no_sandbox && st->code > 128 && st->code < 128 + 65)
        res->signal = st->code - 128;
    else
        res->exited = 1, res->code = st->code;
    if (res->exited)
        snprintf(res->what, sizeof res->what, "exited %d", res->code);
    else
        snprintf(res->what, sizeof res->what, "killed by signal %d (%s)", res->signal,
                 strsignal(res->signal));
}

int repro_sandbox_run(const repro_sandbox_opts *o, char *const argv[], const char *const *env_set,
                      const char *out_path, const char *err_path, repro_sandbox_result *res)
{
    memset(res, 0, sizeof *res);
    sandbox_run r;
    memset(&r, 0, sizeof r);
    r.o = repro_sandbox_effective(o);
    if (prepare(&r, argv, env_set)) {
        run_free(&r);
        return -1;
    }
    repro_child c;
    memset(&c, 0, sizeof c);
    c.argv = r.argv.v;
    c.cwd = r.scratch;
    c.env_clear = 1;
    c.env_set = (const char *const *)r.env.v;
    c.out_path = out_path;
    c.err_path = err_path;
    c.err_to_out = out_path && err_path && !strcmp(out_path, err_path);
    c.capture_limit = repro_child_capture_limit();
    c.limits.as_bytes = r.o.gpu ? 0 : r.o.as_bytes; /* with a GPU: the memory cgroup */
    c.limits.cpu_seconds = r.o.cpu_seconds;
    c.limits.cpu_kill_seconds = r.o.cpu_seconds + CPU_GRACE_S;
    c.limits.fsize_bytes = r.o.fsize_bytes;
    c.limits.no_core_dumps = 1;
    c.default_signals = 1;
    c.cgroup_procs = r.have_pids ? r.pids.procs : NULL;
    c.cgroup_procs2 = r.have_mem && r.mem.procs[0] ? r.mem.procs : NULL;
    c.timeout_s = r.o.wall_seconds;
    repro_child_status st;
    double cpu0 = children_cpu_s(), t0 = repro_now();
    if (repro_child_run(&c, &st)) {
        run_free(&r);
        return -1;
    }
    res->wall_used_s = repro_now() - t0;
    double cpu_used_s = children_cpu_s() - cpu0;
    read_status(&r, &st, res);
    char line[200];
    if (!r.o.no_sandbox && res->exited && res->code == 1) {
        repro_sandbox_first_line(err_path, line, sizeof line);
        if (!strncmp(line, "bwrap: ", 7)) { /* bwrap's own failure: nothing ran */
            run_free(&r);
            return repro_error_set(REPRO_EIO, "cannot run %s in the sandbox: %s", argv[0], line);
        }
    }
    name_the_limit(&r, res, cpu_used_s, out_path, err_path);
    run_free(&r);
    return 0;
}
