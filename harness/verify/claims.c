/* Claimed loss_value / eval_* fields against the re-run (see claims.h). */
#include "verify/claims.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/ulp.h"

/* The shortest "%.*g" that reads back as the same double — as the same
 * float32 when the value is one (loss_value is a float32's value): receipts
 * carry numbers as strings (receipt.h: no reals in a receipt). */
static void shortest(double v, int f32, char *buf, size_t len)
{
    float f = (float)v;
    if (f32 && (double)f == v && isfinite(v)) { /* the loss: a float32's shortest form */
        for (int prec = 1; prec <= 9; prec++) {
            snprintf(buf, len, "%.*g", prec, v);
            if (strtof(buf, NULL) == f)
                return;
        }
    }
    for (int prec = 9; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
}

static json_t *number_text(double v, int f32)
{
    char buf[40];
    shortest(v, f32, buf, sizeof buf);
    return json_string(buf);
}

static int is_claim_key(const char *k)
{
    return !strcmp(k, "loss") || !strcmp(k, "loss_value") || !strncmp(k, "eval_", 5);
}

/* A step line's "loss": the float32's bits, "0x%08x" (every step has it;
 * loss_value only a detail step). */
static int loss_bits(const json_t *v, float *out)
{
    const char *s = json_string_value(v);
    char *end;
    unsigned long bits = s && !strncmp(s, "0x", 2) ? strtoul(s + 2, &end, 16) : 0;
    if (!s || strncmp(s, "0x", 2) || *end || bits > 0xffffffffUL)
        return 0;
    uint32_t b = (uint32_t)bits;
    memcpy(out, &b, sizeof *out);
    return 1;
}

/* A value for messages: the number, the string, or "null". */
static void show(const char *key, const json_t *v, char *buf, size_t len)
{
    if (json_is_number(v))
        shortest(json_number_value(v), !strcmp(key, "loss_value"), buf, len);
    else if (json_is_string(v))
        snprintf(buf, len, "\"%.40s\"", json_string_value(v));
    else if (!v)
        snprintf(buf, len, "(absent)");
    else
        snprintf(buf, len, "null");
}

/* Does the claimed value a agree with the re-run's b under the policy? */
static int agrees(const json_t *a, const json_t *b, const repro_verify_policy *p)
{
    if (!b)
        return 0;
    float fa, fb;
    if (p->kind != REPRO_POLICY_BITWISE && loss_bits(a, &fa) && loss_bits(b, &fb)) {
        if (!isfinite(fa) || !isfinite(fb)) /* json_real takes no NaN: the same kind */
            return isnan(fa) ? isnan(fb) : fa == fb;
        json_t *x = json_real(fa), *y = json_real(fb); /* the loss under the tolerance */
        int ok = agrees(x, y, p);
        json_decref(x);
        json_decref(y);
        return ok;
    }
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        if (p->kind == REPRO_POLICY_BITWISE)
            return x == y;
        if (p->kind == REPRO_POLICY_ULP) {
            float fx = (float)x, fy = (float)y;
            uint32_t bx, by;
            memcpy(&bx, &fx, 4);
            memcpy(&by, &fy, 4);
            return repro_ulp_distance_f32(bx, by) <= (uint64_t)p->ulp;
        }
        double m = fmax(fabs(x), fabs(y));
        return m == 0 || fabs(x - y) / m <= p->rtol;
    }
    if (json_is_string(a) && json_is_string(b))
        return p->kind != REPRO_POLICY_BITWISE ||
               !strcmp(json_string_value(a), json_string_value(b));
    return json_is_null(a) && json_is_null(b);
}

/* Every claimed field of one line against the re-run's line. */
static void check_line(json_t *claim, json_t *re, long step, const repro_verify_policy *p,
                       repro_claims *c)
{
    const char *where = json_object_get(re, "step") ? "" : " (trailer)";
    const char *k;
    json_t *v;
    json_object_foreach(claim, k, v) {
        if (c->mismatch || !is_claim_key(k))
            continue;
        json_t *w = json_object_get(re, k);
        c->checked++;
        if (agrees(v, w, p))
            continue;
        char a[64], b[64];
        show(k, v, a, sizeof a);
        show(k, w, b, sizeof b);
        c->mismatch = 1;
        c->step = step;
        snprintf(c->text, sizeof c->text,
                 "step %ld%s: the claimed %s is %s, the re-run's %s (policy %s): claimed "
                 "metrics must be the re-run's",
                 step, where, k, a, b, p->text);
    }
}

/* The re-run's final metrics: the last step line's loss, the last eval
 * seen (a step line's, or the trailer's, which comes last). */
static void collect_final(json_t *re, long step, repro_claims *c)
{
    json_t *f = c->final;
    json_t *loss = json_object_get(re, "loss"), *lv = json_object_get(re, "loss_value");
    if (json_is_string(loss)) {
        json_object_set_new(f, "step", json_integer(step));
        json_object_set(f, "loss", loss);
        json_object_set_new(f, "loss_value", json_is_number(lv)
                                                 ? number_text(json_number_value(lv), 1)
                                                 : json_null());
    }
    static const char *const evals[] = {"eval_loss", "eval_accuracy"};
    for (int i = 0; i < 2; i++) {
        json_t *e = json_object_get(re, evals[i]);
        if (!e)
            continue;
        json_object_set_new(f, evals[i],
                            json_is_number(e) ? number_text(json_number_value(e), 0) : json_null());
        json_object_set_new(f, "eval_step", json_integer(step));
    }
}

/* Both lines have key k with equal values, or neither has it. */
static int same_member(json_t *a, json_t *b, const char *k)
{
    json_t *x = json_object_get(a, k), *y = json_object_get(b, k);
    return x || y ? json_equal(x, y) : 1;
}

/* The next line of f as JSON (NULL at the end). */
static json_t *next_line(FILE *f, char **buf, size_t *cap, int *bad)
{
    ssize_t n = getline(buf, cap, f);
    if (n < 0)
        return NULL;
    json_t *o = json_loads(*buf, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        *bad = 1;
        return NULL;
    }
    return o;
}

int repro_claims_check(const char *claimed_path, const char *rerun_path,
                       const repro_verify_policy *p, repro_claims *c)
{
    memset(c, 0, sizeof *c);
    c->final = json_object();
    FILE *fc = fopen(claimed_path, "r"), *fr = fopen(rerun_path, "r");
    char *bc = NULL, *br = NULL;
    size_t cc = 0, cr = 0;
    int bad = 0, rc = 0;
    long last = 0, lines = 0;
    if (!c->final || !fc || !fr) {
        rc = repro_error_set_errno(REPRO_EIO, "verify: cannot read the traces again");
        goto out;
    }
    for (;;) {
        lines++;
        json_t *a = next_line(fc, &bc, &cc, &bad), *b = next_line(fr, &br, &cr, &bad);
        if (!a || !b) {
            if (a || b) /* one trace ends before the other */
                bad = 1;
            json_decref(a);
            json_decref(b);
            break;
        }
        const char *type = json_string_value(json_object_get(b, "type"));
        json_t *st = json_object_get(b, "step");
        long step = json_is_integer(st) ? (long)json_integer_value(st) : last;
        int same = same_member(a, b, "type") && same_member(a, b, "step");
        if (!same)
            bad = 1;
        else if (type && strcmp(type, "header")) {
            check_line(a, b, step, p, c);
            collect_final(b, step, c);
            last = step;
        }
        json_decref(a);
        json_decref(b);
        if (bad)
            break;
    }
    if (bad && !c->mismatch) { /* both were judged equal before: the claim changed since */
        c->unmatched = 1;
        snprintf(c->text, sizeof c->text,
                 "the claimed trace does not match the re-run's line for line (line %ld): "
                 "claimed metrics cannot be checked",
                 lines);
    }
out:
    free(bc);
    free(br);
    if (fc)
        fclose(fc);
    if (fr)
        fclose(fr);
    return rc;
}

void repro_claims_release(repro_claims *c)
{
    json_decref(c->final);
    c->final = NULL;
}
