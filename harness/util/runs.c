/* runs/ retention (runs.h): list, sort by age, remove with nftw. */
#include "util/runs.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

typedef struct {
    char *path;
    time_t mtime;
} run_dir;

static long long tree_bytes;

static int count_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path, (void)f;
    if (flag == FTW_F)
        tree_bytes += (long long)st->st_size;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)f;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot remove", path);
    return 0;
}

int repro_runs_remove(const char *run_dir)
{
    return nftw(run_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

static int newest_first(const void *a, const void *b)
{
    const run_dir *x = a, *y = b;
    if (x->mtime != y->mtime)
        return x->mtime < y->mtime ? 1 : -1;
    return strcmp(y->path, x->path); /* same second: the later name (stamp-pid) first */
}

/* The run directories under dir, malloc'd; *n their count. */
static int list_runs(const char *dir, run_dir **out, int *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : repro_error_set_errno(REPRO_EIO, "%s: cannot list", dir);
    int cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !rc) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            run_dir *grown = realloc(*out, (size_t)cap * sizeof **out);
            if (!grown) {
                rc = repro_error_set(REPRO_ENOMEM, "out of memory");
                break;
            }
            *out = grown;
        }
        (*out)[*n].path = strdup(path);
        (*out)[*n].mtime = st.st_mtime;
        rc = (*out)[*n].path ? 0 : repro_error_set(REPRO_ENOMEM, "out of memory");
        *n += !rc;
    }
    closedir(d);
    return rc;
}

int repro_runs_prune(const char *dir, int keep, int dry_run, FILE *report, long long *freed)
{
    run_dir *runs;
    int n, rc = list_runs(dir, &runs, &n);
    long long total = 0;
    if (!rc && n > 1) /* (qsort's array may not be NULL, even for n = 0) */
        qsort(runs, (size_t)n, sizeof *runs, newest_first);
    for (int i = keep < 0 ? 0 : keep; !rc && i < n; i++) {
        tree_bytes = 0;
        nftw(runs[i].path, count_one, 16, FTW_PHYS);
        total += tree_bytes;
        if (report)
            fprintf(report, "%s %s (%.1f MiB)\n", dry_run ? "would remove" : "removed",
                    runs[i].path, (double)tree_bytes / (1024.0 * 1024.0));
        if (!dry_run)
            rc = repro_runs_remove(runs[i].path);
    }
    for (int i = 0; i < n; i++)
        free(runs[i].path);
    free(runs);
    if (freed)
        *freed = total;
    return rc;
}

int repro_runs_keep_default(void)
{
    const char *v = getenv("REPRO_KEEP_RUNS");
    if (v && *v && strspn(v, "0123456789") == strlen(v) && strlen(v) < 7)
        return atoi(v);
    return 20;
}
