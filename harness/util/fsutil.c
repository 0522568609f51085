/* File-system helpers (see fsutil.h). */
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/error.h"

int repro_mkdirs(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s/", dir) >= (int)sizeof buf)
        return repro_error_set(REPRO_EINVAL, "%s: path too long", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return repro_error_set_errno(REPRO_EIO, "%s: cannot create directory", buf);
        *p = '/';
    }
    return 0;
}

int repro_mkdirs_for(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return repro_error_set(REPRO_EINVAL, "%s: path too long", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return repro_mkdirs(dir);
}

void repro_fsync_parent_dir(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

/* "(N MiB free there)", from statvfs: what is left for us (f_bavail). */
static void free_space(const char *dir, char *buf, size_t len)
{
    struct statvfs vs;
    if (statvfs(dir, &vs) != 0) {
        snprintf(buf, len, "free space unknown: %s", strerror(errno));
        return;
    }
    unsigned long long b = (unsigned long long)vs.f_bavail * vs.f_frsize;
    if (b < (1u << 20))
        snprintf(buf, len, "%llu bytes free there", b);
    else
        snprintf(buf, len, "%.1f MiB free there", (double)b / (1024.0 * 1024.0));
}

int repro_write_probe(const char *dir, char *why, size_t len)
{
    char p[4200], space[96];
    snprintf(p, sizeof p, "%s/.repro-write-probe-%ld", dir, (long)getpid());
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int e = 0;
    const char *step = "cannot create a file";
    if (fd < 0) {
        e = errno;
    } else {
        ssize_t w = write(fd, "x", 1);
        if (w != 1) {
            e = w < 0 ? errno : EIO;
            step = "cannot write";
        } else if (fsync(fd) != 0) {
            e = errno;
            step = "cannot write (fsync)";
        }
        if (close(fd) != 0 && !e) {
            e = errno;
            step = "cannot write (close)";
        }
        unlink(p);
    }
    if (!e)
        return 0;
    free_space(dir, space, sizeof space);
    snprintf(why, len, "%s: %s (%s)", step, strerror(e), space);
    return -1;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

int repro_open_regular(const char *path, const char *what, int *fd_out)
{
    *fd_out = -1;
    /* O_NONBLOCK: open(2) of a FIFO with no writer blocks forever without
     * it; O_NOCTTY: a terminal device must not become ours. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (what)
            return repro_error_set_errno(REPRO_EINVAL, "%s: cannot open %s", path, what);
        return repro_error_set_errno(REPRO_EINVAL, "%s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = repro_error_set_errno(REPRO_EINVAL, "%s: cannot stat", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return repro_error_set(REPRO_EINVAL,
                               "%s: not a regular file (%s): only regular files are read%s%s",
                               path, file_kind(st.st_mode), what ? " as " : "", what ? what : "");
    }
    /* Reads of a regular file never block anyway; clear the flag so that no
     * reader has to think about EAGAIN. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int rc = repro_error_set_errno(REPRO_EINVAL, "%s: fcntl", path);
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

FILE *repro_fopen_regular(const char *path, const char *what)
{
    int fd;
    if (repro_open_regular(path, what, &fd))
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        repro_error_set_errno(REPRO_ENOMEM, "%s: fdopen", path);
        close(fd);
    }
    return f;
}
