/* Golden files (see golden.h): paths, atomic installation, listing. */
#include "golden/golden.h"

#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* Test-only faults (REPRO_FAULT, see util/fault.h): bless-before-rename
 * fails the install between the fsync of the temporary file and the rename,
 * to prove the old golden survives; bless-stall stops the install for good
 * after the header line, so a test can SIGKILL a bless mid-write. */
static int injected(const char *name)
{
    const char *f = getenv("REPRO_FAULT");
    return f && !strcmp(f, name);
}

/* A golden keeps per step only what a comparison with it needs: the step
 * digest and the loss. The chain of a step line without detail follows
 * from the previous chain and the step digest (the reader computes and
 * checks it, trace.h), so it is left out there: ~75 of a line's ~210
 * bytes. Detail lines and the trailer keep it. Rewrites line[0..n) in
 * place (the result is never longer) and returns its new length; a line
 * that is not such a step line (the trailer) is left as it is. */
static size_t thin_step_line(char *line, size_t n)
{
    json_t *o = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
    json_t *type = json_object_get(o, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "step") != 0 ||
        json_object_get(o, "tensors") || json_object_del(o, "chain") != 0) {
        json_decref(o);
        return n;
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    size_t m = s ? strlen(s) : 0;
    if (m > 0 && m < n) { /* one key fewer: always shorter */
        memcpy(line, s, m);
        line[m++] = '\n';
        n = m;
    }
    free(s);
    return n;
}

/* Copies the trace at `src` to `out` (the temporary of golden `dest`) with
 * the golden's provenance in its header. A failure names the file at
 * fault: the source when it cannot be read, the golden when it cannot be
 * written (a full disk: the golden is what could not be made). */
static int copy_with_header(FILE *in, FILE *out, const char *src, const char *dest,
                            json_t *golden)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, in);
    if (n <= 0) {
        free(line);
        if (ferror(in))
            return repro_error_set_errno(REPRO_EIO, "cannot read %s", src);
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
    int ok = s && fputs(s, out) >= 0 && fputc('\n', out) != EOF;
    int write_errno = ok ? 0 : errno;
    free(s);
    if (ok && injected("bless-stall")) {
        json_decref(h);
        fflush(out);
        for (;;)
            pause();
    }
    int thin = json_integer_value(json_object_get(h, "repro_trace")) >= 2;
    while (ok && (n = getline(&line, &cap, in)) > 0) {
        if (thin)
            n = (ssize_t)thin_step_line(line, (size_t)n);
        if (!(ok = fwrite(line, 1, (size_t)n, out) == (size_t)n))
            write_errno = errno;
    }
    free(line);
    json_decref(h);
    if (ferror(in))
        return repro_error_set_errno(REPRO_EIO, "cannot read %s", src);
    if (!ok) {
        errno = write_errno ? write_errno : EIO;
        return repro_error_set_errno(REPRO_EIO, "cannot write the golden %s", dest);
    }
    return 0;
}

/* Takes the lock for dest: flock(2) on dest.lock, which the kernel drops
 * when its holder dies, however it dies (an O_EXCL lock file outlived a
 * kill -9 and blocked every later bless until removed by hand). The lock
 * file is unlinked by its holder when done, so after taking the lock we
 * check that the file we locked is still the one at that path (else a
 * holder removed it meanwhile and we lock the new one). Returns the fd. */
static int take_lock(const char *lock, int wait_s)
{
    for (int waited = 0;; waited++) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return repro_error_set_errno(REPRO_EIO, "%s: cannot create lock", lock);
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            struct stat a, b;
            if (fstat(fd, &a) == 0 && stat(lock, &b) == 0 && a.st_ino == b.st_ino &&
                a.st_dev == b.st_dev)
                return fd;
            close(fd); /* unlinked by the holder we waited for: lock the new one */
            continue;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK && e != EINTR) {
            errno = e;
            return repro_error_set_errno(REPRO_EIO, "%s: cannot lock", lock);
        }
        if (waited >= wait_s * 10)
            return repro_error_set(REPRO_EIO,
                                   "%s is locked: another bless is writing this golden now "
                                   "(waited %d s)",
                                   lock, wait_s);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
}

/* Under the lock no other bless writes temporaries for dest: any left
 * ("DEST.XXXXXX.tmp") are from a bless that was killed; remove them. */
static void remove_stale_temps(const char *dir, const char *dest)
{
    const char *base = strrchr(dest, '/');
    base = base ? base + 1 : dest;
    size_t bl = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len == bl + 11 && !strncmp(e->d_name, base, bl) && e->d_name[bl] == '.' &&
            !strcmp(e->d_name + len - 4, ".tmp")) {
            char p[2400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
}

/* golden/.gitignore keeps locks and temporaries out of `git add golden`;
 * written once, when missing (best effort: a bless does not fail on it). */
static void ensure_gitignore(const char *dir)
{
    char root[1100], p[1200];
    snprintf(root, sizeof root, "%s", dir); /* .../golden/<experiment> */
    char *slash = strrchr(root, '/');
    if (!slash)
        return;
    *slash = '\0'; /* .../golden: only a directory so named gets the file */
    const char *tail = strrchr(root, '/');
    if (strcmp(tail ? tail + 1 : root, "golden") != 0)
        return;
    snprintf(p, sizeof p, "%s/.gitignore", root);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    static const char text[] = "# written by repro bless: its lock and temporary files\n"
                               "*.lock\n*.tmp\n";
    ssize_t w = write(fd, text, sizeof text - 1);
    close(fd);
    if (w != (ssize_t)sizeof text - 1)
        unlink(p);
}

int repro_golden_install(const char *src_trace, const char *dest, json_t *golden, int wait_s)
{
    char dir[1100], lock[1200], tmp[1200];
    snprintf(dir, sizeof dir, "%s", dest);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (repro_mkdirs(dir))
        return -1;
    ensure_gitignore(dir);
    snprintf(lock, sizeof lock, "%s.lock", dest);
    int lfd = take_lock(lock, wait_s);
    if (lfd < 0)
        return -1;
    remove_stale_temps(dir, dest);

    /* The data goes to its own temporary file, never to the lock. */
    snprintf(tmp, sizeof tmp, "%s.XXXXXX.tmp", dest);
    int fd = mkostemps(tmp, 4, O_CLOEXEC);
    FILE *out = NULL, *in = NULL;
    int rc = 0;
    if (fd < 0) {
        tmp[0] = '\0';
        rc = repro_error_set_errno(REPRO_EIO,
                                   "cannot write the golden %s: cannot create its temporary "
                                   "file in %s",
                                   dest, dir);
        goto fail;
    }
    fchmod(fd, 0644); /* mkstemp makes 0600; a golden is a committed file */
    out = fdopen(fd, "w");
    in = fopen(src_trace, "r");
    if (!out || !in) {
        rc = !in ? repro_error_set_errno(REPRO_EIO, "cannot read %s", src_trace)
                 : repro_error_set_errno(REPRO_EIO, "cannot write the golden %s", dest);
        goto fail;
    }
    if (copy_with_header(in, out, src_trace, dest, golden)) {
        rc = -1;
        goto fail;
    }
    if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        rc = repro_error_set_errno(REPRO_EIO, "cannot write the golden %s (its temporary %s)",
                                   dest, tmp);
        goto fail;
    }
    if (injected("bless-before-rename")) {
        rc = repro_error_set(REPRO_EIO, "injected failure before rename (REPRO_FAULT)");
        goto fail;
    }
    if (rename(tmp, dest) != 0) {
        rc = repro_error_set_errno(REPRO_EIO, "cannot rename %s to %s", tmp, dest);
        goto fail;
    }
    tmp[0] = '\0';
    /* Make the rename itself durable. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
fail:
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    else if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlink(tmp);
    /* Unlink before unlocking: a waiter that locked this inode sees it gone
     * and retries on a new file (take_lock). */
    unlink(lock);
    close(lfd);
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
