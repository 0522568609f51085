/* TEST-ONLY fault injection (see fault.h). */
#include "util/fault.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static int flip(const repro_fault *f, void *data, size_t nbytes);

/* "1,3": bits 1 and 3. 0, or -1 for anything but a comma list of 0..63. */
static int parse_repeats(const char *v, unsigned long long *mask)
{
    unsigned long long m = 0;
    for (const char *p = v; *p;) {
        char *end;
        if (*p < '0' || *p > '9')
            return -1;
        long k = strtol(p, &end, 10);
        if (k > 63 || (*end && *end != ','))
            return -1;
        m |= 1ULL << k;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return -1;
    }
    if (!m)
        return -1;
    *mask = m;
    return 0;
}

void repro_fault_select_screen(repro_fault *f, int rank, int repeat)
{
    if (f->replica && f->replica != rank + 1)
        f->active = 0;
    if (f->repeats && (repeat < 0 || repeat > 63 || !(f->repeats >> repeat & 1)))
        f->active = 0;
    f->replica = 0;
}

int repro_fault_from_env(repro_fault *out)
{
    memset(out, 0, sizeof *out);
    const char *spec = getenv("REPRO_FAULT");
    if (!spec || !*spec || !strncmp(spec, "bless-", 6)) /* golden.c's faults */
        return 0;
    if (!strncmp(spec, "overflow:", 9)) /* mixed.c's fault */
        return 0;
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return repro_error_set(REPRO_EINVAL, "REPRO_FAULT: too long");
    long run = 1;
    int have_step = 0;
    char *save = NULL;
    char *tok = strtok_r(buf, ":", &save);
    if (!tok || strcmp(tok, "flip"))
        return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: expected flip:step=N:tensor=NAME",
                               spec);
    while ((tok = strtok_r(NULL, ":", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: '%s' is not key=value", spec,
                                   tok);
        *eq = '\0';
        const char *v = eq + 1;
        char *end;
        long n = strtol(v, &end, 10);
        int numeric = *v && !*end && n >= 0;
        if (!strcmp(tok, "tensor") && *v && strlen(v) < sizeof out->tensor)
            strcpy(out->tensor, v);
        else if (!strcmp(tok, "step") && numeric && n >= 1)
            out->step = n, have_step = 1;
        else if (!strcmp(tok, "element") && numeric)
            out->element = n;
        else if (!strcmp(tok, "bit") && numeric && n < 32)
            out->bit = (int)n;
        else if (!strcmp(tok, "run") && numeric)
            run = n;
        else if (!strcmp(tok, "rank") && numeric && n < 65536)
            out->replica = (int)n + 1;
        else if (!strcmp(tok, "repeat") && parse_repeats(v, &out->repeats) == 0)
            ;
        else
            return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: bad '%s=%s'", spec, tok, v);
    }
    if (!have_step || !out->tensor[0])
        return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: needs step=N and tensor=NAME",
                               spec);
    const char *this_run = getenv("REPRO_CHECK_RUN");
    out->active = !this_run || strtol(this_run, NULL, 10) == run;
    return 0;
}

int repro_fault_apply(const repro_fault *f, long step, const char *name, void *data, size_t nbytes)
{
    if (!f->active || f->replica || step != f->step || strcmp(name, f->tensor) || nbytes < 4)
        return 0;
    return flip(f, data, nbytes);
}

int repro_fault_apply_replica(const repro_fault *f, int rank, long step, const char *name,
                              void *data, size_t nbytes)
{
    if (!f->active || f->replica != rank + 1 || step != f->step || strcmp(name, f->tensor) ||
        nbytes < 4)
        return 0;
    return flip(f, data, nbytes);
}

static int flip(const repro_fault *f, void *data, size_t nbytes)
{
    size_t i = (size_t)f->element % (nbytes / 4);
    uint32_t v;
    memcpy(&v, (char *)data + 4 * i, 4);
    v ^= UINT32_C(1) << f->bit;
    memcpy((char *)data + 4 * i, &v, 4);
    return 1;
}

int repro_fault_overflow_from_env(long *step)
{
    *step = 0;
    const char *spec = getenv("REPRO_FAULT");
    if (!spec || strncmp(spec, "overflow:", 9))
        return 0;
    char *end;
    const char *v = spec + 9;
    if (strncmp(v, "step=", 5))
        return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: expected overflow:step=N", spec);
    long n = strtol(v + 5, &end, 10);
    if (!v[5] || *end || n < 1)
        return repro_error_set(REPRO_EINVAL, "REPRO_FAULT=%s: expected overflow:step=N", spec);
    *step = n;
    return 0;
}

const char *repro_fault_training_spec(void)
{
    const char *spec = getenv("REPRO_FAULT");
    if (spec && (!strncmp(spec, "flip", 4) || !strncmp(spec, "overflow", 8)))
        return spec;
    return NULL;
}
