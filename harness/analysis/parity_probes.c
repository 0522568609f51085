/* The probes file of `repro parity` (parity.h): one probe per line, read
 * strictly so that both sides are given exactly the same inputs; and the
 * options' batch sizes. */
#include "analysis/parity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/lines.h"
#include "util/numparse.h"

void repro_parity_opts_init(repro_parity_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sizes[0] = 1;
    o->sizes[1] = 7;
    o->sizes[2] = 64;
    o->nsizes = 3;
}

int repro_parity_parse_sizes(repro_parity_opts *o, const char *what, const char *list)
{
    long sizes[REPRO_PARITY_MAX_SIZES];
    if (repro_parse_count_list(what, list, 1, REPRO_PARITY_MAX_BATCH, sizes,
                               REPRO_PARITY_MAX_SIZES, &o->nsizes))
        return -1;
    for (int i = 0; i < o->nsizes; i++)
        o->sizes[i] = (int)sizes[i];
    return 0;
}

static int add_probe(repro_parity_probes *ps, int line, const char *text, size_t len)
{
    if (ps->n == REPRO_PARITY_MAX_PROBES)
        return repro_error_set(REPRO_EINVAL, "%s:%d: more than %d probes", ps->path, line,
                               REPRO_PARITY_MAX_PROBES);
    if (len > REPRO_PARITY_PROBE_LEN)
        return repro_error_set(REPRO_EINVAL, "%s:%d: a probe of %zu bytes (at most %d)",
                               ps->path, line, len, REPRO_PARITY_PROBE_LEN);
    for (size_t i = 0; i < len; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            return repro_error_set(REPRO_EINVAL,
                                   "%s:%d: byte %zu is not printable ASCII (0x%02x)", ps->path,
                                   line, i + 1, (unsigned char)text[i]);
    if (ps->n % 64 == 0) {
        repro_parity_probe *p = realloc(ps->p, (size_t)(ps->n + 64) * sizeof *p);
        if (!p)
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        ps->p = p;
    }
    ps->p[ps->n].line = line;
    memcpy(ps->p[ps->n].text, text, len);
    ps->p[ps->n++].text[len] = '\0';
    return 0;
}

/* One line: trimmed, skipped when blank or a comment. 0 or -1. */
static int read_line(repro_parity_probes *ps, int lineno, char *line, size_t len)
{
    if (strlen(line) != len)
        return repro_error_set(REPRO_EINVAL, "%s:%d: a NUL byte in a probe", ps->path, lineno);
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
        line[--len] = '\0';
    size_t start = strspn(line, " \t");
    if (start == len || line[start] == '#')
        return 0;
    return add_probe(ps, lineno, line + start, len - start);
}

int repro_parity_probes_load(repro_parity_probes *ps, const char *path)
{
    memset(ps, 0, sizeof *ps);
    snprintf(ps->path, sizeof ps->path, "%s", path);
    repro_lines lr;
    if (repro_lines_open(&lr, path, "probes file", 4096))
        return -1;
    char *line;
    size_t len;
    int complete, rc = 0, lineno = 0, got;
    while (rc == 0 && (got = repro_lines_next(&lr, &line, &len, &complete)) == REPRO_LINES_OK)
        rc = read_line(ps, ++lineno, line, len);
    if (rc == 0 && got == REPRO_LINES_TOO_LONG)
        rc = repro_error_set(REPRO_EINVAL, "%s:%d: a line over 4096 bytes", path, lineno + 1);
    else if (rc == 0 && got == REPRO_LINES_ERROR)
        rc = repro_error_set(REPRO_EIO, "%s: cannot read it", path);
    repro_lines_close(&lr);
    if (rc == 0 && ps->n == 0)
        rc = repro_error_set(REPRO_EINVAL, "%s:%d: no probes (one per line; '#' comments)",
                             path, lineno);
    if (rc)
        repro_parity_probes_free(ps);
    return rc;
}

int repro_parity_probes_default(repro_parity_probes *ps, int n)
{
    memset(ps, 0, sizeof *ps);
    char text[32];
    for (int i = 0; i < n; i++) {
        int len = snprintf(text, sizeof text, "test:%d", i);
        if (add_probe(ps, i + 1, text, (size_t)len)) {
            repro_parity_probes_free(ps);
            return -1;
        }
    }
    return 0;
}

void repro_parity_probes_free(repro_parity_probes *ps)
{
    free(ps->p);
    ps->p = NULL;
    ps->n = 0;
}

int repro_parity_probe_sample(const repro_parity_probes *ps, int i, long limit, long *sample)
{
    const repro_parity_probe *p = &ps->p[i];
    const char *where = ps->path[0] ? ps->path : "(default probes)";
    char *end;
    if (strncmp(p->text, "test:", 5) || p->text[5] < '0' || p->text[5] > '9')
        return repro_error_set(REPRO_EINVAL,
                               "%s:%d: '%s': a built-in experiment's probe is test:N "
                               "(held-out sample N)",
                               where, p->line, p->text);
    long v = strtol(p->text + 5, &end, 10);
    if (*end || v < 0 || v >= limit)
        return repro_error_set(REPRO_EINVAL,
                               "%s:%d: '%s': expected test:N with N in 0..%ld (the held-out "
                               "samples)",
                               where, p->line, p->text, limit - 1);
    *sample = v;
    return 0;
}
