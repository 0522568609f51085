/* Comparing two traces (compare.h): same experiment?, first divergent step
 * (the first whose chains differ), the tensors and ops that differ there,
 * and the divergence curve over all common steps (sampled past
 * REPRO_CURVE_MAX points), as a walk over the steps in order. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "core/config.h"
#include "util/error.h"

/* Names up to three config keys whose values differ between the headers,
 * so "different configs" says which knob changed. */
static void config_differences(const repro_trace *a, const repro_trace *b, char *buf, size_t len)
{
    buf[0] = '\0';
    json_t *ca = json_object_get((json_t *)a->header_json, "config");
    json_t *cb = json_object_get((json_t *)b->header_json, "config");
    if (!json_is_object(ca) || !json_is_object(cb))
        return;
    int shown = 0, more = 0;
    size_t used = 0;
    const char *sec;
    json_t *sa;
    json_object_foreach (ca, sec, sa) {
        json_t *sb = json_object_get(cb, sec);
        const char *key;
        json_t *va;
        if (!json_is_object(sa))
            continue;
        json_object_foreach (sa, key, va) {
            json_t *vb = json_is_object(sb) ? json_object_get(sb, key) : NULL;
            if (vb && json_equal(va, vb))
                continue;
            if (shown == 3) {
                more++;
                continue;
            }
            const char *x = json_is_string(va) ? json_string_value(va) : "?";
            const char *y = json_is_string(vb) ? json_string_value(vb) : "(absent)";
            int w = snprintf(buf + used, len - used, "%s%s.%s %s vs %s", shown ? ", " : ": ", sec,
                             key, x, y);
            if (w < 0 || (size_t)w >= len - used)
                return;
            used += (size_t)w;
            shown++;
        }
    }
    if (more)
        snprintf(buf + used, len - used, " and %d more", more);
}

/* 1 when the configs differ in nothing but [train] backend (keys promised
 * not to change the bits aside): the same experiment on two backends, the
 * comparison `repro diff CPU-TRACE GPU-TRACE` exists for. Both directions,
 * so a key only one side has counts too. */
static int only_backend_differs(const repro_trace *a, const repro_trace *b)
{
    const repro_trace *t[2] = {a, b};
    int backend_differs = 0;
    for (int side = 0; side < 2; side++) {
        json_t *ca = json_object_get((json_t *)t[side]->header_json, "config");
        json_t *cb = json_object_get((json_t *)t[!side]->header_json, "config");
        if (!json_is_object(ca) || !json_is_object(cb))
            return 0;
        const char *sec, *key;
        json_t *sa, *va;
        json_object_foreach (ca, sec, sa) {
            json_t *sb = json_object_get(cb, sec);
            if (!json_is_object(sa))
                continue;
            json_object_foreach (sa, key, va) {
                json_t *vb = json_is_object(sb) ? json_object_get(sb, key) : NULL;
                if (vb && json_equal(va, vb))
                    continue;
                char name[160];
                snprintf(name, sizeof name, "%s.%s", sec, key);
                int k = repro_config_find_key(name);
                if (k == REPRO_KEY_train_backend)
                    backend_differs = 1;
                else if (k < 0 || !repro_config_key_bits_neutral(k))
                    return 0;
            }
        }
    }
    return backend_differs;
}

/* ||P|| over the param.* tensors of a step (all its tensors when `all`):
 * the curve's measure. */
static double curve_norm(const repro_trace_step *s, int all)
{
    double sq = 0;
    for (int i = 0; i < s->ntensors; i++)
        if (all || !strncmp(s->tensors[i].name, "param.", 6))
            sq += s->tensors[i].l2 * s->tensors[i].l2;
    return sqrt(sq);
}

static const repro_trace_tensor *find_tensor(const repro_trace_tensor *list, int n,
                                             const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i].name, name))
            return &list[i];
    return NULL;
}

/* The entries of la/lb whose digests differ or that exist on one side only:
 * A's order first (the step-digest order: first = likely origin), then
 * what only B has, in B's order. */
static int diff_lists(const repro_trace_tensor *la, int na, const repro_trace_tensor *lb, int nb,
                      repro_tensor_diff **out, int *nout)
{
    *out = calloc((size_t)(na + nb) + 1, sizeof **out);
    *nout = 0;
    if (!*out)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int i = 0; i < na; i++) {
        const repro_trace_tensor *tb = find_tensor(lb, nb, la[i].name);
        if (tb && repro_digest_eq(&la[i].digest, &tb->digest))
            continue;
        repro_tensor_diff *d = &(*out)[(*nout)++];
        snprintf(d->name, sizeof d->name, "%s", la[i].name);
        d->in_a = 1;
        d->a = la[i];
        if (tb) {
            d->in_b = 1;
            d->b = *tb;
        }
    }
    for (int i = 0; i < nb; i++) {
        if (find_tensor(la, na, lb[i].name))
            continue;
        repro_tensor_diff *d = &(*out)[(*nout)++];
        snprintf(d->name, sizeof d->name, "%s", lb[i].name);
        d->in_b = 1;
        d->b = lb[i];
    }
    return 0;
}

/* The first step a trace records: 1, or k + 1 for a run resumed at k. */
static long first_of(const repro_trace *t)
{
    return t->first_step > 0 ? t->first_step : 1;
}

int repro_compare_headers(const repro_trace *a, const repro_trace *b, int same_config)
{
    if (strcmp(a->experiment, b->experiment) != 0)
        return repro_error_set(REPRO_EINVAL, "%s and %s are different experiments: %s vs %s",
                               a->path, b->path, a->experiment, b->experiment);
    /* Digests of another function are not a mismatch: they cannot be
     * compared at all (every tensor would "differ"). */
    if (strcmp(a->tensor_hash, b->tensor_hash) != 0)
        return repro_error_set(REPRO_EINVAL,
                               "%s and %s have a different digest function (%s vs %s): their "
                               "digests cannot be compared; record both with the same "
                               "[trace] digest (or re-bless the golden)",
                               a->path, b->path, a->tensor_hash, b->tensor_hash);
    if (same_config && !repro_digest_eq(&a->numerics_digest, &b->numerics_digest) &&
        !only_backend_differs(a, b)) {
        char ha[65], hb[65], keys[400];
        repro_digest_hex(&a->numerics_digest, ha);
        repro_digest_hex(&b->numerics_digest, hb);
        ha[12] = hb[12] = '\0';
        config_differences(a, b, keys, sizeof keys);
        return repro_error_set(REPRO_EINVAL,
                               "%s and %s have different configs (numerics digest %s vs %s)%s",
                               a->path, b->path, ha, hb, keys);
    }
    return 0;
}

void repro_compare_walk_begin(repro_compare_walk *w, repro_divergence *out)
{
    memset(w, 0, sizeof *w);
    memset(out, 0, sizeof *out);
    w->out = out;
    w->stride = 1;
}

/* Keeps every stride-th curve point: when the array is full, every other
 * one goes and the stride doubles, so a curve of any length costs at most
 * REPRO_CURVE_MAX points (below that, every point is kept). */
static int curve_add(repro_compare_walk *w, const repro_curve_point *c)
{
    repro_divergence *out = w->out;
    if (!out->curve) {
        out->curve = calloc(REPRO_CURVE_MAX + 2, sizeof *out->curve);
        if (!out->curve)
            return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    long seq = out->curve_steps++;
    if (c->step == out->first_step)
        w->first_point = *c;
    w->last_point = *c;
    if (seq % w->stride)
        return 0;
    if (out->ncurve == REPRO_CURVE_MAX) {
        for (long i = 0; 2 * i < out->ncurve; i++)
            out->curve[i] = out->curve[2 * i];
        out->ncurve = (out->ncurve + 1) / 2;
        w->stride *= 2;
        if (seq % w->stride)
            return 0;
    }
    out->curve[out->ncurve++] = *c;
    return 0;
}

/* A sampled curve still shows the first divergent step and the last. */
static void curve_finish(repro_compare_walk *w)
{
    repro_divergence *out = w->out;
    if (!out->ncurve)
        return;
    if (out->curve[out->ncurve - 1].step != w->last_point.step)
        out->curve[out->ncurve++] = w->last_point;
    if (!out->first_step || w->first_point.step != out->first_step)
        return;
    long i = 0;
    while (i < out->ncurve && out->curve[i].step < out->first_step)
        i++;
    if (i < out->ncurve && out->curve[i].step == out->first_step)
        return;
    memmove(&out->curve[i + 1], &out->curve[i], sizeof *out->curve * (size_t)(out->ncurve - i));
    out->curve[i] = w->first_point;
    out->ncurve++;
}

int repro_compare_walk_step(repro_compare_walk *w, const repro_trace_step *sa,
                            const repro_trace_step *sb)
{
    repro_divergence *out = w->out;
    out->common_steps++;
    /* The readers verify the chains: chain[k] equal on both sides <=>
     * steps 1..k all equal (a resumed trace's chain continues its
     * checkpoint's), so the first step whose chains differ is where the
     * runs part. */
    if (!out->first_step && !repro_digest_eq(&sa->chain, &sb->chain)) {
        out->first_step = sa->step;
        out->first_has_detail = sa->has_detail && sb->has_detail;
        out->first_has_loss = sa->has_loss && sb->has_loss;
        if (out->first_has_loss) {
            out->first_loss_bits_a = sa->loss_bits;
            out->first_loss_bits_b = sb->loss_bits;
            out->first_loss_a = sa->loss_value;
            out->first_loss_b = sb->loss_value;
        }
    }
    if (!sa->has_detail || !sb->has_detail)
        return 0;
    /* The tensors that differ at the first step with detail on both sides
     * from the divergence on: the divergent step itself, or the nearest
     * detail step after it (`[trace] every`). */
    if (out->first_step && !out->detail_step) {
        out->detail_step = sa->step;
        if (diff_lists(sa->tensors, sa->ntensors, sb->tensors, sb->ntensors, &out->tensors,
                       &out->ntensors) ||
            diff_lists(sa->ops, sa->nops, sb->ops, sb->nops, &out->ops, &out->nops))
            return -1;
    }
    /* Both measures, until the walk knows whether either side records a
     * param.* tensor: a program's own names (w, fc.weight) would otherwise
     * give a curve of zeros that looks like agreement. */
    for (int i = 0; i < sa->ntensors && !w->seen_params; i++)
        w->seen_params = !strncmp(sa->tensors[i].name, "param.", 6);
    for (int i = 0; i < sb->ntensors && !w->seen_params; i++)
        w->seen_params = !strncmp(sb->tensors[i].name, "param.", 6);
    double pa = curve_norm(sa, 0), pb = curve_norm(sb, 0);
    double ta = curve_norm(sa, 1), tb = curve_norm(sb, 1);
    repro_curve_point c = {.step = sa->step, .loss_a = sa->loss_value, .loss_b = sb->loss_value};
    /* Relative to A; with no parameters to speak of, absolute. */
    c.rel_l2 = pa > 0 ? fabs(pa - pb) / pa : fabs(pa - pb);
    c.rel_l2_all = ta > 0 ? fabs(ta - tb) / ta : fabs(ta - tb);
    return curve_add(w, &c);
}

void repro_compare_walk_end(repro_compare_walk *w, const repro_trace *a, const repro_trace *b,
                            const repro_digest *last_a, const repro_digest *last_b)
{
    repro_divergence *out = w->out;
    long fa = first_of(a), fb = first_of(b);
    long la = fa + a->nsteps - 1, lb = fb + b->nsteps - 1;
    out->steps_a = la;
    out->steps_b = lb;
    out->truncated_a = !a->has_trailer;
    out->truncated_b = !b->has_trailer;
    repro_digest zero = {{0}};
    out->final_chain_a = a->has_trailer ? a->trailer_chain : last_a ? *last_a : zero;
    out->final_chain_b = b->has_trailer ? b->trailer_chain : last_b ? *last_b : zero;
    out->identical = out->first_step == 0 && la == lb && (out->common_steps > 0 || la < fa) &&
                     a->has_trailer && b->has_trailer &&
                     repro_digest_eq(&out->final_chain_a, &out->final_chain_b);
    curve_finish(w);
    out->curve_all_tensors = !w->seen_params;
    if (out->curve_all_tensors)
        for (long i = 0; i < out->ncurve; i++)
            out->curve[i].rel_l2 = out->curve[i].rel_l2_all;
}

/* Both traces' step numbers within the reader's bound, whoever built them,
 * so that the arithmetic of the walk (last step, common range) cannot
 * overflow. */
static int check_bounds(const repro_trace *t)
{
    long f = first_of(t);
    if (f > REPRO_TRACE_STEP_MAX + 1 || t->nsteps < 0 || t->nsteps > REPRO_TRACE_STEP_MAX + 1 - f)
        return repro_error_set(REPRO_EINVAL, "%s: step numbers past %lld", t->path,
                               (long long)REPRO_TRACE_STEP_MAX);
    return 0;
}

static int compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out,
                          int same_config)
{
    memset(out, 0, sizeof *out);
    if (repro_compare_headers(a, b, same_config) || check_bounds(a) || check_bounds(b))
        return -1;
    /* Only the steps both sides record are compared: a trace resumed at k
     * against the full run covers k+1..N. */
    long fa = first_of(a), fb = first_of(b);
    long la = fa + a->nsteps - 1, lb = fb + b->nsteps - 1;
    long c0 = fa > fb ? fa : fb, c1 = la < lb ? la : lb;
    repro_compare_walk w;
    repro_compare_walk_begin(&w, out);
    for (long k = c0; k <= c1; k++)
        if (repro_compare_walk_step(&w, &a->steps[k - fa], &b->steps[k - fb])) {
            repro_divergence_release(out);
            return -1;
        }
    repro_compare_walk_end(&w, a, b, a->nsteps ? &a->steps[a->nsteps - 1].chain : NULL,
                           b->nsteps ? &b->steps[b->nsteps - 1].chain : NULL);
    return 0;
}

int repro_compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out)
{
    return compare_traces(a, b, out, 1);
}

int repro_compare_variants(const repro_trace *a, const repro_trace *b, repro_divergence *out)
{
    return compare_traces(a, b, out, 0);
}

void repro_divergence_release(repro_divergence *d)
{
    free(d->tensors);
    free(d->ops);
    free(d->curve);
    d->tensors = d->ops = NULL;
    d->curve = NULL;
    d->ntensors = d->nops = 0;
    d->ncurve = 0;
}
