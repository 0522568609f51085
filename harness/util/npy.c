/* The .npy writer (see npy.h): magic, version 1.0, a Python-literal header
 * padded so the data starts on a 64-byte boundary, then the raw bytes. */
#include "util/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
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

/* ---- the header (repro_npy_load) ------------------------------------------ */

static const struct {
    const char *descr, *dtype;
    size_t size;
} npy_types[] = {{"<f4", "f32", 4}, {"<f8", "f64", 8}, {"<i4", "i32", 4},
                 {"<u4", "u32", 4}, {"<i8", "i64", 8}, {"|u1", "u8", 1}};

/* The value of 'key' in the header dict (a Python literal): a pointer just
 * past "'key':" and its spaces, or NULL. */
static const char *dict_value(const char *dict, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = strstr(dict, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    return p;
}

static int parse_shape(const char *p, repro_npy *out, size_t *numel)
{
    if (*p++ != '(')
        return -1;
    *numel = 1;
    out->ndim = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            return 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || out->ndim == 8 || (v > 0 && *numel > SIZE_MAX / 16 / (size_t)v))
            return -1;
        out->shape[out->ndim++] = v;
        *numel *= (size_t)v;
        p = end;
    }
}

static int parse_header(const char *path, const char *dict, repro_npy *out)
{
    const char *d = dict_value(dict, "descr"), *fo = dict_value(dict, "fortran_order"),
               *sh = dict_value(dict, "shape");
    if (!d || !fo || !sh)
        return repro_error_set(REPRO_EINVAL, "%s: .npy header without descr, fortran_order "
                                             "or shape", path);
    if (strncmp(fo, "False", 5) != 0)
        return repro_error_set(REPRO_EINVAL, "%s: Fortran-order .npy data is not read", path);
    size_t i, n = sizeof npy_types / sizeof npy_types[0];
    for (i = 0; i < n; i++)
        if (d[0] == '\'' && !strncmp(d + 1, npy_types[i].descr, 3) && d[4] == '\'')
            break;
    if (i == n)
        return repro_error_set(REPRO_EINVAL, "%s: .npy dtype %.6s is not one repro reads "
                                             "(<f4 <f8 <i4 <u4 <i8 |u1)", path, d);
    snprintf(out->dtype, sizeof out->dtype, "%s", npy_types[i].dtype);
    size_t numel;
    if (parse_shape(sh, out, &numel))
        return repro_error_set(REPRO_EINVAL, "%s: .npy shape does not parse", path);
    out->nbytes = numel * npy_types[i].size;
    return 0;
}

int repro_npy_load(const char *path, repro_npy *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = repro_fopen_regular(path, ".npy file");
    if (!f)
        return -1;
    unsigned char pre[10];
    static _Thread_local char dict[65536];
    int rc = -1;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        repro_error_set(REPRO_EINVAL, "%s: not a version 1 .npy file", path);
        goto done;
    }
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (fread(dict, 1, hlen, f) != hlen) {
        repro_error_set(REPRO_EINVAL, "%s: truncated .npy header", path);
        goto done;
    }
    dict[hlen] = 0;
    if (parse_header(path, dict, out))
        goto done;
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) || ftell(f) - here != (long)out->nbytes ||
        fseek(f, here, SEEK_SET)) {
        repro_error_set(REPRO_EINVAL, "%s: the data is not the %zu bytes its shape says", path,
                        out->nbytes);
        goto done;
    }
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data || fread(out->data, 1, out->nbytes, f) != out->nbytes) {
        repro_error_set(REPRO_EINVAL, "%s: cannot read .npy data", path);
        goto done;
    }
    rc = 0;
done:
    fclose(f);
    if (rc)
        repro_npy_free(out);
    return rc;
}

void repro_npy_free(repro_npy *n)
{
    free(n->data);
    n->data = NULL;
}
