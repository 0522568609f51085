/* `repro diff --tolerance` (tol_diff.h): the streamed walk and the pairing
 * of tensors; the measure is tol_measure.c's. */
#include "analysis/tol_diff.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/values.h"
#include "util/error.h"
#include "util/npy.h"

typedef struct {
    repro_trace_stream *st;
    const repro_trace_step *s; /* the current step, NULL at the end */
    const repro_trace *t;
    char values[1100];         /* dump/ beside the trace */
    long *first, *last, *count;
} side;

typedef struct {
    const repro_tolerance *tol;
    repro_tensor_map *map;
    side *a, *b;
    repro_tol_result *out;
} walk_ctx;

static int advance(side *x)
{
    int got = repro_trace_stream_next(x->st, &x->s);
    if (got < 0)
        return -1;
    if (got == 0) {
        x->s = NULL;
        return 0;
    }
    if (!*x->count)
        *x->first = x->s->step;
    *x->last = x->s->step;
    (*x->count)++;
    return 0;
}

static int push_name(char (**v)[64], int *n, int *cap, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*v)[i], name))
            return 0;
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        char(*nv)[64] = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv)
            return repro_error_set(REPRO_ENOMEM, "out of memory comparing traces");
        *v = nv;
        *cap = c;
    }
    snprintf((*v)[(*n)++], 64, "%s", name);
    return 0;
}

/* B's tensor (or op output) named `name` at this step, with its index. */
static const repro_trace_tensor *find_b(const repro_trace_step *s, const char *name, int *idx)
{
    for (int i = 0; i < s->ntensors + s->nops; i++) {
        const repro_trace_tensor *t = i < s->ntensors ? &s->tensors[i]
                                                      : &s->ops[i - s->ntensors];
        if (!strcmp(t->name, name)) {
            *idx = i;
            return t;
        }
    }
    return NULL;
}

static const repro_trace_tensor *nth(const repro_trace_step *s, int i)
{
    return i < s->ntensors ? &s->tensors[i] : &s->ops[i - s->ntensors];
}

static void shape_text(char *buf, size_t len, const repro_trace_tensor *t)
{
    int n = snprintf(buf, len, "%s[", t->dtype);
    for (int i = 0; i < t->ndim && n < (int)len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%s%ld", i ? "," : "", t->shape[i]);
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, "]");
}

static int same_shape(const repro_trace_tensor *x, const repro_trace_tensor *y)
{
    if (strcmp(x->dtype, y->dtype) || x->ndim != y->ndim)
        return 0;
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] != y->shape[i])
            return 0;
    return 1;
}

static repro_tol_tensor *slot(repro_tol_result *r, const repro_trace_tensor *ta,
                              const char *name_b, int map_line, const repro_tolerance *tol)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->t[i].name, ta->name))
            return &r->t[i];
    if (r->n == r->cap) {
        int c = r->cap ? 2 * r->cap : 32;
        repro_tol_tensor *v = realloc(r->t, (size_t)c * sizeof *v);
        if (!v) {
            repro_error_set(REPRO_ENOMEM, "out of memory comparing traces");
            return NULL;
        }
        r->t = v;
        r->cap = c;
    }
    repro_tol_tensor *t = &r->t[r->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", ta->name);
    snprintf(t->name_b, sizeof t->name_b, "%s", name_b);
    snprintf(t->dtype, sizeof t->dtype, "%s", ta->dtype);
    t->map_line = map_line;
    t->ndim = ta->ndim;
    memcpy(t->shape, ta->shape, sizeof t->shape);
    t->rule = *repro_tolerance_for(tol, ta->name);
    return t;
}

/* One side's values of a tensor at a step, checked against its trace line. */
static int load_values(const side *x, const char *which, long step,
                       const repro_trace_tensor *t, repro_npy *v)
{
    char path[1400];
    repro_values_path(path, sizeof path, x->values, step, t->name);
    if (access(path, F_OK) != 0)
        return repro_error_set(REPRO_EINVAL,
                               "step %ld: %s's %s has no values: %s does not exist (record "
                               "them: repro run --dump %ld, repro_recorder_values, or the "
                               "Python client's values=True)",
                               step, which, t->name, path, step);
    if (repro_npy_load(path, v))
        return -1;
    int ok = !strcmp(v->dtype, t->dtype) && v->ndim == t->ndim;
    for (int i = 0; ok && i < t->ndim; i++)
        ok = v->shape[i] == t->shape[i];
    if (!ok) {
        char want[128];
        shape_text(want, sizeof want, t);
        repro_npy_free(v);
        return repro_error_set(REPRO_EINVAL, "%s: dtype or shape is not the %s its trace %s "
                               "records at step %ld", path, want, x->t->path, step);
    }
    return 0;
}

static void add_row(repro_tol_tensor *t, const repro_tol_row *row)
{
    t->steps++;
    if (row->m.differ)
        t->differ_steps++;
    if (row->m.max_ulp > t->max_ulp)
        t->max_ulp = row->m.max_ulp;
    if (row->m.max_rel > t->max_rel)
        t->max_rel = row->m.max_rel;
    if (row->m.max_abs > t->max_abs)
        t->max_abs = row->m.max_abs;
    int past = row->m.outside > 0 && !t->first_past;
    if (past)
        t->first_past = row->step;
    if (t->nrows < REPRO_TOL_ROWS) {
        t->rows[t->nrows++] = *row;
        return;
    }
    if (past)
        t->past_row = *row;
    t->last_row = *row;
}

/* A's tensor ta against B's tb at step `step`. */
static int measure_pair(walk_ctx *c, long step, const repro_trace_tensor *ta,
                        const repro_trace_tensor *tb, int map_line)
{
    if (!same_shape(ta, tb)) {
        char sa[128], sb[128];
        shape_text(sa, sizeof sa, ta);
        shape_text(sb, sizeof sb, tb);
        if (map_line)
            return repro_error_set(REPRO_EINVAL, "%s:%d: step %ld: A's %s is %s but B's %s is "
                                   "%s", c->map->path, map_line, step, ta->name, sa, tb->name,
                                   sb);
        return repro_error_set(REPRO_EINVAL, "step %ld: %s is %s in A (%s) but %s in B (%s)",
                               step, ta->name, sa, c->a->t->path, sb, c->b->t->path);
    }
    repro_tol_tensor *t = slot(c->out, ta, tb->name, map_line, c->tol);
    if (!t)
        return -1;
    repro_tol_row row = {step, {0}, 0};
    if (!strcmp(ta->name, tb->name) && c->a->t->digest_fn == c->b->t->digest_fn &&
        !memcmp(&ta->digest, &tb->digest, sizeof ta->digest)) {
        row.from_digest = 1; /* the same bits: nothing to read */
        row.m.first_outside = -1;
        add_row(t, &row);
        return 0;
    }
    repro_npy va, vb;
    if (load_values(c->a, "A", step, ta, &va))
        return -1;
    if (load_values(c->b, "B", step, tb, &vb)) {
        repro_npy_free(&va);
        return -1;
    }
    int rc = repro_tol_measure_values(&t->rule, ta->dtype, va.data, vb.data, va.nbytes, &row.m);
    repro_npy_free(&va);
    repro_npy_free(&vb);
    if (rc)
        return -1;
    if (row.m.differ)
        c->out->bitwise = 0;
    add_row(t, &row);
    if (row.m.outside && !c->out->first_past) {
        c->out->first_past = step;
        snprintf(c->out->first_tensor, sizeof c->out->first_tensor, "%s", ta->name);
    }
    return 0;
}

/* B's name for A's tensor `a` (NULL: none, B's tensor of that name is
 * mapped to another of A's), and the map line. */
static const char *b_name(repro_tensor_map *map, const char *a, int *line)
{
    repro_map_entry *e = repro_tensor_map_by_a(map, a);
    *line = e ? e->line : 0;
    if (e)
        return e->b;
    return repro_tensor_map_by_b(map, a) ? NULL : a;
}

static int compare_step(walk_ctx *c, const repro_trace_step *sa, const repro_trace_step *sb)
{
    c->out->compared_steps++;
    int nb = sb->ntensors + sb->nops, rc = 0;
    char *paired = calloc((size_t)nb + 1, 1);
    if (!paired)
        return repro_error_set(REPRO_ENOMEM, "out of memory comparing traces");
    for (int i = 0; i < nb; i++) {
        repro_map_entry *e = repro_tensor_map_by_b(c->map, nth(sb, i)->name);
        if (e)
            e->seen_b = 1;
    }
    for (int i = 0; !rc && i < sa->ntensors + sa->nops; i++) {
        const repro_trace_tensor *ta = nth(sa, i);
        int line, j = -1;
        const char *nb_name = b_name(c->map, ta->name, &line);
        repro_map_entry *e = repro_tensor_map_by_a(c->map, ta->name);
        if (e)
            e->seen_a = 1;
        const repro_trace_tensor *tb = nb_name ? find_b(sb, nb_name, &j) : NULL;
        if (!tb) {
            rc = push_name(&c->out->only_a, &c->out->n_only_a, &c->out->cap_only_a, ta->name);
            continue;
        }
        paired[j] = 1;
        rc = measure_pair(c, sa->step, ta, tb, line);
    }
    for (int i = 0; !rc && i < nb; i++)
        if (!paired[i])
            rc = push_name(&c->out->only_b, &c->out->n_only_b, &c->out->cap_only_b,
                           nth(sb, i)->name);
    free(paired);
    return rc;
}

/* Both traces read to the end (every line checked); common steps with
 * detail on both sides are compared. */
static int walk(walk_ctx *c)
{
    side *xa = c->a, *xb = c->b;
    if (advance(xa) || advance(xb))
        return -1;
    while (xa->s || xb->s) {
        if (xa->s && xb->s && xa->s->step == xb->s->step) {
            if (xa->s->has_detail && xb->s->has_detail && compare_step(c, xa->s, xb->s))
                return -1;
            if (advance(xa) || advance(xb))
                return -1;
        } else if (xa->s && (!xb->s || xa->s->step < xb->s->step)) {
            if (advance(xa))
                return -1;
        } else if (advance(xb)) {
            return -1;
        }
    }
    return 0;
}

static int check_finished(const repro_trace *t)
{
    if (t->has_trailer)
        return 0;
    return repro_error_set(REPRO_EINVAL, "%s: truncated trace (no trailer after line %ld): the "
                           "run did not finish", t->path, t->nsteps ? t->last_line : 1);
}

/* Scanned first (every line checked, memory constant), so that a cut-short
 * trace or other steps are said before any value is read. */
static int check_steps(const char *path_a, const char *path_b)
{
    repro_trace *sa = calloc(1, sizeof *sa), *sb = calloc(1, sizeof *sb);
    int rc = -1;
    if (!sa || !sb) {
        repro_error_set(REPRO_ENOMEM, "out of memory comparing traces");
        goto done;
    }
    if (repro_trace_scan(sa, path_a) || repro_trace_scan(sb, path_b) || check_finished(sa) ||
        check_finished(sb))
        goto done;
    if (sa->first_step != sb->first_step || sa->nsteps != sb->nsteps) {
        repro_error_set(REPRO_EINVAL,
                        "different steps: A (%s) has %ld steps (%ld..%ld), B (%s) has %ld "
                        "(%ld..%ld): a tolerance diff compares the same steps (record the "
                        "same ones, e.g. resume A from the checkpoint B starts at)",
                        path_a, sa->nsteps, sa->first_step, sa->first_step + sa->nsteps - 1,
                        path_b, sb->nsteps, sb->first_step, sb->first_step + sb->nsteps - 1);
        goto done;
    }
    rc = 0;
done:
    if (sa)
        repro_trace_release(sa);
    if (sb)
        repro_trace_release(sb);
    free(sa);
    free(sb);
    return rc;
}

/* A tensor listed as unpaired at one step may be paired at another: the
 * lists keep only those never paired. */
static void prune_only(char (*v)[64], int *n, const repro_tol_result *r, int b_side)
{
    int k = 0;
    for (int i = 0; i < *n; i++) {
        int paired = 0;
        for (int j = 0; j < r->n && !paired; j++)
            paired = !strcmp(b_side ? r->t[j].name_b : r->t[j].name, v[i]);
        if (!paired)
            memmove(v[k++], v[i], 64);
    }
    *n = k;
}

static int check_pairs(const repro_tensor_map *map, repro_tol_result *r,
                       const repro_trace *a, const repro_trace *b)
{
    for (int i = 0; i < map->n; i++) {
        const repro_map_entry *e = &map->v[i];
        if (!e->seen_b)
            return repro_error_set(REPRO_EINVAL, "%s:%d: B (%s) has no tensor %s at any "
                                   "step with detail", map->path, e->line, b->path, e->b);
        if (!e->seen_a)
            return repro_error_set(REPRO_EINVAL, "%s:%d: A (%s) has no tensor %s at any "
                                   "step with detail", map->path, e->line, a->path, e->a);
    }
    if (!r->compared_steps)
        return repro_error_set(REPRO_EINVAL, "no step has tensor detail in both %s and %s "
                               "(record detail on the same steps: trace.every, total_steps)",
                               a->path, b->path);
    if (!r->n)
        return repro_error_set(REPRO_EINVAL, "%s and %s have no tensor in common: name B's "
                               "tensors as A's with --map FILE", a->path, b->path);
    prune_only(r->only_a, &r->n_only_a, r, 0);
    prune_only(r->only_b, &r->n_only_b, r, 1);
    return 0;
}

int repro_tol_diff_files(const char *path_a, const char *path_b, const repro_tolerance *tol,
                         repro_tensor_map *map, repro_trace *a, repro_trace *b,
                         repro_tol_result *out)
{
    memset(out, 0, sizeof *out);
    memset(b, 0, sizeof *b);
    out->bitwise = 1;
    side xa = {0}, xb = {0};
    xa.t = a, xb.t = b;
    xa.first = &out->first_a, xa.last = &out->last_a, xa.count = &out->count_a;
    xb.first = &out->first_b, xb.last = &out->last_b, xb.count = &out->count_b;
    repro_values_default_dir(xa.values, sizeof xa.values, path_a);
    repro_values_default_dir(xb.values, sizeof xb.values, path_b);
    walk_ctx c = {tol, map, &xa, &xb, out};
    int rc = -1;
    if (check_steps(path_a, path_b) || repro_trace_stream_open(&xa.st, a, path_a) ||
        repro_trace_stream_open(&xb.st, b, path_b))
        goto done;
    if (walk(&c) || check_finished(a) || check_finished(b) || check_pairs(map, out, a, b))
        goto done;
    rc = 0;
done:
    repro_trace_stream_close(xa.st);
    repro_trace_stream_close(xb.st);
    if (rc)
        repro_tol_result_release(out);
    return rc;
}

void repro_tol_result_release(repro_tol_result *r)
{
    free(r->t);
    free(r->only_a);
    free(r->only_b);
    r->t = NULL;
    r->only_a = r->only_b = NULL;
    r->n = r->n_only_a = r->n_only_b = 0;
}
