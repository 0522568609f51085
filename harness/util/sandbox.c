/* The sandbox (see sandbox.h): bwrap's command line comes from
 * sandbox_args.c, the process-count limit from sandbox_pids.c; here, the
 * run itself and the reading of how it ended. */
#include "util/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/sandbox_args.h"
#include "util/sandbox_gpu.h"
#include "util/sandbox_impl.h"
#include "util/sandbox_pids.h"


void repro_sandbox_opts_init(repro_sandbox_opts *o)
{
    memset(o, 0, sizeof *o);
    o->as_bytes = REPRO_SANDBOX_DEFAULT_AS;
    o->cpu_seconds = REPRO_SANDBOX_DEFAULT_CPU;
    o->fsize_bytes = REPRO_SANDBOX_DEFAULT_FSIZE;
    o->max_procs = REPRO_SANDBOX_DEFAULT_PROCS;
    o->wall_seconds = REPRO_SANDBOX_DEFAULT_WALL;
    o->tmp_bytes = REPRO_SANDBOX_DEFAULT_TMP;
    o->disk_bytes = REPRO_SANDBOX_DEFAULT_DISK;
}

repro_sandbox_opts repro_sandbox_effective(const repro_sandbox_opts *o)
{
    repro_sandbox_opts e = *o;
    e.as_bytes = e.as_bytes ? e.as_bytes : REPRO_SANDBOX_DEFAULT_AS;
    e.cpu_seconds = e.cpu_seconds ? e.cpu_seconds : REPRO_SANDBOX_DEFAULT_CPU;
    e.fsize_bytes = e.fsize_bytes ? e.fsize_bytes : REPRO_SANDBOX_DEFAULT_FSIZE;
    e.max_procs = e.max_procs ? e.max_procs : REPRO_SANDBOX_DEFAULT_PROCS;
    e.wall_seconds = e.wall_seconds > 0 ? e.wall_seconds : REPRO_SANDBOX_DEFAULT_WALL;
    e.tmp_bytes = e.tmp_bytes ? e.tmp_bytes : REPRO_SANDBOX_DEFAULT_TMP;
    e.disk_bytes = e.disk_bytes ? e.disk_bytes : REPRO_SANDBOX_DEFAULT_DISK;
    return e;
}

int repro_sandbox_find_bwrap(char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if ((size_t)snprintf(out, len, "%.*s/bwrap", (int)n, n ? p : ".") < len &&
            access(out, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

void repro_sandbox_first_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

int repro_sandbox_available(char *why, size_t why_len)
{
    char bwrap[PATH_MAX], err[PATH_MAX], line[300];
    why[0] = '\0';
    if (!repro_sandbox_find_bwrap(bwrap, sizeof bwrap)) {
        snprintf(why, why_len, "bubblewrap (bwrap) is not on PATH: " REPRO_SANDBOX_INSTALL_HINT);
        return 0;
    }
    /* Try one: user namespaces may be off, or a container may forbid the
     * mounts. */
    const char *tmp = getenv("TMPDIR");
    snprintf(err, sizeof err, "%s/repro-bwrap-probe-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemp(err);
    if (fd < 0) {
        snprintf(why, why_len, "cannot try bwrap: no temporary file in %s: %s",
                 tmp && tmp[0] ? tmp : "/tmp", strerror(errno));
        return 0;
    }
    close(fd);
    repro_argv a = {0};
    repro_child c;
    memset(&c, 0, sizeof c);
    repro_child_status st = {0};
    int ok = repro_sandbox_args(&a, bwrap, NULL, NULL, NULL, NULL, 1 << 20, NULL) == 0;
    repro_argv_add(&a, "true");
    if (ok && !a.failed) {
        c.argv = a.v;
        c.env_clear = 1; /* as every sandbox starts (sandbox_run.c) */
        c.err_path = err;
        c.timeout_s = 30;
        ok = repro_child_run(&c, &st) == 0 && st.how == REPRO_CHILD_EXITED && st.code == 0;
    } else {
        ok = 0;
    }
    repro_sandbox_first_line(err, line, sizeof line);
    unlink(err);
    repro_argv_free(&a);
    if (!ok)
        snprintf(why, why_len, "%s cannot make a sandbox here (%s): it needs user or mount "
                 "namespaces (run as root, or allow unprivileged user namespaces)",
                 bwrap, line[0] ? line : repro_error_message());
    return ok;
}

void repro_sandbox_human_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= (1ULL << 30))
        snprintf(buf, len, "%.1f GiB", (double)b / (1ULL << 30));
    else if (b >= (1ULL << 20))
        snprintf(buf, len, "%.1f MiB", (double)b / (1ULL << 20));
    else
        snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
}

int repro_sandbox_gpu_ready(const repro_sandbox_opts *o, char *why, size_t len)
{
    repro_sandbox_gpu g;
    why[0] = '\0';
    return !o->gpu || repro_sandbox_gpu_find(o->gpu_dev_dir, NULL, &g, why, len) == 0;
}

/* The process count and memory as their cgroups would hold them here
 * (made and removed again), and with a GPU what is bound. */
static void describe_cgroups(const repro_sandbox_opts *e, char *procs, size_t plen, char *mem,
                             size_t mlen)
{
    char why[200], as[32];
    repro_pids_cgroup g, m;
    int have_pids = repro_pids_cgroup_make(&g, e->max_procs, why, sizeof why) == 0;
    if (have_pids)
        snprintf(procs, plen, "processes+threads %llu (cgroup pids.max)",
                 (unsigned long long)e->max_procs);
    else
        snprintf(procs, plen, "processes NOT limited (%s)", why);
    repro_sandbox_human_bytes(e->as_bytes, as, sizeof as);
    if (!e->gpu)
        snprintf(mem, mlen, "address space %s", as);
    else if (e->as_bytes == UINT64_MAX)
        snprintf(mem, mlen, "memory NOT limited (no --max-memory), no address-space limit");
    else if (repro_mem_cgroup_make(&m, have_pids ? &g : NULL, e->as_bytes, why, sizeof why) == 0) {
        snprintf(mem, mlen, "memory %s by cgroup (%s), no address-space limit", as,
                 m.version == 2 ? "memory.max" : "memory.limit_in_bytes");
        repro_pids_cgroup_remove(&m);
    } else {
        snprintf(mem, mlen, "memory NOT limited (%s), no address-space limit", why);
    }
    if (have_pids)
        repro_pids_cgroup_remove(&g);
}

static void describe_gpu(const repro_sandbox_opts *e, char *buf, size_t len)
{
    repro_sandbox_gpu g;
    char why[300];
    buf[0] = '\0';
    if (!e->gpu)
        return;
    if (repro_sandbox_gpu_find(e->gpu_dev_dir, NULL, &g, why, sizeof why) == 0)
        repro_sandbox_gpu_describe(&g, buf, len);
    else
        snprintf(buf, len, "GPU: none (%s)", why);
    if (strlen(buf) + 3 < len)
        strcat(buf, "; ");
}

void repro_sandbox_describe(const repro_sandbox_opts *o, char *buf, size_t len)
{
    repro_sandbox_opts e = repro_sandbox_effective(o);
    char fs[32], tmp[32], procs[300], mem[300], disk[80], gpu[600];
    repro_sandbox_human_bytes(e.disk_bytes, disk, sizeof disk);
    if (e.disk_capped)
        snprintf(disk + strlen(disk), sizeof disk - strlen(disk), " in all (tmpfs)");
    else
        snprintf(disk, sizeof disk, "total size NOT limited");
    repro_sandbox_human_bytes(e.fsize_bytes, fs, sizeof fs);
    repro_sandbox_human_bytes(e.tmp_bytes, tmp, sizeof tmp);
    describe_cgroups(&e, procs, sizeof procs, mem, sizeof mem);
    describe_gpu(&e, gpu, sizeof gpu);
    if (e.no_sandbox)
        snprintf(buf, len, "NO SANDBOX (--no-sandbox): the host's network, files and processes; "
                 "%s%s, cpu %llu s per process, file size %s, %s, wall %g s, scratch %s",
                 gpu, mem, (unsigned long long)e.cpu_seconds, fs, procs, e.wall_seconds, disk);
    else
        snprintf(buf, len, "bubblewrap: no network, own pid namespace, no capabilities, "
                 "system and inputs read-only, scratch %s writable, private /tmp and /dev/shm %s each; "
                 "%s%s, cpu %llu s per process, file size %s, %s, wall %g s, "
                 "scratch %s",
                 e.scratch_dir ? e.scratch_dir : "(none)", tmp, gpu, mem,
                 (unsigned long long)e.cpu_seconds, fs, procs, e.wall_seconds, disk);
}
