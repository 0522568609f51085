/* Tolerance rules and the element-wise measure (tolerance.h). */
#include "analysis/tolerance.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/numparse.h"
#include "util/ulp.h"

/* A finite, non-negative number, all of s. */
static int parse_bound(const char *s, double *out)
{
    char *end;
    if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return -1;
    *out = strtod(s, &end);
    return *end || !isfinite(*out) || *out < 0 ? -1 : 0;
}

static int bad(const char *spec, const char *why)
{
    return repro_error_set(REPRO_EINVAL,
                           "diff: --tolerance '%s': %s (expected [GLOB=]ulp:N[,atol:Y], "
                           "rtol:X[,atol:Y], atol:Y or exact)", spec, why);
}

static int parse_rule(const char *spec, const char *s, repro_tol_rule *r)
{
    memset(r, 0, sizeof *r);
    if (strlen(s) >= sizeof r->text)
        return bad(spec, "too long");
    snprintf(r->text, sizeof r->text, "%s", s);
    if (!strcmp(s, "exact")) {
        r->kind = REPRO_TOL_EXACT;
        return 0;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *atol = NULL;
    if (!strncmp(buf, "ulp:", 4)) {
        r->kind = REPRO_TOL_ULP;
        char *comma = strchr(buf, ',');
        if (comma) {
            *comma = 0;
            if (strncmp(comma + 1, "atol:", 5))
                return bad(spec, "after ulp:N only ,atol:Y may follow");
            atol = comma + 6;
        }
        if (repro_parse_decimal_u64(buf + 4, &r->ulp) || r->ulp > 0xffffffffu)
            return bad(spec, "the ULP count is not a decimal number in 0..4294967295");
    } else if (!strncmp(buf, "rtol:", 5)) {
        r->kind = REPRO_TOL_REL;
        char *comma = strchr(buf, ',');
        if (comma) {
            *comma = 0;
            if (strncmp(comma + 1, "atol:", 5))
                return bad(spec, "after rtol:X only ,atol:Y may follow");
            atol = comma + 6;
        }
        if (parse_bound(buf + 5, &r->rtol))
            return bad(spec, "rtol is not a finite number >= 0");
    } else if (!strncmp(buf, "atol:", 5)) {
        r->kind = REPRO_TOL_REL;
        atol = buf + 5;
    } else {
        return bad(spec, "unknown rule");
    }
    if (atol && parse_bound(atol, &r->atol))
        return bad(spec, "atol is not a finite number >= 0");
    return 0;
}

int repro_tolerance_add(repro_tolerance *t, const char *spec)
{
    if (t->n == (int)(sizeof t->v / sizeof t->v[0]))
        return bad(spec, "more than 32 tolerances");
    repro_tol_entry *e = &t->v[t->n];
    memset(e, 0, sizeof *e);
    const char *eq = strchr(spec, '=');
    const char *rule = spec;
    if (eq) {
        if (eq == spec || (size_t)(eq - spec) >= sizeof e->glob)
            return bad(spec, "the tensor pattern before '=' is empty or over 63 bytes");
        snprintf(e->glob, sizeof e->glob, "%.*s", (int)(eq - spec), spec);
        rule = eq + 1;
    }
    if (!rule[0])
        return bad(spec, "no rule");
    if (parse_rule(spec, rule, &e->rule))
        return -1;
    t->n++;
    return 0;
}

const repro_tol_rule *repro_tolerance_for(const repro_tolerance *t, const char *name)
{
    static const repro_tol_rule exact = {REPRO_TOL_EXACT, 0, 0, 0, "exact"};
    const repro_tol_rule *def = &exact, *over = NULL;
    for (int i = 0; i < t->n; i++) {
        if (!t->v[i].glob[0])
            def = &t->v[i].rule;
        else if (fnmatch(t->v[i].glob, name, 0) == 0)
            over = &t->v[i].rule;
    }
    return over ? over : def;
}
