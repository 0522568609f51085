/* The trace reader: a good trace loads field by field, a cut-short one loads
 * without its trailer, and every kind of bad input is refused with exit 2
 * and a "path:line: what" message. Also home of tr_fixture(), the trace
 * generator check_compare.c shares. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "record/hash.h"
#include "testutil.h"
#include "record/trace.h"

/* tr_fixture flags (check_compare.c repeats them). */
#define TRF_SINGLE 1u       /* at the divergent step only one tensor differs, nothing after */
#define TRF_NO_TRAILER 2u   /* cut short */
#define TRF_OPS 4u          /* level op: op outputs too */
#define TRF_OTHER_CONFIG 8u /* another numerics digest (train.lr 0.1) */
#define TRF_EXTRA 16u       /* at the divergent step, one more tensor at the end */
#define TRF_V2 32u          /* version 2: the loss on every step line */
#define TRF_NO_CHAIN 64u    /* version 2 as a golden keeps it: no chain between detail steps */

static void digest_of(const char *text, repro_digest *d)
{
    ck_assert_int_eq(repro_sha256(text, strlen(text), d), 0);
}

static void hex_of(const repro_digest *d, char *hex)
{
    repro_digest_hex(d, hex);
}

static const char *const names[] = {
    "batch.ids",
    "batch.x",
    "batch.y",
    "logits",
    "loss",
    "grad.fc2.weight",
    "grad.fc1.weight",
    "param.fc1.weight",
    "param.fc2.weight",
    "sgd.momentum.fc1.weight",
    "sgd.momentum.fc2.weight",
    "rng.state",
};
enum { NNAMES = sizeof names / sizeof names[0], FIRST_GRAD = 5 };

static void put_tensor(FILE *f, const char *name, int variant, long step, double l2, int comma)
{
    char key[160], hex[65];
    repro_digest d;
    snprintf(key, sizeof key, "%s|%ld|%d", name, step, variant);
    digest_of(key, &d);
    hex_of(&d, hex);
    fprintf(f,
            "%s{\"name\": \"%s\", \"dtype\": \"f32\", \"shape\": [2, 5], \"digest\": \"%s\", "
            "\"l2\": %.17g, \"sum\": 0.5, \"max_abs\": 0.25, \"nonfinite\": 0}",
            comma ? ", " : "", name, hex, l2);
}

/* A synthetic but self-consistent trace (digests and chain as trace.h
 * defines them) of `nsteps` steps of experiment `exp`. diverge_at = 0: the
 * reference run; K > 0: a run that parts from the reference at step K
 * (grad.fc2.weight first, then everything downstream; params scaled by
 * 1 + 1e-6 (s - K + 1), so the curve's rel_l2 is exactly that). Detail on
 * every `every`-th step and the last. Returns malloc'd text. */
char *tr_fixture(const char *exp, long nsteps, long diverge_at, unsigned flags, int every);

char *tr_fixture(const char *exp, long nsteps, long diverge_at, unsigned flags, int every)
{
    char *text = NULL, hex[65], hex2[65];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    repro_digest cfgd, num;
    digest_of(exp, &cfgd);
    digest_of(flags & TRF_OTHER_CONFIG ? "numerics-other" : "numerics", &num);
    hex_of(&cfgd, hex);
    hex_of(&num, hex2);
    fprintf(
        f,
        "{\"repro_trace\": %d, \"type\": \"header\", \"experiment\": \"%s\", "
        "\"experiment_path\": \"experiments/%s.ini\", \"config\": {\"model\": {\"type\": "
        "\"mlp\"}, \"train\": {\"lr\": \"%s\", \"threads\": \"1\"}}, \"config_digest\": \"%s\", "
        "\"numerics_digest\": \"%s\", \"seed\": \"1234\", \"seed_scheme\": \"repro-seed/v1\", "
        "\"rng\": \"philox4x32-10/v1\", \"tensor_hash\": \"repro-tensor/v1\", "
        "\"repro_version\": \"0.1.0\", \"compiler\": \"cc\", \"cflags\": \"-O2\", "
        "\"level\": \"%s\", \"every\": %d, \"threads\": 1, \"num_workers\": 2}\n",
        flags & (TRF_V2 | TRF_NO_CHAIN) ? 2 : 1, exp, exp,
        flags & TRF_OTHER_CONFIG ? "0.1" : "0.05", hex, hex2,
        flags & TRF_OPS ? "op" : "tensor", every);
    repro_digest chain = {{0}};
    for (long s = 1; s <= nsteps; s++) {
        int after = diverge_at > 0 && s > diverge_at && !(flags & TRF_SINGLE);
        int at = diverge_at > 0 && s == diverge_at;
        double scale = diverge_at > 0 && s >= diverge_at && !(flags & TRF_SINGLE)
                           ? 1 + 1e-6 * (double)(s - diverge_at + 1)
                           : 1;
        /* Tensor digests, in step-digest order. */
        repro_digest d[NNAMES + 1];
        int variant[NNAMES + 1];
        int n = 0;
        for (int i = 0; i < NNAMES; i++) {
            int v = 0;
            if (at && (flags & TRF_SINGLE))
                v = !strcmp(names[i], "grad.fc1.weight");
            else if (at)
                v = i >= FIRST_GRAD;
            else if (after)
                v = i >= 3; /* batches agree, everything computed differs */
            variant[n] = v;
            char key[160];
            snprintf(key, sizeof key, "%s|%ld|%d", names[i], s, v);
            digest_of(key, &d[n++]);
        }
        int extra = at && (flags & TRF_EXTRA);
        if (extra) {
            char key[160];
            snprintf(key, sizeof key, "extra.b|%ld|1", s);
            digest_of(key, &d[n++]);
        }
        repro_digest sd, pair[2];
        ck_assert_int_eq(repro_sha256_digests(d, (size_t)n, &sd), 0);
        pair[0] = chain;
        pair[1] = sd;
        ck_assert_int_eq(repro_sha256_digests(pair, 2, &chain), 0);
        hex_of(&sd, hex);
        hex_of(&chain, hex2);
        int detail = s % every == 0 || s == nsteps;
        fprintf(f, "{\"type\": \"step\", \"step\": %ld, \"step_digest\": \"%s\"", s, hex);
        if (detail || !(flags & TRF_NO_CHAIN))
            fprintf(f, ", \"chain\": \"%s\"", hex2);
        float loss =
            (float)(2.3 - 0.01 * (double)s + (after ? 1e-4 * (double)(s - diverge_at) : 0));
        uint32_t bits;
        memcpy(&bits, &loss, sizeof bits);
        if (!detail && (flags & (TRF_V2 | TRF_NO_CHAIN)))
            fprintf(f, ", \"loss\": \"0x%08x\"", bits);
        if (detail) {
            fprintf(f,
                    ", \"epoch\": 0, \"loss\": \"0x%08x\", \"loss_value\": %.17g, \"tensors\": [",
                    bits, (double)loss);
            for (int i = 0; i < NNAMES; i++) {
                double l2 = !strcmp(names[i], "param.fc1.weight") ? (3.0 + 0.01 * (double)s) * scale
                            : !strcmp(names[i], "param.fc2.weight")
                                ? (4.0 + 0.02 * (double)s) * scale
                            : variant[i] ? 1.000001
                                         : 1.0;
                put_tensor(f, names[i], variant[i], s, l2, i > 0);
            }
            if (extra)
                put_tensor(f, "extra.b", 1, s, 1.0, 1);
            fprintf(f, "]");
            if (flags & TRF_OPS) {
                static const char *const ops[] = {"fwd.fc1", "fwd.relu1", "fwd.fc2", "bwd.fc2.dx",
                                                  "bwd.fc1.dx"};
                fprintf(f, ", \"ops\": [");
                for (int i = 0; i < 5; i++)
                    put_tensor(f, ops[i], (at && i >= 3) || (after && i >= 0), s, 1.0, i > 0);
                fprintf(f, "]");
            }
        }
        fprintf(f, "}\n");
    }
    if (!(flags & TRF_NO_TRAILER)) {
        hex_of(&chain, hex);
        fprintf(f, "{\"type\": \"trailer\", \"steps\": %ld, \"chain\": \"%s\"}\n", nsteps, hex);
    }
    ck_assert_int_eq(fclose(f), 0);
    return text;
}

/* text with the first occurrence of `from` replaced by `to` (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *p = strstr(text, from);
    ck_assert_msg(p != NULL, "fixture lacks '%s'", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
    return out;
}

/* text with line `line` (1-based) replaced by `with` ("" deletes it). */
static char *with_line(const char *text, int line, const char *with)
{
    const char *start = text;
    for (int i = 1; i < line; i++) {
        start = strchr(start, '\n');
        ck_assert_ptr_nonnull(start);
        start++;
    }
    const char *end = strchr(start, '\n');
    end = end ? end + 1 : start + strlen(start);
    size_t n = strlen(text) + strlen(with) + 2;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%.*s%s%s%s", (int)(start - text), text, with, *with ? "\n" : "", end);
    return out;
}

static repro_trace tr;

/* Reads `text` as a trace; expects failure, exit 2, a message containing
 * "<path>:<line>: " (line 0: just the path) and `phrase`. */
static void expect_error(const char *text, int line, const char *phrase)
{
    char path[256], want[300];
    tu_write_temp(path, sizeof path, "bad.jsonl", text);
    repro_error_clear();
    ck_assert_int_eq(repro_trace_read(&tr, path), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    const char *msg = repro_error_message();
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    else
        snprintf(want, sizeof want, "%s", path);
    ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
    ck_assert_msg(strstr(msg, phrase) != NULL, "message '%s' lacks '%s'", msg, phrase);
    ck_assert_ptr_null(tr.steps);
    ck_assert_ptr_null(tr.header_json);
}

static void expect_error_free(char *text, int line, const char *phrase)
{
    expect_error(text, line, phrase);
    free(text);
}

START_TEST(test_good_trace_round_trips)
{
    /* Hand-written: every header field, a detailed step with ops, a step
     * without detail, the trailer. Only digests are computed. */
    repro_digest w, b, o, s1, s2, c1, c2, pair[2], zero = {{0}};
    digest_of("w", &w);
    digest_of("b", &b);
    digest_of("op", &o);
    pair[0] = w;
    pair[1] = b;
    ck_assert_int_eq(repro_sha256_digests(pair, 2, &s1), 0);
    pair[0] = zero;
    pair[1] = s1;
    ck_assert_int_eq(repro_sha256_digests(pair, 2, &c1), 0);
    digest_of("step two", &s2);
    pair[0] = c1;
    pair[1] = s2;
    ck_assert_int_eq(repro_sha256_digests(pair, 2, &c2), 0);
    char hw[65], hb[65], ho[65], hs1[65], hs2[65], hc1[65], hc2[65];
    hex_of(&w, hw);
    hex_of(&b, hb);
    hex_of(&o, ho);
    hex_of(&s1, hs1);
    hex_of(&s2, hs2);
    hex_of(&c1, hc1);
    hex_of(&c2, hc2);
    char text[8192], path[256];
    snprintf(
        text, sizeof text,
        "{\"repro_trace\": 1, \"type\": \"header\", \"experiment\": \"mlp\", "
        "\"experiment_path\": \"experiments/mlp.ini\", \"config\": {\"model\": {\"type\": "
        "\"mlp\"}}, \"config_digest\": \"%s\", \"numerics_digest\": \"%s\", "
        "\"seed\": \"1234\", \"seed_scheme\": \"repro-seed/v1\", \"rng\": \"philox4x32-10/v1\", "
        "\"tensor_hash\": \"repro-tensor/v1\", \"repro_version\": \"0.1.0\", "
        "\"compiler\": \"gcc 12\", \"cflags\": \"-O2 -ffp-contract=off\", \"level\": \"op\", "
        "\"every\": 2, \"threads\": 4, \"num_workers\": 3, \"future_field\": [1]}\n"
        "{\"type\": \"step\", \"step\": 1, \"step_digest\": \"%s\", \"chain\": \"%s\", "
        "\"epoch\": 0, \"loss\": \"0x40133333\", \"loss_value\": 2.29999995, \"tensors\": ["
        "{\"name\": \"param.fc1.weight\", \"dtype\": \"f32\", \"shape\": [256, 784], "
        "\"digest\": \"%s\", \"l2\": 12.5, \"sum\": -0.25, \"max_abs\": 0.75, \"nonfinite\": 0},"
        "{\"name\": \"param.fc1.bias\", \"dtype\": \"f32\", \"shape\": [256], "
        "\"digest\": \"%s\", \"l2\": 1, \"sum\": 0.5, \"max_abs\": 0, \"nonfinite\": 3}], "
        "\"ops\": [{\"name\": \"fwd.fc1\", \"dtype\": \"f32\", \"shape\": [64, 256], "
        "\"digest\": \"%s\", \"l2\": 2, \"sum\": 3, \"max_abs\": 4, \"nonfinite\": 5}]}\n"
        "{\"type\": \"step\", \"step\": 2, \"step_digest\": \"%s\", \"chain\": \"%s\"}\n"
        "{\"type\": \"trailer\", \"steps\": 2, \"chain\": \"%s\"}\n",
        hw, hb, hs1, hc1, hw, hb, ho, hs2, hc2, hc2);
    tu_write_temp(path, sizeof path, "good.jsonl", text);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_str_eq(tr.path, path);
    ck_assert_str_eq(tr.experiment, "mlp");
    ck_assert_str_eq(tr.experiment_path, "experiments/mlp.ini");
    ck_assert(repro_digest_eq(&tr.config_digest, &w));
    ck_assert(repro_digest_eq(&tr.numerics_digest, &b));
    ck_assert_str_eq(tr.seed, "1234");
    ck_assert_str_eq(tr.seed_scheme, "repro-seed/v1");
    ck_assert_str_eq(tr.rng, "philox4x32-10/v1");
    ck_assert_str_eq(tr.repro_version, "0.1.0");
    ck_assert_str_eq(tr.compiler, "gcc 12");
    ck_assert_str_eq(tr.cflags, "-O2 -ffp-contract=off");
    ck_assert_int_eq(tr.level, REPRO_TRACE_OP);
    ck_assert_int_eq(tr.every, 2);
    ck_assert_int_eq(tr.threads, 4);
    ck_assert_int_eq(tr.num_workers, 3);
    ck_assert_ptr_nonnull(tr.header_json);
    json_t *cfg = json_object_get((json_t *)tr.header_json, "config");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cfg, "model"), "type")),
                     "mlp");

    ck_assert_int_eq(tr.nsteps, 2);
    const repro_trace_step *s = repro_trace_find_step(&tr, 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->step, 1);
    ck_assert_int_eq(s->line, 2);
    ck_assert_int_eq(s->has_detail, 1);
    ck_assert_int_eq(s->epoch, 0);
    ck_assert_uint_eq(s->loss_bits, 0x40133333u);
    ck_assert_double_eq(s->loss_value, 2.29999995);
    ck_assert(repro_digest_eq(&s->step_digest, &s1));
    ck_assert(repro_digest_eq(&s->chain, &c1));
    ck_assert_int_eq(s->ntensors, 2);
    ck_assert_str_eq(s->tensors[0].name, "param.fc1.weight");
    ck_assert_str_eq(s->tensors[0].dtype, "f32");
    ck_assert_int_eq(s->tensors[0].ndim, 2);
    ck_assert_int_eq(s->tensors[0].shape[0], 256);
    ck_assert_int_eq(s->tensors[0].shape[1], 784);
    ck_assert(repro_digest_eq(&s->tensors[0].digest, &w));
    ck_assert_double_eq(s->tensors[0].l2, 12.5);
    ck_assert_double_eq(s->tensors[0].sum, -0.25);
    ck_assert_double_eq(s->tensors[0].max_abs, 0.75);
    ck_assert_int_eq(s->tensors[0].nonfinite, 0);
    ck_assert_str_eq(s->tensors[1].name, "param.fc1.bias");
    ck_assert_int_eq(s->tensors[1].ndim, 1);
    ck_assert_double_eq(s->tensors[1].sum, 0.5); /* stats are finite: null is refused */
    ck_assert_int_eq(s->tensors[1].nonfinite, 3);
    ck_assert_int_eq(s->nops, 1);
    ck_assert_str_eq(s->ops[0].name, "fwd.fc1");
    ck_assert(repro_digest_eq(&s->ops[0].digest, &o));
    ck_assert_double_eq(s->ops[0].max_abs, 4);
    ck_assert_int_eq(s->ops[0].nonfinite, 5);

    s = repro_trace_find_step(&tr, 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->line, 3);
    ck_assert_int_eq(s->has_detail, 0);
    ck_assert_int_eq(s->ntensors, 0);
    ck_assert(repro_digest_eq(&s->chain, &c2));
    ck_assert_ptr_null(repro_trace_find_step(&tr, 0));
    ck_assert_ptr_null(repro_trace_find_step(&tr, 3));
    ck_assert_int_eq(tr.has_trailer, 1);
    ck_assert_int_eq(tr.trailer_steps, 2);
    ck_assert(repro_digest_eq(&tr.trailer_chain, &c2));
    repro_trace_release(&tr);
    ck_assert_ptr_null(tr.steps);
}
END_TEST

START_TEST(test_fixture_reads_with_sparse_detail)
{
    char *text = tr_fixture("mlp", 7, 0, TRF_OPS, 3), path[256];
    tu_write_temp(path, sizeof path, "a.jsonl", text);
    free(text);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_int_eq(tr.nsteps, 7);
    for (long s = 1; s <= 7; s++) {
        const repro_trace_step *st = repro_trace_find_step(&tr, s);
        ck_assert_int_eq(st->has_detail, s == 3 || s == 6 || s == 7);
        ck_assert_int_eq(st->ntensors, st->has_detail ? NNAMES : 0);
        ck_assert_int_eq(st->nops, st->has_detail ? 5 : 0);
    }
    ck_assert_int_eq(tr.has_trailer, 1);
    repro_trace_release(&tr);
}
END_TEST

START_TEST(test_missing_loss_value_uses_bits)
{
    /* The writer omits loss_value when the loss is not finite (jansson
     * cannot write NaN): the bits stand in. */
    char *text = tr_fixture("mlp", 1, 0, 0, 1);
    char *t2 = replace(text, "\"loss_value\": ", "\"lv\": ");
    char path[256];
    tu_write_temp(path, sizeof path, "a.jsonl", t2);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    float f;
    memcpy(&f, &tr.steps[0].loss_bits, sizeof f);
    ck_assert_double_eq(tr.steps[0].loss_value, (double)f);
    repro_trace_release(&tr);
    free(text);
    free(t2);
}
END_TEST

START_TEST(test_truncated_trace_loads_without_trailer)
{
    char *text = tr_fixture("mlp", 4, 0, TRF_NO_TRAILER, 1), path[256];
    tu_write_temp(path, sizeof path, "cut.jsonl", text);
    free(text);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_int_eq(tr.nsteps, 4);
    ck_assert_int_eq(tr.has_trailer, 0);
    repro_trace_release(&tr);

    /* Header only: a run that crashed before its first step. */
    text = tr_fixture("mlp", 0, 0, TRF_NO_TRAILER, 1);
    tu_write_temp(path, sizeof path, "cut.jsonl", text);
    free(text);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_int_eq(tr.nsteps, 0);
    ck_assert_int_eq(tr.has_trailer, 0);
    repro_trace_release(&tr);
}
END_TEST

START_TEST(test_missing_file)
{
    repro_error_clear();
    ck_assert_int_eq(repro_trace_read(&tr, "/nonexistent/dir/t.jsonl"), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_str_eq(repro_error_message(), "/nonexistent/dir/t.jsonl: No such file or directory");
}
END_TEST

START_TEST(test_empty_file)
{
    expect_error("", 1, "empty file");
}
END_TEST

START_TEST(test_first_line_not_header)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(with_line(text, 1, ""), 1,
                      "first line is not a trace header (\"type\": \"step\")");
    expect_error("[1, 2]\n", 1, "an array is not a trace line");
    expect_error("{\"type\": \"header\"}\n", 1, "no \"repro_trace\" version");
    free(text);
}
END_TEST

START_TEST(test_unknown_version)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(replace(text, "\"repro_trace\": 1", "\"repro_trace\": 3"), 1,
                      "unknown trace version 3 (this repro reads 1..2)");
    expect_error_free(replace(text, "\"repro_trace\": 1", "\"repro_trace\": 0"), 1,
                      "unknown trace version 0 (this repro reads 1..2)");
    expect_error_free(replace(text, "\"repro_trace\": 1", "\"repro_trace\": \"1\""), 1,
                      "\"repro_trace\" must be an integer");
    free(text);
}
END_TEST

START_TEST(test_garbled_line)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(with_line(text, 3, "{\"type\": \"step\", \"step\": 2,"), 3, "not JSON: ");
    /* jansson's own words are passed on. */
    expect_error_free(with_line(text, 3, "{\"type\": 'step'}"), 3, "invalid token");
    expect_error_free(with_line(text, 1, "repro trace v1"), 1, "not JSON: ");
    /* A duplicate key is ambiguous: which one did the writer mean? */
    expect_error_free(replace(text, "\"step\": 1,", "\"step\": 1, \"step\": 1,"), 2, "duplicate");
    free(text);
}
END_TEST

START_TEST(test_incomplete_last_line)
{
    /* A run killed mid-write leaves half a line: still refused, but the
     * message says what probably happened. */
    char *text = tr_fixture("mlp", 2, 0, TRF_NO_TRAILER, 1);
    size_t n = strlen(text);
    text[n - 20] = '\0';
    expect_error(text, 3, "the last line is incomplete");
    free(text);
}
END_TEST

START_TEST(test_wrong_type)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(
        replace(text, "\"type\": \"step\", \"step\": 2", "\"type\": \"stap\", \"step\": 2"), 3,
        "unknown line type \"stap\"");
    expect_error_free(replace(text, "\"type\": \"step\", \"step\": 2", "\"type\": 7, \"step\": 2"),
                      3, "\"type\" must be a string, not an integer");
    char *hdr = strndup(text, (size_t)(strchr(text, '\n') - text));
    expect_error_free(with_line(text, 3, hdr), 3, "second header");
    free(hdr);
    free(text);
}
END_TEST

START_TEST(test_missing_and_mistyped_fields)
{
    char *text = tr_fixture("mlp", 3, 0, TRF_OPS, 1);
    expect_error_free(replace(text, "\"numerics_digest\"", "\"numerics\""), 1,
                      "header: missing \"numerics_digest\"");
    expect_error_free(replace(text, "\"every\": 1", "\"every\": \"1\""), 1,
                      "header: \"every\" must be an integer, not a string");
    expect_error_free(replace(text, "\"every\": 1", "\"every\": 0"), 1,
                      "\"every\" is 0, outside 1..");
    expect_error_free(replace(text, "\"level\": \"op\"", "\"level\": \"ops\""), 1,
                      "\"level\" is \"ops\", expected step, tensor or op");
    expect_error_free(replace(text, "\"config\": {", "\"config\": 5, \"x\": {"), 1,
                      "header: \"config\" must be an object, not an integer");
    expect_error_free(
        replace(text, "\"tensor_hash\": \"repro-tensor/v1\"", "\"tensor_hash\": \"x/v9\""), 1,
        "unknown tensor hash \"x/v9\"");
    expect_error_free(replace(text, "\"step\": 2,", "\"step\": \"2\","), 3,
                      "\"step\" must be an integer, not a string");
    expect_error_free(replace(text, "\"step\": 2,", "\"stop\": 2,"), 3, "missing \"step\"");
    expect_error_free(replace(text, "\"chain\"", "\"chian\""), 2, "missing \"chain\"");
    expect_error_free(replace(text, "\"loss\": \"0x", "\"loss\": \"0y"), 2,
                      "\"loss\" must be float32 bits");
    expect_error_free(replace(text, "\"epoch\": 0, ", ""), 2, "missing \"epoch\"");
    /* Inside a tensor: the message names the list, index and tensor. */
    expect_error_free(
        replace(text, "\"name\": \"batch.x\", \"dtype\": \"f32\", \"shape\": [2, 5], \"digest\"",
                "\"name\": \"batch.x\", \"dtype\": \"f32\", \"shape\": [2, 5], \"digestt\""),
        2, "tensors[1] (\"batch.x\"): missing \"digest\"");
    expect_error_free(replace(text, "\"shape\": [2, 5]", "\"shape\": [2, -5]"), 2,
                      "tensors[0] (\"batch.ids\"): \"shape\"[1] must be a non-negative integer");
    expect_error_free(replace(text, "\"l2\": ", "\"l2\": \"x\", \"l3\": "), 2,
                      "tensors[0] (\"batch.ids\"): \"l2\" must be a number, not a string");
    expect_error_free(replace(text, "\"name\": \"fwd.fc1\", \"dtype\": \"f32\"",
                              "\"name\": \"fwd.fc1\", \"dtype\": \"float32x\""),
                      2, "ops[0] (\"fwd.fc1\"): \"dtype\" is too long");
    expect_error_free(replace(text, "\"tensors\": [", "\"tensorz\": ["), 2,
                      "\"loss\" without \"tensors\"");
    free(text);
}
END_TEST

/* The header's optional "client" (the Python client that wrote a program's
 * trace): read into client_name, client_version and client_protocol (0
 * without it); a wrong type or a protocol below 1 is refused naming line 1. */
START_TEST(test_client_field)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1), path[256];
    tu_write_temp(path, sizeof path, "plain.jsonl", text);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_int_eq(tr.client_protocol, 0);
    repro_trace_release(&tr);
    char *with = replace(text, "\"every\": 1",
                         "\"client\": {\"name\": \"repro-python\", \"version\": \"0.1.0\", "
                         "\"protocol\": 1}, \"every\": 1");
    tu_write_temp(path, sizeof path, "client.jsonl", with);
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_str_eq(tr.client_name, "repro-python");
    ck_assert_str_eq(tr.client_version, "0.1.0");
    ck_assert_int_eq(tr.client_protocol, 1);
    repro_trace_release(&tr);
    expect_error_free(replace(with, "\"protocol\": 1", "\"protocol\": 0"), 1,
                      "header: client: \"protocol\" is 0, outside 1..");
    expect_error_free(replace(with, "\"protocol\": 1", "\"protocol\": \"1\""), 1,
                      "header: client: \"protocol\" must be an integer, not a string");
    expect_error_free(replace(with, ", \"version\": \"0.1.0\"", ""), 1,
                      "header: client: missing \"version\"");
    expect_error_free(replace(text, "\"every\": 1", "\"client\": \"repro-python\", \"every\": 1"),
                      1, "header: \"client\" must be an object, not a string");
    free(with);
    free(text);
}
END_TEST

/* What docs/FORMATS.md allows and no more (issue 33, item 6): the loss is
 * "0x" and exactly 8 hex digits (strtoul took a sign or blanks after the
 * "0x"); a dtype is one of eight; a name is once in a step's tensors;
 * statistics are numbers (the writer's are always finite), a norm not
 * negative. Each is an error naming file:line, where each was accepted. */
START_TEST(test_looser_than_the_format_is_refused)
{
    char *text = tr_fixture("mlp", 3, 0, TRF_OPS, 1);
    /* The fixture's loss bits at step 1, whatever they are. */
    const char *at = strstr(text, "\"loss\": \"0x");
    ck_assert_ptr_nonnull(at);
    char loss[32], bad[48];
    snprintf(loss, sizeof loss, "%.19s", at); /* "loss": "0x12345678 (11 + 8 bytes) */
    static const char *const looks_hex[] = {"+", " ", "-", "\\t"};
    for (int i = 0; i < 4; i++) {
        snprintf(bad, sizeof bad, "\"loss\": \"0x%s%s", looks_hex[i], loss + 12);
        expect_error_free(replace(text, loss, bad), 2, "\"loss\" must be float32 bits");
    }
    expect_error_free(replace(text, "\"loss\": \"0x", "\"loss\": \"0x0x"), 2,
                      "\"loss\" must be float32 bits");
    expect_error_free(replace(text, "\"dtype\": \"f32\"", "\"dtype\": \"f128\""), 2,
                      "tensors[0] (\"batch.ids\"): \"dtype\" is \"f128\", expected one of f32");
    expect_error_free(replace(text, "\"dtype\": \"f32\"", "\"dtype\": \"F32\""), 2,
                      "\"dtype\" is \"F32\"");
    expect_error_free(replace(text, "\"name\": \"batch.x\"", "\"name\": \"batch.ids\""), 2,
                      "tensors[0] and tensors[1] are both named \"batch.ids\"");
    static const char *const stats[] = {"l2", "sum", "max_abs"};
    char from[32], to[48];
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "\"%s\": ", stats[i]);
        snprintf(to, sizeof to, "\"%s\": null, \"was\": ", stats[i]);
        snprintf(bad, sizeof bad, "\"%s\" must be a number, not null", stats[i]);
        expect_error_free(replace(text, from, to), 2, bad);
    }
    expect_error_free(replace(text, "\"l2\": ", "\"l2\": -1.5, \"was\": "), 2,
                      "tensors[0] (\"batch.ids\"): \"l2\" is -1.5: it cannot be negative");
    expect_error_free(replace(text, "\"max_abs\": ", "\"max_abs\": -0.25, \"was\": "), 2,
                      "\"max_abs\" is -0.25: it cannot be negative");
    expect_error_free(replace(text, "\"loss_value\": ", "\"loss_value\": null, \"was\": "), 2,
                      "\"loss_value\" must be a number, not null");
    /* Negative controls: what the format allows still reads. A negative
     * sum is a sum; upper-case hex digits are hex digits; every dtype. */
    char path[256];
    char *ok = replace(text, "\"sum\": 0.5", "\"sum\": -0.5");
    tu_write_temp(path, sizeof path, "ok.jsonl", ok);
    ck_assert_msg(repro_trace_read(&tr, path) == 0, "%s", repro_error_message());
    ck_assert_double_eq(tr.steps[0].tensors[0].sum, -0.5);
    repro_trace_release(&tr);
    free(ok);
    char upper[32];
    snprintf(upper, sizeof upper, "%s", loss);
    for (char *c = upper + 11; *c; c++)
        *c = (char)(*c >= 'a' && *c <= 'f' ? *c - 'a' + 'A' : *c);
    ok = replace(text, loss, upper);
    tu_write_temp(path, sizeof path, "ok.jsonl", ok);
    ck_assert_msg(repro_trace_read(&tr, path) == 0, "%s", repro_error_message());
    repro_trace_release(&tr);
    free(ok);
    static const char *const dtypes[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8", "u32"};
    for (int i = 0; i < 8; i++) {
        /* ops are not in the step digest: a dtype there changes no digest */
        char with[64];
        snprintf(with, sizeof with, "\"name\": \"fwd.fc1\", \"dtype\": \"%s\"", dtypes[i]);
        ok = replace(text, "\"name\": \"fwd.fc1\", \"dtype\": \"f32\"", with);
        tu_write_temp(path, sizeof path, "ok.jsonl", ok);
        ck_assert_msg(repro_trace_read(&tr, path) == 0, "%s: %s", dtypes[i], repro_error_message());
        repro_trace_release(&tr);
        free(ok);
    }
    free(text);
}
END_TEST

/* B's text with grad.fc1.weight at step 2 (line 3) given the dtype and
 * shape in `with` (NULL: unchanged) and A's stats (its L2 is 1 there),
 * so that only the digest and the layout tell it apart (malloc'd). */
static char *relayout_at_step_2(const char *text, const char *with)
{
    const char *line3 = strchr(strchr(text, '\n') + 1, '\n') + 1;
    static const char from[] = "\"grad.fc1.weight\", \"dtype\": \"f32\", \"shape\": [2, 5]";
    const char *p = strstr(line3, from);
    ck_assert_ptr_nonnull(p);
    const char *l2 = strstr(p, "\"l2\": "), *end = strchr(l2, ',');
    size_t n = strlen(text) + strlen(from) + 16;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%.*s\"l2\": 1%s", (int)(p - text), text, with ? with : from,
             (int)(l2 - p - strlen(from)), p + strlen(from), end);
    return out;
}

/* When B's tensor has another dtype or shape than A's, `repro diff` names
 * both: it printed A's alone and, the stats being equal, "stats equal: the
 * bits differ where the stats cannot see" (issue 33, item 6). */
START_TEST(test_diff_names_both_layouts)
{
    static const char *const cases[][2] = {
        {"\"grad.fc1.weight\", \"dtype\": \"f32\", \"shape\": [5, 2]",
         "dtype or shape differs: A f32[2,5], B f32[5,2]"},
        {"\"grad.fc1.weight\", \"dtype\": \"f16\", \"shape\": [2, 5]",
         "dtype or shape differs: A f32[2,5], B f16[2,5]"},
    };
    char *a = tr_fixture("mlp", 3, 0, 0, 1);
    /* Only grad.fc1.weight's digest differs at step 2, its stats the same. */
    char *single = tr_fixture("mlp", 3, 2, TRF_SINGLE, 1);
    char pa[256], pb[256], args[600];
    static char out[1 << 15], err[1 << 12];
    tu_write_temp(pa, sizeof pa, "a.jsonl", a);
    for (int i = 0; i < 3; i++) {
        char *b = relayout_at_step_2(single, i < 2 ? cases[i][0] : NULL);
        tu_write_temp(pb, sizeof pb, "b.jsonl", b);
        snprintf(args, sizeof args, "diff %s %s", pa, pb);
        ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 1);
        ck_assert_msg(strstr(out, "grad.fc1.weight") != NULL, "%s", out);
        if (i < 2) {
            ck_assert_msg(strstr(out, cases[i][1]) != NULL, "%s", out);
            ck_assert_msg(strstr(out, "stats equal") == NULL, "%s", out);
        } else { /* negative control: the same layout, the same stats */
            ck_assert_msg(strstr(out, "dtype or shape differs") == NULL, "%s", out);
            ck_assert_msg(strstr(out, "stats equal") != NULL, "%s", out);
        }
        free(b);
    }
    free(single);
    free(a);
}
END_TEST

START_TEST(test_bad_hex_digest)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(replace(text, "\"chain\": \"", "\"chain\": \"xyz"), 2,
                      "\"chain\" is not a SHA-256 digest (64 hex digits)");
    expect_error_free(replace(text, "\"config_digest\": \"", "\"config_digest\": \"0"), 1,
                      "\"config_digest\" is not a SHA-256 digest");
    free(text);
}
END_TEST

/* Version 2: the loss on every step line, detail every K-th step; the
 * chain may be left out between detail steps (a golden does) and is then
 * computed, equal to the chain the full trace carries. */
START_TEST(test_version2_lines)
{
    char path[256];
    repro_trace full, thin;
    char *text = tr_fixture("mlp", 7, 0, TRF_V2, 3);
    tu_write_temp(path, sizeof path, "v2.jsonl", text);
    free(text);
    ck_assert_msg(repro_trace_read(&full, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(full.version, 2);
    text = tr_fixture("mlp", 7, 0, TRF_NO_CHAIN, 3);
    char *line1 = strstr(text, "\"step\": 1,"), *line2 = strstr(text, "\"step\": 2,");
    char *chain1 = strstr(line1, "\"chain\"");
    ck_assert(chain1 == NULL || chain1 > line2); /* step 1's line has no chain */
    tu_write_temp(path, sizeof path, "v2thin.jsonl", text);
    free(text);
    ck_assert_msg(repro_trace_read(&thin, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(thin.nsteps, 7);
    for (long i = 0; i < 7; i++) {
        const repro_trace_step *a = &full.steps[i], *b = &thin.steps[i];
        ck_assert_int_eq(a->has_loss, 1);
        ck_assert_int_eq(b->has_loss, 1);
        ck_assert_int_eq(a->has_detail, (i + 1) % 3 == 0 || i == 6);
        ck_assert_uint_eq(a->loss_bits, b->loss_bits);
        float f;
        memcpy(&f, &a->loss_bits, sizeof f);
        ck_assert_double_eq(a->loss_value, (double)f);
        ck_assert(repro_digest_eq(&a->chain, &b->chain));
    }
    repro_trace_release(&full);
    repro_trace_release(&thin);
}
END_TEST

/* What each version allows between detail steps, and what it requires. */
START_TEST(test_version2_rules)
{
    /* Version 1: no loss without tensors, and the chain on every line. */
    char *v1 = tr_fixture("mlp", 3, 0, 0, 2);
    expect_error_free(replace(v1, "\"step\": 1, ", "\"step\": 1, \"loss\": \"0x40133333\", "), 2,
                      "\"loss\" without \"tensors\"");
    free(v1);
    /* Version 2: the loss is required on every line, loss_value allowed;
     * ops still only with tensors; a bad loss is named. */
    char *v2 = tr_fixture("mlp", 3, 0, TRF_V2, 2);
    char *no_loss = strdup(v2);
    char *l = strstr(strstr(no_loss, "\"step\": 1,"), ", \"loss\"");
    memmove(l, l + 22, strlen(l + 22) + 1); /* , "loss": "0x........" */
    expect_error_free(no_loss, 2, "missing \"loss\"");
    expect_error_free(replace(v2, "\"step\": 1, ", "\"step\": 1, \"ops\": [], "), 2,
                      "\"ops\" without \"tensors\"");
    char path[256], *lv = replace(v2, "\"step\": 1, ", "\"step\": 1, \"loss_value\": 2.25, ");
    tu_write_temp(path, sizeof path, "lv.jsonl", lv);
    free(lv);
    ck_assert_msg(repro_trace_read(&tr, path) == 0, "%s", repro_error_message());
    ck_assert_double_eq(tr.steps[0].loss_value, 2.25);
    repro_trace_release(&tr);
    free(v2);
    /* Without a chain, a changed step digest is still caught: at the next
     * chain that is written (here the detail line of step 2). */
    char *thin = tr_fixture("mlp", 3, 0, TRF_NO_CHAIN, 2);
    char *sd = strstr(strstr(thin, "\"step\": 1,"), "\"step_digest\": \"") + 16;
    *sd = *sd == '0' ? '1' : '0';
    expect_error_free(thin, 3, "\"chain\" is not SHA-256(previous chain || step_digest)");
    /* A detail line must carry its chain. */
    char *t2 = tr_fixture("mlp", 3, 0, TRF_NO_CHAIN, 2);
    char *c = strstr(strstr(t2, "\"step\": 2,"), ", \"chain\"");
    memmove(c, c + 77, strlen(c + 77) + 1);
    expect_error_free(t2, 3, "missing \"chain\" (a detail line carries it)");
}
END_TEST

START_TEST(test_steps_out_of_order)
{
    char *text = tr_fixture("mlp", 4, 0, 0, 1);
    /* Line 3 (step 2) repeated: step 2 after step 2. */
    const char *l3 = strchr(strchr(text, '\n') + 1, '\n') + 1;
    char *step2 = strndup(l3, (size_t)(strchr(l3, '\n') - l3));
    char *t = with_line(text, 4, step2);
    expect_error_free(t, 4, "step 2 after step 2: steps must be strictly increasing");
    /* A step line missing. */
    expect_error_free(with_line(text, 3, ""), 3, "step 3 after step 1: steps 2..2 are missing");
    /* The first step must be step 1. */
    expect_error_free(replace(text, "\"step\": 1,", "\"step\": 0,"), 2,
                      "the first step is step 0: steps count from 1");
    free(step2);
    free(text);
}
END_TEST

START_TEST(test_line_after_trailer)
{
    char *text = tr_fixture("mlp", 2, 0, 0, 1);
    size_t n = strlen(text);
    char *t = malloc(n + 64);
    snprintf(t, n + 64, "%s{\"type\": \"step\", \"step\": 3}\n", text);
    expect_error_free(t, 5, "line after the trailer");
    free(text);
}
END_TEST

START_TEST(test_trailer_mismatch)
{
    char *text = tr_fixture("mlp", 3, 0, 0, 1);
    expect_error_free(replace(text, "\"steps\": 3", "\"steps\": 4"), 5,
                      "trailer says 4 steps but the last step line is step 3");
    /* The trailer's chain must be the last step's. */
    const char *tc = strstr(text, "\"type\": \"trailer\"");
    char *t = malloc(strlen(text) + 1);
    strcpy(t, text);
    char *h = t + (tc - text) + strlen("\"type\": \"trailer\", \"steps\": 3, \"chain\": \"");
    *h = *h == 'a' ? 'b' : 'a';
    expect_error_free(t, 5, "trailer chain differs from the chain of step 3");
    free(text);
}
END_TEST

START_TEST(test_corrupt_digests)
{
    /* Editing one tensor digest breaks the step digest; editing a step
     * digest (with no tensors to check it) breaks the chain. */
    char *text = tr_fixture("mlp", 3, 0, 0, 2);
    const char *d = strstr(text, "\"digest\": \"") + strlen("\"digest\": \"");
    char *t = strdup(text);
    t[d - text] = t[d - text] == 'a' ? 'b' : 'a';
    expect_error_free(t, 3, "\"step_digest\" is not the SHA-256 of its tensor digests");
    const char *sd = strstr(text, "\"step_digest\": \"") + strlen("\"step_digest\": \"");
    t = strdup(text);
    t[sd - text] = t[sd - text] == 'a' ? 'b' : 'a';
    expect_error_free(t, 2, "\"chain\" is not SHA-256(previous chain || step_digest)");
    free(text);
}
END_TEST

START_TEST(test_embedded_nul)
{
    char *text = tr_fixture("mlp", 2, 0, 0, 1), path[256];
    tu_write_temp(path, sizeof path, "nul.jsonl", text);
    FILE *f = fopen(path, "r+");
    ck_assert_ptr_nonnull(f);
    /* A NUL inside line 2. */
    ck_assert_int_eq(fseek(f, (long)(strchr(text, '\n') - text) + 5, SEEK_SET), 0);
    fputc('\0', f);
    ck_assert_int_eq(fclose(f), 0);
    repro_error_clear();
    ck_assert_int_eq(repro_trace_read(&tr, path), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    char want[300];
    snprintf(want, sizeof want, "%s:2: embedded NUL byte", path);
    ck_assert_msg(strstr(repro_error_message(), want), "message '%s'", repro_error_message());
    free(text);
}
END_TEST

/* Peak resident memory in KiB since the last reset (VmHWM), or -1. */
static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* Resets the peak (Linux: "5" > /proc/self/clear_refs); 0 if it worked. */
static int reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A 65 MiB line is refused as soon as it passes the 1 MiB line limit, while
 * it is read: getline() used to pull the whole line into memory first (a
 * 300 MB line cost 314 MB resident), and a line under the old 64 MiB limit
 * went to jansson whole (60 MB of small integers: 1.3 GB). */
START_TEST(test_huge_line_refused)
{
    char *text = tr_fixture("mlp", 1, 0, 0, 1), path[256];
    tu_write_temp(path, sizeof path, "huge.jsonl", text);
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    static char pad[1 << 20];
    memset(pad, ' ', sizeof pad);
    fputs("{\"type\": \"step\"", f);
    for (int i = 0; i < 65; i++)
        ck_assert_uint_eq(fwrite(pad, 1, sizeof pad, f), sizeof pad);
    fputs("}\n", f);
    ck_assert_int_eq(fclose(f), 0);
    int measured = reset_peak_rss() == 0 && peak_rss_kib() > 0;
    long before = peak_rss_kib();
    repro_error_clear();
    ck_assert_int_eq(repro_trace_read(&tr, path), -1);
    long grew = peak_rss_kib() - before;
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    char want[300];
    snprintf(want, sizeof want, "%s:4: ", path);
    ck_assert_msg(strstr(repro_error_message(), want), "message '%s'", repro_error_message());
    ck_assert_msg(strstr(repro_error_message(), "line longer than the 1024 KiB limit"),
                  "message '%s'", repro_error_message());
    /* The line buffer stays under the limit plus one read (~1.1 MiB). */
    if (measured)
        ck_assert_msg(grew < 8 * 1024, "reading grew the peak RSS by %ld KiB", grew);
    remove(path);
    free(text);
}
END_TEST

/* Step numbers and counts are bounded by 2^53: a resume point or step near
 * INT64_MAX made `diff` overflow (UBSan) and report "identical:
 * 9223372036854775807 steps". The reader refuses it, naming file:line; at
 * the bound a trace still loads. */
START_TEST(test_step_numbers_bounded)
{
    char *text = tr_fixture("mlp", 2, 0, 0, 1);
    /* the header's last '}' gets a resume point */
    const char *nl = strchr(text, '\n');
    char *head = strndup(text, (size_t)(nl - text) - 1), *t;
    const char *rest = nl + 1;
    static const char zero[] = "0000000000000000000000000000000000000000000000000000000000000000";
    ck_assert_int_ge(asprintf(&t, "%s,\"resumed_from\":{\"path\":\"c\",\"step\":9223372036854775806,"
                                  "\"chain\":\"%s\"}}\n%s",
                              head, zero, rest), 0);
    expect_error_free(t, 1, "header: resumed_from: \"step\" is 9223372036854775806, outside "
                            "0..9007199254740992");
    /* a step line's number */
    char *u = replace(text, "\"step\": 1,", "\"step\": 9223372036854775807,");
    expect_error_free(u, 2, "\"step\" is 9223372036854775807, outside 0..9007199254740992");
    /* the trailer's count */
    u = replace(text, "\"steps\": 2,", "\"steps\": 9223372036854775807,");
    expect_error_free(u, 4, "trailer: \"steps\" is 9223372036854775807, outside");
    free(head);
    free(text);
}
END_TEST

START_TEST(test_blank_line)
{
    char *text = tr_fixture("mlp", 2, 0, 0, 1);
    expect_error_free(with_line(text, 2, " "), 2, "not JSON");
    char *t = replace(text, "}\n{", "}\n\n{");
    expect_error_free(t, 2, "empty line");
    free(text);
}
END_TEST

/* ---- the writer keeps each step's tensor list its own --------------------- */

/* Tensor k of a writer test step: its digest and stats differ per step. */
static repro_trace_tensor wt_tensor(const char *name, const char *dtype, int ndim, long d0,
                                    long step, int k)
{
    repro_trace_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.dtype, sizeof t.dtype, "%s", dtype);
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.shape[i] = d0 + i;
    char key[96];
    snprintf(key, sizeof key, "%s|%ld|%d", name, step, k);
    digest_of(key, &t.digest);
    t.l2 = 1.0 / (double)(step + k + 3), t.sum = -(double)step - 0.1 * k;
    t.max_abs = 0.25 * (double)k, t.nonfinite = step + k;
    return t;
}

static void same_tensors(const repro_trace_tensor *got, const repro_trace_tensor *want, int n)
{
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(got[i].name, want[i].name);
        ck_assert_str_eq(got[i].dtype, want[i].dtype);
        ck_assert_int_eq(got[i].ndim, want[i].ndim);
        for (int d = 0; d < want[i].ndim; d++)
            ck_assert_int_eq(got[i].shape[d], want[i].shape[d]);
        ck_assert(repro_digest_eq(&got[i].digest, &want[i].digest));
        ck_assert_double_eq(got[i].l2, want[i].l2);
        ck_assert_double_eq(got[i].sum, want[i].sum);
        ck_assert_double_eq(got[i].max_abs, want[i].max_abs);
        ck_assert_int_eq(got[i].nonfinite, want[i].nonfinite);
    }
}

START_TEST(test_writer_tensor_lists_change)
{
    /* The writer reuses the last detail step's tensor objects while the
     * list stays the same (trace_write.c): every kind of change between
     * steps (values only, a step without detail, a renamed, dropped,
     * reshaped or retyped tensor, ops appearing, growing past the line
     * buffer, vanishing) must read back as exactly what was written. */
    enum { STEPS = 9, MAXT = 300 };
    static repro_trace_tensor tens[STEPS + 1][MAXT], ops[STEPS + 1][MAXT];
    int nt[STEPS + 1] = {0}, nops[STEPS + 1] = {0}, detail[STEPS + 1] = {0};
    for (long st = 1; st <= STEPS; st++) {
        int d = st != 2; /* step 2: digests only */
        const char *b = st == 4 ? "param.fc2.bias" : "param.fc1.bias";
        long d0 = st == 6 || st == 7 ? 7 : 256;
        const char *dt = st == 7 ? "f64" : "f32";
        int k = 0;
        tens[st][k++] = wt_tensor("param.fc1.weight", dt, 2, d0, st, 0);
        if (st < 5 || st > 7) /* 5 drops it, 6 and 7 change the other one alone */
            tens[st][k++] = wt_tensor(b, "f32", 1, 256, st, 1);
        nt[st] = k, detail[st] = d;
        nops[st] = st == 1 ? 1 : st == 8 ? MAXT : 0; /* 300 ops: a line past the buffer */
        for (int i = 0; i < nops[st]; i++) {
            char name[32];
            snprintf(name, sizeof name, "fwd.op%d", i);
            ops[st][i] = wt_tensor(name, "f32", 2, 64, st, i);
        }
    }
    char path[256];
    tu_write_temp(path, sizeof path, "written.jsonl", "");
    json_t *h = repro_trace_header_new("mlp", "experiments/mlp.ini", 1, REPRO_TRACE_OP, 1, 1, 0,
                                       NULL);
    ck_assert_ptr_nonnull(h);
    json_object_set_new(h, "config", json_object());
    char hex[65];
    repro_digest d;
    digest_of("config", &d), hex_of(&d, hex);
    json_object_set_new(h, "config_digest", json_string(hex));
    json_object_set_new(h, "numerics_digest", json_string(hex));
    repro_trace_writer *w;
    ck_assert_int_eq(repro_trace_writer_open(&w, path, h), 0);
    json_decref(h);
    repro_digest chain = {{0}};
    for (long st = 1; st <= STEPS; st++) {
        repro_trace_step s;
        memset(&s, 0, sizeof s);
        s.step = st, s.loss_bits = 0x40000000u + (uint32_t)st, s.loss_value = 2.0 + 0.01 * st;
        s.ntensors = nt[st], s.tensors = tens[st], s.nops = nops[st], s.ops = ops[st];
        repro_digest ds[MAXT], pair[2];
        for (int i = 0; i < nt[st]; i++)
            ds[i] = tens[st][i].digest;
        ck_assert_int_eq(repro_sha256_digests(ds, (size_t)nt[st], &s.step_digest), 0);
        pair[0] = chain, pair[1] = s.step_digest;
        ck_assert_int_eq(repro_sha256_digests(pair, 2, &s.chain), 0);
        chain = s.chain;
        ck_assert_int_eq(repro_trace_writer_step(w, &s, detail[st]), 0);
    }
    ck_assert_int_eq(repro_trace_writer_close(w, STEPS, &chain, NULL), 0);

    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_int_eq(tr.nsteps, STEPS);
    for (long st = 1; st <= STEPS; st++) {
        const repro_trace_step *s = repro_trace_find_step(&tr, st);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->has_detail, detail[st]);
        if (!detail[st])
            continue;
        ck_assert_uint_eq(s->loss_bits, 0x40000000u + (uint32_t)st);
        ck_assert_int_eq(s->ntensors, nt[st]);
        same_tensors(s->tensors, tens[st], nt[st]);
        ck_assert_int_eq(s->nops, nops[st]);
        same_tensors(s->ops, ops[st], nops[st]);
    }
    repro_trace_release(&tr);
}
END_TEST

Suite *trace_read_suite(void)
{
    Suite *s = suite_create("trace_read");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, test_good_trace_round_trips);
    tcase_add_test(tc, test_fixture_reads_with_sparse_detail);
    tcase_add_test(tc, test_missing_loss_value_uses_bits);
    tcase_add_test(tc, test_truncated_trace_loads_without_trailer);
    tcase_add_test(tc, test_writer_tensor_lists_change);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_empty_file);
    tcase_add_test(tc, test_first_line_not_header);
    tcase_add_test(tc, test_unknown_version);
    tcase_add_test(tc, test_version2_lines);
    tcase_add_test(tc, test_version2_rules);
    tcase_add_test(tc, test_garbled_line);
    tcase_add_test(tc, test_incomplete_last_line);
    tcase_add_test(tc, test_wrong_type);
    tcase_add_test(tc, test_missing_and_mistyped_fields);
    tcase_add_test(tc, test_client_field);
    tcase_add_test(tc, test_looser_than_the_format_is_refused);
    tcase_add_test(tc, test_diff_names_both_layouts);
    tcase_add_test(tc, test_bad_hex_digest);
    tcase_add_test(tc, test_steps_out_of_order);
    tcase_add_test(tc, test_line_after_trailer);
    tcase_add_test(tc, test_trailer_mismatch);
    tcase_add_test(tc, test_corrupt_digests);
    tcase_add_test(tc, test_embedded_nul);
    tcase_add_test(tc, test_blank_line);
    tcase_add_test(tc, test_huge_line_refused);
    tcase_add_test(tc, test_step_numbers_bounded);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
