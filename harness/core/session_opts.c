/* A session's options from text (session.h): the dump steps and the
 * quarantine taps, as `repro run --dump` and `--tap-write/--tap-read`
 * spell them. */
#include "core/session.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

/* One decimal step number at *p (digits only); advances *p. */
static int step_number(const char **p, long *out)
{
    if (**p < '0' || **p > '9')
        return -1;
    long v = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (v > (LONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

static int dump_add(repro_session_opts *o, const char *what, long v)
{
    if (o->ndump == REPRO_SESSION_MAX_DUMP)
        return repro_error_set(REPRO_EINVAL, "%s: at most %d steps", what,
                               REPRO_SESSION_MAX_DUMP);
    o->dump[o->ndump++] = v;
    return 0;
}

int repro_session_parse_dump(repro_session_opts *o, const char *what, const char *spec)
{
    const char *p = spec;
    while (*p) {
        long a, b, k = 1;
        if (step_number(&p, &a))
            goto bad;
        b = a;
        if (*p == '-' && (p++, step_number(&p, &b) || b < a))
            goto bad;
        if (*p == '/' && (p++, step_number(&p, &k) || k < 1))
            goto bad;
        if (*p && *p != ',')
            goto bad;
        for (long s = a; s <= b; s += k)
            if (dump_add(o, what, s))
                return -1;
        p = *p ? p + 1 : p;
    }
    return 0;
bad:
    return repro_error_set(REPRO_EINVAL, "%s %s: expected STEP, A-B or A-B/K, comma-separated",
                           what, spec);
}

int repro_session_parse_tap(repro_session_opts *o, const char *what, int mode, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1] || (size_t)(eq - spec) >= sizeof o->tap_op)
        return repro_error_set(REPRO_EINVAL, "%s %s: expected OP=FILE", what, spec);
    snprintf(o->tap_op, sizeof o->tap_op, "%.*s", (int)(eq - spec), spec);
    o->tap_path = eq + 1;
    o->tap_mode = mode;
    return 0;
}
