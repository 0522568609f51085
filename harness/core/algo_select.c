/* Convolution algorithm choice (see algo_select.h). */
#include "core/algo_select.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/lines.h"
#include "util/progress.h"

repro_conv_algo repro_algo_rule(const repro_conv_shape *s)
{
    if (s->R == 3 && s->C >= 64)
        return REPRO_CONV_WINOGRAD;
    return REPRO_CONV_DIRECT;
}

int repro_algo_policy_lock(repro_algo_policy *p, const char *path)
{
    /* The lock is a trace: read it as the trace reader does, a bounded line
     * at a time, regular files only. */
    repro_lines lr;
    if (repro_lines_open(&lr, path, "algorithm lock", (size_t)1 << 20))
        return -1;
    char *line;
    size_t len;
    int lineno = 0, rc = -1, complete, got;
    json_t *algos = NULL, *j = NULL;
    while ((got = repro_lines_next(&lr, &line, &len, &complete)) == REPRO_LINES_OK) {
        lineno++;
        j = json_loadb(line, len, 0, NULL);
        algos = json_object_get(j, "algorithms");
        if (json_is_array(algos))
            break;
        json_decref(j);
        j = NULL;
        algos = NULL;
    }
    if (!algos && got < 0) {
        if (got == REPRO_LINES_TOO_LONG)
            repro_error_set(REPRO_EINVAL, "%s:%d: line longer than 1 MiB: not a trace", path,
                            lineno + 1);
        else
            repro_error_set_errno(REPRO_EINVAL, "%s:%d: read error", path, lineno + 1);
        goto done;
    }
    if (!algos) {
        repro_error_set(REPRO_EINVAL,
                        "%s: no \"algorithms\" in this trace (a run without convolutions, or a "
                        "trace from before algorithm locks)",
                        path);
        goto done;
    }
    size_t i;
    json_t *c;
    p->nlock = 0;
    json_array_foreach(algos, i, c) {
        const char *site = json_string_value(json_object_get(c, "site"));
        const char *algo = json_string_value(json_object_get(c, "algo"));
        if (!site || !algo || repro_conv_algo_from_name(algo) < 0 || p->nlock == REPRO_MAX_SITES) {
            repro_error_set(REPRO_EINVAL, "%s:%d: malformed algorithm choice %zu", path,
                            lineno, i);
            goto done;
        }
        snprintf(p->lock_site[p->nlock], sizeof p->lock_site[0], "%s", site);
        snprintf(p->lock_algo[p->nlock], sizeof p->lock_algo[0], "%s", algo);
        p->nlock++;
    }
    snprintf(p->lock_path, sizeof p->lock_path, "%s", path);
    rc = 0;
done:
    json_decref(j);
    repro_lines_close(&lr);
    return rc;
}

/* Eligible on this backend, and deterministic when only those may run. */
static int admitted(const repro_backend *be, void *ctx, repro_conv_algo a,
                    const repro_conv_shape *s, int deterministic_only)
{
    return be->conv_algo_eligible(ctx, a, s) &&
           (!deterministic_only || be->conv_algo_deterministic(ctx, a, s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* cudnnFind: runs each eligible algorithm on the real inputs, 3 times,
 * and keeps the one with the fastest median into c. Returns 0, or -1 with
 * the error slot set (the backend failed). */
static int benchmark(repro_algo_choice *c, const repro_backend *be, void *ctx,
                     const repro_conv_shape *s, int deterministic_only, const float *x,
                     const float *w, const float *b, float *y, void *workspace)
{
    double best = -1;
    for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
        if (!admitted(be, ctx, (repro_conv_algo)a, s, deterministic_only))
            continue;
        double t[3];
        for (int r = 0; r < 3; r++) {
            /* a device backend's launch returns early: time to completion */
            if (be->synchronize(ctx))
                return repro_error_set(REPRO_EIO, "%s backend: %s", be->name,
                                       be->last_error(ctx));
            double t0 = repro_now();
            be->conv2d_forward(ctx, (repro_conv_algo)a, s, x, w, b, y, workspace);
            if (be->synchronize(ctx))
                return repro_error_set(REPRO_EIO, "%s backend: %s", be->name,
                                       be->last_error(ctx));
            t[r] = (repro_now() - t0) * 1e6;
        }
        qsort(t, 3, sizeof *t, cmp_double);
        c->time_us[a] = t[1];
        if (best < 0 || t[1] < best) {
            best = t[1];
            c->algo = a;
        }
    }
    return 0;
}

int repro_algo_choose(repro_algo_policy *p, const char *site, const repro_backend *be, void *ctx,
                      const repro_conv_shape *s, const float *x, const float *w, const float *b,
                      float *y, void *workspace, size_t workspace_bytes)
{
    for (int i = 0; i < p->nchoices; i++)
        if (!strcmp(p->choices[i].site, site))
            return p->choices[i].algo;
    if (p->nchoices == REPRO_MAX_SITES)
        return repro_error_set(REPRO_EINVAL, "more than %d convolution call sites",
                               REPRO_MAX_SITES);
    repro_algo_choice *c = &p->choices[p->nchoices];
    memset(c, 0, sizeof *c);
    snprintf(c->site, sizeof c->site, "%s", site);
    snprintf(c->shape, sizeof c->shape, "B%d C%d H%d W%d K%d R%d pad%d", s->B, s->C, s->H, s->W,
             s->K, s->R, s->pad);
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++)
        c->time_us[a] = -1;
    if (p->nlock > 0) {
        int found = -1;
        for (int i = 0; i < p->nlock; i++)
            if (!strcmp(p->lock_site[i], site))
                found = i;
        if (found < 0)
            return repro_error_set(REPRO_EINVAL, "%s: the algorithm lock has no choice for %s",
                                   p->lock_path, site);
        int a = repro_conv_algo_from_name(p->lock_algo[found]);
        if (!be->conv_algo_eligible(ctx, (repro_conv_algo)a, s))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: locked algorithm %s is not eligible for %s (%s) on the "
                                   "%s backend",
                                   p->lock_path, p->lock_algo[found], site, c->shape, be->name);
        if (!admitted(be, ctx, (repro_conv_algo)a, s, p->deterministic_only))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: locked algorithm %s is nondeterministic for %s (%s); "
                                   "deterministic = on refuses it",
                                   p->lock_path, p->lock_algo[found], site, c->shape);
        c->algo = a;
        c->how = REPRO_CHOSEN_BY_LOCK;
    } else if (be->conv_algo_choose) {
        /* the backend's own chooser (cuDNN's heuristics, or cudnnFind) */
        int a = be->conv_algo_choose(ctx, s, p->benchmark, p->deterministic_only, x, w, b, y,
                                     workspace, workspace_bytes, c->time_us);
        if (a < 0)
            return repro_error_set(REPRO_EIO, "%s backend: choosing an algorithm for %s (%s): %s",
                                   be->name, site, c->shape, be->last_error(ctx));
        c->algo = a;
        c->how = p->benchmark ? REPRO_CHOSEN_BY_BENCHMARK : REPRO_CHOSEN_BY_HEURISTIC;
    } else if (p->benchmark) {
        if (benchmark(c, be, ctx, s, p->deterministic_only, x, w, b, y, workspace))
            return -1;
        c->how = REPRO_CHOSEN_BY_BENCHMARK;
    } else {
        c->algo = repro_algo_rule(s);
        if (!admitted(be, ctx, (repro_conv_algo)c->algo, s, p->deterministic_only))
            c->algo = REPRO_CONV_DIRECT; /* a backend without the rule's pick */
        c->how = REPRO_CHOSEN_BY_RULE;
    }
    p->nchoices++;
    return c->algo;
}

void *repro_algo_choices_json(const repro_algo_policy *p)
{
    static const char *const how[] = {"rule", "benchmark", "lock", "heuristic"};
    json_t *arr = json_array();
    for (int i = 0; i < p->nchoices; i++) {
        const repro_algo_choice *c = &p->choices[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "site", c->site, "shape", c->shape, "algo",
                              repro_conv_algo_name((repro_conv_algo)c->algo), "chosen_by",
                              how[c->how]);
        if (c->how == REPRO_CHOSEN_BY_BENCHMARK) {
            json_t *t = json_object();
            for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++)
                if (c->time_us[a] >= 0)
                    json_object_set_new(t, repro_conv_algo_name((repro_conv_algo)a),
                                        json_real(c->time_us[a]));
            json_object_set_new(o, "time_us", t);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}
