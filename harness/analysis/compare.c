/* Comparing two traces (compare.h): same experiment?, first divergent step
 * by binary search over the hash chain, the tensors and ops that differ
 * there, and the divergence curve over all common steps. */
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

/* Whether a trace records any param.* tensor. A program's own names
 * (w, fc.weight) would otherwise give a curve of zeros that looks like
 * agreement. */
static int records_params(const repro_trace *t)
{
    for (long k = 0; k < t->nsteps; k++)
        for (int i = 0; i < t->steps[k].ntensors; i++)
            if (!strncmp(t->steps[k].tensors[i].name, "param.", 6))
                return 1;
    return 0;
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

static int compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out,
                          int same_config);

/* The first step a trace records: 1, or k + 1 for a run resumed at k. */
static long first_of(const repro_trace *t)
{
    return t->first_step > 0 ? t->first_step : 1;
}

int repro_compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out)
{
    return compare_traces(a, b, out, 1);
}

int repro_compare_variants(const repro_trace *a, const repro_trace *b, repro_divergence *out)
{
    return compare_traces(a, b, out, 0);
}

static int compare_traces(const repro_trace *a, const repro_trace *b, repro_divergence *out,
                          int same_config)
{
    memset(out, 0, sizeof *out);
    if (strcmp(a->experiment, b->experiment) != 0)
        return repro_error_set(REPRO_EINVAL, "%s and %s are different experiments: %s vs %s",
                               a->path, b->path, a->experiment, b->experiment);
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

    /* The reader guarantees steps first..last, one line each, with a
     * verified chain: chain[k] equal on both sides <=> steps 1..k all equal
     * (a resumed trace's chain continues its checkpoint's, so this holds
     * for it too). Only the steps both sides record are compared: a trace
     * resumed at k against the full run covers k+1..N. */
    long fa = first_of(a), fb = first_of(b);
    /* The reader bounds every step number by REPRO_TRACE_STEP_MAX; a trace
     * built any other way is held to the same, so that the arithmetic below
     * (last step, common range, bisection bounds) cannot overflow. */
    for (int i = 0; i < 2; i++) {
        const repro_trace *t = i ? b : a;
        long f = i ? fb : fa;
        if (f > REPRO_TRACE_STEP_MAX + 1 || t->nsteps < 0 ||
            t->nsteps > REPRO_TRACE_STEP_MAX + 1 - f)
            return repro_error_set(REPRO_EINVAL, "%s: step numbers past %lld", t->path,
                                   (long long)REPRO_TRACE_STEP_MAX);
    }
    long la = fa + a->nsteps - 1, lb = fb + b->nsteps - 1;
    out->steps_a = la;
    out->steps_b = lb;
    out->truncated_a = !a->has_trailer;
    out->truncated_b = !b->has_trailer;
    long c0 = fa > fb ? fa : fb, c1 = la < lb ? la : lb;
    long common = c1 >= c0 ? c1 - c0 + 1 : 0;
    out->common_steps = common;
    long lo = c0, hi = c0 + common; /* first differing step lies in [lo, hi]; hi = none */
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (repro_digest_eq(&a->steps[mid - fa].chain, &b->steps[mid - fb].chain))
            lo = mid + 1;
        else
            hi = mid;
    }
    out->first_step = lo < c0 + common ? lo : 0;
    repro_digest zero = {{0}};
    out->final_chain_a = a->has_trailer ? a->trailer_chain
                         : a->nsteps    ? a->steps[a->nsteps - 1].chain
                                        : zero;
    out->final_chain_b = b->has_trailer ? b->trailer_chain
                         : b->nsteps    ? b->steps[b->nsteps - 1].chain
                                        : zero;
    out->identical = out->first_step == 0 && la == lb && (common > 0 || la < fa) && a->has_trailer &&
                     b->has_trailer && repro_digest_eq(&out->final_chain_a, &out->final_chain_b);

    if (out->first_step) {
        const repro_trace_step *sa = &a->steps[out->first_step - fa];
        const repro_trace_step *sb = &b->steps[out->first_step - fb];
        out->first_has_detail = sa->has_detail && sb->has_detail;
        if (out->first_has_detail &&
            (diff_lists(sa->tensors, sa->ntensors, sb->tensors, sb->ntensors, &out->tensors,
                        &out->ntensors) ||
             diff_lists(sa->ops, sa->nops, sb->ops, sb->nops, &out->ops, &out->nops)))
            goto fail;
    }

    out->curve = calloc((size_t)common + 1, sizeof *out->curve);
    if (!out->curve) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto fail;
    }
    out->curve_all_tensors = !records_params(a) && !records_params(b);
    for (long k = 0; k < common; k++) {
        const repro_trace_step *sa = &a->steps[c0 + k - fa], *sb = &b->steps[c0 + k - fb];
        if (!sa->has_detail || !sb->has_detail)
            continue;
        double pa = curve_norm(sa, out->curve_all_tensors);
        double pb = curve_norm(sb, out->curve_all_tensors);
        repro_curve_point *c = &out->curve[out->ncurve++];
        c->step = sa->step;
        /* Relative to A; with no parameters to speak of, absolute. */
        c->rel_l2 = pa > 0 ? fabs(pa - pb) / pa : fabs(pa - pb);
        c->loss_a = sa->loss_value;
        c->loss_b = sb->loss_value;
    }
    return 0;
fail:
    repro_divergence_release(out);
    return -1;
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
