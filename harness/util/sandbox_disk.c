/* The scratch directory's total-size cap (see sandbox_disk.h). */
#include "util/sandbox_disk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <sys/mount.h>
#endif

int repro_sandbox_disk_cap(const char *dir, uint64_t bytes, char *why, size_t len)
{
#ifdef __linux__
    char opts[64];
    snprintf(opts, sizeof opts, "size=%llu,mode=0700", (unsigned long long)bytes);
    if (mount("repro-scratch", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0)
        return 0;
    snprintf(why, len, "cannot mount a tmpfs on it: %s%s", strerror(errno),
             errno == EPERM ? " (needs root)" : "");
    return -1;
#else
    (void)dir, (void)bytes;
    snprintf(why, len, "no tmpfs mounts on this system");
    return -1;
#endif
}

void repro_sandbox_disk_release(const char *dir)
{
#ifdef __linux__
    umount2(dir, MNT_DETACH);
#else
    (void)dir;
#endif
}
