/* Reports of a tolerance comparison (tol_diff.h): text for people, JSON
 * with the same fields. The words are fixed: "within tolerance" when every
 * compared tensor stays inside its rule, "diverged at step S" otherwise;
 * "identical" is never said, since a tolerance is only asked for where the
 * bits may differ (a report whose values were all bitwise equal says so). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "analysis/tol_diff.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/ulp.h"

static int is_float(const char *dtype)
{
    return !strcmp(dtype, "f32") || !strcmp(dtype, "f64");
}

static void shape_str(const repro_tol_tensor *t, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s[", t->dtype);
    for (int i = 0; i < t->ndim && n < (int)len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%s%ld", i ? "," : "", t->shape[i]);
    if (n < (int)len)
        snprintf(buf + n, len - (size_t)n, "]");
}

static void ulp_str(const char *dtype, uint64_t u, char *buf, size_t len)
{
    if (!is_float(dtype))
        snprintf(buf, len, "-");
    else if (u == REPRO_ULP_NAN)
        snprintf(buf, len, "NaN");
    else
        snprintf(buf, len, "%" PRIu64, u);
}

static void row_text(FILE *out, const repro_tol_tensor *t, const repro_tol_row *r)
{
    char ulp[32];
    ulp_str(t->dtype, r->m.max_ulp, ulp, sizeof ulp);
    fprintf(out, "    step %-8ld %9s %12.3g %12.3g %10ld %10ld  %s%s\n", r->step, ulp,
            r->m.max_rel, r->m.max_abs, r->m.differ, r->m.outside,
            r->m.outside ? "past" : "within", r->from_digest ? " (same digest)" : "");
}

static void tensor_text(FILE *out, const repro_tol_tensor *t)
{
    char shape[128], ulp[32];
    shape_str(t, shape, sizeof shape);
    ulp_str(t->dtype, t->max_ulp, ulp, sizeof ulp);
    fprintf(out, "%s %s", repro_esc(t->name), shape);
    if (strcmp(t->name, t->name_b))
        fprintf(out, " (B: %s)", repro_esc(t->name_b));
    fprintf(out, ", rule %s: ", t->rule.text);
    if (t->first_past)
        fprintf(out, "diverged at step %ld", t->first_past);
    else
        fprintf(out, "within tolerance");
    fprintf(out, " (%ld step%s compared, bits differ at %ld of them; max %s ULP, max rel err %.3g)\n",
            t->steps, t->steps == 1 ? "" : "s", t->differ_steps, ulp, t->max_rel);
    fprintf(out, "    %-13s %9s %12s %12s %10s %10s\n", "", "max ULP", "max rel err",
            "max |a-b|", "differ", "past rule");
    for (int i = 0; i < t->nrows; i++)
        row_text(out, t, &t->rows[i]);
    if (t->steps > t->nrows) {
        fprintf(out, "    ... %ld more steps (rows shown: the first %d, the first past the "
                "rule, the last)\n", t->steps - t->nrows, REPRO_TOL_ROWS);
        if (t->past_row.step && t->past_row.step != t->last_row.step)
            row_text(out, t, &t->past_row);
        row_text(out, t, &t->last_row);
    }
}

static void names_text(FILE *out, const char *label, char (*v)[64], int n)
{
    if (!n)
        return;
    fprintf(out, "not compared, only in %s: %d (", label, n);
    for (int i = 0; i < n && i < 8; i++)
        fprintf(out, "%s%s", i ? ", " : "", repro_esc(v[i]));
    fprintf(out, "%s)\n", n > 8 ? ", ..." : "");
}

static void tolerance_text(FILE *out, const repro_tolerance *tol)
{
    if (!tol->n) {
        fprintf(out, "tolerance: exact (no --tolerance given)\n");
        return;
    }
    fprintf(out, "tolerance:");
    int def = 0;
    for (int i = 0; i < tol->n; i++) {
        fprintf(out, " %s%s%s", tol->v[i].glob, tol->v[i].glob[0] ? "=" : "",
                tol->v[i].rule.text);
        def |= !tol->v[i].glob[0];
    }
    fprintf(out, "%s\n", def ? "" : " (other tensors: exact)");
}

void repro_tol_report_text(FILE *out, const repro_trace *a, const repro_trace *b,
                           const repro_tolerance *tol, const repro_tensor_map *map,
                           const repro_tol_result *r)
{
    fprintf(out, "A: %s (%s)\nB: %s (%s)\n", repro_esc(a->experiment), repro_esc(a->path),
            repro_esc(b->experiment), repro_esc(b->path));
    tolerance_text(out, tol);
    if (map->path[0])
        fprintf(out, "map: %s (%d name%s)\n", repro_esc(map->path), map->n,
                map->n == 1 ? "" : "s");
    fprintf(out, "compared: %d tensor%s at %ld step%s with tensor detail on both sides\n\n",
            r->n, r->n == 1 ? "" : "s", r->compared_steps, r->compared_steps == 1 ? "" : "s");
    for (int i = 0; i < r->n; i++)
        tensor_text(out, &r->t[i]);
    fprintf(out, "\n");
    names_text(out, "A", r->only_a, r->n_only_a);
    names_text(out, "B", r->only_b, r->n_only_b);
    if (r->first_past)
        fprintf(out, "diverged at step %ld: %s is the first tensor past its tolerance there\n",
                r->first_past, repro_esc(r->first_tensor));
    else if (r->bitwise)
        fprintf(out, "within tolerance: every compared value is bitwise equal\n");
    else
        fprintf(out, "within tolerance: the bits differ, every difference is inside its rule\n");
}

/* JSON has no inf: a non-finite number is null. */
static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *ulp_json(const char *dtype, uint64_t u)
{
    return !is_float(dtype) || u == REPRO_ULP_NAN ? json_null() : json_integer((json_int_t)u);
}

static json_t *row_json(const repro_tol_tensor *t, const repro_tol_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(r->step));
    json_object_set_new(o, "max_ulp", ulp_json(t->dtype, r->m.max_ulp));
    json_object_set_new(o, "max_rel_err", real_or_null(r->m.max_rel));
    json_object_set_new(o, "max_abs_err", real_or_null(r->m.max_abs));
    json_object_set_new(o, "numel", json_integer(r->m.numel));
    json_object_set_new(o, "differ", json_integer(r->m.differ));
    json_object_set_new(o, "past_rule", json_integer(r->m.outside));
    json_object_set_new(o, "first_past_element",
                        r->m.first_outside >= 0 ? json_integer(r->m.first_outside) : json_null());
    return o;
}

static json_t *tensor_json(const repro_tol_tensor *t)
{
    json_t *o = json_object(), *shape = json_array(), *rows = json_array();
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "name_b", json_string(t->name_b));
    json_object_set_new(o, "dtype", json_string(t->dtype));
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(shape, json_integer(t->shape[i]));
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "rule", json_string(t->rule.text));
    json_object_set_new(o, "verdict", json_string(t->first_past ? "diverged" : "within tolerance"));
    json_object_set_new(o, "first_step_past", t->first_past ? json_integer(t->first_past)
                                                            : json_null());
    json_object_set_new(o, "steps_compared", json_integer(t->steps));
    json_object_set_new(o, "steps_bits_differ", json_integer(t->differ_steps));
    json_object_set_new(o, "max_ulp", ulp_json(t->dtype, t->max_ulp));
    json_object_set_new(o, "max_rel_err", real_or_null(t->max_rel));
    json_object_set_new(o, "max_abs_err", real_or_null(t->max_abs));
    for (int i = 0; i < t->nrows; i++)
        json_array_append_new(rows, row_json(t, &t->rows[i]));
    if (t->steps > t->nrows) {
        if (t->past_row.step && t->past_row.step != t->last_row.step)
            json_array_append_new(rows, row_json(t, &t->past_row));
        json_array_append_new(rows, row_json(t, &t->last_row));
    }
    json_object_set_new(o, "steps", rows);
    return o;
}

static json_t *names_json(char (*v)[64], int n)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, json_string(v[i]));
    return arr;
}

int repro_tol_report_json(FILE *out, const repro_trace *a, const repro_trace *b,
                          const repro_tolerance *tol, const repro_tensor_map *map,
                          const repro_tol_result *r)
{
    json_t *o = json_object(), *specs = json_array(), *tensors = json_array();
    if (!o || !specs || !tensors)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int i = 0; i < tol->n; i++) {
        char s[160];
        snprintf(s, sizeof s, "%s%s%s", tol->v[i].glob, tol->v[i].glob[0] ? "=" : "",
                 tol->v[i].rule.text);
        json_array_append_new(specs, json_string(s));
    }
    for (int i = 0; i < r->n; i++)
        json_array_append_new(tensors, tensor_json(&r->t[i]));
    json_object_set_new(o, "a", json_pack("{s:s,s:s}", "experiment", a->experiment, "path",
                                          a->path));
    json_object_set_new(o, "b", json_pack("{s:s,s:s}", "experiment", b->experiment, "path",
                                          b->path));
    json_object_set_new(o, "tolerance", specs);
    json_object_set_new(o, "map", map->path[0] ? json_string(map->path) : json_null());
    json_object_set_new(o, "verdict", json_string(r->first_past ? "diverged"
                                                                : "within tolerance"));
    json_object_set_new(o, "first_step_past", r->first_past ? json_integer(r->first_past)
                                                            : json_null());
    json_object_set_new(o, "first_tensor_past", r->first_past ? json_string(r->first_tensor)
                                                              : json_null());
    json_object_set_new(o, "bitwise_equal", json_boolean(r->bitwise));
    json_object_set_new(o, "compared_steps", json_integer(r->compared_steps));
    json_object_set_new(o, "tensors", tensors);
    json_object_set_new(o, "only_in_a", names_json(r->only_a, r->n_only_a));
    json_object_set_new(o, "only_in_b", names_json(r->only_b, r->n_only_b));
    int rc = json_dumpf(o, out, JSON_INDENT(2));
    json_decref(o);
    if (rc != 0 || fputc('\n', out) == EOF)
        return repro_error_set_errno(REPRO_EIO, "writing the JSON report");
    return 0;
}
