/* The .npy writer (see npy.h): magic, version 1.0, a Python-literal header
 * padded so the data starts on a 64-byte boundary, then the raw bytes. */
#include "util/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "util/outpath.h"

int repro_npy_write(const char *path, const char *dtype, int ndim, const long *shape,
                    const void *data, size_t nbytes)
{
    const char *descr = !strcmp(dtype, "f32")   ? "<f4"
                        : !strcmp(dtype, "i32") ? "<i4"
                        : !strcmp(dtype, "u32") ? "<u4"
                        : !strcmp(dtype, "f64") ? "<f8"
                        : !strcmp(dtype, "i64") ? "<i8"
                        : !strcmp(dtype, "u8")  ? "|u1"
                                                : NULL;
    if (!descr)
        return repro_error_set(REPRO_EINVAL, "%s: cannot dump dtype %s", path, dtype);
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%ld,%s", shape[i],
                      i + 1 < ndim ? " " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* 6 magic + 2 version + 2 length + dict + padding + '\n' = multiple of 64 */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    /* The output-path rule (outpath.h): whole or not at all, through a
     * symlink, a directory in the way refused naming it. */
    repro_outfile o;
    if (repro_outfile_open(&o, path, ".npy dump"))
        return -1;
    FILE *f = o.f;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    ok = ok && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    if (!ok) {
        int e = errno;
        repro_outfile_abort(&o);
        errno = e;
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", path);
    }
    return repro_outfile_commit(&o);
}

void *repro_npy_read(const char *path, size_t *nbytes)
{
    FILE *f = repro_fopen_regular(path, ".npy file");
    if (!f)
        return NULL;
    unsigned char pre[10];
    void *data = NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        repro_error_set(REPRO_EINVAL, "%s: not a version 1 .npy file", path);
        goto done;
    }
    long hlen = pre[8] | (long)pre[9] << 8;
    if (fseek(f, 0, SEEK_END) || ftell(f) < 10 + hlen) {
        repro_error_set(REPRO_EINVAL, "%s: truncated .npy file", path);
        goto done;
    }
    size_t n = (size_t)(ftell(f) - 10 - hlen);
    data = malloc(n ? n : 1);
    if (!data || fseek(f, 10 + hlen, SEEK_SET) || fread(data, 1, n, f) != n) {
        free(data);
        data = NULL;
        repro_error_set(REPRO_EINVAL, "%s: cannot read .npy data", path);
        goto done;
    }
    *nbytes = n;
done:
    fclose(f);
    return data;
}

int repro_npy_shape(const char *path, const char *descr, int maxdim, long *shape, int *ndim)
{
    FILE *f = repro_fopen_regular(path, ".npy file");
    if (!f)
        return -1;
    unsigned char pre[10];
    char head[1024];
    int rc = -1;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        repro_error_set(REPRO_EINVAL, "%s: not a version 1 .npy file", path);
        goto done;
    }
    size_t hlen = (size_t)(pre[8] | pre[9] << 8);
    if (hlen >= sizeof head || fread(head, 1, hlen, f) != hlen) {
        repro_error_set(REPRO_EINVAL, "%s: a .npy header that cannot be read", path);
        goto done;
    }
    head[hlen] = '\0';
    char want[64];
    snprintf(want, sizeof want, "'descr': '%s'", descr);
    const char *s = strstr(head, "'shape': (");
    if (!strstr(head, want) || !s) {
        repro_error_set(REPRO_EINVAL, "%s: expected dtype %s with a shape", path, descr);
        goto done;
    }
    *ndim = 0;
    for (s += 10; *s != ')';) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || *ndim == maxdim) {
            repro_error_set(REPRO_EINVAL, "%s: a shape of at most %d sizes expected", path,
                            maxdim);
            goto done;
        }
        shape[(*ndim)++] = v;
        s = end + strspn(end, ", ");
    }
    rc = 0;
done:
    fclose(f);
    return rc;
}
