/* `repro verify BUNDLE`: parse the options, run the verification
 * (verify/verify.h: the order of work, the verdicts, the receipt's fields),
 * write the receipt signed with the host's key, and report; `repro
 * verify-receipt` checks one; `repro keygen` makes an Ed25519 key pair for
 * either side.
 *
 * Verdicts and exit codes: reproduced 0; diverged (at step N) 1; exceeded
 * limits 1 (not reproduced: the host did not accept the work); invalid
 * submission 2; a host-side environment failure 3, with no receipt (it is
 * not a verdict on the submission). Usage errors exit 2 with no receipt. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/numparse.h"
#include "verify/receipt.h"
#include "verify/sign.h"
#include "verify/verify.h"

const char repro_verify_usage[] =
    "usage: repro verify BUNDLE [options]\n"
    "\n"
    "Checks a submission bundle (`repro submit`): validates its manifest\n"
    "strictly, refuses it when it exceeds the host's limits, re-runs the\n"
    "experiment in a fresh process and compares the re-run with the claimed\n"
    "trace under this host's policy — never one the bundle chooses: the\n"
    "submitter's environment class is reported, not trusted — and writes a\n"
    "receipt signed with the host's key.\n"
    "\n"
    "  --policy P        how to compare: bitwise (chain digests; the default),\n"
    "                    ulp:N (float32 loss within N ulps), or rtol:X (loss,\n"
    "                    and every tensor's L2 norm and sum, within relative\n"
    "                    error X); a tolerance verdict whose digests differ says\n"
    "                    \"reproduced within P (digests differ)\"\n"
    "  --max-steps N     refuse submissions of more than N steps (default 100000)\n"
    "  --max-seconds S   kill the re-run after S seconds (default 3600; 0 = none)\n"
    "  --max-memory SIZE refuse a submission whose memory, estimated from its\n"
    "                    config before anything runs, is over SIZE (bytes, or\n"
    "                    with K, M, G, T: 512M, 2G; default 4G), and limit the\n"
    "                    re-run's address space to SIZE plus headroom\n"
    "  --key FILE        the host's Ed25519 private key (PEM): signs the receipt\n"
    "  -o, --output FILE write the receipt there (unsigned without --key)\n"
    "  --json            print the receipt on stdout instead of the summary\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit: 0 reproduced, 1 diverged or exceeded limits, 2 invalid submission or\n"
    "usage, 3 environment problem on the host.\n";

const char repro_verify_receipt_usage[] =
    "usage: repro verify-receipt RECEIPT --pub HOST.pub\n"
    "\n"
    "Checks a receipt written by `repro verify`: it must be exactly as repro\n"
    "wrote it and signed by the key whose public half is HOST.pub. Any edit,\n"
    "even of whitespace, makes it fail. Prints the verdict it certifies.\n"
    "\n"
    "Exit: 0 valid, 1 invalid (edited, forged, another key, unsigned),\n"
    "2 malformed receipt or unreadable key.\n";

const char repro_keygen_usage[] =
    "usage: repro keygen -o KEY.pem\n"
    "\n"
    "Makes an Ed25519 key pair: the private key KEY.pem (mode 0600, never\n"
    "overwritten) and the public key KEY.pem.pub. Submitters sign bundles and\n"
    "hosts sign receipts with the private key; others check with the .pub.\n"
    "\n"
    "Exit: 0 ok, 2 usage or the file exists, 3 environment.\n";

typedef struct {
    repro_verify_opts v;
    const char *key_path, *out_path;
    int json;
} verify_cli;

/* One option with its value; 0 or -1 (error slot). */
static int parse_option(verify_cli *o, const char *a, const char *v)
{
    char *end;
    if (!strcmp(a, "--policy"))
        return repro_verify_policy_parse(v, &o->v.policy);
    if (!strcmp(a, "--max-steps"))
        return repro_parse_count("verify: --max-steps", v, 1, LONG_MAX,
                                 &o->v.max_steps);
    if (!strcmp(a, "--max-seconds")) {
        o->v.max_seconds = strtod(v, &end);
        if (end == v || *end || !isfinite(o->v.max_seconds) || o->v.max_seconds < 0 ||
            o->v.max_seconds > 1e7)
            return repro_error_set(REPRO_EINVAL, "verify: --max-seconds %s: expected seconds >= 0",
                                   v);
        return 0;
    }
    if (!strcmp(a, "--max-memory"))
        return repro_parse_size("verify: --max-memory", v, 1 << 20, &o->v.max_memory);
    if (!strcmp(a, "--key"))
        o->key_path = v;
    else
        o->out_path = v;
    return 0;
}

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_args(int argc, char **argv, verify_cli *o)
{
    repro_verify_opts_init(&o->v);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_verify_usage, stdout);
            return 1;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (a[0] == '-' && a[1]) {
            int known = !strcmp(a, "--policy") || !strcmp(a, "--max-steps") ||
                        !strcmp(a, "--max-seconds") || !strcmp(a, "--max-memory") ||
                        !strcmp(a, "--key") || !strcmp(a, "-o") ||
                        !strcmp(a, "--output");
            if (!known)
                return repro_error_set(REPRO_EINVAL,
                                       "verify: unknown option '%s' (see `repro help verify`)", a);
            if (i + 1 >= argc)
                return repro_error_set(REPRO_EINVAL, "verify: option '%s' needs a value", a);
            if (parse_option(o, a, argv[++i]))
                return -1;
        } else if (o->v.bundle_dir) {
            return repro_error_set(REPRO_EINVAL, "verify: more than one bundle ('%s', '%s')",
                                   o->v.bundle_dir, a);
        } else {
            o->v.bundle_dir = a;
        }
    }
    if (!o->v.bundle_dir)
        return repro_error_set(REPRO_EINVAL, "verify: missing BUNDLE (see `repro help verify`)");
    return 0;
}

/* The human summary on stdout. Every string in it that came from the
 * bundle (names, classes, the reasons, which quote the claimed trace and
 * the config) is escaped: a stranger's ESC sequences could otherwise
 * print a fake verdict over the real one. */
static void print_summary(const verify_cli *o, const repro_verify_result *r, int signed_)
{
    char text[96], hx[65];
    const repro_bundle *b = &r->bundle;
    repro_verify_verdict_text(r, text, sizeof text);
    printf("repro verify %s: %s\n", repro_esc(o->v.bundle_dir), text);
    if (r->bundle_ok)
        printf("  %s, seed %s, %ld steps; submitter class %s (claimed), host class %s\n",
               repro_esc(b->experiment), repro_esc(b->seed), b->steps, repro_esc(b->env_class),
               repro_esc(r->host.class_id));
    printf("  comparison: %s (%s)\n", r->comparison[0] ? repro_esc(r->comparison) : "none",
           repro_esc(r->why));
    size_t i;
    json_t *v;
    json_array_foreach(r->reasons, i, v) printf("  reason: %s\n", repro_esc(json_string_value(v)));
    if (r->memory_estimated)
        printf("  memory: about %.1f MiB estimated, limit %.1f MiB (--max-memory)\n",
               (double)r->memory.total / (1024.0 * 1024.0),
               (double)o->v.max_memory / (1024.0 * 1024.0));
    if (r->bundle_ok)
        printf("  claimed chain %s\n", repro_esc(b->chain_hex));
    if (r->have_host_chain) {
        repro_digest_hex(&r->host_chain, hx);
        printf("  re-run  chain %s\n", hx);
    }
    if (o->out_path)
        printf("  receipt %s (%s)\n", repro_esc(o->out_path), signed_ ? "signed" : "NOT signed");
}

/* Writes the receipt where asked and reports it; 0 or -1 (error slot). */
static int report(const verify_cli *o, const repro_verify_result *r, EVP_PKEY *key)
{
    json_t *doc = repro_verify_receipt(&o->v, r);
    if (!doc)
        return repro_error_set(REPRO_EIO, "verify: cannot build the receipt");
    if (o->out_path && repro_receipt_write(o->out_path, doc, key)) {
        json_decref(doc);
        return -1;
    }
    if (o->out_path && !key)
        fprintf(stderr, "repro: warning: %s is not signed (no --key)\n", o->out_path);
    if (o->json) {
        char *t = repro_receipt_text(doc);
        if (t)
            fputs(t, stdout);
        free(t);
    } else {
        print_summary(o, r, key != NULL);
    }
    json_decref(doc);
    return 0;
}

static int exit_code_for(const repro_verify_result *r)
{
    if (r->verdict == REPRO_VERDICT_INVALID)
        fprintf(stderr, "repro: invalid submission: %s\n",
                repro_esc(json_string_value(json_array_get(r->reasons, 0))));
    return r->verdict == REPRO_VERDICT_REPRODUCED ? REPRO_EXIT_OK
           : r->verdict == REPRO_VERDICT_INVALID  ? REPRO_EXIT_USAGE
                                                  : REPRO_EXIT_MISMATCH;
}

int repro_cmd_verify(int argc, char **argv)
{
    verify_cli o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? repro_finish_stdout(0) : repro_report_error();
    EVP_PKEY *key = NULL;
    repro_verify_result *r = calloc(1, sizeof *r);
    if (!r) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    /* The host's own key first (then its environment, in repro_verify):
     * failures there are ours, not the submission's. */
    int exit_code;
    if ((o.key_path && repro_sign_load_private(&key, o.key_path)) || repro_verify(&o.v, r) ||
        report(&o, r, key))
        exit_code = repro_report_error();
    else
        exit_code = repro_finish_stdout(exit_code_for(r));
    repro_verify_result_release(r);
    free(r);
    EVP_PKEY_free(key);
    return exit_code;
}

int repro_cmd_verify_receipt(int argc, char **argv)
{
    const char *path = NULL, *pub = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_verify_receipt_usage, stdout);
            return repro_finish_stdout(0);
        } else if (!strcmp(a, "--pub")) {
            if (i + 1 >= argc) {
                repro_error_set(REPRO_EINVAL, "verify-receipt: --pub needs a file");
                return repro_report_error();
            }
            pub = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            repro_error_set(REPRO_EINVAL, "verify-receipt: unknown option '%s'", a);
            return repro_report_error();
        } else if (path) {
            repro_error_set(REPRO_EINVAL, "verify-receipt: more than one receipt");
            return repro_report_error();
        } else {
            path = a;
        }
    }
    if (!path || !pub) {
        repro_error_set(REPRO_EINVAL,
                        "verify-receipt: need RECEIPT and --pub HOST.pub (see `repro help "
                        "verify-receipt`)");
        return repro_report_error();
    }
    json_t *doc;
    if (repro_receipt_check(path, pub, &doc))
        return repro_report_error();
    /* Signed by the host, but printed escaped all the same: a receipt's
     * strings quote the submission. */
    const char *k = json_string_value(json_object_get(json_object_get(doc, "signature"), "key_id"));
    char kid[17];
    snprintf(kid, sizeof kid, "%s", k ? k : "?");
    printf("%s: valid receipt, signed by key id %s\n", repro_esc(path), repro_esc(kid));
    printf("  verdict: %s\n", repro_esc(json_string_value(json_object_get(doc, "verdict_text"))));
    const char *t = json_string_value(json_object_get(doc, "time"));
    printf("  time: %s\n", t ? repro_esc(t) : "?");
    json_decref(doc);
    return repro_finish_stdout(0);
}

int repro_cmd_keygen(int argc, char **argv)
{
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(repro_keygen_usage, stdout);
            return repro_finish_stdout(0);
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else {
            repro_error_set(REPRO_EINVAL, "keygen: unexpected '%s' (see `repro help keygen`)",
                            argv[i]);
            return repro_report_error();
        }
    }
    if (!out) {
        repro_error_set(REPRO_EINVAL, "keygen: need -o KEY.pem");
        return repro_report_error();
    }
    char pub[4200];
    snprintf(pub, sizeof pub, "%s.pub", out);
    if (repro_sign_keygen(out, pub))
        return repro_report_error();
    printf("private key %s (keep it secret), public key %s\n", out, pub);
    return repro_finish_stdout(0);
}
