/* The sandbox's pids and memory cgroups (see sandbox_pids.h). */
#include "util/sandbox_pids.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Our cgroup in the hierarchy that has the controller ctl ("pids",
 * "memory"), from /proc/self/cgroup: v1's "N:...ctl...:/path" (mounted at
 * /sys/fs/cgroup/ctl), else v2's "0::/path" (at /sys/fs/cgroup). Fills
 * base with the directory; returns 1 for v1, 2 for v2, 0 for none. */
static int own_cgroup(const char *want, char *base, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[1024], v2[1024] = "";
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        ctl++;
        if (!strcmp(line, "0") && !ctl[0]) {
            snprintf(v2, sizeof v2, "%s", path);
            continue;
        }
        char *save = NULL;
        for (char *tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (!strcmp(tok, want)) {
                int n = snprintf(base, len, CGROUP_ROOT "/%s%s", want, strcmp(path, "/") ? path : "");
                found = n > 0 && (size_t)n < len;
            }
    }
    fclose(f);
    if (found)
        return 1;
    struct stat st;
    if (v2[0] && stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0) {
        int n = snprintf(base, len, CGROUP_ROOT "%s", strcmp(v2, "/") ? v2 : "");
        return n > 0 && (size_t)n < len ? 2 : 0;
    }
    return 0;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

/* The number after `key` in a "key value" file of the cgroup, or 0. */
static uint64_t read_key(const repro_pids_cgroup *g, const char *file, const char *key)
{
    char path[700], line[256];
    if (!g->dir[0])
        return 0;
    snprintf(path, sizeof path, "%s/%s", g->dir, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    uint64_t v = 0;
    size_t k = key ? strlen(key) : 0;
    while (fgets(line, sizeof line, f)) {
        if (key && (strncmp(line, key, k) || line[k] != ' '))
            continue;
        v = strtoull(line + (key ? k + 1 : 0), NULL, 10);
        break;
    }
    fclose(f);
    return v;
}

/* A fresh cgroup below ours in ctl's hierarchy, with limit_file set to
 * value (v1_file in v1, v2_file in v2, where the controller is enabled
 * below us first). 0, or -1 with why. */
static int make_limited(repro_pids_cgroup *g, const char *ctl, const char *v1_file,
                        const char *v2_file, uint64_t value, char *why, size_t len)
{
    static atomic_uint seq;
    char base[480], path[700], num[32];
    memset(g, 0, sizeof *g);
    int version = own_cgroup(ctl, base, sizeof base);
    if (!version) {
        snprintf(why, len, "no %s cgroup controller is mounted under " CGROUP_ROOT, ctl);
        return -1;
    }
    snprintf(g->dir, sizeof g->dir, "%s/repro-sandbox-%ld-%u", base, (long)getpid(), atomic_fetch_add(&seq, 1));
    if (mkdir(g->dir, 0755) != 0) {
        snprintf(why, len, "cannot make a cgroup in %s: %s", base, strerror(errno));
        g->dir[0] = '\0';
        return -1;
    }
    g->version = version;
    snprintf(path, sizeof path, "%s/%s", g->dir, version == 2 ? v2_file : v1_file);
    if (version == 2 && access(path, F_OK) != 0) { /* enable the controller below us */
        char sub[560], plus[40];
        snprintf(sub, sizeof sub, "%s/cgroup.subtree_control", base);
        snprintf(plus, sizeof plus, "+%s", ctl);
        write_file(sub, plus);
    }
    snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    if (write_file(path, num) != 0) {
        snprintf(why, len, "cannot set %s: %s", path, strerror(errno));
        rmdir(g->dir);
        g->dir[0] = '\0';
        return -1;
    }
    snprintf(g->procs, sizeof g->procs, "%s/cgroup.procs", g->dir);
    return 0;
}

int repro_pids_cgroup_make(repro_pids_cgroup *g, uint64_t max, char *why, size_t len)
{
    return make_limited(g, "pids", "pids.max", "pids.max", max, why, len);
}

/* Without swap in the limit a program would page past it: best effort
 * (no swap accounting, or none configured: nothing to close). In v1 the
 * memory+swap limit may not be below the memory one, so after it. */
static void no_swap(const repro_pids_cgroup *g, uint64_t bytes)
{
    char path[700], num[32];
    snprintf(path, sizeof path, "%s/%s", g->dir,
             g->version == 2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
    snprintf(num, sizeof num, "%llu", (unsigned long long)(g->version == 2 ? 0 : bytes));
    write_file(path, num);
}

int repro_mem_cgroup_make(repro_pids_cgroup *g, const repro_pids_cgroup *pids, uint64_t bytes,
                          char *why, size_t len)
{
    char base[480], path[700], num[32];
    memset(g, 0, sizeof *g);
    if (pids && pids->dir[0] && pids->version == 2 && own_cgroup("memory", base, sizeof base) == 2) {
        /* One hierarchy: the pids cgroup the child joins takes the limit. */
        snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
        write_file(path, "+memory");
        snprintf(path, sizeof path, "%s/memory.max", pids->dir);
        snprintf(num, sizeof num, "%llu", (unsigned long long)bytes);
        if (write_file(path, num) != 0) {
            snprintf(why, len, "cannot set %s: %s", path, strerror(errno));
            return -1;
        }
        snprintf(g->dir, sizeof g->dir, "%s", pids->dir);
        g->version = 2;
        g->shared = 1;
        no_swap(g, bytes);
        return 0;
    }
    if (make_limited(g, "memory", "memory.limit_in_bytes", "memory.max", bytes, why, len))
        return -1;
    no_swap(g, bytes);
    return 0;
}

uint64_t repro_mem_cgroup_oom_kills(const repro_pids_cgroup *g)
{
    return read_key(g, g->version == 2 ? "memory.events" : "memory.oom_control", "oom_kill");
}

uint64_t repro_pids_cgroup_refused(const repro_pids_cgroup *g)
{
    return read_key(g, "pids.events", "max");
}

uint64_t repro_pids_cgroup_peak(const repro_pids_cgroup *g)
{
    return read_key(g, "pids.peak", NULL);
}

/* SIGKILLs every process listed in the cgroup; returns how many. */
static int kill_members(const repro_pids_cgroup *g)
{
    FILE *f = fopen(g->procs, "r");
    if (!f)
        return 0;
    long pid;
    int n = 0;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    fclose(f);
    return n;
}

void repro_pids_cgroup_remove(repro_pids_cgroup *g)
{
    if (!g->dir[0] || g->shared) {
        memset(g, 0, sizeof *g);
        return;
    }
    /* A cgroup can be removed once its last task is gone; the dying ones
     * take a moment to leave it: up to 2 s. */
    for (int i = 0; i < 200; i++) {
        if (rmdir(g->dir) == 0 || errno == ENOENT)
            break;
        kill_members(g);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    g->dir[0] = '\0';
    g->procs[0] = '\0';
}
