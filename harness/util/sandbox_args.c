/* bwrap's command line (see sandbox_args.h). */
#include "util/sandbox_args.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/sandbox.h"

/* What of /etc a compiler, make, the dynamic loader, Python and the C
 * library's user lookups read; nothing with secrets (no shadow, no ssh, no
 * ssl keys). Bound only where present. */
const char *const repro_sandbox_etc_files[] = {
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone",
    "/etc/os-release", "/etc/debian_version", "/etc/hosts", "/etc/protocols", "/etc/services",
    "/etc/python3", "/etc/openmpi", NULL};

/* The top of the system: on a merged-/usr system /bin, /lib... are links
 * into /usr, made as the same links inside; elsewhere, bound read-only. */
static const char *const system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                          "/libx32", NULL};

void repro_argv_add(repro_argv *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->failed = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s))) {
        a->failed = 1;
        return;
    }
    a->v[++a->n] = NULL;
}

void repro_argv_free(repro_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static void add3(repro_argv *a, const char *opt, const char *x, const char *y)
{
    repro_argv_add(a, opt);
    repro_argv_add(a, x);
    if (y)
        repro_argv_add(a, y);
}

static void add_system(repro_argv *a)
{
    char target[4096];
    for (int i = 0; system_dirs[i]; i++) {
        struct stat st;
        if (lstat(system_dirs[i], &st) != 0)
            continue;
        ssize_t n;
        if (S_ISLNK(st.st_mode) && (n = readlink(system_dirs[i], target, sizeof target - 1)) > 0) {
            target[n] = '\0';
            add3(a, "--symlink", target, system_dirs[i]);
        } else if (S_ISDIR(st.st_mode)) {
            add3(a, "--ro-bind", system_dirs[i], system_dirs[i]);
        }
    }
    for (int i = 0; repro_sandbox_etc_files[i]; i++)
        add3(a, "--ro-bind-try", repro_sandbox_etc_files[i], repro_sandbox_etc_files[i]);
}

static int add_env(repro_argv *a, const char *scratch, const char *const *env_set)
{
    repro_argv_add(a, "--clearenv");
    add3(a, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin");
    add3(a, "--setenv", "HOME", scratch ? scratch : "/tmp");
    add3(a, "--setenv", "TMPDIR", "/tmp");
    for (int i = 0; env_set && env_set[i]; i++) {
        const char *eq = strchr(env_set[i], '=');
        if (!eq || eq == env_set[i])
            return repro_error_set(REPRO_EINVAL, "sandbox environment entry '%s' is not K=V",
                                   env_set[i]);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - env_set[i]), env_set[i]);
        add3(a, "--setenv", key, eq + 1);
    }
    return 0;
}

/* Is path dir itself or below it? (Both absolute, without "..".) */
static int is_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 1 && dir[0] == '/')
        return 1;
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* The verifying repro's Python client: its package alone, read-only, in
 * a directory of its own (PYTHONPATH names that directory, so nothing else
 * of the host's site directory comes with it). Before the root is made
 * read-only: bwrap makes the mount point in it. */
static void add_python_client(repro_argv *a, const char *client_dir)
{
    char pkg[PATH_MAX + 8];
    if (!client_dir)
        return;
    snprintf(pkg, sizeof pkg, "%s/repro", client_dir);
    add3(a, "--ro-bind", pkg, REPRO_SANDBOX_CLIENT_DIR "/repro");
}

/* Host device nodes (the GPU's) in /dev under their own names, with
 * --dev-bind: a plain bind of /dev's tmpfs would be nodev. Before /dev is
 * made read-only (bwrap makes their mount points in it); a device node
 * opens for writing on a read-only mount all the same. */
static void add_dev_nodes(repro_argv *a, const char *const *dev_nodes)
{
    char dest[300];
    for (int i = 0; dev_nodes && dev_nodes[i]; i++) {
        const char *slash = strrchr(dev_nodes[i], '/');
        snprintf(dest, sizeof dest, "/dev/%s", slash ? slash + 1 : dev_nodes[i]);
        add3(a, "--dev-bind", dev_nodes[i], dest);
    }
}

int repro_sandbox_args(repro_argv *a, const char *bwrap, const char *scratch,
                       const char *const *ro_paths, const char *client_dir,
                       const char *const *dev_nodes, uint64_t tmp_bytes,
                       const char *const *env_set)
{
    char size[32];
    repro_argv_add(a, bwrap);
    /* Dies with us; a new session (no terminal to push input into); no
     * network, its own pids, IPC and host name; no capabilities, so that
     * root inside cannot remount, mknod or ptrace its way out. Its own
     * user namespace (our uid mapped to itself) empties the capability
     * bounding set and gives it its own user keyrings (uid 0's would be
     * the host root's); and it may not make user namespaces of its own,
     * in which it would hold capabilities again. */
    static const char *const fixed[] = {"--die-with-parent", "--new-session", "--unshare-user",
                                        "--disable-userns", "--unshare-net", "--unshare-pid",
                                        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                                        "--hostname", "repro-sandbox", "--cap-drop", "ALL", NULL};
    for (int i = 0; fixed[i]; i++)
        repro_argv_add(a, fixed[i]);
    add_system(a);
    /* /proc of its pid namespace, read-only: root inside has no
     * capabilities, but the kernel lets uid 0 write most of /proc/sys by
     * the file modes alone, and kernel.core_pattern there is the host's
     * (a "|program" in it runs on the host as root at the next crash);
     * bwrap covers /proc/sys only where it looks writable to it, which a
     * root caller's check does not see. */
    add3(a, "--proc", "/proc", NULL);
    add3(a, "--remount-ro", "/proc", NULL);
    /* /dev: bwrap's few device nodes on a tmpfs made read-only, with a
     * bounded /dev/shm (POSIX shared memory, Python's multiprocessing). */
    snprintf(size, sizeof size, "%llu", (unsigned long long)tmp_bytes);
    add3(a, "--dev", "/dev", NULL);
    add3(a, "--size", size, NULL);
    add3(a, "--tmpfs", "/dev/shm", NULL);
    add_dev_nodes(a, dev_nodes);
    add3(a, "--remount-ro", "/dev", NULL);
    add3(a, "--size", size, NULL);
    add3(a, "--tmpfs", "/tmp", NULL);
    /* After /tmp, so that a scratch dir under /tmp is the host's. A
     * later mount covers an earlier one below it: read-only paths that
     * hold scratch go before it (scratch stays writable), the others after
     * (one inside scratch stays read-only). */
    for (int i = 0; scratch && ro_paths && ro_paths[i]; i++)
        if (is_within(scratch, ro_paths[i]))
            add3(a, "--ro-bind", ro_paths[i], ro_paths[i]);
    if (scratch)
        add3(a, "--bind", scratch, scratch);
    for (int i = 0; ro_paths && ro_paths[i]; i++)
        if (!scratch || !is_within(scratch, ro_paths[i]))
            add3(a, "--ro-bind", ro_paths[i], ro_paths[i]);
    add_python_client(a, client_dir);
    add3(a, "--remount-ro", "/", NULL);
    if (scratch)
        add3(a, "--chdir", scratch, NULL);
    if (add_env(a, scratch, env_set))
        return -1;
    repro_argv_add(a, "--");
    if (a->failed)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    return 0;
}
