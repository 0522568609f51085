/* Strict decimal counts and seeds for the command line (see numparse.h). */
#include "util/numparse.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

int repro_parse_decimal_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1; /* would wrap */
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int range_error(const char *what, const char *value, long lo, long hi)
{
    if (hi == LONG_MAX)
        return repro_error_set(REPRO_EINVAL, "%s %s: expected a decimal count >= %ld", what,
                               value, lo);
    return repro_error_set(REPRO_EINVAL, "%s %s: expected a decimal count in %ld..%ld", what,
                           value, lo, hi);
}

int repro_parse_count(const char *what, const char *value, long lo, long hi, long *out)
{
    uint64_t v;
    if (repro_parse_decimal_u64(value, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
        return range_error(what, value, lo, hi);
    *out = (long)v;
    return 0;
}

int repro_parse_count_int(const char *what, const char *value, int lo, int hi, int *out)
{
    long v;
    if (repro_parse_count(what, value, lo, hi, &v))
        return -1;
    *out = (int)v;
    return 0;
}

int repro_parse_count_list(const char *what, const char *list, long lo, long hi, long *out,
                           int max, int *n)
{
    *n = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        char tok[32];
        uint64_t v;
        int ok = len < sizeof tok;
        if (ok) {
            snprintf(tok, sizeof tok, "%.*s", (int)len, p);
            ok = repro_parse_decimal_u64(tok, &v) == 0 && v >= (uint64_t)lo && v <= (uint64_t)hi;
        }
        if (!ok)
            return repro_error_set(REPRO_EINVAL, "%s %s: '%.*s' is not a count in %ld..%ld",
                                   what, list, (int)(len > 40 ? 40 : len), p, lo, hi);
        if (*n == max)
            return repro_error_set(REPRO_EINVAL, "%s %s: more than %d entries", what, list, max);
        out[(*n)++] = (long)v;
        p += len;
        if (!*p)
            return 0;
    }
}

int repro_parse_seed(const char *what, const char *value, uint64_t *out)
{
    if (repro_parse_decimal_u64(value, out))
        return repro_error_set(REPRO_EINVAL,
                               "%s %s: expected a decimal seed in 0..18446744073709551615", what,
                               value);
    return 0;
}

int repro_parse_size(const char *what, const char *value, uint64_t lo, uint64_t *out)
{
    static const char units[] = "KkMmGgTt";
    char digits[32];
    size_t n = strspn(value, "0123456789");
    const char *p = value + n, *u = *p ? strchr(units, *p) : NULL;
    int shift = u ? 10 * (int)((u - units) / 2 + 1) : 0;
    if (u)
        p++;
    if (u && !strcmp(p, "iB"))
        p += 2;
    else if (!strcmp(p, "B"))
        p++;
    uint64_t v = 0;
    int ok = n > 0 && n < sizeof digits && !*p;
    if (ok) {
        memcpy(digits, value, n);
        digits[n] = '\0';
        ok = repro_parse_decimal_u64(digits, &v) == 0 && v <= (uint64_t)INT64_MAX >> shift &&
             (v << shift) >= lo;
    }
    if (!ok)
        return repro_error_set(REPRO_EINVAL,
                               "%s %s: expected a size such as 512M or 4G (bytes, or K, M, G, "
                               "T: binary units), at least %llu bytes",
                               what, value, (unsigned long long)lo);
    *out = v << shift;
    return 0;
}
