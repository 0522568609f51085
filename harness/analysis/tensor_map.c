/* The tensor-name map of `repro diff --map` (tensor_map.h). */
#include "analysis/tensor_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/lines.h"

/* One name: the bytes up to a space, tab or '=' of *p, advancing *p. */
static int take_name(const char **p, char out[64])
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
    size_t n = strcspn(*p, " \t=");
    if (n == 0 || n >= 64)
        return -1;
    memcpy(out, *p, n);
    out[n] = 0;
    *p += n;
    while (**p == ' ' || **p == '\t')
        (*p)++;
    return 0;
}

static int parse_line(repro_tensor_map *m, const char *line, int lineno, repro_map_entry *e)
{
    memset(e, 0, sizeof *e);
    e->line = lineno;
    const char *p = line;
    if (take_name(&p, e->b) || *p++ != '=' || take_name(&p, e->a) || *p)
        return repro_error_set(REPRO_EINVAL, "%s:%d: expected 'B_NAME = A_NAME' (names of 1 to "
                               "63 bytes without spaces or '=')", m->path, lineno);
    for (int i = 0; i < m->n; i++) {
        if (!strcmp(m->v[i].b, e->b))
            return repro_error_set(REPRO_EINVAL, "%s:%d: B's %s is already mapped on line %d",
                                   m->path, lineno, e->b, m->v[i].line);
        if (!strcmp(m->v[i].a, e->a))
            return repro_error_set(REPRO_EINVAL, "%s:%d: A's %s is already mapped on line %d",
                                   m->path, lineno, e->a, m->v[i].line);
    }
    return 0;
}

static int push(repro_tensor_map *m, const repro_map_entry *e)
{
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 32;
        repro_map_entry *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v)
            return repro_error_set(REPRO_ENOMEM, "%s: out of memory", m->path);
        m->v = v;
        m->cap = cap;
    }
    m->v[m->n++] = *e;
    return 0;
}

int repro_tensor_map_load(repro_tensor_map *m, const char *path)
{
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    repro_lines lr;
    if (repro_lines_open(&lr, path, "tensor map", 4096))
        return -1;
    char *line;
    size_t len;
    int complete, got, lineno = 0, rc = 0;
    while (!rc && (got = repro_lines_next(&lr, &line, &len, &complete)) == REPRO_LINES_OK) {
        lineno++;
        if (strlen(line) != len) {
            rc = repro_error_set(REPRO_EINVAL, "%s:%d: a NUL byte in the line", path, lineno);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        size_t n = strlen(line);
        while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (!line[strspn(line, " \t")])
            continue;
        repro_map_entry e;
        rc = parse_line(m, line, lineno, &e) || push(m, &e) ? -1 : 0;
    }
    if (!rc && got == REPRO_LINES_TOO_LONG)
        rc = repro_error_set(REPRO_EINVAL, "%s:%d: line over 4096 bytes", path, lineno + 1);
    else if (!rc && got == REPRO_LINES_ERROR)
        rc = repro_error_set_errno(REPRO_EIO, "%s: read error", path);
    repro_lines_close(&lr);
    if (rc)
        repro_tensor_map_release(m);
    return rc;
}

repro_map_entry *repro_tensor_map_by_a(repro_tensor_map *m, const char *a)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->v[i].a, a))
            return &m->v[i];
    return NULL;
}

repro_map_entry *repro_tensor_map_by_b(repro_tensor_map *m, const char *b)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->v[i].b, b))
            return &m->v[i];
    return NULL;
}

void repro_tensor_map_release(repro_tensor_map *m)
{
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}
