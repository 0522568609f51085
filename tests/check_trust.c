/* Trust in a submission, end to end through `repro verify`: pinned keys
 * (--trusted-keys: the registered key accepted, another valid key and an
 * unsigned bundle rejected naming the fingerprint; the receipt names the
 * signer or says "signer not pinned"), the trusted-keys file's format and
 * its errors (FILE:LINE), distinct messages for a malformed signature, an
 * unpinned key and a signature that does not verify, and the claimed
 * loss_value / eval_* fields checked against the re-run (the step digest
 * does not cover them). A tiny experiment with eval every 2 steps: ~0.1 s
 * a run. */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "verify/claims.h"

static char out[1 << 16], err[1 << 16];
static char dir[256]; /* this test's temp dir */

static const char eval_ini[] = "[model]\ntype = mlp\nhidden = 16\n\n"
                               "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
                               "[train]\nsteps = 6\neval_every = 2\n\n"
                               /* loss_value on every step: the tests edit given steps' */
                               "[trace]\nevery = 1\n";

static int repro(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int repro(const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* The line `repro keygen -o DIR/NAME.pem` prints for a trusted-keys file,
 * without its "trusted-keys line: " prefix and newline (static). */
static const char *keygen(const char *name)
{
    static char line[512];
    ck_assert_msg(repro("keygen -o %s/%s.pem", dir, name) == 0, "%s", err);
    const char *at = strstr(out, "trusted-keys line: ");
    ck_assert_ptr_nonnull(at);
    snprintf(line, sizeof line, "%s", at + strlen("trusted-keys line: "));
    line[strcspn(line, "\n")] = '\0';
    return line;
}

/* eval.ini, keys alice (pinned as "Alice Liddell", in a file with a
 * comment and a blank line) and mallory (not pinned), and bundles signed
 * by each: DIR/alice, DIR/mallory; DIR/plain is unsigned. */
static void setup(void)
{
    char p[512], line[600];
    tu_write_temp(p, sizeof p, "eval.ini", eval_ini);
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(p, '/') - p), p);
    const char *a = keygen("alice");
    ck_assert_msg(!strncmp(a, "ed25519 ", 8) && strstr(a, " alice"), "%s", a);
    snprintf(line, sizeof line, "%.*s Alice Liddell", (int)(strstr(a, " alice") - a), a);
    keygen("mallory");
    snprintf(p, sizeof p, "%s/trusted.txt", dir);
    char text[1024];
    snprintf(text, sizeof text, "# competition 7: registered participants\n\n  %s\n", line);
    spit(p, text);
    ck_assert_int_eq(repro("submit %s/eval.ini -o %s/alice --key %s/alice.pem", dir, dir, dir), 0);
    ck_assert_int_eq(repro("submit %s/eval.ini -o %s/mallory --key %s/mallory.pem", dir, dir, dir),
                     0);
    ck_assert_int_eq(repro("submit %s/eval.ini -o %s/plain", dir, dir), 0);
}

/* The key id (fingerprint) a signed bundle's manifest names (static). */
static const char *bundle_key_id(const char *bundle)
{
    static char id[65];
    char p[600];
    snprintf(p, sizeof p, "%s/%s/manifest.json", dir, bundle);
    json_t *m = load_json(p);
    snprintf(id, sizeof id, "%s",
             json_string_value(json_object_get(json_object_get(m, "signature"), "key_id")));
    json_decref(m);
    ck_assert_int_eq(strlen(id), 64);
    return id;
}

START_TEST(test_pinned_key_accepted_other_key_rejected)
{
    setup();
    char r[600];
    snprintf(r, sizeof r, "%s/r.json", dir);
    ck_assert_msg(repro("verify %s/alice --trusted-keys %s/trusted.txt --key %s/alice.pem -o %s",
                        dir, dir, dir, r) == 0,
                  "%s%s", out, err);
    ck_assert_ptr_nonnull(strstr(out, ": reproduced"));
    ck_assert_msg(strstr(out, "  signer: Alice Liddell (pinned in ") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, bundle_key_id("alice")));
    json_t *doc = load_json(r), *b = json_object_get(doc, "bundle");
    ck_assert_str_eq(json_string_value(json_object_get(b, "signer")), "Alice Liddell");
    ck_assert(json_is_true(json_object_get(b, "signer_pinned")));
    json_decref(doc);

    /* Another valid key: rejected like a bad signature (exit 2), named by
     * its fingerprint, nothing re-run. */
    ck_assert_int_eq(repro("verify %s/mallory --trusted-keys %s/trusted.txt -o %s", dir, dir, r),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "invalid submission"));
    ck_assert_msg(strstr(err, "signed by a key that is not pinned: fingerprint ") != NULL, "%s",
                  err);
    ck_assert_ptr_nonnull(strstr(err, bundle_key_id("mallory")));
    doc = load_json(r);
    ck_assert(json_is_false(json_object_get(doc, "ran")));
    ck_assert(json_is_false(json_object_get(json_object_get(doc, "bundle"), "signer_pinned")));
    json_decref(doc);

    /* Unsigned: no signer to pin. */
    ck_assert_int_eq(repro("verify %s/plain --trusted-keys %s/trusted.txt", dir, dir), 2);
    ck_assert_ptr_nonnull(strstr(err, "the bundle is not signed, and --trusted-keys"));

    /* Negative control: without the option both are accepted, and the
     * receipt and the summary say the signer is not pinned. */
    ck_assert_int_eq(repro("verify %s/mallory -o %s", dir, r), 0);
    ck_assert_msg(strstr(out, "  signer not pinned (signed; no --trusted-keys)") != NULL, "%s",
                  out);
    doc = load_json(r);
    b = json_object_get(doc, "bundle");
    ck_assert_str_eq(json_string_value(json_object_get(b, "signer")), "signer not pinned");
    ck_assert(json_is_false(json_object_get(b, "signer_pinned")));
    json_decref(doc);
}
END_TEST

/* A trusted-keys file that is not one: each error names FILE:LINE, exit 2,
 * before anything is verified. */
START_TEST(test_trusted_keys_file_errors_name_the_line)
{
    setup();
    const char *good = keygen("carol");
    char p[600], text[2048];
    snprintf(p, sizeof p, "%s/bad.txt", dir);
    static const struct {
        const char *line, *msg;
    } cases[] = {
        {"rsa AAAA someone", "the key type must be ed25519"},
        {"ed25519 MCowBQYDK2VwAyEA", "a key and its owner's name"},
        {"ed25519 !!!! mallory", "not an Ed25519 public key"},
        {"ed25519 MCowBQYDK2VwAyEAAAAA mallory", "not an Ed25519 public key"},
        {NULL, "listed twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, "# header\n%s\n\n%s\n", good, cases[i].line ? cases[i].line
                                                                                : good);
        spit(p, text);
        ck_assert_int_eq(repro("verify %s/alice --trusted-keys %s", dir, p), 2);
        char want[700];
        snprintf(want, sizeof want, "%s:4: ", p);
        ck_assert_msg(strstr(err, want) && strstr(err, cases[i].msg), "case %zu: %s", i, err);
        ck_assert_ptr_null(strstr(out, "reproduced"));
    }
    spit(p, "# nobody yet\n\n");
    ck_assert_int_eq(repro("verify %s/alice --trusted-keys %s", dir, p), 2);
    ck_assert_ptr_nonnull(strstr(err, "no keys"));
    ck_assert_int_eq(repro("verify %s/alice --trusted-keys %s/none.txt", dir, dir), 2);
    /* carol alone is pinned: alice's valid signature is not enough. */
    snprintf(text, sizeof text, "%s\n", good);
    spit(p, text);
    ck_assert_int_eq(repro("verify %s/alice --trusted-keys %s", dir, p), 2);
    ck_assert_ptr_nonnull(strstr(err, "not pinned"));
}
END_TEST

/* Rewrites DIR/BUNDLE/manifest.json's signature: member `key` set to the
 * string `value`. */
/* value NULL: the member is removed. */
static void set_signature_member(const char *bundle, const char *key, const char *value)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s/manifest.json", dir, bundle);
    json_t *m = load_json(p);
    if (value)
        json_object_set_new(json_object_get(m, "signature"), key, json_string(value));
    else
        json_object_del(json_object_get(m, "signature"), key);
    ck_assert_int_eq(json_dump_file(m, p, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
    json_decref(m);
}

static const char *signature_member(const char *bundle, const char *key)
{
    static char v[1100];
    char p[600];
    snprintf(p, sizeof p, "%s/%s/manifest.json", dir, bundle);
    json_t *m = load_json(p);
    snprintf(v, sizeof v, "%s",
             json_string_value(json_object_get(json_object_get(m, "signature"), key)));
    json_decref(m);
    return v;
}

/* Three failures, three messages: a value that is not a signature at all,
 * a valid signature by a key that is not pinned, one that does not verify. */
START_TEST(test_signature_failures_have_distinct_messages)
{
    setup();
    char sig[100], pem[1100], id[65];
    snprintf(sig, sizeof sig, "%s", signature_member("mallory", "value"));

    /* Malformed: too short; right length but not base64. */
    set_signature_member("alice", "value", "AAAA");
    ck_assert_int_eq(repro("verify %s/alice", dir), 2);
    ck_assert_msg(strstr(err, "malformed signature: \"signature\".\"value\" must be base64 of a "
                              "64-byte Ed25519 signature (88 characters; it is a string of 4)"),
                  "%s", err);
    /* Missing (found by the manifest fuzzer: it read a null member). */
    set_signature_member("alice", "value", NULL);
    ck_assert_int_eq(repro("verify %s/alice", dir), 2);
    ck_assert_msg(strstr(err, "malformed signature: \"signature\".\"value\" is missing"), "%s",
                  err);
    char bad[100];
    snprintf(bad, sizeof bad, "%s", sig);
    bad[10] = '*';
    set_signature_member("alice", "value", bad);
    ck_assert_int_eq(repro("verify %s/alice", dir), 2);
    ck_assert_ptr_nonnull(strstr(err, "malformed signature"));
    ck_assert_ptr_null(strstr(err, "does not verify"));

    /* Does not verify: mallory's signature bytes under alice's key. */
    set_signature_member("alice", "value", sig);
    ck_assert_int_eq(repro("verify %s/alice", dir), 2);
    ck_assert_msg(strstr(err, "the submitter's signature does not verify against its key "
                              "(fingerprint "),
                  "%s", err);
    ck_assert_ptr_nonnull(strstr(err, bundle_key_id("alice")));
    ck_assert_ptr_null(strstr(err, "malformed"));
    ck_assert_ptr_null(strstr(err, "not pinned"));

    /* Not pinned: a valid signature, another key. */
    ck_assert_int_eq(repro("verify %s/mallory --trusted-keys %s/trusted.txt", dir, dir), 2);
    ck_assert_ptr_nonnull(strstr(err, "not pinned"));
    ck_assert_ptr_null(strstr(err, "does not verify"));
    ck_assert_ptr_null(strstr(err, "malformed"));

    /* Mallory's bundle with alice's key and id pasted in, pinned or not:
     * it does not verify (the pin does not make a forgery acceptable). */
    snprintf(pem, sizeof pem, "%s", signature_member("alice", "public_key"));
    snprintf(id, sizeof id, "%s", bundle_key_id("alice"));
    set_signature_member("mallory", "public_key", pem);
    set_signature_member("mallory", "key_id", id);
    ck_assert_int_eq(repro("verify %s/mallory --trusted-keys %s/trusted.txt", dir, dir), 2);
    ck_assert_ptr_nonnull(strstr(err, "signature does not verify"));
}
END_TEST

/* Replaces `key` on the trace line of `step` (0: the trailer) of
 * DIR/BUNDLE/trace.jsonl with the number v; the claimed trace still reads
 * as valid (the key is not hashed). The old value goes to *old. */
static void edit_trace(const char *bundle, long step, const char *key, double v, double *old)
{
    char p[600], line[1 << 16];
    snprintf(p, sizeof p, "%s/%s/trace.jsonl", dir, bundle);
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, 8 << 20);
    size_t used = 0;
    int done = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_ptr_nonnull(o);
        json_t *st = json_object_get(o, "step");
        const char *type = json_string_value(json_object_get(o, "type"));
        int hit = step ? (json_is_integer(st) && json_integer_value(st) == step)
                       : !strcmp(type, "trailer");
        if (hit) {
            ck_assert_msg(json_is_number(json_object_get(o, key)), "no %s at step %ld", key,
                          step);
            *old = json_number_value(json_object_get(o, key));
            json_object_set_new(o, key, json_real(v));
            done = 1;
        }
        char *s = json_dumps(o, JSON_COMPACT);
        used += (size_t)snprintf(text + used, (8 << 20) - used, "%s\n", s);
        free(s);
        json_decref(o);
    }
    fclose(f);
    ck_assert(done);
    spit(p, text);
    free(text);
}

/* A fresh unsigned bundle DIR/NAME of eval.ini. */
static void fresh_bundle(const char *name)
{
    ck_assert_int_eq(repro("submit %s/eval.ini -o %s/%s", dir, dir, name), 0);
}

START_TEST(test_claimed_loss_value_is_checked)
{
    setup();
    char r[600], want[200];
    double old;
    snprintf(r, sizeof r, "%s/r.json", dir);
    /* Negative control: the genuine claim, its metrics in the receipt. */
    ck_assert_int_eq(repro("verify %s/plain -o %s", dir, r), 0);
    json_t *doc = load_json(r), *m = json_object_get(doc, "rerun_metrics");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "step")), 6);
    ck_assert(json_is_string(json_object_get(m, "loss")));
    ck_assert(json_is_string(json_object_get(m, "loss_value")));
    ck_assert(json_is_string(json_object_get(m, "eval_accuracy")));
    ck_assert_int_eq(json_integer_value(json_object_get(m, "eval_step")), 6);
    json_decref(doc);
    ck_assert_ptr_nonnull(strstr(out, "  re-run metrics: step 6 loss "));

    fresh_bundle("lv");
    edit_trace("lv", 3, "loss_value", 0.0625, &old);
    ck_assert_int_eq(repro("verify %s/lv -o %s", dir, r), 1);
    ck_assert_ptr_nonnull(strstr(out, ": diverged at step 3"));
    ck_assert_ptr_null(strstr(out, "reproduced"));
    snprintf(want, sizeof want, "step 3: the claimed loss_value is 0.0625, the re-run's ");
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    char oldtext[40];
    snprintf(oldtext, sizeof oldtext, "%.17g", old);
    oldtext[6] = '\0'; /* a prefix of the shortest form the message uses */
    ck_assert_msg(strstr(strstr(out, want), oldtext) != NULL, "%s (want %s)", out, oldtext);
    doc = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "diverged");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "step")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "digests")), "identical");
    json_decref(doc);

    /* Under a tolerance policy too: 0.0625 is far outside rtol:1e-3 (the
     * per-step comparison sees it first there). */
    ck_assert_int_eq(repro("verify %s/lv --policy rtol:1e-3", dir), 1);
    ck_assert_msg(strstr(out, ": diverged at step 3") && strstr(out, "step 3: loss 0.0625 vs "),
                  "%s", out);
    /* ... and a change within it passes there, not bitwise. */
    fresh_bundle("near");
    edit_trace("near", 2, "loss_value", 0, &old);
    edit_trace("near", 2, "loss_value", old * (1 + 1e-6), &old);
    ck_assert_int_eq(repro("verify %s/near --policy rtol:1e-3", dir), 0);
    ck_assert_int_eq(repro("verify %s/near", dir), 1);
    ck_assert_ptr_nonnull(strstr(out, "step 2: the claimed loss_value is "));
}
END_TEST

START_TEST(test_claimed_eval_accuracy_is_checked)
{
    setup();
    double old;
    /* The final score in the trailer: the number a leaderboard would read. */
    fresh_bundle("acc");
    edit_trace("acc", 0, "eval_accuracy", 0.99, &old);
    ck_assert_int_eq(repro("verify %s/acc", dir), 1);
    ck_assert_ptr_nonnull(strstr(out, ": diverged at step 6"));
    char want[200], oldtext[40];
    snprintf(oldtext, sizeof oldtext, "%.9g", old); /* k/64: exact in a few digits */
    snprintf(want, sizeof want,
             "step 6 (trailer): the claimed eval_accuracy is 0.99, the re-run's %s", oldtext);
    ck_assert_msg(strstr(out, want) != NULL, "%s\nwant: %s", out, want);
    /* An intermediate eval (after step 4) edited. */
    fresh_bundle("acc4");
    edit_trace("acc4", 4, "eval_accuracy", 0.875, &old);
    ck_assert_int_eq(repro("verify %s/acc4", dir), 1);
    ck_assert_ptr_nonnull(strstr(out, "step 4: the claimed eval_accuracy is 0.875, the re-run's "));
    /* eval_loss as well. */
    fresh_bundle("el");
    edit_trace("el", 2, "eval_loss", 0.5, &old);
    ck_assert_int_eq(repro("verify %s/el", dir), 1);
    ck_assert_ptr_nonnull(strstr(out, "step 2: the claimed eval_loss is 0.5, the re-run's "));
    /* Negative control: the same value written back (re-serialized) verifies. */
    fresh_bundle("same");
    edit_trace("same", 0, "eval_accuracy", 0, &old);
    edit_trace("same", 0, "eval_accuracy", old, &old);
    ck_assert_msg(repro("verify %s/same", dir) == 0, "%s", out);
}
END_TEST

/* The claims check on its own, on hand-made traces (header, steps, trailer):
 * each policy's rule, a field the re-run lacks, null against a number,
 * lines that do not pair up, and the final metrics it collects. */
static const char re_trace[] =
    "{\"type\":\"header\"}\n"
    "{\"type\":\"step\",\"step\":1,\"loss\":\"0x40000000\",\"loss_value\":2.0}\n"
    "{\"type\":\"step\",\"step\":2,\"loss\":\"0x3f800000\",\"loss_value\":1.0,"
    "\"eval_loss\":1.5,\"eval_loss_bits\":\"0x3ff8000000000000\",\"eval_accuracy\":null}\n"
    "{\"type\":\"trailer\",\"steps\":2,\"eval_loss\":1.25,\"eval_accuracy\":0.5}\n";

static int claims(const char *claim, const char *policy, repro_claims *c)
{
    char pc[600], pr[600];
    tu_write_temp(pc, sizeof pc, "claim.jsonl", claim);
    tu_write_temp(pr, sizeof pr, "rerun.jsonl", re_trace);
    repro_verify_policy p;
    ck_assert_int_eq(repro_verify_policy_parse(policy, &p), 0);
    return repro_claims_check(pc, pr, &p, c);
}

START_TEST(test_claims_rules)
{
    repro_claims c;
    /* Identical: nothing to report; the final metrics are the re-run's. */
    ck_assert_int_eq(claims(re_trace, "bitwise", &c), 0);
    ck_assert(!c.mismatch && !c.unmatched);
    ck_assert_int_eq(c.checked, 9); /* steps: 2 loss, 2 loss_value, 3 eval_*; trailer: 2 */
    ck_assert_str_eq(json_string_value(json_object_get(c.final, "loss_value")), "1");
    ck_assert_str_eq(json_string_value(json_object_get(c.final, "loss")), "0x3f800000");
    ck_assert_str_eq(json_string_value(json_object_get(c.final, "eval_accuracy")), "0.5");
    ck_assert_str_eq(json_string_value(json_object_get(c.final, "eval_loss")), "1.25");
    ck_assert_int_eq(json_integer_value(json_object_get(c.final, "eval_step")), 2);
    repro_claims_release(&c);

    /* A claim with no loss_value/eval_* fields checks nothing. */
    ck_assert_int_eq(claims("{\"type\":\"header\"}\n{\"type\":\"step\",\"step\":1}\n"
                            "{\"type\":\"step\",\"step\":2}\n"
                            "{\"type\":\"trailer\",\"steps\":2}\n",
                            "bitwise", &c),
                     0);
    ck_assert(!c.mismatch && !c.unmatched);
    ck_assert_int_eq(c.checked, 0);
    repro_claims_release(&c);

    /* Each case: the claim's step 1, step 2 and trailer lines (NULL: just
     * the line's type and step). */
    static const struct {
        const char *s1, *s2, *tr, *policy;
        int mismatch;
        const char *text;
    } cases[] = {
        /* one float32 ulp above 2.0 */
        {"\"loss_value\":2.0000002384185791", NULL, NULL, "bitwise", 1,
         "step 1: the claimed loss_value is 2.0000002, the re-run's 2"},
        {"\"loss_value\":2.0000002384185791", NULL, NULL, "ulp:1", 0, NULL},
        {"\"loss_value\":2.0000002384185791", NULL, NULL, "ulp:0", 1, "(policy ulp:0)"},
        {"\"loss_value\":2.001", NULL, NULL, "rtol:1e-3", 0, NULL},
        {"\"loss_value\":2.01", NULL, NULL, "rtol:1e-3", 1,
         "the claimed loss_value is 2.01, the re-run's 2 (policy rtol:1e-3)"},
        /* a field the re-run does not have */
        {"\"eval_accuracy\":0.9", NULL, NULL, "rtol:1", 1,
         "step 1: the claimed eval_accuracy is 0.9, the re-run's (absent)"},
        /* null (not finite) against a number, and the other way */
        {NULL, "\"eval_accuracy\":0.75", NULL, "bitwise", 1,
         "step 2: the claimed eval_accuracy is 0.75, the re-run's null"},
        {NULL, NULL, "\"eval_accuracy\":null", "bitwise", 1,
         "step 2 (trailer): the claimed eval_accuracy is null, the re-run's 0.5"},
        /* strings: exact under bitwise, not compared under a tolerance */
        {NULL, "\"eval_loss_bits\":\"0x3ff8000000000001\"", NULL, "bitwise", 1,
         "the claimed eval_loss_bits is \"0x3ff8000000000001\""},
        {NULL, "\"eval_loss_bits\":\"0x3ff8000000000001\"", NULL, "rtol:1e-6", 0, NULL},
        /* other keys are not claims */
        {"\"train_seconds\":99", NULL, "\"train_seconds\":99", "bitwise", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char claim[1024];
        snprintf(claim, sizeof claim,
                 "{\"type\":\"header\"}\n{\"type\":\"step\",\"step\":1%s%s}\n"
                 "{\"type\":\"step\",\"step\":2%s%s}\n"
                 "{\"type\":\"trailer\",\"steps\":2%s%s}\n",
                 cases[i].s1 ? "," : "", cases[i].s1 ? cases[i].s1 : "",
                 cases[i].s2 ? "," : "", cases[i].s2 ? cases[i].s2 : "",
                 cases[i].tr ? "," : "", cases[i].tr ? cases[i].tr : "");
        ck_assert_int_eq(claims(claim, cases[i].policy, &c), 0);
        ck_assert_msg(c.mismatch == cases[i].mismatch && !c.unmatched, "case %zu: %s", i,
                      c.text);
        if (cases[i].text)
            ck_assert_msg(strstr(c.text, cases[i].text) != NULL, "case %zu: %s", i, c.text);
        repro_claims_release(&c);
    }

    /* Lines that do not pair up: the claim changed after it was judged. */
    ck_assert_int_eq(claims("{\"type\":\"header\"}\n{\"type\":\"step\",\"step\":2}\n",
                            "bitwise", &c),
                     0);
    ck_assert(c.unmatched && !c.mismatch);
    ck_assert_ptr_nonnull(strstr(c.text, "does not match the re-run's line for line (line 2)"));
    repro_claims_release(&c);
    ck_assert_int_eq(claims("{\"type\":\"header\"}\nnot json\n", "bitwise", &c), 0);
    ck_assert(c.unmatched);
    repro_claims_release(&c);
    ck_assert_int_eq(
        claims("{\"type\":\"header\"}\n{\"type\":\"step\",\"step\":1}\n", "bitwise", &c), 0);
    ck_assert(c.unmatched); /* ends before the re-run */
    repro_claims_release(&c);
}
END_TEST

Suite *trust_suite(void)
{
    Suite *s = suite_create("trust");
    TCase *tc = tcase_create("trust");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_pinned_key_accepted_other_key_rejected);
    tcase_add_test(tc, test_trusted_keys_file_errors_name_the_line);
    tcase_add_test(tc, test_signature_failures_have_distinct_messages);
    tcase_add_test(tc, test_claimed_loss_value_is_checked);
    tcase_add_test(tc, test_claimed_eval_accuracy_is_checked);
    tcase_add_test(tc, test_claims_rules);
    suite_add_tcase(s, tc);
    return s;
}
