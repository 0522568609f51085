/* The one rule for user-named output paths (see outpath.h).
 *
 * What the path is, is asked of the kernel first (stat follows symlinks,
 * magic ones such as /dev/stdout -> /proc/self/fd/1 -> pipe:[..] too).
 * Only a path that does not exist is followed by hand, link by link, to
 * find where a dangling symlink would create its file. Every file opened is
 * checked again with fstat, so a path swapped between the look and the
 * open is refused rather than written. */
#include "util/outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

typedef enum {
    OUT_REPLACE, /* a regular file or a new path: temporary + rename */
    OUT_DIRECT,  /* a character device or FIFO: written in place */
    OUT_OUR_FD   /* /dev/stdout and the like: our own open file, shared */
} out_kind;

/* The descriptor a name for one of our own open files stands for
 * (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), or -1. Such a
 * file is written through that descriptor, at its offset, as a shell's
 * redirection would have it: reopening it would truncate what was
 * written before (`repro diff ... --plot /dev/stdout > log`), and a rename
 * over it would leave the shell's descriptor on a deleted file. */
static int our_fd(const char *path)
{
    int fd = -1;
    if (!strcmp(path, "/dev/stdout"))
        fd = 1;
    else if (!strcmp(path, "/dev/stderr"))
        fd = 2;
    else {
        const char *num = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                          : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                                  : NULL;
        char *end;
        long v = num && num[0] >= '0' && num[0] <= '9' ? strtol(num, &end, 10) : -1;
        if (v >= 0 && v < INT_MAX && !*end)
            fd = (int)v;
    }
    return fd >= 0 && fcntl(fd, F_GETFD) >= 0 ? fd : -1;
}

#define ONLY " (only a regular file, a new path, a character device or a FIFO is written, " \
             "directly or through symlinks)"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "it is a directory" ONLY;
    if (S_ISSOCK(m))
        return "it is a socket" ONLY;
    if (S_ISBLK(m))
        return "it is a block device" ONLY;
    return "it is not a regular file" ONLY;
}

static const char *named(const char *what)
{
    return what ? what : "output";
}

static int refuse(const char *path, const char *what, const char *why)
{
    return repro_error_set(REPRO_EIO, "%s: cannot write %s: %s", path, named(what), why);
}

/* The directory part of `path` ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* A path that does not exist: itself, or where the chain of symlinks it
 * starts ends. Its directory must exist. */
static int resolve_missing(const char *path, const char *what, char *target, size_t len)
{
    char cur[PATH_MAX], link[PATH_MAX], dir[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    struct stat st;
    for (int hop = 0; hop < 40 && lstat(cur, &st) == 0; hop++) {
        if (!S_ISLNK(st.st_mode))
            return refuse(path, what, "it changed while being looked at");
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0)
            return repro_error_set_errno(REPRO_EIO, "%s: cannot read the symlink %s", path, cur);
        link[n] = '\0';
        dir_of(cur, dir, sizeof dir);
        if (link[0] == '/')
            snprintf(cur, sizeof cur, "%s", link);
        else if ((size_t)snprintf(cur, sizeof cur, "%s/%s", dir, link) >= sizeof cur)
            return refuse(path, what, "its symlinks lead to a path too long");
    }
    if (errno != ENOENT)
        return refuse(path, what, "its symlinks loop or cannot be followed");
    dir_of(cur, dir, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "the directory %s does not exist", dir);
        return refuse(path, what, why);
    }
    snprintf(target, len, "%s", cur);
    return 0;
}

/* What is at `path`, by the rule: fills o->target and *kind, and *mode
 * with an existing regular file's permissions (0: none). */
static int classify(repro_outfile *o, const char *what, out_kind *kind, mode_t *mode)
{
    struct stat st, lst;
    *mode = 0;
    if (our_fd(o->path) >= 0) {
        *kind = OUT_OUR_FD;
        snprintf(o->target, sizeof o->target, "%s", o->path);
        return 0;
    }
    if (stat(o->path, &st) == 0) {
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            *kind = OUT_DIRECT;
            snprintf(o->target, sizeof o->target, "%s", o->path);
            return 0;
        }
        if (!S_ISREG(st.st_mode))
            return refuse(o->path, what, kind_of(st.st_mode));
        *kind = OUT_REPLACE;
        *mode = st.st_mode & 07777;
        if (lstat(o->path, &lst) == 0 && !S_ISLNK(lst.st_mode)) {
            snprintf(o->target, sizeof o->target, "%s", o->path);
            return 0;
        }
        char real[PATH_MAX];
        if (!realpath(o->path, real))
            return repro_error_set_errno(REPRO_EIO, "%s: cannot follow its symlinks", o->path);
        snprintf(o->target, sizeof o->target, "%s", real);
        return 0;
    }
    if (errno != ENOENT)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot write %s", o->path, named(what));
    *kind = OUT_REPLACE;
    return resolve_missing(o->path, what, o->target, sizeof o->target);
}

/* A new temporary file beside o->target (same directory: rename stays
 * within one file system), with the permissions of the file it replaces
 * or those of any new file (0666 less the umask), or `mode` when the
 * caller asks for it (created so: a private key is never readable). */
static int open_temporary(repro_outfile *o, mode_t mode)
{
    static atomic_uint seq;
    for (int attempt = 0; attempt < 100; attempt++) {
        if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%u", o->target, (long)getpid(),
                             atomic_fetch_add(&seq, 1)) >= sizeof o->tmp)
            return repro_error_set(REPRO_EINVAL, "%s: path too long", o->path);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                      mode ? mode : 0666);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        if (mode) /* the replaced file's permissions; best effort */
            (void)fchmod(fd, mode);
        return fd;
    }
    int e = errno;
    o->tmp[0] = '\0';
    errno = e;
    return repro_error_set_errno(REPRO_EIO, "%s: cannot create a file beside %s", o->path,
                                 o->target);
}

/* Opens in place: a device or FIFO as it is (never created), or, for the
 * streaming form, the regular file truncated. fstat confirms the kind. */
static int open_in_place(repro_outfile *o, out_kind kind, const char *what)
{
    int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC;
    if (kind == OUT_REPLACE)
        flags |= O_CREAT | O_TRUNC;
    int fd = open(kind == OUT_DIRECT ? o->path : o->target, flags, 0666);
    if (fd < 0)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot write %s", o->path, named(what));
    struct stat st;
    int ok = fstat(fd, &st) == 0 &&
             (kind == OUT_DIRECT ? S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)
                                 : S_ISREG(st.st_mode));
    if (!ok) {
        close(fd);
        return refuse(o->path, what, "it changed while being opened");
    }
    return fd;
}

/* stream: write a regular file in place; new_mode (exclusive): never over
 * an existing file, a new one created with these permissions. */
static int open_by_rule(repro_outfile *o, const char *path, const char *what, int stream,
                        mode_t new_mode)
{
    memset(o, 0, sizeof *o);
    if (!path || !path[0])
        return repro_error_set(REPRO_EINVAL, "no path given for the %s", named(what));
    if ((size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path)
        return repro_error_set(REPRO_EINVAL, "%s: path too long", path);
    out_kind kind;
    mode_t mode;
    if (classify(o, what, &kind, &mode))
        return -1;
    struct stat st;
    if (new_mode && kind == OUT_REPLACE && stat(o->target, &st) == 0) /* a file is there */
        return repro_error_set(REPRO_EINVAL, "cannot create %s: File exists", path);
    if (new_mode) {
        o->exclusive = 1;
        mode = new_mode;
    }
    int fd = kind == OUT_OUR_FD                  ? fcntl(our_fd(o->path), F_DUPFD_CLOEXEC, 3)
             : kind == OUT_DIRECT || stream ? open_in_place(o, kind, what)
                                            : open_temporary(o, mode);
    if (kind == OUT_OUR_FD) { /* what our own streams hold goes first */
        fflush(stdout);
        fflush(stderr);
    }
    if (fd < 0 && kind == OUT_OUR_FD)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot write %s", path, named(what));
    if (fd < 0)
        return -1;
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        if (o->tmp[0])
            unlink(o->tmp);
        errno = e;
        return repro_error_set_errno(REPRO_EIO, "%s: cannot write %s", path, named(what));
    }
    return 0;
}

int repro_outfile_open(repro_outfile *o, const char *path, const char *what)
{
    return open_by_rule(o, path, what, 0, 0);
}

int repro_outfile_open_stream(repro_outfile *o, const char *path, const char *what)
{
    return open_by_rule(o, path, what, 1, 0);
}

int repro_outfile_open_new(repro_outfile *o, const char *path, const char *what, mode_t mode)
{
    return open_by_rule(o, path, what, 0, mode ? mode : 0600);
}

int repro_outfile_commit(repro_outfile *o)
{
    int bad = fflush(o->f) != 0 || ferror(o->f);
    if (!bad && o->tmp[0])
        bad = fsync(fileno(o->f)) != 0;
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    /* exclusive: link() fails rather than replace a file put there since */
    if (!bad && o->tmp[0] &&
        (o->exclusive ? link(o->tmp, o->target) : rename(o->tmp, o->target)) != 0) {
        bad = 1;
        e = errno;
    }
    if (o->tmp[0] && (bad || o->exclusive))
        unlink(o->tmp);
    if (bad) {
        errno = e;
        if (o->exclusive && e == EEXIST)
            return repro_error_set(REPRO_EINVAL, "cannot create %s: File exists", o->path);
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", o->path);
    }
    if (o->tmp[0])
        repro_fsync_parent_dir(o->target);
    return 0;
}

void repro_outfile_abort(repro_outfile *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = '\0';
}

int repro_outfile_write(const char *path, const char *what, const void *data, size_t len)
{
    repro_outfile o;
    if (repro_outfile_open(&o, path, what))
        return -1;
    if (len && fwrite(data, 1, len, o.f) != len) {
        int e = errno;
        repro_outfile_abort(&o);
        errno = e;
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", path);
    }
    return repro_outfile_commit(&o);
}
