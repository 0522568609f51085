/* Tensor values beside a trace (values.h). */
#include "record/values.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/npy.h"

void repro_values_default_dir(char *buf, size_t len, const char *trace_path)
{
    const char *slash = strrchr(trace_path, '/');
    if (!slash)
        snprintf(buf, len, "dump");
    else
        snprintf(buf, len, "%.*s/dump", (int)(slash - trace_path), trace_path);
}

void repro_values_path(char *buf, size_t len, const char *dir, long step, const char *name)
{
    snprintf(buf, len, "%s/step-%06ld/%s.npy", dir, step, name);
}

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create the values directory", dir);
    return 0;
}

int repro_values_write(const char *dir, long step, const char *name, const char *dtype, int ndim,
                       const long *shape, const void *data, size_t nbytes)
{
    if (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16"))
        return 1;
    char sub[1200], path[1400];
    if ((size_t)snprintf(sub, sizeof sub, "%s/step-%06ld", dir, step) >= sizeof sub)
        return repro_error_set(REPRO_EINVAL, "%s: values directory name too long", dir);
    if (make_dir(dir) || make_dir(sub))
        return -1;
    repro_values_path(path, sizeof path, dir, step, name);
    return repro_npy_write(path, dtype, ndim, shape, data, nbytes);
}
