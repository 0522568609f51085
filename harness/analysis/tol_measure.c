/* The element-wise measure of tolerance.h: how many elements differ, how
 * many are past the rule, the largest ULP and relative distance. A is the
 * reference (rtol scales |a|), as numpy.allclose's second argument is. */
#include <math.h>
#include <string.h>

#include "analysis/tolerance.h"
#include "util/error.h"
#include "util/ulp.h"

/* The float64 analogue of util/ulp.h's distance: the same ordered line. */
static uint64_t ulp_f64(uint64_t a, uint64_t b)
{
    if (a == b)
        return 0;
    const uint64_t sign = (uint64_t)1 << 63, mag_mask = sign - 1;
    const uint64_t exp = (uint64_t)0x7ff << 52;
    if (((a & exp) == exp && (a & ((1ull << 52) - 1))) ||
        ((b & exp) == exp && (b & ((1ull << 52) - 1))))
        return REPRO_ULP_NAN;
    uint64_t ma = a & mag_mask, mb = b & mag_mask;
    if ((a & sign) == (b & sign))
        return ma > mb ? ma - mb : mb - ma;
    return ma + mb; /* across zero (both zeros at 0) */
}

/* One differing pair: fold it into m, say whether the rule holds. */
static int within(const repro_tol_rule *r, double a, double b, uint64_t ulp,
                  repro_tol_measure *m)
{
    if (ulp > m->max_ulp)
        m->max_ulp = ulp;
    double d = fabs(a - b);
    if (isfinite(a) && isfinite(b)) {
        if (d > m->max_abs)
            m->max_abs = d;
        double rel = a != 0 ? d / fabs(a) : (d == 0 ? 0 : INFINITY);
        if (rel > m->max_rel)
            m->max_rel = rel;
    } else {
        m->max_rel = INFINITY;
    }
    switch (r->kind) {
    case REPRO_TOL_ULP:
        return ulp <= r->ulp || (isfinite(a) && isfinite(b) && d <= r->atol);
    case REPRO_TOL_REL:
        return isfinite(a) && isfinite(b) && d <= r->atol + r->rtol * fabs(a);
    default:
        return 0;
    }
}

static void count(repro_tol_measure *m, long i, int ok)
{
    m->differ++;
    if (!ok) {
        if (m->first_outside < 0)
            m->first_outside = i;
        m->outside++;
    }
}

static double int_value(const char *dtype, const unsigned char *p, long i)
{
    if (!strcmp(dtype, "i32")) {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    if (!strcmp(dtype, "u32")) {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    if (!strcmp(dtype, "i64")) {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return (double)v;
    }
    return p[i];
}

int repro_tol_measure_values(const repro_tol_rule *rule, const char *dtype, const void *a,
                             const void *b, size_t nbytes, repro_tol_measure *m)
{
    memset(m, 0, sizeof *m);
    m->first_outside = -1;
    const unsigned char *pa = a, *pb = b;
    if (!strcmp(dtype, "f32")) {
        m->numel = (long)(nbytes / 4);
        for (long i = 0; i < m->numel; i++) {
            uint32_t ua, ub;
            float fa, fb;
            memcpy(&ua, pa + 4 * i, 4);
            memcpy(&ub, pb + 4 * i, 4);
            if (ua == ub)
                continue;
            memcpy(&fa, &ua, 4);
            memcpy(&fb, &ub, 4);
            count(m, i, within(rule, fa, fb, repro_ulp_distance_f32(ua, ub), m));
        }
    } else if (!strcmp(dtype, "f64")) {
        m->numel = (long)(nbytes / 8);
        for (long i = 0; i < m->numel; i++) {
            uint64_t ua, ub;
            double fa, fb;
            memcpy(&ua, pa + 8 * i, 8);
            memcpy(&ub, pb + 8 * i, 8);
            if (ua == ub)
                continue;
            memcpy(&fa, &ua, 8);
            memcpy(&fb, &ub, 8);
            count(m, i, within(rule, fa, fb, ulp_f64(ua, ub), m));
        }
    } else {
        size_t es = !strcmp(dtype, "u8") ? 1 : !strcmp(dtype, "i64") ? 8
                    : (!strcmp(dtype, "i32") || !strcmp(dtype, "u32")) ? 4 : 0;
        if (!es)
            return repro_error_set(REPRO_EINVAL, "dtype %s has no values to compare", dtype);
        m->numel = (long)(nbytes / es);
        for (long i = 0; i < m->numel; i++) {
            if (!memcmp(pa + es * i, pb + es * i, es))
                continue;
            double va = int_value(dtype, pa, i), vb = int_value(dtype, pb, i);
            /* Integers do not round: any difference is past every rule. */
            within(&(repro_tol_rule){.kind = REPRO_TOL_EXACT}, va, vb, REPRO_ULP_NAN, m);
            count(m, i, 0);
        }
    }
    return 0;
}
