/* Comparing traces: identical ones are identical, the first divergent step
 * is found exactly wherever it lies (binary search edges), the differing
 * tensors come in step-digest order, the curve has the promised values, the
 * reports and plot hold the same data, and `repro diff` exits 0 / 1 / 2. */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "analysis/elemdiff.h"
#include "util/ulp.h"
#include "util/error.h"
#include "testutil.h"
#include "record/trace.h"

/* The generator lives in check_trace_read.c (see its comment); flags: */
#define TRF_SINGLE 1u
#define TRF_NO_TRAILER 2u
#define TRF_OPS 4u
#define TRF_OTHER_CONFIG 8u
#define TRF_EXTRA 16u
#define TRF_V2 32u
#define TRF_NO_CHAIN 64u
char *tr_fixture(const char *exp, long nsteps, long diverge_at, unsigned flags, int every);

static repro_trace ta, tb;
static repro_divergence dv;

/* Writes a fixture to a fresh file; path_out receives its path. */
static void fixture_file(char *path_out, size_t len, const char *name, const char *exp, long nsteps,
                         long diverge_at, unsigned flags, int every)
{
    char *text = tr_fixture(exp, nsteps, diverge_at, flags, every);
    tu_write_temp(path_out, len, name, text);
    free(text);
}

static void load(repro_trace *t, const char *exp, long nsteps, long diverge_at, unsigned flags,
                 int every)
{
    char path[256];
    fixture_file(path, sizeof path, diverge_at ? "b.jsonl" : "a.jsonl", exp, nsteps, diverge_at,
                 flags, every);
    ck_assert_msg(repro_trace_read(t, path) == 0, "%s", repro_error_message());
}

/* Loads the reference (A) and a run parting at step k (B), compares. */
static void compare_pair(long nsteps, long k, unsigned flags, int every)
{
    load(&ta, "mlp", nsteps, 0, flags & ~(TRF_SINGLE | TRF_EXTRA), every);
    load(&tb, "mlp", nsteps, k, flags, every);
    ck_assert_msg(repro_compare_traces(&ta, &tb, &dv) == 0, "%s", repro_error_message());
}

static void release_all(void)
{
    repro_divergence_release(&dv);
    repro_trace_release(&ta);
    repro_trace_release(&tb);
}

START_TEST(test_identical)
{
    compare_pair(6, 0, 0, 1);
    ck_assert_int_eq(dv.identical, 1);
    ck_assert_int_eq(dv.first_step, 0);
    ck_assert_int_eq(dv.common_steps, 6);
    ck_assert_int_eq(dv.steps_a, 6);
    ck_assert_int_eq(dv.steps_b, 6);
    ck_assert_int_eq(dv.ntensors, 0);
    ck_assert_int_eq(dv.ncurve, 6);
    for (long i = 0; i < dv.ncurve; i++)
        ck_assert_double_eq(dv.curve[i].rel_l2, 0);
    ck_assert(repro_digest_eq(&dv.final_chain_a, &dv.final_chain_b));
    ck_assert_int_eq(dv.element.valid, 0);
    ck_assert_str_eq(dv.scope, "");
    release_all();
}
END_TEST

START_TEST(test_first_step_found_everywhere)
{
    /* Every (length, divergent step) pair up to 9 steps: the binary
     * search's edges (first step, last step, odd and even lengths). */
    for (long n = 1; n <= 9; n++)
        for (long k = 1; k <= n; k++) {
            compare_pair(n, k, 0, 1);
            ck_assert_msg(dv.first_step == k, "n %ld k %ld: found %ld", n, k, dv.first_step);
            ck_assert_int_eq(dv.identical, 0);
            ck_assert_int_eq(dv.first_has_detail, 1);
            release_all();
        }
    /* A long run, sparse detail: the step is still exact. */
    long ks[] = {1, 2, 499, 500, 501, 998, 999, 1000};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        compare_pair(1000, ks[i], 0, 100);
        ck_assert_int_eq(dv.first_step, ks[i]);
        release_all();
    }
}
END_TEST

START_TEST(test_negative_control_single_tensor)
{
    /* Only one tensor's digest differs, at one step; its step digest and
     * from there every chain differ, but no later step does. */
    long ks[] = {1, 4, 8};
    for (size_t i = 0; i < 3; i++) {
        compare_pair(8, ks[i], TRF_SINGLE, 1);
        ck_assert_int_eq(dv.identical, 0);
        ck_assert_int_eq(dv.first_step, ks[i]);
        ck_assert_int_eq(dv.ntensors, 1);
        ck_assert_str_eq(dv.tensors[0].name, "grad.fc1.weight");
        ck_assert(
            !repro_digest_eq(&ta.steps[ks[i] - 1].step_digest, &tb.steps[ks[i] - 1].step_digest));
        for (long s = ks[i] + 1; s <= 8; s++)
            ck_assert(repro_digest_eq(&ta.steps[s - 1].step_digest, &tb.steps[s - 1].step_digest));
        release_all();
    }
}
END_TEST

START_TEST(test_differing_tensors_in_order)
{
    compare_pair(5, 3, 0, 1);
    static const char *const want[] = {
        "grad.fc2.weight",  "grad.fc1.weight",         "param.fc1.weight",
        "param.fc2.weight", "sgd.momentum.fc1.weight", "sgd.momentum.fc2.weight",
        "rng.state"};
    ck_assert_int_eq(dv.ntensors, 7);
    for (int i = 0; i < 7; i++) {
        ck_assert_str_eq(dv.tensors[i].name, want[i]);
        ck_assert_int_eq(dv.tensors[i].in_a, 1);
        ck_assert_int_eq(dv.tensors[i].in_b, 1);
    }
    ck_assert_double_eq(dv.tensors[0].a.l2, 1.0);
    ck_assert_double_eq(dv.tensors[0].b.l2, 1.000001);
    ck_assert_int_eq(dv.nops, 0);
    release_all();

    /* A tensor on one side only comes after A's, marked so. */
    compare_pair(5, 2, TRF_EXTRA | TRF_SINGLE, 1);
    ck_assert_int_eq(dv.first_step, 2);
    ck_assert_int_eq(dv.ntensors, 2);
    ck_assert_str_eq(dv.tensors[0].name, "grad.fc1.weight");
    ck_assert_str_eq(dv.tensors[1].name, "extra.b");
    ck_assert_int_eq(dv.tensors[1].in_a, 0);
    ck_assert_int_eq(dv.tensors[1].in_b, 1);
    release_all();

    /* Level op: the differing op outputs, in execution order. */
    compare_pair(4, 2, TRF_OPS, 1);
    ck_assert_int_eq(dv.nops, 2);
    ck_assert_str_eq(dv.ops[0].name, "bwd.fc2.dx");
    ck_assert_str_eq(dv.ops[1].name, "bwd.fc1.dx");
    release_all();
}
END_TEST

/* Version 2 has the loss on every step, so the divergent step's loss is
 * there without detail; a golden's thinned form compares like the full
 * one; a divergent detail step is its own detail step. */
START_TEST(test_version2_between_detail_steps)
{
    load(&ta, "mlp", 8, 0, TRF_V2, 4);
    load(&tb, "mlp", 8, 3, TRF_NO_CHAIN, 4);
    ck_assert_msg(repro_compare_traces(&ta, &tb, &dv) == 0, "%s", repro_error_message());
    ck_assert_int_eq(dv.first_step, 3);
    ck_assert_int_eq(dv.first_has_detail, 0);
    ck_assert_int_eq(dv.first_has_loss, 1);
    ck_assert_uint_eq(dv.first_loss_bits_a, dv.first_loss_bits_b);
    ck_assert_int_eq(dv.detail_step, 4);
    ck_assert_int_eq(dv.ntensors, 9);
    release_all();

    load(&ta, "mlp", 8, 0, TRF_V2, 4);
    load(&tb, "mlp", 8, 4, TRF_NO_CHAIN, 4);
    ck_assert_msg(repro_compare_traces(&ta, &tb, &dv) == 0, "%s", repro_error_message());
    ck_assert_int_eq(dv.first_step, 4);
    ck_assert_int_eq(dv.first_has_detail, 1);
    ck_assert_int_eq(dv.detail_step, 4);
    ck_assert_str_eq(dv.tensors[0].name, "grad.fc2.weight");
    release_all();

    /* identical: the thinned form's computed chains are the full one's */
    load(&ta, "mlp", 8, 0, TRF_V2, 4);
    load(&tb, "mlp", 8, 0, TRF_NO_CHAIN, 4);
    ck_assert_msg(repro_compare_traces(&ta, &tb, &dv) == 0, "%s", repro_error_message());
    ck_assert_int_eq(dv.identical, 1);
    release_all();
}
END_TEST

START_TEST(test_no_detail_at_first_step)
{
    compare_pair(8, 3, 0, 4);
    ck_assert_int_eq(dv.first_step, 3);
    ck_assert_int_eq(dv.first_has_detail, 0);
    ck_assert_int_eq(dv.first_has_loss, 0); /* version 1: the loss only with detail */
    /* The tensors come from the nearest detail step after it, where
     * everything computed has parted. */
    ck_assert_int_eq(dv.detail_step, 4);
    ck_assert_int_eq(dv.ntensors, 9);
    ck_assert_str_eq(dv.tensors[0].name, "logits");
    ck_assert_int_eq(dv.ncurve, 2); /* steps 4 and 8 */
    ck_assert_int_eq(dv.curve[0].step, 4);
    ck_assert_int_eq(dv.curve[1].step, 8);
    release_all();
}
END_TEST

START_TEST(test_curve_values)
{
    /* B's params are A's times 1 + 1e-6 (s - k + 1) from step k on, so
     * rel_l2 = 1e-6 (s - k + 1); loss moves after step k. */
    compare_pair(6, 3, 0, 1);
    ck_assert_int_eq(dv.ncurve, 6);
    for (long i = 0; i < 6; i++) {
        long s = i + 1;
        double want = s >= 3 ? 1e-6 * (double)(s - 2) : 0;
        ck_assert_int_eq(dv.curve[i].step, s);
        ck_assert_msg(fabs(dv.curve[i].rel_l2 - want) < 1e-12, "step %ld: %g vs %g", s,
                      dv.curve[i].rel_l2, want);
        ck_assert_double_eq(dv.curve[i].loss_a, (double)(float)(2.3 - 0.01 * (double)s));
        if (s <= 3)
            ck_assert_double_eq(dv.curve[i].loss_a, dv.curve[i].loss_b);
        else
            ck_assert_double_ne(dv.curve[i].loss_a, dv.curve[i].loss_b);
    }
    ck_assert_double_eq(dv.curve[0].rel_l2, 0);
    release_all();

    /* Sparse detail: only the recorded steps are on the curve. */
    compare_pair(7, 1, 0, 3);
    ck_assert_int_eq(dv.ncurve, 3);
    ck_assert_int_eq(dv.curve[0].step, 3);
    ck_assert_int_eq(dv.curve[1].step, 6);
    ck_assert_int_eq(dv.curve[2].step, 7);
    release_all();
}
END_TEST

START_TEST(test_prefix_and_truncated)
{
    /* Same experiment, B ran longer: the common steps agree, yet not
     * identical. */
    load(&ta, "mlp", 5, 0, 0, 1);
    load(&tb, "mlp", 8, 0, 0, 1);
    ck_assert_int_eq(repro_compare_traces(&ta, &tb, &dv), 0);
    ck_assert_int_eq(dv.identical, 0);
    ck_assert_int_eq(dv.first_step, 0);
    ck_assert_int_eq(dv.common_steps, 5);
    release_all();

    /* Same steps, but B has no trailer: not certified identical. */
    load(&ta, "mlp", 5, 0, 0, 1);
    load(&tb, "mlp", 5, 0, TRF_NO_TRAILER, 1);
    ck_assert_int_eq(repro_compare_traces(&ta, &tb, &dv), 0);
    ck_assert_int_eq(dv.identical, 0);
    ck_assert_int_eq(dv.truncated_a, 0);
    ck_assert_int_eq(dv.truncated_b, 1);
    release_all();
}
END_TEST

START_TEST(test_different_experiments_refused)
{
    load(&ta, "mlp", 3, 0, 0, 1);
    load(&tb, "cnn", 3, 0, 0, 1);
    repro_error_clear();
    ck_assert_int_eq(repro_compare_traces(&ta, &tb, &dv), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    const char *msg = repro_error_message();
    char want[2200];
    snprintf(want, sizeof want, "%s and %s are different experiments: mlp vs cnn", ta.path,
             tb.path);
    ck_assert_str_eq(msg, want);
    repro_trace_release(&tb);

    load(&tb, "mlp", 3, 0, TRF_OTHER_CONFIG, 1);
    ck_assert_int_eq(repro_compare_traces(&ta, &tb, &dv), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    msg = repro_error_message();
    ck_assert_msg(strstr(msg, ta.path) && strstr(msg, tb.path), "%s", msg);
    ck_assert_msg(strstr(msg, "have different configs (numerics digest "), "%s", msg);
    ck_assert_msg(strstr(msg, "train.lr 0.05 vs 0.1"), "%s", msg);
    repro_trace_release(&ta);
    repro_trace_release(&tb);
}
END_TEST

/* Runs a report into memory. */
static char *report(int json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    if (json)
        ck_assert_int_eq(repro_report_json(f, &ta, &tb, &dv), 0);
    else
        repro_report_text(f, &ta, &tb, &dv);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static void has(const char *text, const char *want)
{
    ck_assert_msg(strstr(text, want) != NULL, "report lacks '%s':\n%s", want, text);
}

START_TEST(test_text_report)
{
    compare_pair(5, 0, 0, 1);
    char *t = report(0);
    char want[64], hex[65];
    repro_digest_hex(&dv.final_chain_a, hex);
    snprintf(want, sizeof want, "identical: 5 steps, chain %.12s\n", hex);
    has(t, want);
    free(t);
    release_all();

    compare_pair(40, 3, 0, 1);
    dv.element.valid = 1;
    snprintf(dv.element.tensor, sizeof dv.element.tensor, "grad.fc2.weight");
    dv.element.first = 1024;
    dv.element.last = 2047;
    dv.element.numel = 200704;
    dv.element.first_leaf = dv.element.last_leaf = 1;
    dv.element.count = 37;
    dv.element.max_abs = 1.2e-7;
    dv.element.max_ulp = 3;
    snprintf(dv.scope, sizeof dv.scope, "fresh-process run to run");
    t = report(0);
    has(t, "DIVERGED at step 3 (of A: 40, B: 40)");
    has(t, "grad.fc2.weight  f32[2,5]   <- likely origin");
    has(t, "A: l2 1  sum 0.5  max_abs 0.25  nonfinite 0");
    has(t, "B: l2 1.000001");
    has(t, "l2 relative difference 1e-06");
    has(t, "grad.fc2.weight: elements 1024..2047 of 200704 differ (leaves 1..1), 37 elements, "
           "max |a-b| 1.2e-07, max 3 ULP");
    has(t, "scope: fresh-process run to run");
    has(t, "<- first divergent step");
    /* The curve is sampled: at most 12 rows plus the first divergent step. */
    int rows = 0;
    for (const char *p = strstr(t, "rel_l2"); p && (p = strchr(p, '\n')); p++)
        if (p[1] == ' ')
            rows++;
    ck_assert_int_le(rows, 13);
    ck_assert_int_ge(rows, 12);
    free(t);
    release_all();

    /* Truncated side: warned about. */
    load(&ta, "mlp", 4, 0, 0, 1);
    load(&tb, "mlp", 4, 2, TRF_NO_TRAILER, 2);
    ck_assert_int_eq(repro_compare_traces(&ta, &tb, &dv), 0);
    t = report(0);
    has(t, "warning: B has no trailer: the run did not finish");
    free(t);
    release_all();
}
END_TEST

START_TEST(test_json_report)
{
    compare_pair(6, 4, 0, 1);
    char *t = report(1);
    json_error_t err;
    json_t *j = json_loads(t, 0, &err);
    ck_assert_msg(j != NULL, "not JSON: %s\n%s", err.text, t);
    ck_assert(json_is_false(json_object_get(j, "identical")));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "first_divergent_step")), 4);
    json_t *ts = json_object_get(j, "tensors");
    ck_assert_int_eq(json_array_size(ts), 7);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ts, 0), "name")),
                     "grad.fc2.weight");
    ck_assert_int_eq(json_array_size(json_object_get(j, "curve")), 6);
    ck_assert(json_is_null(json_object_get(j, "element")));
    json_t *a = json_object_get(j, "a");
    ck_assert_str_eq(json_string_value(json_object_get(a, "path")), ta.path);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "steps")), 6);
    ck_assert(json_is_false(json_object_get(a, "truncated")));
    json_decref(j);
    free(t);
    release_all();

    compare_pair(3, 0, 0, 1);
    t = report(1);
    j = json_loads(t, 0, &err);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_true(json_object_get(j, "identical")));
    ck_assert(json_is_null(json_object_get(j, "first_divergent_step")));
    json_decref(j);
    free(t);
    release_all();
}
END_TEST

/* Element diffs use the one ULP rule (util/ulp.h): +0 against -0 differs
 * bitwise but is 0 ulps apart (it was 1 here and 0 in verify); a NaN
 * against anything else is "not comparable", in the text and the JSON. */
START_TEST(test_element_diff_ulp_rule)
{
    const uint32_t a[] = {0x00000000u, 0x3f800000u, 0x40000000u};
    const uint32_t b[] = {0x80000000u, 0x3f800000u, 0x40000000u};
    repro_element_diff e;
    repro_element_diff_compute(a, b, sizeof a, 1, "param.x", &e);
    ck_assert_int_eq(e.count, 1); /* the zeros differ bitwise */
    ck_assert_uint_eq(e.max_ulp, 0); /* and are the same number */
    const uint32_t c[] = {0x00000000u, 0x3f800001u, 0x7fc00000u};
    repro_element_diff_compute(a, c, sizeof a, 1, "param.x", &e);
    ck_assert_int_eq(e.count, 2);
    ck_assert(e.max_ulp == REPRO_ULP_NAN);
    ck_assert(e.max_abs == ldexp(1.0, -23)); /* the NaN pair has no |a-b| */

    compare_pair(40, 3, 0, 1);
    dv.element = e;
    dv.element.first = 1;
    dv.element.last = 2;
    char *t = report(0);
    has(t, "param.x: elements 1..2 of 3 differ (leaves 0..0), 2 elements, max |a-b| 1.19e-07, "
           "ULP distance not comparable (a NaN differs)");
    free(t);
    t = report(1);
    json_t *j = json_loads(t, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_null(json_object_get(json_object_get(j, "element"), "max_ulp")));
    json_decref(j);
    free(t);
    release_all();
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(test_plot)
{
    char dir[TU_TMP_LEN], path[300];
    tu_tmp_template(dir, sizeof dir, "plot");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/curve.svg", dir);
    compare_pair(30, 7, 0, 1);
    ck_assert_int_eq(repro_plot_svg(path, &dv, "mlp <A> & \"B\""), 0);
    const char *svg = slurp(path);
    ck_assert(!strncmp(svg, "<?xml", 5) || !strncmp(svg, "<svg", 4));
    has(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    has(svg, "mlp &lt;A&gt; &amp; &quot;B&quot;");
    has(svg, "first divergence: step 7");
    has(svg, "<polyline");
    has(svg, ">0</text>");
    has(svg, "</svg>\n");
    /* Unwritable place: exit 3, nothing left behind. */
    snprintf(path, sizeof path, "%s/no/such/dir/curve.svg", dir);
    repro_error_clear();
    ck_assert_int_eq(repro_plot_svg(path, &dv, "x"), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    snprintf(path, sizeof path, "%s/curve.svg", dir);
    remove(path);
    rmdir(dir);
    release_all();
}
END_TEST

/* ---- `repro diff` as a user runs it ------------------------------------ */

static char out[1 << 18], err[1 << 14];

static int diff(const char *args)
{
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "diff %s", args);
    return tu_run_repro(cmd, out, sizeof out, err, sizeof err);
}

START_TEST(test_cli_exit_codes)
{
    char a[256], a2[256], b[256], c[256], cut[256], bad[256], args[2048];
    fixture_file(a, sizeof a, "a.jsonl", "mlp", 12, 0, 0, 1);
    fixture_file(a2, sizeof a2, "a2.jsonl", "mlp", 12, 0, 0, 1);
    fixture_file(b, sizeof b, "b.jsonl", "mlp", 12, 5, 0, 1);
    fixture_file(c, sizeof c, "c.jsonl", "cnn", 12, 0, 0, 1);
    fixture_file(cut, sizeof cut, "cut.jsonl", "mlp", 6, 0, TRF_NO_TRAILER, 1);
    tu_write_temp(bad, sizeof bad, "bad.jsonl", "{\"repro_trace\": 3, \"type\": \"header\"}\n");

    snprintf(args, sizeof args, "%s %s", a, a2);
    ck_assert_int_eq(diff(args), 0);
    has(out, "identical: 12 steps, chain ");

    snprintf(args, sizeof args, "%s %s", a, b);
    ck_assert_int_eq(diff(args), 1);
    has(out, "DIVERGED at step 5 (of A: 12, B: 12)");
    has(out, "grad.fc2.weight");

    snprintf(args, sizeof args, "%s %s", a, c);
    ck_assert_int_eq(diff(args), 2);
    has(err, "are different experiments: mlp vs cnn");

    snprintf(args, sizeof args, "%s %s", a, cut);
    ck_assert_int_eq(diff(args), 2);
    has(err, cut);
    has(err, ": truncated trace (no trailer after line 7): the run did not finish");

    snprintf(args, sizeof args, "%s %s", bad, a);
    ck_assert_int_eq(diff(args), 2);
    char want[300];
    snprintf(want, sizeof want, "%s:1: unknown trace version 3", bad);
    has(err, want);

    snprintf(args, sizeof args, "%s /nonexistent.jsonl", a);
    ck_assert_int_eq(diff(args), 2);
    has(err, "/nonexistent.jsonl: No such file or directory");

    ck_assert_int_eq(diff(a), 2);
    has(err, "expected two traces, got 1");
    snprintf(args, sizeof args, "--frobnicate %s %s", a, b);
    ck_assert_int_eq(diff(args), 2);
    has(err, "unknown option '--frobnicate'");
    ck_assert_int_eq(diff("--help"), 0);
    has(out, "usage: repro diff A B");
    ck_assert_int_eq(tu_run_repro("help diff", out, sizeof out, err, sizeof err), 0);
    has(out, "usage: repro diff A B");
}
END_TEST

START_TEST(test_cli_json_and_plot)
{
    char a[256], b[256], args[2048], svg[300];
    fixture_file(a, sizeof a, "a.jsonl", "mlp", 10, 0, 0, 1);
    fixture_file(b, sizeof b, "b.jsonl", "mlp", 10, 9, 0, 1);
    snprintf(svg, sizeof svg, "%s.svg", b);
    snprintf(args, sizeof args, "%s %s --json --plot %s", a, b, svg);
    ck_assert_int_eq(diff(args), 1);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    ck_assert_msg(j != NULL, "not JSON: %s\n%s", jerr.text, out);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "first_divergent_step")), 9);
    ck_assert_str_eq(json_string_value(json_object_get(j, "likely_origin")), "grad.fc2.weight");
    json_decref(j);
    const char *text = slurp(svg);
    ck_assert(!strncmp(text, "<?xml", 5) || !strncmp(text, "<svg", 4));
    has(text, "first divergence: step 9");

    /* Identical traces: --json says so, exit 0. */
    snprintf(args, sizeof args, "--json %s %s", a, a);
    ck_assert_int_eq(diff(args), 0);
    j = json_loads(out, 0, &jerr);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_true(json_object_get(j, "identical")));
    ck_assert(json_object_get(j, "first_divergent_step") != NULL);
    json_decref(j);

    /* A plot that cannot be written: exit 3. */
    snprintf(args, sizeof args, "%s %s --plot /nonexistent/dir/x.svg", a, b);
    ck_assert_int_eq(diff(args), 3);
    has(err, "/nonexistent/dir/x.svg: cannot write plot");
}
END_TEST

START_TEST(test_end_to_end_runs)
{
    /* Two real runs agree; a run with one flipped bit (test-only fault
     * injection, see fault.h) is caught at exactly that step, with the
     * flipped tensor named first. */
    char dir[TU_TMP_LEN], args[1024], a[300], b[300], f[300];
    tu_tmp_template(dir, sizeof dir, "e2e");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a.jsonl", dir);
    snprintf(b, sizeof b, "%s/b.jsonl", dir);
    snprintf(f, sizeof f, "%s/f.jsonl", dir);
    unsetenv("REPRO_FAULT");
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 5 -q -o %s", a);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 5 -q -o %s", b);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    setenv("REPRO_FAULT", "flip:step=3:tensor=param.fc1.weight:element=7:bit=22", 1);
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 5 -q -o %s", f);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);

    /* At the default trace.every (10) step 3 has no detail: the report
     * names the step, and the tensors at the nearest detail step (the
     * last, 5) without calling the first of them the origin. */
    snprintf(args, sizeof args, "%s %s", a, f);
    ck_assert_msg(diff(args) == 1, "%s%s", out, err);
    has(out, "DIVERGED at step 3");
    has(out, "no tensor detail at step 3");
    has(out, "differ at step 5, the nearest step with detail, 2 steps after the divergence");
    ck_assert_ptr_null(strstr(out, "likely origin"));

    /* With detail on every step, the flipped tensor is named first. */
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 5 -q --set trace.every=1 -o %s",
             f);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    unsetenv("REPRO_FAULT");
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 5 -q --set trace.every=1 -o %s",
             a);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);

    snprintf(args, sizeof args, "%s %s", a, b); /* every 1 vs 10: the same bits */
    ck_assert_msg(diff(args) == 0, "%s%s", out, err);
    has(out, "identical: 5 steps, chain ");

    snprintf(args, sizeof args, "--json %s %s", a, f);
    ck_assert_msg(diff(args) == 1, "%s%s", out, err);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    ck_assert_msg(j != NULL, "not JSON: %s\n%s", jerr.text, out);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "first_divergent_step")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(j, "likely_origin")), "param.fc1.weight");
    json_decref(j);
    remove(a);
    remove(b);
    remove(f);
    rmdir(dir);
}
END_TEST

/* Step numbers near LONG_MAX, in traces built in memory (the reader
 * refuses them, check_trace_read.c): the comparison refuses them too, where
 * it used to overflow computing the bisection bound (UBSan) and report
 * "identical: 9223372036854775807 steps". */
START_TEST(test_step_numbers_near_long_max_refused)
{
    static repro_trace a, b;
    static repro_trace_step sa, sb;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    snprintf(a.path, sizeof a.path, "a.jsonl");
    snprintf(b.path, sizeof b.path, "b.jsonl");
    snprintf(a.experiment, sizeof a.experiment, "x");
    snprintf(b.experiment, sizeof b.experiment, "x");
    sa.step = sb.step = LONG_MAX;
    a.steps = &sa;
    b.steps = &sb;
    a.nsteps = b.nsteps = 1;
    a.first_step = b.first_step = LONG_MAX;
    a.has_trailer = b.has_trailer = 1;
    a.trailer_steps = b.trailer_steps = LONG_MAX;
    repro_error_clear();
    ck_assert_int_eq(repro_compare_traces(&a, &b, &dv), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "a.jsonl: step numbers past 9007199254740992"));
    /* at the bound itself it compares */
    a.first_step = b.first_step = REPRO_TRACE_STEP_MAX;
    sa.step = sb.step = REPRO_TRACE_STEP_MAX;
    ck_assert_int_eq(repro_compare_traces(&a, &b, &dv), 0);
    ck_assert_int_eq(dv.identical, 1);
    ck_assert_int_eq(dv.steps_a, REPRO_TRACE_STEP_MAX);
    repro_divergence_release(&dv);
}
END_TEST

Suite *compare_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("compare");
    tcase_add_test(tc, test_identical);
    tcase_add_test(tc, test_first_step_found_everywhere);
    tcase_add_test(tc, test_negative_control_single_tensor);
    tcase_add_test(tc, test_differing_tensors_in_order);
    tcase_add_test(tc, test_no_detail_at_first_step);
    tcase_add_test(tc, test_version2_between_detail_steps);
    tcase_add_test(tc, test_curve_values);
    tcase_add_test(tc, test_prefix_and_truncated);
    tcase_add_test(tc, test_different_experiments_refused);
    tcase_add_test(tc, test_step_numbers_near_long_max_refused);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("report");
    tcase_add_test(tc, test_text_report);
    tcase_add_test(tc, test_json_report);
    tcase_add_test(tc, test_plot);
    tcase_add_test(tc, test_element_diff_ulp_rule);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_add_test(tc, test_cli_exit_codes);
    tcase_add_test(tc, test_cli_json_and_plot);
    tcase_add_test(tc, test_end_to_end_runs);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
