/* File-system helpers (see fsutil.h). */
#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
