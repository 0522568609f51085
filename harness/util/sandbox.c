/* TEMPORARY (branch `bundle`): a stand-in for the sandbox helper's
 * harness/util/sandbox.c, enough for verify's program path and its tests:
 * bubblewrap with no namespaces shared (no network), the host's root
 * read-only, a private /tmp, the scratch directory read-write, and the
 * rlimits util/child.h applies; --no-sandbox runs through util/child.h
 * alone. The lead replaces this file with the real one at merge. */
#include "util/sandbox.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"

#define DEF_AS (4ull << 30)
#define DEF_CPU 3600ull
#define DEF_FSIZE (1ull << 30)
#define DEF_PROCS 256ull
#define DEF_WALL 3600.0

void repro_sandbox_opts_init(repro_sandbox_opts *o)
{
    memset(o, 0, sizeof *o);
}

static int find_bwrap(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, len, "%.*s/bwrap", (int)n, path);
        if (n && access(buf, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

int repro_sandbox_available(char *why, size_t why_len)
{
    char p[4096];
    if (find_bwrap(p, sizeof p)) {
        snprintf(why, why_len, "%s", p);
        return 1;
    }
    snprintf(why, why_len,
             "bubblewrap (bwrap) is not on PATH: install it (Debian/Ubuntu: apt-get install "
             "bubblewrap), or run unsandboxed with --no-sandbox");
    return 0;
}

static uint64_t or_default(uint64_t v, uint64_t d)
{
    return v ? v : d;
}

void repro_sandbox_describe(const repro_sandbox_opts *o, char *buf, size_t len)
{
    snprintf(buf, len,
             "%s; address space %llu MiB, CPU %llu s, file size %llu MiB, processes %llu, wall "
             "%g s",
             o->no_sandbox ? "NO SANDBOX (--no-sandbox)"
                           : "bubblewrap: no network, host read-only, private /tmp, scratch "
                             "read-write",
             (unsigned long long)(or_default(o->as_bytes, DEF_AS) >> 20),
             (unsigned long long)or_default(o->cpu_seconds, DEF_CPU),
             (unsigned long long)(or_default(o->fsize_bytes, DEF_FSIZE) >> 20),
             (unsigned long long)or_default(o->max_procs, DEF_PROCS),
             o->wall_seconds > 0 ? o->wall_seconds : DEF_WALL);
}

/* The bwrap command line around argv (malloc'd array; strings borrowed). */
static char **bwrap_argv(const repro_sandbox_opts *o, char *const argv[], const char *bwrap)
{
    size_t nro = 0, na = 0;
    while (o->ro_paths && o->ro_paths[nro])
        nro++;
    while (argv[na])
        na++;
    char **v = calloc(32 + 3 * nro + na, sizeof *v);
    if (!v)
        return NULL;
    size_t i = 0;
    const char *fixed[] = {bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                           "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--tmpfs", "/tmp"};
    for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
        v[i++] = (char *)fixed[k];
    for (size_t k = 0; k < nro; k++) {
        v[i++] = "--ro-bind";
        v[i++] = (char *)o->ro_paths[k];
        v[i++] = (char *)o->ro_paths[k];
    }
    v[i++] = "--bind";
    v[i++] = (char *)o->scratch_dir;
    v[i++] = (char *)o->scratch_dir;
    v[i++] = "--chdir";
    v[i++] = (char *)o->scratch_dir;
    v[i++] = "--";
    for (size_t k = 0; k < na; k++)
        v[i++] = argv[k];
    v[i] = NULL;
    return v;
}

int repro_sandbox_run(const repro_sandbox_opts *o, char *const argv[], const char *const *env_set,
                      const char *out_path, const char *err_path, repro_sandbox_result *res)
{
    memset(res, 0, sizeof *res);
    char bwrap[4096];
    char **v = NULL;
    if (!o->no_sandbox) {
        if (!repro_sandbox_available(bwrap, sizeof bwrap))
            return repro_error_set(REPRO_EUNSUPPORTED, "%s", bwrap);
        if (!(v = bwrap_argv(o, argv, bwrap)))
            return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    repro_child c = {0};
    c.argv = v ? v : argv;
    c.cwd = o->scratch_dir;
    c.env_set = env_set;
    c.out_path = out_path;
    c.err_path = err_path;
    c.limits.as_bytes = or_default(o->as_bytes, DEF_AS);
    c.limits.cpu_seconds = or_default(o->cpu_seconds, DEF_CPU);
    c.limits.fsize_bytes = or_default(o->fsize_bytes, DEF_FSIZE);
    c.timeout_s = o->wall_seconds > 0 ? o->wall_seconds : DEF_WALL;
    c.capture_limit = repro_child_capture_limit();
    repro_child_status st;
    int rc = repro_child_run(&c, &st);
    free(v);
    if (rc)
        return -1;
    res->exited = st.how == REPRO_CHILD_EXITED;
    res->code = res->exited ? st.code : 0;
    res->signal = st.how == REPRO_CHILD_SIGNALED ? st.code : 0;
    res->timed_out = st.how == REPRO_CHILD_TIMED_OUT;
    const char *limit = res->timed_out            ? "wall time"
                        : res->signal == SIGXFSZ ? "file size"
                        : res->signal == SIGXCPU ? "CPU time"
                                                 : NULL;
    if (limit) {
        res->limit_hit = 1;
        snprintf(res->limit_name, sizeof res->limit_name, "%s", limit);
    }
    repro_child_status_text(&st, &c, res->what, sizeof res->what);
    return 0;
}
