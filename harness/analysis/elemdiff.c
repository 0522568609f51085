/* Element-level differences (see elemdiff.h). */
#include "analysis/elemdiff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "record/hash.h"
#include "util/npy.h"
#include "util/ulp.h"

void repro_element_diff_compute(const void *a, const void *b, size_t nbytes, int is_float,
                                const char *tensor, repro_element_diff *out)
{
    memset(out, 0, sizeof *out);
    out->valid = 1;
    snprintf(out->tensor, sizeof out->tensor, "%s", tensor);
    size_t n = nbytes / 4;
    out->numel = (long)n;
    out->first = out->last = -1;
    const uint32_t *ua = a, *ub = b;
    for (size_t i = 0; i < n; i++) {
        if (ua[i] == ub[i])
            continue;
        if (out->first < 0)
            out->first = (long)i;
        out->last = (long)i;
        out->count++;
        if (!is_float)
            continue;
        float fa, fb;
        memcpy(&fa, &ua[i], 4);
        memcpy(&fb, &ub[i], 4);
        if (isfinite(fa) && isfinite(fb)) {
            double d = fabs((double)fa - (double)fb);
            if (d > out->max_abs)
                out->max_abs = d;
        }
        uint64_t u = repro_ulp_distance_f32(ua[i], ub[i]);
        if (u > out->max_ulp)
            out->max_ulp = u;
    }
    long per_leaf = REPRO_LEAF_BYTES / 4;
    out->first_leaf = out->first < 0 ? -1 : out->first / per_leaf;
    out->last_leaf = out->last < 0 ? -1 : out->last / per_leaf;
}

int repro_element_diff_files(const char *path_a, const char *path_b, int is_float,
                             const char *tensor, repro_element_diff *out)
{
    size_t na = 0, nb = 0;
    void *a = repro_npy_read(path_a, &na);
    if (!a)
        return -1;
    void *b = repro_npy_read(path_b, &nb);
    if (!b) {
        free(a);
        return -1;
    }
    int rc = 0;
    if (na != nb)
        rc = repro_error_set(REPRO_EINVAL, "%s and %s hold different sizes", path_a, path_b);
    else
        repro_element_diff_compute(a, b, na, is_float, tensor, out);
    free(a);
    free(b);
    return rc;
}
