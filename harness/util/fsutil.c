/* File-system helpers (see fsutil.h). */
#include "util/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
