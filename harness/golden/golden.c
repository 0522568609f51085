/* Golden files (see golden.h): paths, atomic installation, listing. */
#include "golden/golden.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

const char *const repro_numerics_paths[] = {"kernels", "harness", "Makefile"};
const int repro_numerics_npaths = 3;

void repro_golden_path(const char *root, const char *experiment, const char *env_class, char *buf,
                       size_t len)
{
    snprintf(buf, len, "%s%sgolden/%s/%s.jsonl", root, root[0] ? "/" : "", experiment, env_class);
}

/* Test-only: REPRO_FAULT=bless-before-rename fails the install between the
 * fsync of the lock file and the rename, to prove the old golden survives. */
static int injected_failure(void)
{
    const char *f = getenv("REPRO_FAULT");
    return f && !strcmp(f, "bless-before-rename");
}

static int copy_with_header(FILE *in, FILE *out, const char *src, json_t *golden)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, in);
    if (n <= 0) {
        free(line);
        return repro_error_set(REPRO_EINVAL, "%s: empty trace", src);
    }
    json_error_t je;
    json_t *h = json_loads(line, 0, &je);
    if (!json_is_object(h)) {
        json_decref(h);
        free(line);
        return repro_error_set(REPRO_EINVAL, "%s:1: not a trace header", src);
    }
    json_object_set(h, "golden", golden);
    char *s = json_dumps(h, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(h);
    int ok = s && fputs(s, out) >= 0 && fputc('\n', out) != EOF;
    free(s);
    while (ok && (n = getline(&line, &cap, in)) > 0)
        ok = fwrite(line, 1, (size_t)n, out) == (size_t)n;
    free(line);
    if (!ok || ferror(in))
        return repro_error_set_errno(REPRO_EIO, "copying %s", src);
    return 0;
}

int repro_golden_install(const char *src_trace, const char *dest, json_t *golden, int wait_s)
{
    char dir[1100], lock[1200];
    snprintf(dir, sizeof dir, "%s", dest);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (repro_mkdirs(dir))
        return -1;
    snprintf(lock, sizeof lock, "%s.lock", dest);

    int fd = -1;
    for (int waited = 0;; waited++) {
        fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0)
            break;
        if (errno != EEXIST)
            return repro_error_set_errno(REPRO_EIO, "%s: cannot create lock", lock);
        if (waited >= wait_s * 10)
            return repro_error_set(REPRO_EIO,
                                   "%s exists: another bless is writing this golden (or one "
                                   "crashed: remove the lock file if no bless is running)",
                                   lock);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    FILE *out = fdopen(fd, "w");
    FILE *in = fopen(src_trace, "r");
    int rc = 0;
    if (!out || !in) {
        rc = repro_error_set_errno(REPRO_EIO, "%s", !in ? src_trace : lock);
        goto fail;
    }
    if (copy_with_header(in, out, src_trace, golden)) {
        rc = -1;
        goto fail;
    }
    if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        rc = repro_error_set_errno(REPRO_EIO, "%s: cannot write", lock);
        goto fail;
    }
    if (injected_failure()) {
        rc = repro_error_set(REPRO_EIO, "injected failure before rename (REPRO_FAULT)");
        goto fail;
    }
    if (rename(lock, dest) != 0) {
        rc = repro_error_set_errno(REPRO_EIO, "cannot rename %s to %s", lock, dest);
        goto fail;
    }
    /* Make the rename itself durable. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    fclose(in);
    fclose(out);
    return 0;
fail:
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    else if (fd >= 0)
        close(fd);
    unlink(lock);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int repro_golden_classes(const char *root, const char *experiment, char ***classes)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s%sgolden/%s", root, root[0] ? "/" : "", experiment);
    *classes = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0, cap = 0;
    char **list = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".jsonl"))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **nl = realloc(list, (size_t)cap * sizeof *nl);
            if (!nl)
                break;
            list = nl;
        }
        list[n] = strndup(e->d_name, len - 6);
        if (list[n])
            n++;
    }
    closedir(d);
    if (n > 1)
        qsort(list, (size_t)n, sizeof *list, cmp_str);
    *classes = list;
    return n;
}

void repro_golden_classes_free(char **classes, int n)
{
    for (int i = 0; i < n; i++)
        free(classes[i]);
    free(classes);
}

int repro_golden_name_check(const char *name)
{
    size_t n = strlen(name);
    int ok = n > 0 && n <= 100 && name[0] != '.';
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)name[i]) || name[i] == '.' || name[i] == '_' || name[i] == '-';
    return ok ? 0
              : repro_error_set(REPRO_EINVAL,
                                "--name '%.100s': letters, digits, '.', '_' and '-' only (one "
                                "directory under golden/)",
                                name);
}
