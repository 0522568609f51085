/* The GPU's device nodes and driver libraries for the sandbox (see
 * sandbox_gpu.h). */
#include "util/sandbox_gpu.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where driver libraries usually are; /etc/ld.so.conf.d adds the rest. */
static const char *const usual_lib_dirs[] = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
    "/lib/x86_64-linux-gnu", "/lib64", "/usr/local/nvidia/lib64", "/usr/local/cuda/compat",
    NULL};

/* The named nodes besides nvidiaN; required ones first. */
static const char *const named_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                          "nvidia-modeset", NULL};
#define REQUIRED_NAMED 2

static int is_gpu_name(const char *name)
{
    if (strncmp(name, "nvidia", 6) || !name[6])
        return 0;
    for (const char *c = name + 6; *c; c++)
        if (!isdigit((unsigned char)*c))
            return 0;
    return 1;
}

static void add_node(repro_sandbox_gpu *g, const char *name)
{
    if (g->nnodes == REPRO_GPU_NODES_MAX)
        return;
    char path[sizeof g->node_paths[0]];
    snprintf(path, sizeof path, "%.255s/%.31s", g->dev_dir, name);
    memcpy(g->node_paths[g->nnodes], path, sizeof path);
    snprintf(g->nodes[g->nnodes], sizeof g->nodes[0], "%.31s", name);
    g->nnodes++;
}

/* A character device (or, for nvidia-caps, a directory) at dev_dir/name? */
static int has_node(const repro_sandbox_gpu *g, const char *name, int dir)
{
    char path[300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", g->dev_dir, name);
    return stat(path, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISCHR(st.st_mode));
}

static int cmp_names(const void *a, const void *b)
{
    size_t la = strlen(a), lb = strlen(b); /* nvidia2 before nvidia10 */
    return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

/* nvidia0..N, in order: how many. */
static int find_gpus(repro_sandbox_gpu *g)
{
    DIR *d = opendir(g->dev_dir);
    if (!d)
        return 0;
    char names[REPRO_GPU_NODES_MAX][32];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < REPRO_GPU_NODES_MAX - 8)
        if (is_gpu_name(e->d_name) && strlen(e->d_name) < sizeof names[0] &&
            has_node(g, e->d_name, 0))
            snprintf(names[n++], sizeof names[0], "%.*s", (int)sizeof names[0] - 1, e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    for (int i = 0; i < n; i++)
        add_node(g, names[i]);
    return n;
}

static int is_driver_lib(const char *name)
{
    return (!strncmp(name, "libcuda.so", 10) || !strncmp(name, "libnvidia-", 10)) &&
           strstr(name, ".so");
}

static int within_usr(const char *real)
{
    return !strncmp(real, "/usr/", 5);
}

/* Notes dir's driver libraries: counted when under /usr, else the
 * directory (as its real path, once) joins libs. */
static void scan_lib_dir(repro_sandbox_gpu *g, const char *dir)
{
    char real[PATH_MAX];
    DIR *d = realpath(dir, real) ? opendir(real) : NULL;
    if (!d)
        return;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        found += is_driver_lib(e->d_name);
    closedir(d);
    if (!found)
        return;
    if (within_usr(real)) {
        g->libs_in_usr += found;
        return;
    }
    for (int i = 0; i < g->nlibs; i++)
        if (!strcmp(g->libs[i], real))
            return;
    if (g->nlibs < REPRO_GPU_LIBS_MAX && strlen(real) < sizeof g->libs[0])
        snprintf(g->libs[g->nlibs++], sizeof g->libs[0], "%.*s", (int)sizeof g->libs[0] - 1,
                 real);
}

/* The directories /etc/ld.so.conf.d/\*.conf name (what `ldconfig -p`
 * lists comes from them and the usual ones). */
static void scan_ld_conf(repro_sandbox_gpu *g)
{
    DIR *d = opendir("/etc/ld.so.conf.d");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".conf"))
            continue;
        char path[600], line[512];
        snprintf(path, sizeof path, "/etc/ld.so.conf.d/%s", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, " \t\r\n#")] = '\0';
            if (line[0] == '/')
                scan_lib_dir(g, line);
        }
        if (f)
            fclose(f);
    }
    closedir(d);
}

int repro_sandbox_gpu_find(const char *dev_dir, const char *const *lib_dirs,
                           repro_sandbox_gpu *g, char *why, size_t len)
{
    memset(g, 0, sizeof *g);
    snprintf(g->dev_dir, sizeof g->dev_dir, "%s", dev_dir ? dev_dir : "/dev");
    char missing[900] = "";
    if (!find_gpus(g))
        snprintf(missing, sizeof missing, "%.255s/nvidia0 (no nvidiaN device)", g->dev_dir);
    for (int i = 0; named_nodes[i]; i++) {
        if (has_node(g, named_nodes[i], 0))
            add_node(g, named_nodes[i]);
        else if (i < REQUIRED_NAMED)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%.255s/%s",
                     missing[0] ? ", " : "", g->dev_dir, named_nodes[i]);
    }
    if (has_node(g, "nvidia-caps", 1))
        add_node(g, "nvidia-caps");
    if (missing[0]) {
        snprintf(why, len, "no NVIDIA GPU device nodes: %s missing (no NVIDIA driver loaded, or "
                 "a container started without its GPUs)", missing);
        return -1;
    }
    for (int i = 0; lib_dirs ? lib_dirs[i] != NULL : usual_lib_dirs[i] != NULL; i++)
        scan_lib_dir(g, lib_dirs ? lib_dirs[i] : usual_lib_dirs[i]);
    if (!lib_dirs)
        scan_ld_conf(g);
    return 0;
}

void repro_sandbox_gpu_lists(const repro_sandbox_gpu *g, const char **nodes, const char **libs)
{
    for (int i = 0; i < g->nnodes; i++)
        nodes[i] = g->node_paths[i];
    nodes[g->nnodes] = NULL;
    for (int i = 0; i < g->nlibs; i++)
        libs[i] = g->libs[i];
    libs[g->nlibs] = NULL;
}

void repro_sandbox_gpu_describe(const repro_sandbox_gpu *g, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "GPU: ");
    for (int i = 0; i < g->nnodes && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "/dev/", g->nodes[i]);
    if (k < len)
        k += (size_t)snprintf(buf + k, len - k, " bound; driver libraries %s",
                              g->nlibs ? "" : g->libs_in_usr ? "under /usr (read-only with it)"
                                                             : "none found");
    for (int i = 0; i < g->nlibs && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", g->libs[i]);
    if (g->nlibs && k < len)
        snprintf(buf + k, len - k, " bound read-only%s",
                 g->libs_in_usr ? ", and under /usr" : "");
}
