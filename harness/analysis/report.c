/* Reports of a comparison (compare.h): a compact text one for people and a
 * JSON one (jansson) with the same data for programs. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/ulp.h"

/* Text reports list at most this many op outputs; JSON has them all. */
#define MAX_TEXT_OPS 20
#define MAX_TEXT_TENSORS 8
/* Rows of the text divergence curve (plus the first divergent step). */
#define CURVE_ROWS 12

static void hex12(const repro_digest *d, char *out)
{
    char hex[65];
    repro_digest_hex(d, hex);
    memcpy(out, hex, 12);
    out[12] = '\0';
}

static void shape_str(const repro_trace_tensor *t, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s[", t->dtype);
    for (int i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%ld", i ? "," : "", t->shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* %.9g (a float's digits), but "nan" whatever the NaN's sign bit. */
static void num(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "nan");
    else
        snprintf(buf, len, "%.9g", v);
}

/* |a - b| / |a|, or |a - b| when a is zero. */
static double rel_diff(double a, double b)
{
    return a != 0 ? fabs(a - b) / fabs(a) : fabs(a - b);
}

static int same_layout(const repro_trace_tensor *a, const repro_trace_tensor *b)
{
    if (strcmp(a->dtype, b->dtype) || a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

enum { MARK_NONE, MARK_ORIGIN, MARK_DIGEST_ORDER, MARK_EXECUTION_ORDER };

static void text_tensor(FILE *out, const repro_tensor_diff *d, int mark)
{
    static const char *const marks[] = {"", "   <- likely origin", "   <- first in digest order",
                                        "   <- first in execution order: the likely origin"};
    const repro_trace_tensor *any = d->in_a ? &d->a : &d->b;
    char shape[96], shape_b[96];
    shape_str(any, shape, sizeof shape);
    /* Names and dtypes come from the traces: someone else's text. */
    fprintf(out, "    %s  %s%s\n", repro_esc(d->name), repro_esc(shape), marks[mark]);
    if (!d->in_a || !d->in_b) {
        fprintf(out, "        only in %s\n", d->in_a ? "A" : "B");
        return;
    }
    /* Another dtype or shape is a different tensor: its stats may agree. */
    int layout = same_layout(&d->a, &d->b);
    if (!layout) {
        shape_str(&d->b, shape_b, sizeof shape_b);
        fprintf(out, "        dtype or shape differs: A %s", repro_esc(shape));
        fprintf(out, ", B %s\n", repro_esc(shape_b));
    }
    fprintf(out, "        A: l2 %.10g  sum %.10g  max_abs %.10g  nonfinite %ld\n", d->a.l2,
            d->a.sum, d->a.max_abs, d->a.nonfinite);
    fprintf(out, "        B: l2 %.10g  sum %.10g  max_abs %.10g  nonfinite %ld\n", d->b.l2,
            d->b.sum, d->b.max_abs, d->b.nonfinite);
    if (layout && d->a.l2 == d->b.l2 && d->a.sum == d->b.sum && d->a.max_abs == d->b.max_abs &&
        d->a.nonfinite == d->b.nonfinite)
        fprintf(out, "        stats equal: the bits differ where the stats cannot see "
                     "(sign of zero, NaN payload, element order)\n");
    else
        fprintf(out, "        l2 relative difference %.3g\n", rel_diff(d->a.l2, d->b.l2));
}

/* Which curve rows the text report shows: evenly spread, plus the first
 * divergent step. Returns how many indices went into idx. */
static int curve_rows(const repro_divergence *d, long *idx)
{
    int n = 0;
    long first = -1;
    for (long i = 0; i < d->ncurve; i++)
        if (d->curve[i].step == d->first_step)
            first = i;
    for (int j = 0; j < CURVE_ROWS && d->ncurve > 0; j++) {
        long i = d->ncurve <= CURVE_ROWS ? j : (long)j * (d->ncurve - 1) / (CURVE_ROWS - 1);
        if (i >= d->ncurve)
            break;
        if (first >= 0 && n > 0 && idx[n - 1] < first && first < i)
            idx[n++] = first;
        if (n == 0 || idx[n - 1] != i)
            idx[n++] = i;
    }
    if (first >= 0 && n > 0 && idx[n - 1] < first)
        idx[n++] = first;
    return n;
}

/* The first divergent step has no tensor detail: say so, and what would
 * help (a golden keeps detail only every K steps; trace.every of a fresh
 * run would change nothing there). */
static void text_no_detail(FILE *out, const repro_trace *a, const repro_trace *b,
                           const repro_divergence *d)
{
    const char *golden = strstr(a->path, "golden/")   ? "A"
                         : strstr(b->path, "golden/") ? "B"
                                                      : NULL;
    fprintf(out, "  no tensor detail at step %ld (trace level %s, every %d / %d): ", d->first_step,
            a->level == REPRO_TRACE_STEP ? "step" : a->level == REPRO_TRACE_OP ? "op" : "tensor",
            a->every, b->every);
    if (golden)
        fprintf(out,
                "the golden (%s) keeps tensor detail every %d steps; to see which "
                "tensor differs, re-bless with `repro bless --every 1`, or compare two "
                "fresh runs (`repro check --runs 2 --set trace.every=1`)\n",
                golden, golden[0] == 'A' ? a->every : b->every);
    else
        fprintf(out, "re-run with --set trace.every=1 to see which tensor differs\n");
}

/* The likely origin: the first differing tensor at the divergent step
 * when it has detail; else the one the re-runs' dumps at that step found
 * (`repro check`'s element detail); else none (NULL). */
static const char *origin_name(const repro_divergence *d)
{
    if (d->order_unknown) /* only an op output, in execution order, says */
        return d->nops && d->detail_step == d->first_step ? d->ops[0].name : NULL;
    if (d->ntensors && d->detail_step == d->first_step)
        return d->tensors[0].name;
    if (d->element.valid && d->element.count > 0)
        return d->element.tensor;
    return NULL;
}

/* The tensors and op outputs that differ at d->detail_step: the divergent
 * step itself (the first listed is the likely origin), or the nearest
 * detail step after it (by then the difference has spread: the order says
 * less). */
static void text_tensor_lists(FILE *out, const repro_divergence *d)
{
    if (!d->detail_step)
        return;
    int at_first = d->detail_step == d->first_step;
    const char *origin = origin_name(d);
    if (at_first && d->order_unknown)
        fprintf(out,
                "  %d tensor%s differ%s at step %ld, in step-digest order (the order the "
                "program recorded them, not the order it computed them: the first is not "
                "necessarily where the difference began)%s:\n",
                d->ntensors, d->ntensors == 1 ? "" : "s", d->ntensors == 1 ? "s" : "",
                d->first_step, d->nops ? "; the op outputs below are in execution order" : "");
    else if (at_first)
        fprintf(out,
                "  %d tensor%s differ%s at step %ld, in step-digest order "
                "(the first is the likely origin):\n",
                d->ntensors, d->ntensors == 1 ? "" : "s", d->ntensors == 1 ? "s" : "",
                d->first_step);
    else
        fprintf(out,
                "  %d tensor%s differ%s at step %ld, the nearest step with detail, %ld step%s "
                "after the divergence, in step-digest order (the difference has had time to "
                "spread: the first is not necessarily the origin%s):\n",
                d->ntensors, d->ntensors == 1 ? "" : "s", d->ntensors == 1 ? "s" : "",
                d->detail_step, d->detail_step - d->first_step,
                d->detail_step - d->first_step == 1 ? "" : "s",
                origin ? "; the re-runs' dumps at the divergent step mark it" : "");
    for (int i = 0; i < d->ntensors && i < MAX_TEXT_TENSORS; i++)
        text_tensor(out, &d->tensors[i],
                    at_first && d->order_unknown ? (i == 0 ? MARK_DIGEST_ORDER : MARK_NONE)
                    : at_first ? i == 0
                    : origin && !strcmp(origin, d->tensors[i].name));
    if (d->ntensors > MAX_TEXT_TENSORS)
        fprintf(out, "    ... and %d more (--json lists them all)\n",
                d->ntensors - MAX_TEXT_TENSORS);
    if (d->ntensors == 0)
        fprintf(out, "    (none: the step digests differ but no tensor digest does)\n");
    if (d->nops) {
        fprintf(out, "  %d op output%s differ%s at step %ld, in execution order:\n", d->nops,
                d->nops == 1 ? "" : "s", d->nops == 1 ? "s" : "", d->detail_step);
        for (int i = 0; i < d->nops && i < MAX_TEXT_OPS; i++)
            text_tensor(out, &d->ops[i],
                        at_first && i == 0
                            ? (d->order_unknown ? MARK_EXECUTION_ORDER : MARK_ORIGIN)
                            : MARK_NONE);
        if (d->nops > MAX_TEXT_OPS)
            fprintf(out, "    ... and %d more (--json lists them all)\n",
                    d->nops - MAX_TEXT_OPS);
    }
}

void repro_report_text(FILE *out, const repro_trace *a, const repro_trace *b,
                       const repro_divergence *d)
{
    char ca[13], cb[13];
    hex12(&d->final_chain_a, ca);
    hex12(&d->final_chain_b, cb);
    fprintf(out, "experiment %s\n", repro_esc(a->experiment));
    fprintf(out, "  A: %s (%ld steps%s, chain %s)\n", repro_esc(a->path), d->steps_a,
            d->truncated_a ? ", no trailer" : "", ca);
    fprintf(out, "  B: %s (%ld steps%s, chain %s)\n", repro_esc(b->path), d->steps_b,
            d->truncated_b ? ", no trailer" : "", cb);
    if (d->truncated_a)
        fprintf(out, "warning: A has no trailer: the run did not finish (%ld steps recorded)\n",
                d->steps_a);
    if (d->truncated_b)
        fprintf(out, "warning: B has no trailer: the run did not finish (%ld steps recorded)\n",
                d->steps_b);

    if (d->identical) {
        fprintf(out, "identical: %ld steps, chain %s\n", d->steps_a, ca);
        return;
    }
    if (!d->first_step) {
        fprintf(out, "NOT IDENTICAL: the %ld common steps agree, but A has %ld steps and B %ld%s\n",
                d->common_steps, d->steps_a, d->steps_b,
                d->steps_a == d->steps_b ? " (one run did not finish)" : "");
    } else {
        fprintf(out, "DIVERGED at step %ld (of A: %ld, B: %ld)\n", d->first_step, d->steps_a,
                d->steps_b);
        if (d->scope[0])
            fprintf(out, "  scope: %s\n", repro_esc(d->scope));
        if (d->scope_note[0])
            fprintf(out, "  (%s)\n", repro_esc(d->scope_note));
        if (d->first_has_loss && d->first_loss_bits_a != d->first_loss_bits_b)
            fprintf(out, "  loss: A %.9g (0x%08" PRIx32 "), B %.9g (0x%08" PRIx32 ")\n",
                    d->first_loss_a, d->first_loss_bits_a, d->first_loss_b,
                    d->first_loss_bits_b);
        if (!d->first_has_detail)
            text_no_detail(out, a, b, d);
        text_tensor_lists(out, d);
        const repro_element_diff *e = &d->element;
        if (e->valid && e->count == 0)
            fprintf(out,
                    "  %s: the re-runs of both sides to step %ld agreed on it: the difference "
                    "does not repeat, the mark of nondeterminism (not of a config or code "
                    "difference)\n",
                    repro_esc(e->tensor), d->first_step);
        else if (e->valid && e->max_ulp == REPRO_ULP_NAN)
            fprintf(out,
                    "  %s: elements %ld..%ld of %ld differ (leaves %ld..%ld), %ld elements, "
                    "max |a-b| %.3g, ULP distance not comparable (a NaN differs)\n",
                    repro_esc(e->tensor), e->first, e->last, e->numel, e->first_leaf,
                    e->last_leaf, e->count,
                    e->max_abs);
        else if (e->valid)
            fprintf(out,
                    "  %s: elements %ld..%ld of %ld differ (leaves %ld..%ld), %ld elements, "
                    "max |a-b| %.3g, max %" PRIu64 " ULP\n",
                    repro_esc(e->tensor), e->first, e->last, e->numel, e->first_leaf,
                    e->last_leaf, e->count,
                    e->max_abs, e->max_ulp);
    }

    if (d->ncurve == 0) {
        fprintf(out, "no divergence curve: no common step has tensor detail on both sides\n");
        return;
    }
    long idx[CURVE_ROWS + 2];
    int n = curve_rows(d, idx);
    fprintf(out, "divergence curve (relative difference of %s; %ld of %ld steps shown):\n",
            repro_curve_measure(d), (long)n,
            d->curve_steps > d->ncurve ? d->curve_steps : d->ncurve);
    fprintf(out, "  %8s  %-10s  %-15s  %-15s\n", "step", "rel_l2", "loss A", "loss B");
    for (int i = 0; i < n; i++) {
        const repro_curve_point *c = &d->curve[idx[i]];
        char rel[32];
        if (c->rel_l2 == 0)
            snprintf(rel, sizeof rel, "0");
        else
            snprintf(rel, sizeof rel, "%.3e", c->rel_l2);
        char la[32], lb[32];
        num(c->loss_a, la, sizeof la);
        num(c->loss_b, lb, sizeof lb);
        fprintf(out, "  %8ld  %-10s  %-15s  %-15s%s\n", c->step, rel, la, lb,
                c->step == d->first_step ? "  <- first divergent step" : "");
    }
}

/* ---- JSON ------------------------------------------------------------- */

/* jansson refuses NaN and infinities: they become null. */
static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *digest_json(const repro_digest *d)
{
    char hex[65];
    repro_digest_hex(d, hex);
    return json_string(hex);
}

static json_t *tensor_json(const repro_trace_tensor *t)
{
    json_t *o = json_object(), *shape = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(shape, json_integer(t->shape[i]));
    json_object_set_new(o, "dtype", json_string(t->dtype));
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "digest", digest_json(&t->digest));
    json_object_set_new(o, "l2", real_or_null(t->l2));
    json_object_set_new(o, "sum", real_or_null(t->sum));
    json_object_set_new(o, "max_abs", real_or_null(t->max_abs));
    json_object_set_new(o, "nonfinite", json_integer(t->nonfinite));
    return o;
}

static json_t *diffs_json(const repro_tensor_diff *list, int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        const repro_tensor_diff *d = &list[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(d->name));
        json_object_set_new(o, "in_a", json_boolean(d->in_a));
        json_object_set_new(o, "in_b", json_boolean(d->in_b));
        json_object_set_new(o, "a", d->in_a ? tensor_json(&d->a) : json_null());
        json_object_set_new(o, "b", d->in_b ? tensor_json(&d->b) : json_null());
        json_object_set_new(o, "l2_rel_diff",
                            d->in_a && d->in_b ? real_or_null(rel_diff(d->a.l2, d->b.l2))
                                               : json_null());
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *side_json(const repro_trace *t, long steps, const repro_digest *chain, int truncated)
{
    static const char *const levels[] = {"step", "tensor", "op"};
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(t->path));
    json_object_set_new(o, "steps", json_integer(steps));
    json_object_set_new(o, "chain", digest_json(chain));
    json_object_set_new(o, "truncated", json_boolean(truncated));
    json_object_set_new(o, "level",
                        json_string(levels[t->level >= 0 && t->level <= 2 ? t->level : 1]));
    json_object_set_new(o, "every", json_integer(t->every));
    json_object_set_new(o, "config_digest", digest_json(&t->config_digest));
    return o;
}

int repro_report_json(FILE *out, const repro_trace *a, const repro_trace *b,
                      const repro_divergence *d)
{
    json_t *r = json_object();
    if (!r)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    json_object_set_new(r, "experiment", json_string(a->experiment));
    json_object_set_new(r, "identical", json_boolean(d->identical));
    json_object_set_new(r, "first_divergent_step",
                        d->first_step ? json_integer(d->first_step) : json_null());
    json_object_set_new(r, "common_steps", json_integer(d->common_steps));
    json_object_set_new(r, "first_step_has_detail", json_boolean(d->first_has_detail));
    json_object_set_new(r, "detail_step", d->detail_step ? json_integer(d->detail_step)
                                                          : json_null());
    const char *origin = origin_name(d);
    json_object_set_new(r, "likely_origin", origin ? json_string(origin) : json_null());
    json_object_set_new(r, "first_in_digest_order",
                        d->ntensors && d->detail_step == d->first_step
                            ? json_string(d->tensors[0].name)
                            : json_null());
    json_object_set_new(r, "tensors", diffs_json(d->tensors, d->ntensors));
    json_object_set_new(r, "ops", diffs_json(d->ops, d->nops));
    if (d->element.valid) {
        const repro_element_diff *e = &d->element;
        json_t *o = json_object();
        json_object_set_new(o, "tensor", json_string(e->tensor));
        json_object_set_new(o, "count", json_integer(e->count));
        json_object_set_new(o, "numel", json_integer(e->numel));
        json_object_set_new(o, "first", json_integer(e->first));
        json_object_set_new(o, "last", json_integer(e->last));
        json_object_set_new(o, "first_leaf", json_integer(e->first_leaf));
        json_object_set_new(o, "last_leaf", json_integer(e->last_leaf));
        json_object_set_new(o, "max_abs", real_or_null(e->max_abs));
        json_object_set_new(o, "max_ulp", e->max_ulp == REPRO_ULP_NAN
                                              ? json_null() /* not comparable: a NaN */
                                              : json_integer((json_int_t)e->max_ulp));
        json_object_set_new(r, "element", o);
    } else {
        json_object_set_new(r, "element", json_null());
    }
    json_object_set_new(r, "scope", d->scope[0] ? json_string(d->scope) : json_null());
    json_object_set_new(r, "scope_note",
                        d->scope_note[0] ? json_string(d->scope_note) : json_null());
    json_t *curve = json_array();
    for (long i = 0; i < d->ncurve; i++) {
        const repro_curve_point *c = &d->curve[i];
        json_t *o = json_object();
        json_object_set_new(o, "step", json_integer(c->step));
        json_object_set_new(o, "rel_l2", real_or_null(c->rel_l2));
        json_object_set_new(o, "loss_a", real_or_null(c->loss_a));
        json_object_set_new(o, "loss_b", real_or_null(c->loss_b));
        json_array_append_new(curve, o);
    }
    json_object_set_new(r, "curve", curve);
    json_object_set_new(r, "curve_measure",
                        json_string(d->curve_all_tensors ? "tensors" : "params"));
    json_object_set_new(r, "a", side_json(a, d->steps_a, &d->final_chain_a, d->truncated_a));
    json_object_set_new(r, "b", side_json(b, d->steps_b, &d->final_chain_b, d->truncated_b));
    int rc = json_dumpf(r, out, JSON_INDENT(2));
    json_decref(r);
    if (rc != 0 || fputc('\n', out) == EOF)
        return repro_error_set_errno(REPRO_EIO, "writing the JSON report");
    return 0;
}
