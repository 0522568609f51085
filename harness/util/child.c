/* Child processes: start, wait, kill, and how they ended (see child.h).
 *
 * Why fork + exec and not posix_spawn: a child must die with its parent,
 * and on Linux that takes prctl(PR_SET_PDEATHSIG) in the child between
 * fork and exec, which posix_spawn has no attribute for (nor for
 * setrlimit). Everything the child does after fork is async-signal-safe
 * (setpgid, prctl, getppid, dup2, chdir, setrlimit, execve, write, _exit):
 * the argument vector, the environment and the files are all prepared in
 * the parent, so a fork from a process that has other threads (the kernel
 * pool) is safe. An exec failure comes back over a close-on-exec pipe, so
 * "no such program" is an error of start, not an exit status. */
#include "util/child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "util/capture.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/orphans.h"
#include "util/progress.h"

extern char **environ;

int repro_child_explain_silence(const char *err_path, char *buf, size_t len)
{
    struct stat st;
    char what[600], dir[4096], why[300];
    buf[0] = '\0';
    int rc = stat(err_path, &st), e = errno;
    if (rc == 0 && st.st_size > 0)
        return 0;
    if (rc != 0)
        snprintf(what, sizeof what, "its error output %s is missing (%s)", err_path, strerror(e));
    else
        snprintf(what, sizeof what, "its error output %s is empty", err_path);
    const char *slash = strrchr(err_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - err_path) : 1,
             slash ? err_path : ".");
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    if (repro_write_probe(dir, why, sizeof why))
        snprintf(buf, len, "%s; writing in %s fails: %s", what, dir, why);
    else
        snprintf(buf, len, "%s; writing in %s works now", what, dir);
    return 1;
}

int repro_child_self_path(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return repro_error_set_errno(REPRO_EIO, "cannot find the repro executable");
    buf[n] = '\0';
    return 0;
}

/* ---- preparing (in the parent) ------------------------------------------ */

/* The program file: c->path, or argv[0] as is when it has a '/', else the
 * first executable argv[0] in $PATH (what execvp would run). */
static int resolve_program(const repro_child *c, char *out, size_t len)
{
    const char *name = c->path ? c->path : c->argv[0];
    if (!name || !name[0])
        return repro_error_set(REPRO_EINVAL, "cannot start a child: no program named");
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if ((size_t)snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", name) < len &&
            access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    errno = ENOENT;
    return repro_error_set_errno(REPRO_EIO, "cannot start %s (searched PATH)", name);
}

/* Does "K=V" name one of the variables in list (entries "K" or "K=V")? */
static int env_listed(const char *kv, const char *const *list)
{
    size_t k = strcspn(kv, "=");
    for (int i = 0; list && list[i]; i++) {
        size_t n = strcspn(list[i], "=");
        if (n == k && !strncmp(kv, list[i], k))
            return 1;
    }
    return 0;
}

/* Our environment (none of it with env_clear) without env_unset and
 * without what env_set replaces, then env_set. The strings are borrowed;
 * the array is malloc'd. */
static char **child_env(const repro_child *c)
{
    size_t n = 0, nset = 0;
    while (!c->env_clear && environ[n])
        n++;
    while (c->env_set && c->env_set[nset])
        nset++;
    char **env = calloc(n + nset + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!env_listed(environ[i], c->env_unset) && !env_listed(environ[i], c->env_set))
            env[k++] = environ[i];
    for (size_t i = 0; i < nset; i++)
        env[k++] = (char *)c->env_set[i];
    return env;
}

static int open_output(const char *path, int append)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
    int fd = open(path ? path : "/dev/null", path ? flags : O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        repro_error_set_errno(REPRO_EIO, "cannot open %s for a child's output", path);
    return fd;
}

/* The files: fds[0..2] for the child's stdin, stdout, stderr (all
 * close-on-exec here; dup2 in the child clears that on 0..2). */
static int open_files(const repro_child *c, int fds[3])
{
    fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fds[0] < 0)
        return repro_error_set_errno(REPRO_EIO, "cannot open /dev/null");
    if (c->inherit_output) { /* ours, sharing their offsets: no file is reopened */
        fds[1] = fcntl(1, F_DUPFD_CLOEXEC, 3);
        fds[2] = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fds[1] < 0 || fds[2] < 0) {
            int e = errno;
            if (fds[1] >= 0)
                close(fds[1]);
            close(fds[0]);
            errno = e;
            return repro_error_set_errno(REPRO_EIO, "cannot pass our output to a child");
        }
        return 0;
    }
    if ((fds[1] = open_output(c->out_path, c->append)) < 0) {
        close(fds[0]);
        return -1;
    }
    fds[2] = c->err_to_out ? fds[1] : open_output(c->err_path, c->append);
    if (fds[2] < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    return 0;
}

static void close_files(int fds[3])
{
    if (fds[2] != fds[1])
        close(fds[2]);
    close(fds[1]);
    close(fds[0]);
}

/* ---- in the child, between fork and exec -------------------------------- */

enum { STAGE_PARENT_GONE = 1, STAGE_FILES, STAGE_CWD, STAGE_LIMITS, STAGE_CGROUP, STAGE_EXEC };

typedef struct {
    int stage;
    int err;
} exec_failure;

static void set_limit(int resource, uint64_t v, uint64_t hard, int *ok)
{
    if (!v || !*ok)
        return;
    struct rlimit rl = {(rlim_t)v, (rlim_t)(hard > v ? hard : v)};
    struct rlimit cur;
    /* Never try to raise a hard limit (that fails unprivileged): clamp. */
    if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max)
        rl.rlim_max = cur.rlim_max;
    if (rl.rlim_cur > rl.rlim_max)
        rl.rlim_cur = rl.rlim_max;
    *ok = setrlimit(resource, &rl) == 0;
}

/* dup2, except that a file that already is the target (a parent with fd
 * 0..2 closed opens ours there) only loses its close-on-exec flag: dup2 of
 * an fd onto itself would leave the flag set, and exec would close it. */
static int redirect(int from, int to)
{
    if (from == to)
        return fcntl(to, F_SETFD, 0) < 0 ? -1 : 0;
    return dup2(from, to) < 0 ? -1 : 0;
}

_Noreturn static void fail_child(int pipe_fd, int stage)
{
    exec_failure f = {stage, errno};
    ssize_t w = write(pipe_fd, &f, sizeof f);
    (void)w;
    _exit(127);
}

/* Moves the calling process into the cgroup whose cgroup.procs is path
 * ("0" names the writer, in cgroup v1 and v2 alike). 0 or -1 (errno). */
static int join_cgroup(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, "0", 1);
    int e = errno;
    close(fd);
    errno = e;
    return w == 1 ? 0 : -1;
}

_Noreturn static void child_exec(const repro_child *c, const char *prog, char **env, const int fds[3],
                       pid_t parent, int pipe_fd)
{
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* it died before the prctl: nobody to outlive */
        fail_child(pipe_fd, STAGE_PARENT_GONE);
#else
    (void)parent;
#endif
    if (redirect(fds[0], 0) || redirect(fds[1], 1) || redirect(fds[2], 2))
        fail_child(pipe_fd, STAGE_FILES);
    if (c->cwd && chdir(c->cwd) != 0)
        fail_child(pipe_fd, STAGE_CWD);
    int ok = 1;
    set_limit(RLIMIT_AS, c->limits.as_bytes, 0, &ok);
    set_limit(RLIMIT_CPU, c->limits.cpu_seconds, c->limits.cpu_kill_seconds, &ok);
    set_limit(RLIMIT_FSIZE, c->limits.fsize_bytes, 0, &ok);
    if (ok && c->limits.no_core_dumps) {
        struct rlimit none = {0, 0};
        ok = setrlimit(RLIMIT_CORE, &none) == 0;
    }
    if (!ok)
        fail_child(pipe_fd, STAGE_LIMITS);
    if ((c->cgroup_procs && join_cgroup(c->cgroup_procs)) ||
        (c->cgroup_procs2 && join_cgroup(c->cgroup_procs2)))
        fail_child(pipe_fd, STAGE_CGROUP);
    if (c->default_signals) {
        signal(SIGXFSZ, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
    }
    execve(prog, c->argv, env);
    fail_child(pipe_fd, STAGE_EXEC);
}

/* ---- interruption ---------------------------------------------------------- */

/* The signal that interrupted repro while it had children (0: none), and
 * how many children are between start and reap. With none running, a
 * signal does what it always did (the default action, re-raised); with
 * some, it is noted, and every wait forwards it to its child's group. */
static volatile sig_atomic_t trapped_signal;
static atomic_int children_running;
static int trap_installed;
static volatile sig_atomic_t trap_hold; /* repro_child_trap_hold */

/* Held while the count goes up, and while it reaches 0 and the orphans
 * are killed: a sweep then never meets a child that a thread is just
 * starting (every child of ours is counted from before its fork). */
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void child_begins(void)
{
    pthread_mutex_lock(&count_lock);
    atomic_fetch_add(&children_running, 1);
    pthread_mutex_unlock(&count_lock);
}

/* A child reaped, or one that never started. With none of ours running
 * any more, every child this process still has is an orphan that a
 * program left outside its group and that came to us (orphans.h):
 * killed, so that nothing a run started outlives it. */
static void child_done(void)
{
    pthread_mutex_lock(&count_lock);
    if (atomic_fetch_sub(&children_running, 1) == 1 && repro_orphans_adopted())
        repro_orphans_kill_all();
    pthread_mutex_unlock(&count_lock);
}

static void on_trapped_signal(int sig)
{
    trapped_signal = sig;
    if (atomic_load(&children_running) == 0 && !trap_hold) {
        signal(sig, SIG_DFL);
        raise(sig); /* delivered when this handler returns */
    }
}

void repro_child_trap_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_trapped_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, &old);
        /* A signal our parent chose to ignore (nohup, a background job)
         * stays ignored. */
        if (old.sa_handler == SIG_IGN)
            sigaction(sigs[i], &old, NULL);
    }
    trap_installed = 1;
}

void repro_child_trap_hold(void)
{
    trap_hold = 1;
}

int repro_child_interrupted(void)
{
    return (int)trapped_signal;
}

/* The flag a wait watches: the caller's own, else the trap's. */
static volatile sig_atomic_t *interrupt_flag(const repro_child *c)
{
    return c->interrupt ? c->interrupt : trap_installed ? &trapped_signal : NULL;
}

/* ---- start, wait, kill ---------------------------------------------------- */

/* After fork: did the exec happen? Reads the failure pipe (EOF: exec'd). */
static int exec_outcome(repro_child *c, const char *prog, int rd)
{
    exec_failure f;
    ssize_t n;
    while ((n = read(rd, &f, sizeof f)) < 0 && errno == EINTR)
        ;
    close(rd);
    if (n != (ssize_t)sizeof f)
        return 0;
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    c->pid = 0;
    child_done();
    static const char *const what[] = {"", "its parent is gone", "cannot redirect its output",
                                       "cannot enter the directory", "cannot set its limits",
                                       "cannot join its cgroup", ""};
    errno = f.err;
    if (f.stage == STAGE_CWD)
        return repro_error_set_errno(REPRO_EIO, "cannot start %s in %s", prog, c->cwd);
    if (f.stage == STAGE_EXEC || f.stage < 1 || f.stage > STAGE_EXEC)
        return repro_error_set_errno(REPRO_EIO, "cannot start %s", prog);
    return repro_error_set_errno(REPRO_EIO, "cannot start %s: %s", prog, what[f.stage]);
}

/* ---- the guard ------------------------------------------------------------ */

/* PR_SET_PDEATHSIG reaches the child alone: when repro is killed with -9
 * (nothing of it runs to clean up), the child's own children would live
 * on. So each child gets a guard, a forked copy of us that does nothing
 * but wait on a pipe: a byte means "done, go", end of file without one
 * means repro is gone, and the guard kills the child's group. It ignores
 * SIGINT/SIGTERM (a terminal's Ctrl-C reaches our group, and so it) and
 * closes every descriptor but its pipe's, so that it holds no one else's
 * pipe open. Everything it does is async-signal-safe (we may have
 * threads). Best effort: without a guard the child still runs. */
static void start_guard(repro_child *c)
{
    int p[2];
    c->guard = 0;
    c->guard_fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0)
        return;
    pid_t pgid = c->pid;
    pid_t g = fork();
    if (g == 0) {
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGINT, &ign, NULL);
        sigaction(SIGTERM, &ign, NULL);
        if (dup2(p[0], 3) < 0)
            _exit(1);
        close_range(4, ~0U, 0);
        char b;
        ssize_t n;
        while ((n = read(3, &b, 1)) < 0 && errno == EINTR)
            ;
        if (n <= 0)
            kill(-pgid, SIGKILL);
        _exit(0);
    }
    close(p[0]);
    if (g < 0) {
        close(p[1]);
        return;
    }
    c->guard = g;
    c->guard_fd = p[1];
}

/* The child is done (reaped or about to be, its group killed): the guard
 * goes without killing anything. */
static void stop_guard(repro_child *c)
{
    if (c->guard <= 0)
        return;
    ssize_t w;
    while ((w = write(c->guard_fd, "x", 1)) < 0 && errno == EINTR)
        ;
    close(c->guard_fd);
    while (waitpid(c->guard, NULL, 0) < 0 && errno == EINTR)
        ;
    c->guard = 0;
    c->guard_fd = -1;
}

/* ---- captured output (capture.h) ---------------------------------------- */

#define CAPTURE_DEFAULT (1024 * 1024)

uint64_t repro_child_capture_limit(void)
{
    const char *v = getenv("REPRO_CAPTURE_LIMIT");
    if (!v || !v[0])
        return CAPTURE_DEFAULT;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (v[0] < '0' || v[0] > '9' || *end || errno || n > (UINT64_MAX >> shift))
        return CAPTURE_DEFAULT;
    return n == 0 ? UINT64_MAX : (uint64_t)n << shift;
}

static int capturing(const repro_child *c)
{
    return c->capture_limit > 0 && c->capture_limit < UINT64_MAX && !c->inherit_output &&
           (c->out_path || (c->err_path && !c->err_to_out));
}

static void end_capture(repro_child *c)
{
    repro_capture_finish(c->capture);
    c->capture = NULL;
}

int repro_child_start(repro_child *c)
{
    char prog[PATH_MAX];
    int fds[3] = {-1, -1, -1}, pfd[2];
    c->pid = 0;
    if (!c->argv || !c->argv[0])
        return repro_error_set(REPRO_EINVAL, "cannot start a child: empty argument vector");
    if (resolve_program(c, prog, sizeof prog))
        return -1;
    char **env = child_env(c);
    if (!env)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (open_files(c, fds)) {
        free(env);
        return -1;
    }
    c->capture = NULL;
    if (capturing(c) && !(c->capture = repro_capture_open(fds, c->capture_limit))) {
        close(fds[0]);
        free(env);
        return -1;
    }
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        close_files(fds);
        end_capture(c);
        free(env);
        return repro_error_set_errno(REPRO_EIO, "cannot start %s: pipe", prog);
    }
    child_begins();
    /* Interrupted through the trap: start nothing more. (A caller's own
     * flag is the caller's to check: a child started under it gets the
     * signal forwarded at once.) */
    volatile sig_atomic_t *intr = c->interrupt ? NULL : interrupt_flag(c);
    if (intr && *intr) {
        child_done();
        close(pfd[0]);
        close(pfd[1]);
        close_files(fds);
        end_capture(c);
        free(env);
        return repro_error_set(REPRO_EIO, "not starting %s: interrupted by signal %d",
                               prog, (int)*intr);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        child_exec(c, prog, env, fds, parent, pfd[1]);
    }
    int saved = errno;
    close(pfd[1]);
    close_files(fds);
    free(env);
    if (pid < 0) {
        child_done();
        end_capture(c);
        close(pfd[0]);
        errno = saved;
        return repro_error_set_errno(REPRO_EIO, "cannot start %s: fork", prog);
    }
    setpgid(pid, pid); /* also here: no window where a kill(-pid) misses it */
    c->pid = pid;
    c->deadline = c->timeout_s > 0 ? repro_now() + c->timeout_s : 0;
    if (exec_outcome(c, prog, pfd[0])) {
        end_capture(c);
        return -1;
    }
    start_guard(c);
    return 0;
}

int repro_child_kill(const repro_child *c, int sig)
{
    if (c->pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    return kill(-c->pid, sig);
}

static void decode(int wst, repro_child_status *st)
{
    if (WIFEXITED(wst)) {
        st->how = REPRO_CHILD_EXITED;
        st->code = WEXITSTATUS(wst);
    } else {
        st->how = REPRO_CHILD_SIGNALED;
        st->code = WIFSIGNALED(wst) ? WTERMSIG(wst) : 0;
    }
}

/* How long a group that was sent SIGINT/SIGTERM gets to wind down (a
 * program that saves its state, or ignores the signal) before SIGKILL. */
#define INTERRUPT_GRACE_S 5.0

/* Forwards a pending interruption to the child's group, once, and then,
 * past the grace, kills it. */
static void forward_interrupt(const repro_child *c, double *forwarded_at)
{
    volatile sig_atomic_t *intr = interrupt_flag(c);
    if (!intr || !*intr)
        return;
    if (*forwarded_at == 0) {
        repro_child_kill(c, (int)*intr);
        *forwarded_at = repro_now();
    } else if (repro_now() - *forwarded_at > INTERRUPT_GRACE_S) {
        repro_child_kill(c, SIGKILL);
    }
}

/* The child has ended but is not reaped (waitid's WNOWAIT), so its pid
 * is still its group's id and cannot be reused: kill whatever else runs
 * in the group (a `sleep &` it left behind, a compiler make started),
 * then reap. Nothing a child starts outlives it. */
static int reap_group(repro_child *c, int *wst)
{
    repro_child_kill(c, SIGKILL);
    stop_guard(c);
    pid_t w;
    while ((w = waitpid(c->pid, wst, 0)) < 0 && errno == EINTR)
        ;
    c->pid = 0;
    child_done();
    end_capture(c);
    return w < 0 ? -1 : 0;
}

/* Has the child ended? 1 yes (not reaped), 0 not yet, -1 error (errno). */
static int has_ended(const repro_child *c, int block)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0)
        return errno == EINTR ? 0 : -1;
    return info.si_pid == c->pid;
}

int repro_child_wait(repro_child *c, repro_child_status *st)
{
    int wst = 0;
    double forwarded_at = 0;
    /* With a deadline or an interruption to watch, poll (1 ms, growing to
     * 10 ms: nothing against any run): a blocking wait would miss a signal
     * that lands just before it. Otherwise, block. */
    int poll = c->deadline > 0 || interrupt_flag(c) || c->tick || c->capture;
    long nap_ns = 1000000;
    double next_tick = repro_now() + 0.2;
    for (;;) {
        if (c->tick && repro_now() >= next_tick) {
            c->tick(c->tick_arg);
            next_tick = repro_now() + 0.2;
        }
        forward_interrupt(c, &forwarded_at);
        int ended = has_ended(c, !poll);
        if (ended > 0)
            break;
        if (ended < 0) {
            int e = errno;
            repro_child_kill(c, SIGKILL);
            stop_guard(c);
            child_done();
            end_capture(c);
            errno = e;
            return repro_error_set_errno(REPRO_EIO, "waiting for child %ld", (long)c->pid);
        }
        if (c->deadline && repro_now() >= c->deadline) {
            reap_group(c, &wst);
            st->how = REPRO_CHILD_TIMED_OUT;
            st->code = SIGKILL;
            return 0;
        }
        struct timespec ts = {0, nap_ns};
        if (c->capture) /* the nap is a wait for output */
            repro_capture_pump(c->capture, (int)(nap_ns / 1000000));
        else if (poll)
            nanosleep(&ts, NULL);
        nap_ns = nap_ns < 10000000 ? nap_ns * 2 : nap_ns;
    }
    long pid = (long)c->pid;
    if (reap_group(c, &wst))
        return repro_error_set_errno(REPRO_EIO, "waiting for child %ld", pid);
    decode(wst, st);
    return 0;
}

int repro_child_run(repro_child *c, repro_child_status *st)
{
    if (repro_child_start(c))
        return -1;
    return repro_child_wait(c, st);
}

int repro_child_status_code(const repro_child_status *st)
{
    return st->how == REPRO_CHILD_EXITED ? st->code : 128 + st->code;
}

const char *repro_child_status_text(const repro_child_status *st, const repro_child *c,
                                    char *buf, size_t len)
{
    if (st->how == REPRO_CHILD_EXITED)
        snprintf(buf, len, "exited %d", st->code);
    else if (st->how == REPRO_CHILD_TIMED_OUT)
        snprintf(buf, len, "timed out after %g s", c ? c->timeout_s : 0.0);
    else
        snprintf(buf, len, "killed by signal %d (%s)", st->code, strsignal(st->code));
    return buf;
}

int repro_child_run_self(char *const args[], const char *const *env_set, const char *out_path,
                         const char *err_path)
{
    return repro_child_run_self_tick(args, env_set, out_path, err_path, NULL, NULL);
}

int repro_child_run_self_tick(char *const args[], const char *const *env_set,
                              const char *out_path, const char *err_path,
                              void (*tick)(void *), void *tick_arg)
{
    char self[PATH_MAX];
    if (repro_child_self_path(self, sizeof self))
        return -1;
    size_t n = 0;
    while (args[n])
        n++;
    char **argv = calloc(n + 2, sizeof *argv);
    if (!argv)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    argv[0] = self;
    memcpy(argv + 1, args, n * sizeof *argv);
    repro_child c = {0};
    c.argv = argv;
    c.env_set = env_set;
    c.out_path = out_path;
    c.err_path = err_path;
    c.tick = tick;
    c.tick_arg = tick_arg;
    c.capture_limit = repro_child_capture_limit();
    repro_child_status st;
    int rc = repro_child_run(&c, &st);
    free(argv);
    return rc ? -1 : repro_child_status_code(&st);
}
