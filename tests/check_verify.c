/* `repro submit`, `repro verify` and `repro verify-receipt` end to end, on a
 * tiny experiment (hidden 16, 256 samples, 6 steps: ~0.1 s a run): a
 * genuine submission verifies; a single altered step digest is rejected
 * naming that step; a trace made with another seed is rejected; an edited
 * or forged receipt fails; a submission over the host's step limit is
 * refused before any training; the comparison is the host's policy
 * whatever environment class the bundle claims. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "record/hash.h"
#include "testutil.h"
#include "util/error.h"
#include "verify/verify.h"

static char out[1 << 16], err[1 << 16];
static char dir[256]; /* this test's temp dir: tiny.ini, keys, bundles */

static const char tiny_ini[] = "[model]\ntype = mlp\nhidden = 16\n\n"
                               "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
                               "[train]\nsteps = 6\n\n"
                               /* detail on every step: the tests alter given steps' tensors */
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

/* tiny.ini, host and submitter keys, and a signed bundle DIR/b. */
static void setup(void)
{
    char p[512];
    tu_write_temp(p, sizeof p, "tiny.ini", tiny_ini);
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(p, '/') - p), p);
    ck_assert_int_eq(repro("keygen -o %s/host.pem", dir), 0);
    ck_assert_int_eq(repro("keygen -o %s/sub.pem", dir), 0);
    ck_assert_msg(repro("submit %s/tiny.ini -o %s/b --key %s/sub.pem", dir, dir, dir) == 0, "%s",
                  err);
    ck_assert_ptr_nonnull(strstr(out, "signed, submitter key id"));
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

/* The bundle's manifest with `chain` set (NULL: unchanged), the
 * submitter's signature removed (an edited manifest can only be an
 * unsigned one), and optionally a new environment class. */
static void rewrite_manifest(const char *bundle, const char *chain, const char *env_class)
{
    char p[600];
    snprintf(p, sizeof p, "%s/manifest.json", bundle);
    json_t *m = load_json(p);
    json_object_del(m, "signature");
    if (chain)
        json_object_set_new(m, "chain", json_string(chain));
    if (env_class) {
        json_object_set_new(m, "env_class", json_string(env_class));
        json_object_set_new(json_object_get(m, "env"), "class", json_string(env_class));
    }
    ck_assert_int_eq(json_dump_file(m, p, JSON_INDENT(2)), 0);
    json_decref(m);
}

enum { ALTER_DIGEST_ONLY, ALTER_DIGEST_RECHAIN, ALTER_TENSOR, ALTER_EVERY_TENSOR };
static char altered_tensor[64];
/* When set, ALTER_TENSOR also renames the altered tensor, and the header's
 * experiment is replaced (both names are someone else's text). */
static const char *altered_name, *header_experiment;

/* Rewrites the bundle's trace, at step `step` (0: none): ALTER_DIGEST_ONLY
 * changes one hex digit of the step digest and nothing else;
 * ALTER_DIGEST_RECHAIN also rebuilds the chain from there on;
 * ALTER_TENSOR changes one tensor digest and rebuilds the step digest and
 * the chain (a consistent forgery: the trace reads as valid);
 * ALTER_EVERY_TENSOR does that to every tensor of every step, each digest
 * replaced by a random one (step is ignored). The header's
 * env_class is replaced when env_class is not NULL. Returns the final
 * chain in hex (static). */
static const char *rewrite_trace(const char *bundle, long step, int mode, const char *env_class)
{
    static char final_hex[65];
    char p[1200];
    snprintf(p, sizeof p, "%s/trace.jsonl", bundle);
    char *text = slurp(p);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    repro_digest chain = {{0}};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        ck_assert_ptr_nonnull(o);
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!strcmp(type, "header") && env_class)
            json_object_set_new(o, "env_class", json_string(env_class));
        if (!strcmp(type, "header") && header_experiment)
            json_object_set_new(o, "experiment", json_string(header_experiment));
        if (!strcmp(type, "step")) {
            long n = (long)json_integer_value(json_object_get(o, "step"));
            char hex[65];
            snprintf(hex, sizeof hex, "%s", json_string_value(json_object_get(o, "step_digest")));
            int every = mode == ALTER_EVERY_TENSOR;
            if ((n == step && mode == ALTER_TENSOR) || every) {
                /* One tensor digest changed, and the step digest (SHA-256
                 * over the tensor digests in list order) recomputed. */
                json_t *ts = json_object_get(o, "tensors");
                size_t nt = json_array_size(ts);
                ck_assert_uint_gt(nt, every ? 0 : 6);
                repro_digest *d = calloc(nt, sizeof *d);
                for (size_t i = 0; i < nt; i++) {
                    json_t *t = json_array_get(ts, i);
                    char th[65];
                    snprintf(th, sizeof th, "%s",
                             json_string_value(json_object_get(t, "digest")));
                    if (every) {
                        for (int k = 0; k < 64; k++)
                            th[k] = "0123456789abcdef"[rand() & 15];
                        json_object_set_new(t, "digest", json_string(th));
                    } else if (i == 6) {
                        th[0] = th[0] == '0' ? '1' : '0';
                        json_object_set_new(t, "digest", json_string(th));
                        if (altered_name)
                            json_object_set_new(t, "name", json_string(altered_name));
                        snprintf(altered_tensor, sizeof altered_tensor, "%s",
                                 json_string_value(json_object_get(t, "name")));
                    }
                    ck_assert_int_eq(repro_digest_from_hex(th, &d[i]), 0);
                }
                repro_digest sd;
                ck_assert_int_eq(repro_sha256_digests(d, nt, &sd), 0);
                free(d);
                repro_digest_hex(&sd, hex);
                json_object_set_new(o, "step_digest", json_string(hex));
            } else if (n == step) {
                hex[0] = hex[0] == '0' ? '1' : '0';
                json_object_set_new(o, "step_digest", json_string(hex));
            }
            if (mode != ALTER_DIGEST_ONLY) {
                repro_digest pair[2];
                pair[0] = chain;
                ck_assert_int_eq(repro_digest_from_hex(hex, &pair[1]), 0);
                ck_assert_int_eq(repro_sha256_digests(pair, 2, &chain), 0);
                repro_digest_hex(&chain, hex);
                json_object_set_new(o, "chain", json_string(hex));
            }
            snprintf(final_hex, sizeof final_hex, "%s",
                     json_string_value(json_object_get(o, "chain")));
        }
        if (!strcmp(type, "trailer"))
            json_object_set_new(o, "chain", json_string(final_hex));
        char *s = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", s);
        free(s);
        json_decref(o);
    }
    ck_assert_int_eq(fclose(f), 0);
    free(text);
    return final_hex;
}

/* The bundle's config replaced by `ini` (the manifest then unsigned) and
 * the claimed trace's header made to claim that config's numerics digest:
 * a submission that passes every check before the memory estimate, whose
 * trace no real run of that config made (it cannot matter: it must be
 * refused before anything runs). */
static void forge_config(const char *bundle, const char *ini)
{
    char p[600];
    snprintf(p, sizeof p, "%s/forged.ini", dir);
    spit(p, ini);
    repro_config cfg;
    ck_assert_msg(repro_config_load(&cfg, p) == 0, "%s", repro_error_message());
    repro_digest all, num;
    ck_assert_int_eq(repro_config_digests(&cfg, &all, &num), 0);
    char hx[65];
    repro_digest_hex(&num, hx);

    snprintf(p, sizeof p, "%s/trace.jsonl", bundle);
    char *text = slurp(p), *nl = strchr(text, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    json_t *h = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(h);
    json_object_set_new(h, "numerics_digest", json_string(hx));
    char *hs = json_dumps(h, JSON_COMPACT);
    size_t len = strlen(hs) + strlen(nl + 1) + 2;
    char *t = malloc(len);
    snprintf(t, len, "%s\n%s", hs, nl + 1);
    spit(p, t);
    free(t);
    free(hs);
    json_decref(h);
    free(text);

    snprintf(p, sizeof p, "%s/manifest.json", bundle);
    json_t *m = load_json(p);
    json_object_del(m, "signature");
    json_object_set_new(m, "config", json_string(ini));
    ck_assert_int_eq(json_dump_file(m, p, JSON_INDENT(2)), 0);
    json_decref(m);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_genuine_submission_verifies)
{
    setup();
    ck_assert_msg(repro("verify %s/b --key %s/host.pem -o %s/r.json", dir, dir, dir) == 0,
                  "%s%s", out, err);
    ck_assert_ptr_nonnull(strstr(out, ": reproduced"));
    ck_assert_msg(strstr(out, "comparison: bitwise (the host's policy (--policy bitwise); the "
                              "submitter's claimed class is this host's)") != NULL, "%s", out);
    ck_assert_int_eq(repro("verify-receipt %s/r.json --pub %s/host.pem.pub", dir, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "verdict: reproduced"));

    char p[600];
    snprintf(p, sizeof p, "%s/r.json", dir);
    json_t *r = load_json(p);
    ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")), "reproduced");
    ck_assert_str_eq(json_string_value(json_object_get(r, "comparison")), "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(r, "digests")), "identical");
    json_t *sub = json_object_get(r, "submitter"), *host = json_object_get(r, "host");
    ck_assert_str_eq(json_string_value(json_object_get(sub, "chain")),
                     json_string_value(json_object_get(host, "chain")));
    ck_assert(json_is_object(json_object_get(sub, "env")));
    ck_assert(json_is_object(json_object_get(host, "env")));
    json_t *b = json_object_get(r, "bundle");
    ck_assert_str_eq(json_string_value(json_object_get(b, "submitter_signature")), "valid");
    ck_assert_int_eq(strlen(json_string_value(json_object_get(b, "manifest_sha256"))), 64);
    ck_assert(json_is_true(json_object_get(r, "ran")));
    json_decref(r);

    /* A signed manifest edited afterwards is an invalid submission. */
    snprintf(p, sizeof p, "%s/b/manifest.json", dir);
    char *m = slurp(p);
    char *at = strstr(m, "\"steps\": 6");
    ck_assert_ptr_nonnull(at);
    at[9] = '5';
    spit(p, m);
    free(m);
    ck_assert_int_eq(repro("verify %s/b", dir), 2);
    ck_assert_ptr_nonnull(strstr(out, "invalid submission"));
    ck_assert_ptr_nonnull(strstr(err, "signature does not verify"));
}
END_TEST

START_TEST(test_altered_step_digest_is_rejected_naming_the_step)
{
    setup();
    char b[600], p[600];
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(p, sizeof p, "%s/b.orig", dir);
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s", dir, p), 0);

    /* Step 3's digest altered, chain rebuilt: the claimed trace no longer
     * hashes up (its step digest is not that of its tensors). */
    const char *chain = rewrite_trace(b, 3, ALTER_DIGEST_RECHAIN, NULL);
    rewrite_manifest(b, chain, NULL);
    ck_assert_int_eq(repro("verify %s", b), 2);
    ck_assert_ptr_nonnull(strstr(out, "invalid submission"));
    ck_assert_msg(strstr(out, "step 3: \"step_digest\" is not the SHA-256") != NULL, "%s", out);

    /* Step 3's digest altered and nothing else: its chain link breaks. */
    snprintf(b, sizeof b, "%s/b.orig", dir);
    rewrite_trace(b, 3, ALTER_DIGEST_ONLY, NULL);
    ck_assert_int_eq(repro("verify %s", b), 2);
    ck_assert_msg(strstr(out, "step 3") != NULL, "%s", out);

    /* A consistent forgery (one tensor digest of step 3, its step digest
     * and the chain all rebuilt) reads as valid: the re-run exposes it. */
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b.forged", dir, dir), 0);
    snprintf(b, sizeof b, "%s/b.forged", dir);
    chain = rewrite_trace(b, 3, ALTER_TENSOR, NULL);
    rewrite_manifest(b, chain, NULL);
    ck_assert_int_eq(repro("verify %s --key %s/host.pem -o %s/r.json", b, dir, dir), 1);
    ck_assert_ptr_nonnull(strstr(out, ": diverged at step 3"));
    char want[200];
    snprintf(want, sizeof want, "step 3: the step digests differ; first differing tensor %s",
             altered_tensor);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    snprintf(p, sizeof p, "%s/r.json", dir);
    json_t *r = load_json(p);
    ck_assert_str_eq(json_string_value(json_object_get(r, "verdict")), "diverged");
    ck_assert_int_eq(json_integer_value(json_object_get(r, "step")), 3);
    json_decref(r);
    ck_assert_int_eq(repro("verify-receipt %s/r.json --pub %s/host.pem.pub", dir, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "verdict: diverged at step 3"));
}
END_TEST

START_TEST(test_trace_from_another_seed_is_rejected)
{
    setup();
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b7 --seed 7", dir, dir), 0);
    char src[600], dst[600], p[600];
    snprintf(src, sizeof src, "%s/b7/trace.jsonl", dir);
    snprintf(dst, sizeof dst, "%s/b/trace.jsonl", dir);
    char *t7 = slurp(src), *t0 = slurp(dst);

    /* The seed-7 trace under the seed-0 manifest (chain updated). */
    spit(dst, t7);
    snprintf(p, sizeof p, "%s/b7/manifest.json", dir);
    json_t *m7 = load_json(p);
    char chain7[65];
    snprintf(chain7, sizeof chain7, "%s", json_string_value(json_object_get(m7, "chain")));
    json_decref(m7);
    snprintf(p, sizeof p, "%s/b", dir);
    rewrite_manifest(p, chain7, NULL);
    ck_assert_int_eq(repro("verify %s/b", dir), 2);
    ck_assert_msg(strstr(out, "claimed trace was made with seed 7, the manifest says 0") != NULL,
                  "%s", out);

    /* The same steps behind the seed-0 header: reads as a seed-0 trace, but
     * the re-run parts from it at step 1. */
    char *nl0 = strchr(t0, '\n'), *nl7 = strchr(t7, '\n');
    *nl0 = '\0';
    size_t len = strlen(t0) + strlen(nl7) + 2;
    char *mixed = malloc(len);
    snprintf(mixed, len, "%s%s", t0, nl7);
    spit(dst, mixed);
    ck_assert_int_eq(repro("verify %s/b", dir), 1);
    ck_assert_msg(strstr(out, ": diverged at step 1") != NULL, "%s", out);
    free(mixed);
    free(t0);
    free(t7);
}
END_TEST

START_TEST(test_edited_or_forged_receipt_fails)
{
    setup();
    char r[600], p[600];
    snprintf(r, sizeof r, "%s/r.json", dir);
    ck_assert_int_eq(repro("verify %s/b --key %s/host.pem -o %s", dir, dir, r), 0);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 0);
    char *orig = slurp(r);

    /* The verdict edited. */
    char *s = strdup(orig), *at = strstr(s, "\"steps\": 6");
    ck_assert_ptr_nonnull(at);
    at[9] = '9';
    spit(r, s);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 1);
    ck_assert_ptr_nonnull(strstr(err, "signature does not verify"));
    free(s);

    /* Only whitespace changed: the signature would still match, the form not. */
    s = malloc(strlen(orig) + 2);
    sprintf(s, "%s ", orig);
    spit(r, s);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 1);
    ck_assert_ptr_nonnull(strstr(err, "was edited"));
    free(s);

    /* Signed by another key (the submitter's), checked against the host's. */
    snprintf(p, sizeof p, "%s/forged.json", dir);
    ck_assert_int_eq(repro("verify %s/b --key %s/sub.pem -o %s", dir, dir, p), 0);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", p, dir), 1);
    ck_assert_ptr_nonnull(strstr(err, "signed by a different key"));

    /* ... and with the host's key id and public key pasted in. */
    json_t *g = load_json(p), *h = json_loads(orig, 0, NULL);
    json_t *gs = json_object_get(g, "signature"), *hs = json_object_get(h, "signature");
    json_object_set(gs, "key_id", json_object_get(hs, "key_id"));
    json_object_set(gs, "public_key", json_object_get(hs, "public_key"));
    char *text = json_dumps(g, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    s = malloc(strlen(text) + 2);
    sprintf(s, "%s\n", text);
    spit(p, s);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", p, dir), 1);
    ck_assert_ptr_nonnull(strstr(err, "signature does not verify"));
    free(s);
    free(text);
    json_decref(g);
    json_decref(h);

    /* Unsigned, and malformed. */
    ck_assert_int_eq(repro("verify %s/b -o %s", dir, p), 0);
    ck_assert_ptr_nonnull(strstr(err, "not signed"));
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", p, dir), 1);
    ck_assert_ptr_nonnull(strstr(err, "not signed"));
    spit(p, "{\"repro_receipt\": 1, \"verdict\": ");
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", p, dir), 2);
    ck_assert_ptr_nonnull(strstr(err, "not valid JSON"));
    free(orig);
}
END_TEST

START_TEST(test_over_step_limit_is_refused_before_training)
{
    setup();
    char r[600];
    snprintf(r, sizeof r, "%s/r.json", dir);
    ck_assert_int_eq(repro("verify %s/b --max-steps 5 --key %s/host.pem -o %s", dir, dir, r), 1);
    ck_assert_ptr_nonnull(strstr(out, ": exceeded limits"));
    ck_assert_ptr_nonnull(strstr(out, "refused before training"));
    json_t *j = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "exceeded limits");
    ck_assert(json_is_false(json_object_get(j, "ran")));
    ck_assert(json_is_null(json_object_get(json_object_get(j, "host"), "chain")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "limits"), "max_steps")),
                     5);
    json_decref(j);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 0);

    /* The wall-clock limit: the re-run is killed, the verdict the same. */
    ck_assert_int_eq(repro("verify %s/b --max-seconds 0.001", dir), 1);
    ck_assert_ptr_nonnull(strstr(out, ": exceeded limits"));
    ck_assert_ptr_nonnull(strstr(out, "stopped after"));
}
END_TEST

/* A submission whose config asks for more memory than the host allows is
 * refused from its config alone — "exceeded limits", a signed receipt that
 * says why — before anything is allocated for it: the verification is
 * fast and no process of it grows. (Before --max-memory the host re-ran
 * whatever the config asked for: hidden = 65536,65536 is 48 GiB of
 * parameters, gradients and momentum.) */
static const char big_mlp[] = "[model]\ntype = mlp\nhidden = 4096,4096\n\n"
                              "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
                              "[train]\nsteps = 6\n";
static const char huge_mlp[] = "[model]\ntype = mlp\nhidden = 65536,65536\n\n"
                               "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
                               "[train]\nsteps = 6\n";
/* 4096 loader slots of 65536 samples: 840 GB of batches. */
static const char huge_loader[] = "[model]\ntype = mlp\nhidden = 16\n\n"
                                  "[data]\ndataset = synthetic\ntrain_size = 65536\ntest_size = 64\n"
                                  "num_workers = 64\nprefetch = 64\n\n"
                                  "[train]\nsteps = 6\nbatch_size = 65536\n";

START_TEST(test_over_memory_limit_is_refused_before_training)
{
    setup();
    char b[600], r[600];
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(r, sizeof r, "%s/r.json", dir);
    forge_config(b, big_mlp); /* ~250 MiB: over 64M */
    double t0 = now_s();
    ck_assert_msg(repro("verify %s --max-memory 64M --key %s/host.pem -o %s", b, dir, r) == 1,
                  "%s%s", out, err);
    ck_assert_ptr_nonnull(strstr(out, ": exceeded limits"));
    ck_assert_msg(strstr(out, "this host's limit is 64.0 MiB (--max-memory): refused before "
                              "training") != NULL, "%s", out);
    json_t *j = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "exceeded limits");
    ck_assert(json_is_false(json_object_get(j, "ran")));
    json_t *lim = json_object_get(j, "limits");
    ck_assert_int_eq(json_integer_value(json_object_get(lim, "max_memory_bytes")), 64 << 20);
    json_int_t est = json_integer_value(json_object_get(json_object_get(j, "memory_estimate"),
                                                        "total"));
    ck_assert_int_gt(est, 200 << 20);
    json_decref(j);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "verdict: exceeded limits"));

    /* Under the default limit (4G): 48 GiB of model, and a loader of 840 GB. */
    const char *const huge[] = {huge_mlp, huge_loader};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/h%d", dir, dir, i), 0);
        snprintf(b, sizeof b, "%s/h%d", dir, i);
        forge_config(b, huge[i]);
        ck_assert_msg(repro("verify %s --key %s/host.pem -o %s", b, dir, r) == 1, "%s%s", out,
                      err);
        ck_assert_ptr_nonnull(strstr(out, ": exceeded limits"));
        ck_assert_ptr_nonnull(strstr(out, "limit is 4096.0 MiB (--max-memory)"));
        ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 0);
    }
    /* Nothing ran: seconds, not minutes, and no process of this test
     * (submits, verifies) ever held more than a few tens of MiB. */
    ck_assert_double_lt(now_s() - t0, 20);
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
#if defined(__SANITIZE_ADDRESS__)
    const long peak_kib = 1024 * 1024; /* ASan's shadow memory and quarantine inflate RSS */
#else
    const long peak_kib = 200 * 1024;
#endif
    ck_assert_msg(ru.ru_maxrss < peak_kib, "a child's peak RSS: %ld KiB", ru.ru_maxrss);

    /* The size syntax. */
    ck_assert_int_eq(repro("verify %s --max-memory 2X", b), 2);
    ck_assert_ptr_nonnull(strstr(err, "--max-memory 2X: expected a size such as 512M or 4G"));
    ck_assert_int_eq(repro("verify %s --max-memory 1K", b), 2);
    /* --opt=VALUE is the same option (one parser for every command). */
    ck_assert_int_eq(repro("verify %s --max-memory=1G", b), 1);
    ck_assert_ptr_nonnull(strstr(out, "limit is 1024.0 MiB (--max-memory)"));
}
END_TEST

/* --max-memory counts what the verifier itself holds (its peak resident
 * memory, the claimed trace streamed through) with the workload's
 * estimate: a limit the estimate alone fits under but the two together do
 * not is refused naming both; a limit over the two passes (the control). */
START_TEST(test_max_memory_counts_the_verifier)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("verify",
            "an ASan build: ASan's shadow memory makes resident memory no measure of this");
    return;
#endif
    setup();
    char b[600], r[600];
    snprintf(b, sizeof b, "%s/vb", dir);
    snprintf(r, sizeof r, "%s/vr.json", dir);
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s", dir, b), 0);
    ck_assert_msg(repro("verify %s --key %s/host.pem -o %s", b, dir, r) == 0, "%s%s", out, err);
    ck_assert_msg(strstr(out, " MiB the verifier holds; limit 4096.0 MiB"), "%s", out);
    json_t *j = load_json(r);
    json_t *mem = json_object_get(j, "memory_estimate");
    json_int_t total = json_integer_value(json_object_get(mem, "total"));
    json_int_t held = json_integer_value(json_object_get(mem, "verifier"));
    json_decref(j);
    ck_assert_msg(held > (4 << 20), "the verifier holds %lld bytes", (long long)held);
    long mib_between = (long)((total + held / 2) >> 20);
    ck_assert_int_gt((json_int_t)mib_between << 20, total); /* the estimate alone fits */
    ck_assert_int_eq(repro("verify %s --max-memory %ldM --key %s/host.pem -o %s", b,
                           mib_between, dir, r), 1);
    ck_assert_msg(strstr(out, ": exceeded limits") &&
                      strstr(out, "MiB and the verifier itself holds ") &&
                      strstr(out, "refused before training"),
                  "%s", out);
    j = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "exceeded limits");
    ck_assert(json_is_false(json_object_get(j, "ran")));
    json_decref(j);
    long mib_over = (long)((total + held) >> 20) + 16;
    ck_assert_msg(repro("verify %s --max-memory %ldM --key %s/host.pem -o %s", b, mib_over, dir,
                        r) == 0,
                  "%s%s", out, err);
}
END_TEST

/* The estimate is not trusted alone: the re-run's address space is limited
 * too, so a workload that takes more than estimated (here: a limit the
 * caller set far below what the loader allocates) runs out of memory in
 * its own process — "exceeded limits", not a host brought down. */
START_TEST(test_address_space_limit_backs_the_estimate)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("verify", "an ASan build: ASan cannot start under an address-space limit (verify.h)");
    return;
#endif
    setup();
    /* 1024 loader slots of 64 samples: ~200 MiB of batches, in 16 threads. */
    char p[600], b[600];
    snprintf(p, sizeof p, "%s/slots.ini", dir);
    spit(p, "[model]\ntype = mlp\nhidden = 16\n\n[data]\ndataset = synthetic\n"
            "train_size = 256\ntest_size = 64\nnum_workers = 16\nprefetch = 64\n\n"
            "[train]\nsteps = 6\n");
    snprintf(b, sizeof b, "%s/slots", dir);
    ck_assert_msg(repro("submit %s -o %s", p, b) == 0, "%s", err);
    const char *bin = getenv("REPRO_BIN");
    repro_verify_opts o;
    repro_verify_opts_init(&o);
    ck_assert_uint_eq(o.max_memory, 4ull << 30);
    o.bundle_dir = b;
    o.repro_bin = bin ? bin : "./build/repro";
    repro_verify_result r;
    ck_assert_msg(repro_verify(&o, &r) == 0, "%s", repro_error_message());
    ck_assert_int_eq(r.verdict, REPRO_VERDICT_REPRODUCED);
    ck_assert(r.memory_estimated);
    ck_assert_uint_gt(r.memory.loader, 190u << 20);
    ck_assert_uint_gt(r.as_bytes, o.max_memory); /* derived: the limit plus headroom */
    repro_verify_result_release(&r);

    o.limits.as_bytes = 160u << 20;
    ck_assert_msg(repro_verify(&o, &r) == 0, "%s", repro_error_message());
    ck_assert_int_eq(r.verdict, REPRO_VERDICT_EXCEEDED);
    ck_assert(r.ran && !r.have_host_chain);
    const char *why = json_string_value(json_array_get(r.reasons, 0));
    ck_assert_msg(strstr(why, "the re-run ran out of memory in the 160.0 MiB of address space") != NULL,
                  "%s", why);
    repro_verify_result_release(&r);
}
END_TEST

/* Strings from a bundle reach the host's terminal escaped: a claimed
 * trace's tensor names and experiment, quoted in the verdict's reasons
 * and in `repro diff`, could otherwise clear the screen and print a fake
 * "reproduced" over the real verdict. */
static void assert_no_escape(void)
{
    ck_assert_msg(!strchr(out, 0x1b), "ESC on stdout: %s", out);
    ck_assert_msg(!strchr(err, 0x1b), "ESC on stderr: %s", err);
}

START_TEST(test_bundle_strings_are_escaped)
{
    static const char fake[] = "\x1b[2J\x1b[1;1Hreproduced";
    static const char shown[] = "\\x1b[2J\\x1b[1;1Hreproduced";
    setup();
    char b[600], p[600];
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b.forged", dir, dir), 0);
    snprintf(b, sizeof b, "%s/b.forged", dir);
    altered_name = fake;
    const char *chain = rewrite_trace(b, 3, ALTER_TENSOR, NULL);
    altered_name = NULL;
    rewrite_manifest(b, chain, NULL);
    ck_assert_int_eq(repro("verify %s", b), 1);
    assert_no_escape();
    ck_assert_ptr_nonnull(strstr(out, ": diverged at step 3"));
    ck_assert_msg(strstr(out, shown) != NULL, "%s", out);

    snprintf(p, sizeof p, "%s/b/trace.jsonl", dir);
    ck_assert_int_eq(repro("diff %s %s/trace.jsonl", p, b), 1);
    assert_no_escape();
    ck_assert_msg(strstr(out, shown) != NULL, "%s", out);
    ck_assert_int_eq(repro("diff %s/trace.jsonl %s/trace.jsonl", b, b), 0);
    assert_no_escape();

    /* The claimed trace's experiment, quoted by an invalid verdict. */
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b.exp", dir, dir), 0);
    snprintf(b, sizeof b, "%s/b.exp", dir);
    header_experiment = fake;
    rewrite_trace(b, 0, ALTER_DIGEST_ONLY, NULL);
    header_experiment = NULL;
    rewrite_manifest(b, NULL, NULL);
    ck_assert_int_eq(repro("verify %s", b), 2);
    assert_no_escape();
    ck_assert_msg(strstr(out, "claimed trace is of experiment '\\x1b[2J") != NULL, "%s", out);
    ck_assert_msg(strstr(err, "claimed trace is of experiment '\\x1b[2J") != NULL, "%s", err);
    ck_assert_int_eq(repro("diff %s/trace.jsonl %s/trace.jsonl", b, b), 0);
    assert_no_escape();
    ck_assert_msg(strstr(out, shown) != NULL, "%s", out);
}
END_TEST

/* The claimed environment class is the submitter's word: it is reported,
 * and the host's policy decides the comparison whatever it says. */
START_TEST(test_other_environment_class_is_informational)
{
    setup();
    char b[600];
    snprintf(b, sizeof b, "%s/b", dir);
    /* The same bits, claimed from another class. */
    rewrite_trace(b, 0, ALTER_DIGEST_ONLY, "cpu-aarch64-000000000000");
    rewrite_manifest(b, NULL, "cpu-aarch64-000000000000");
    ck_assert_int_eq(repro("verify %s", b), 0);
    ck_assert_msg(strstr(out, "comparison: bitwise (the host's policy (--policy bitwise); the "
                              "submitter's claimed class differs from this host's "
                              "(informational))") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "submitter class cpu-aarch64-000000000000 (claimed)"));
    ck_assert_int_eq(repro("verify %s --policy ulp:0", b), 0);
    ck_assert_ptr_nonnull(strstr(out, "comparison: ulp:0 (the host's policy (--policy ulp:0)"));
    ck_assert_msg(strstr(out, ": reproduced\n") != NULL, "%s", out); /* the digests are equal */
    ck_assert_int_eq(repro("verify %s --policy fuzzy", b), 2);
    ck_assert_ptr_nonnull(strstr(err, "expected bitwise, ulp:N or rtol:X"));
}
END_TEST

/* Between detail steps a version 2 trace keeps the loss, and a tolerance
 * policy compares it there too: a claimed loss 1,000 ULPs off at a step
 * without tensor detail diverges under ulp:0, at that step. */
START_TEST(test_loss_between_detail_steps_is_compared)
{
    setup();
    char b[600], p[700];
    snprintf(b, sizeof b, "%s/b3", dir);
    ck_assert_msg(repro("submit %s/tiny.ini -o %s --set trace.every=3", dir, b) == 0, "%s", err);
    ck_assert_int_eq(repro("verify %s --policy ulp:0", b), 0); /* the control */
    snprintf(p, sizeof p, "%s/trace.jsonl", b);
    char *text = slurp(p);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_ptr_nonnull(o);
        if (json_integer_value(json_object_get(o, "step")) == 2) {
            ck_assert_ptr_null(json_object_get(o, "tensors")); /* not a detail step */
            unsigned bits;
            ck_assert_int_eq(sscanf(json_string_value(json_object_get(o, "loss")), "0x%x", &bits),
                             1);
            char hex[16];
            snprintf(hex, sizeof hex, "0x%08x", bits + 1000);
            json_object_set_new(o, "loss", json_string(hex));
        }
        char *line_out = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", line_out);
        free(line_out);
        json_decref(o);
    }
    ck_assert_int_eq(fclose(f), 0);
    free(text);
    rewrite_manifest(b, NULL, NULL);
    ck_assert_int_eq(repro("verify %s --policy ulp:0", b), 1);
    ck_assert_msg(strstr(out, "step 2: loss 0x") != NULL && strstr(out, "1000 ulps apart"), "%s",
                  out);

    /* At trace level step the loss is all there is: enough for ulp:N. */
    snprintf(b, sizeof b, "%s/b4", dir);
    ck_assert_msg(repro("submit %s/tiny.ini -o %s --set trace.level=step", dir, b) == 0, "%s",
                  err);
    ck_assert_int_eq(repro("verify %s --policy ulp:0", b), 0);
    ck_assert_msg(strstr(out, "all 6 steps with stats agree within ulp:0") != NULL, "%s", out);
}
END_TEST

/* The class-downgrade attack (issue 33, item 1): an unsigned bundle that
 * claims another environment class, with every tensor digest replaced by a
 * random one and the step digests and chain recomputed — a trace whose
 * stats are right and whose bits are not. It was "reproduced" (the policy
 * fell back to rtol:1e-4, which ignores digests, because the class the
 * submitter wrote differed from the host's). Under the default policy it
 * is rejected; under a tolerance the host asked for, it is "reproduced"
 * only with "(digests differ)" in the verdict and the receipt. */
START_TEST(test_class_downgrade_is_rejected_by_default)
{
    setup();
    char b[600], r[600];
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(r, sizeof r, "%s/r.json", dir);
    srand(33);
    const char *chain = rewrite_trace(b, 0, ALTER_EVERY_TENSOR, "cpu-x86_64-aaaaaaaaaaaa");
    rewrite_manifest(b, chain, "cpu-x86_64-aaaaaaaaaaaa");
    ck_assert_msg(repro("verify %s --key %s/host.pem -o %s", b, dir, r) == 1, "%s%s", out, err);
    ck_assert_msg(strstr(out, ": diverged at step 1") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "comparison: bitwise (the host's policy"));
    json_t *j = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "diverged");
    ck_assert_str_eq(json_string_value(json_object_get(j, "comparison")), "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "policy"), "requested")),
                     "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(j, "digests")), "differ");
    json_decref(j);

    /* The host asks for a tolerance: the stats agree, the digests do not,
     * and the verdict, its text and the receipt all say so. */
    ck_assert_msg(repro("verify %s --policy rtol:1e-4 --key %s/host.pem -o %s", b, dir, r) == 0,
                  "%s%s", out, err);
    ck_assert_msg(strstr(out, ": reproduced within rtol:1e-4 (digests differ)\n") != NULL, "%s",
                  out);
    ck_assert_ptr_nonnull(strstr(out, "but the digests differ"));
    j = load_json(r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "reproduced");
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict_text")),
                     "reproduced within rtol:1e-4 (digests differ)");
    ck_assert_str_eq(json_string_value(json_object_get(j, "digests")), "differ");
    json_decref(j);
    ck_assert_int_eq(repro("verify-receipt %s --pub %s/host.pem.pub", r, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "verdict: reproduced within rtol:1e-4 (digests differ)"));
}
END_TEST

/* `repro submit`: a failing child run's exit status says whose fault it
 * was — 2 the experiment's, 3 the environment's (it was reported as 2: the
 * exit code was stored as an error code); a seed is decimal ("010" is 10). */
START_TEST(test_submit_child_failures_and_seeds)
{
    setup();
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b10 --seed 010", dir, dir), 0);
    ck_assert_ptr_nonnull(strstr(out, "seed 10, 6 steps"));
    char p[600];
    snprintf(p, sizeof p, "%s/b3", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/b3/trace.jsonl", dir); /* the run cannot write its trace */
    ck_assert_int_eq(mkdir(p, 0755), 0);
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b3", dir, dir), 3);
    ck_assert_ptr_nonnull(strstr(err, "failed (exit 3)"));
    ck_assert_int_eq(repro("submit %s/tiny.ini -o %s/b4 --set nosuch=1", dir, dir), 2);
}
END_TEST

/* The library under `repro verify` (verify/verify.h): a verdict is a
 * result, not an error; only a host-side failure is -1. */
START_TEST(test_library_returns_verdicts)
{
    setup();
    char b[600];
    snprintf(b, sizeof b, "%s/b", dir);
    const char *bin = getenv("REPRO_BIN");
    repro_verify_opts o;
    repro_verify_opts_init(&o);
    ck_assert_str_eq(o.policy.text, "bitwise"); /* the host's default */
    o.bundle_dir = b;
    o.repro_bin = bin ? bin : "./build/repro";
    repro_verify_result r;
    ck_assert_msg(repro_verify(&o, &r) == 0, "%s", repro_error_message());
    ck_assert_int_eq(r.verdict, REPRO_VERDICT_REPRODUCED);
    ck_assert(r.ran && r.bundle_ok && r.have_host_chain);
    ck_assert_str_eq(r.comparison, "bitwise");
    ck_assert(repro_digest_eq(&r.host_chain, &r.bundle.chain));
    json_t *doc = repro_verify_receipt(&o, &r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "verdict")), "reproduced");
    json_decref(doc);
    repro_verify_result_release(&r);

    o.max_steps = 5; /* refused before training: a verdict, not an error */
    ck_assert_int_eq(repro_verify(&o, &r), 0);
    ck_assert_int_eq(r.verdict, REPRO_VERDICT_EXCEEDED);
    ck_assert(!r.ran);
    repro_verify_result_release(&r);

    o.bundle_dir = "/nonexistent-bundle";
    ck_assert_int_eq(repro_verify(&o, &r), 0);
    ck_assert_int_eq(r.verdict, REPRO_VERDICT_INVALID);
    ck_assert(!r.bundle_ok);
    char text[96];
    repro_verify_verdict_text(&r, text, sizeof text);
    ck_assert_str_eq(text, "invalid submission");
    repro_verify_result_release(&r);

    /* Resource limits reach the re-run: in 8 MiB of address space repro
     * cannot even start, a failure of the host (-1, EIO), not a verdict,
     * in every build: the plain one's loader fails to map its libraries,
     * an ASan repro's image (~9 MiB) is refused by the kernel's exec
     * (SIGSEGV, which alone would read as the workload out of memory). */
    o.bundle_dir = b;
    o.max_steps = 100000;
    o.limits.as_bytes = 8u << 20;
    int rc = repro_verify(&o, &r);
    char said[96];
    repro_verify_verdict_text(&r, said, sizeof said);
    ck_assert_msg(rc == -1, "rc %d, verdict \"%s\"", rc, said);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    ck_assert_msg(strstr(repro_error_message(), "the re-run failed on this host: repro cannot "
                                                "start in the 8.0 MiB of address space"),
                  "%s", repro_error_message());
    repro_verify_result_release(&r);
}
END_TEST

START_TEST(test_policy_and_counts_are_strict)
{
    repro_verify_policy p;
    ck_assert_int_eq(repro_verify_policy_parse("ulp:10", &p), 0);
    ck_assert_int_eq(p.kind, REPRO_POLICY_ULP);
    ck_assert_int_eq(p.ulp, 10);
    ck_assert_int_eq(repro_verify_policy_parse("ulp:010", &p), 0);
    ck_assert_int_eq(p.ulp, 10);
    ck_assert_int_eq(repro_verify_policy_parse("ulp:0x10", &p), -1);
    ck_assert_int_eq(repro_verify_policy_parse("ulp:+5", &p), -1);
    ck_assert_int_eq(repro_verify_policy_parse("ulp:-1", &p), -1);
    ck_assert_int_eq(repro_verify_policy_parse("ulp:2147483648", &p), -1);
    ck_assert_int_eq(repro_verify_policy_parse("rtol:1e-4", &p), 0);
    ck_assert_int_eq(p.kind, REPRO_POLICY_RTOL);
    ck_assert_int_eq(repro("verify /nonexistent --max-steps 0x10"), 2);
    ck_assert_ptr_nonnull(strstr(err, "verify: --max-steps 0x10: expected a decimal count"));
    ck_assert_int_eq(repro("verify /nonexistent --max-steps -5"), 2);
}
END_TEST

Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("verify");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_genuine_submission_verifies);
    tcase_add_test(tc, test_altered_step_digest_is_rejected_naming_the_step);
    tcase_add_test(tc, test_trace_from_another_seed_is_rejected);
    tcase_add_test(tc, test_edited_or_forged_receipt_fails);
    tcase_add_test(tc, test_over_step_limit_is_refused_before_training);
    tcase_add_test(tc, test_over_memory_limit_is_refused_before_training);
    tcase_add_test(tc, test_max_memory_counts_the_verifier);
    tcase_add_test(tc, test_address_space_limit_backs_the_estimate);
    tcase_add_test(tc, test_bundle_strings_are_escaped);
    tcase_add_test(tc, test_other_environment_class_is_informational);
    tcase_add_test(tc, test_class_downgrade_is_rejected_by_default);
    tcase_add_test(tc, test_library_returns_verdicts);
    tcase_add_test(tc, test_submit_child_failures_and_seeds);
    tcase_add_test(tc, test_policy_and_counts_are_strict);
    tcase_add_test(tc, test_loss_between_detail_steps_is_compared);
    suite_add_tcase(s, tc);
    return s;
}
