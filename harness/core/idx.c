/* IDX reader (see idx.h): validates the header strictly and reads the whole
 * payload into memory, so a corrupt or truncated dataset is refused with a
 * message that names the file, instead of silently training on garbage. */
#include "core/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fsutil.h"

/* Far above MNIST (47 MB) yet small enough that a corrupt header asking for
 * 2^64 bytes is rejected before malloc is even tried. */
#define IDX_MAX_BYTES ((size_t)1 << 30)

static const char *type_name(int t)
{
    switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "unknown";
    }
}

void repro_idx_release(repro_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

int repro_idx_read(repro_idx *out, const char *path)
{
    memset(out, 0, sizeof *out);
    /* Regular files only: a FIFO given as a data path used to hang here. */
    FILE *f = repro_fopen_regular(path, "IDX file");
    if (!f)
        return -1;

    int rc = -1;
    uint8_t *data = NULL;
    unsigned char head[4 + 4 * REPRO_IDX_MAX_DIMS];

    size_t got = fread(head, 1, 4, f);
    if (got < 4) {
        repro_error_set(REPRO_EINVAL,
                        "%s: truncated header: expected at least 4 bytes, found %zu", path, got);
        goto done;
    }
    if (head[0] != 0 || head[1] != 0) {
        repro_error_set(REPRO_EINVAL,
                        "%s: bad magic: found 0x%02x 0x%02x, expected 0x00 0x00 (not an IDX file)",
                        path, head[0], head[1]);
        goto done;
    }
    int type = head[2];
    if (type != 0x08) {
        repro_error_set(REPRO_EINVAL,
                        "%s: unsupported IDX data type 0x%02x (%s); only 0x08 (unsigned byte) is "
                        "supported",
                        path, type, type_name(type));
        goto done;
    }
    int ndim = head[3];
    if (ndim < 1 || ndim > REPRO_IDX_MAX_DIMS) {
        repro_error_set(REPRO_EINVAL, "%s: bad number of dimensions %d (must be 1..%d)", path,
                        ndim, REPRO_IDX_MAX_DIMS);
        goto done;
    }
    size_t want = 4 * (size_t)ndim;
    got = fread(head + 4, 1, want, f);
    if (got < want) {
        repro_error_set(REPRO_EINVAL, "%s: truncated header: expected %zu bytes, found %zu",
                        path, 4 + want, 4 + got);
        goto done;
    }

    /* Overflow-safe product: every factor is checked against the cap before
     * multiplying, so the running product never exceeds IDX_MAX_BYTES. */
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        const unsigned char *p = head + 4 + 4 * d;
        uint32_t dim = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (dim == 0) {
            repro_error_set(REPRO_EINVAL, "%s: dimension %d is zero", path, d);
            goto done;
        }
        if (dim > IDX_MAX_BYTES / count) {
            repro_error_set(REPRO_EINVAL, "%s: data too large: dimensions exceed the limit of %zu bytes",
                            path, IDX_MAX_BYTES);
            goto done;
        }
        count *= dim;
        out->dims[d] = dim;
    }

    data = malloc(count);
    if (!data) {
        repro_error_set(REPRO_ENOMEM, "%s: out of memory for %zu bytes of data", path, count);
        goto done;
    }
    got = fread(data, 1, count, f);
    if (got < count) {
        if (ferror(f))
            repro_error_set_errno(REPRO_EINVAL, "%s: read error", path);
        else
            repro_error_set(REPRO_EINVAL,
                            "%s: truncated data: expected %zu bytes of data, found %zu", path,
                            count, got);
        goto done;
    }
    /* Count what follows, so the message says how much is wrong. */
    size_t extra = 0;
    unsigned char buf[4096];
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        extra += got;
    if (extra) {
        repro_error_set(REPRO_EINVAL, "%s: %zu trailing bytes after the %zu bytes of data",
                        path, extra, count);
        goto done;
    }

    out->ndim = ndim;
    out->count = count;
    out->data = data;
    data = NULL;
    rc = 0;
done:
    free(data);
    fclose(f);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}
