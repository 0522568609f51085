/* Parameter distance between two runs from their dumps (paramdist.h). */
#include "analysis/paramdist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/npy.h"
#include "util/ulp.h"

static void dump_path(const repro_trace *t, long step, const char *name, char *buf, size_t len)
{
    const char *slash = strrchr(t->path, '/');
    snprintf(buf, len, "%.*s/dump/step-%06ld/%s.npy", slash ? (int)(slash - t->path) : 1,
             slash ? t->path : ".", step, name);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Accumulates one tensor's pair into the sums and the ULP list. */
static int add_pair(const float *a, const float *b, size_t n, double *num, double *den,
                    uint64_t **ulps, size_t *nulps, size_t *cap, repro_param_distance *out)
{
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        *num += d * d;
        *den += (double)a[i] * (double)a[i];
        uint32_t ua, ub;
        memcpy(&ua, &a[i], 4);
        memcpy(&ub, &b[i], 4);
        uint64_t u = repro_ulp_distance_f32(ua, ub);
        if (u == REPRO_ULP_NAN) {
            out->nan_pairs++;
            continue;
        }
        if ((a[i] < 0 && b[i] > 0) || (a[i] > 0 && b[i] < 0)) {
            out->sign_crossings++;
            continue;
        }
        if (*nulps == *cap) {
            *cap = *cap ? 2 * *cap : 4096;
            uint64_t *g = realloc(*ulps, *cap * sizeof *g);
            if (!g)
                return repro_error_set(REPRO_ENOMEM, "out of memory");
            *ulps = g;
        }
        (*ulps)[(*nulps)++] = u;
    }
    out->elements += (long)n;
    return 0;
}

int repro_param_distance_at(const repro_trace *a, const repro_trace *b, long step,
                            repro_param_distance *out)
{
    memset(out, 0, sizeof *out);
    const repro_trace_step *s = repro_trace_find_step(a, step);
    double num = 0, den = 0;
    uint64_t *ulps = NULL;
    size_t nulps = 0, cap = 0;
    int rc = 0, found = 0, missing = 0;
    for (int i = 0; s && i < s->ntensors && !rc; i++) {
        if (strncmp(s->tensors[i].name, "param.", 6) || strcmp(s->tensors[i].dtype, "f32"))
            continue;
        char pa[1400], pb[1400];
        dump_path(a, step, s->tensors[i].name, pa, sizeof pa);
        dump_path(b, step, s->tensors[i].name, pb, sizeof pb);
        size_t na = 0, nb = 0;
        float *da = repro_npy_read(pa, &na), *db = da ? repro_npy_read(pb, &nb) : NULL;
        if (!da || !db || na != nb) {
            missing = 1;
            repro_error_clear();
        } else {
            found = 1;
            rc = add_pair(da, db, na / 4, &num, &den, &ulps, &nulps, &cap, out);
        }
        free(da);
        free(db);
    }
    if (!rc && found && !missing) {
        out->valid = 1;
        out->rel_l2 = den > 0 ? sqrt(num) / sqrt(den) : (num > 0 ? INFINITY : 0);
        if (nulps) {
            qsort(ulps, nulps, sizeof *ulps, cmp_u64);
            out->ulp_p50 = ulps[nulps / 2];
            out->ulp_p99 = ulps[(size_t)((double)(nulps - 1) * 0.99)];
            out->ulp_max = ulps[nulps - 1];
        }
    }
    free(ulps);
    return rc ? -1 : 0;
}
