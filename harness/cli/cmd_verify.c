/* `repro verify BUNDLE`: parse the options, run the verification
 * (verify/verify.h: the order of work, the verdicts, the receipt's fields),
 * write the receipt signed with the host's key, and report; `repro
 * verify-receipt` checks one; `repro keygen` makes an Ed25519 key pair for
 * either side.
 *
 * Verdicts and exit codes: reproduced 0; diverged (at step N, also for a
 * claimed loss_value/eval_* value that is not the re-run's) 1; exceeded
 * limits 1 (not reproduced: the host did not accept the work); build
 * failed, run failed (a program bundle's), score mismatch (a claimed
 * score that is not the host's, --score) and outputs differ (a declared
 * output that is not the submitter's, unless --unscored-output) 1; a program bundle on a host
 * without its sandbox tool 3, no receipt (unless --no-sandbox); invalid
 * submission 2 (also a bad signature, or a key --trusted-keys does not pin); a host-side environment failure 3, with no receipt (it is
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
#include "util/version.h"
#include "verify/receipt.h"
#include "verify/sign.h"
#include "verify/trusted.h"
#include "verify/verify.h"

static const char verify_synopsis[] =
    "usage: repro verify BUNDLE [options]\n"
    "\n"
    "Checks a submission bundle (`repro submit`): validates its manifest\n"
    "strictly, refuses it when it exceeds the host's limits, re-runs the\n"
    "experiment in a fresh process and compares the re-run with the claimed\n"
    "trace under this host's policy — never one the bundle chooses: the\n"
    "submitter's environment class is reported, not trusted — and writes a\n"
    "receipt signed with the host's key.\n"
    "\n"
    "A program bundle (`repro submit -- PROGRAM`) is unpacked into a private\n"
    "scratch directory, built and run inside a sandbox (bubblewrap: no\n"
    "network, the bundle and repro read-only, limits from --max-memory and\n"
    "--max-seconds); without bubblewrap it is refused (exit 3) unless\n"
    "--no-sandbox. A bundle of a CUDA environment class, or any with --gpu,\n"
    "gets the host's GPU (see --gpu); a host without one refuses it (exit\n"
    "3). Its declared outputs' SHA-256 and the host's score go into the\n"
    "receipt; a declared output that is not the submitter's, byte for\n"
    "byte, is \"outputs differ\" unless --unscored-output names it. A\n"
    "bundle submitted with --data runs on the host's data (--data DIR,\n"
    "read-only, REPRO_DATA): its outputs are scored, not compared with the\n"
    "submitter's, and the receipt records DIR's digest.\n";

static const char verify_epilogue[] =
    "\n"
    "Exit: 0 reproduced, 1 diverged (also: a claimed loss_value or eval_* value\n"
    "that is not the re-run's), exceeded limits, build failed, run failed,\n"
    "score mismatch or outputs differ, 2 invalid submission (also:\n"
    "a malformed or forged signature, or a key --trusted-keys does not pin) or\n"
    "usage, 3 environment problem on the host.\n";

enum {
    O_POLICY = 1,
    O_MAX_STEPS,
    O_MAX_SECONDS,
    O_MAX_MEMORY,
    O_KEY,
    O_OUTPUT,
    O_JSON,
    O_PUB,
    O_TRUSTED_KEYS,
    O_SCORE,
    O_NO_SANDBOX,
    O_MAX_FILE_SIZE,
    O_DATA,
    O_UNSCORED_OUTPUT,
    O_MAX_DISK,
    O_GPU
};

/* As many as a bundle may declare. */
#define UNSCORED_MAX REPRO_BUNDLE_OUTPUTS_MAX

static const repro_cli_opt verify_opts[] = {
    {"policy", 0, "P",
     "how to compare: bitwise (chain digests; the default),\nulp:N (float32 loss within N ulps), "
     "or rtol:X (loss,\nand every tensor's L2 norm and sum, within relative\nerror X); a tolerance "
     "verdict whose digests differ says\n\"reproduced within P (digests differ)\"",
     O_POLICY},
    {"max-steps", 0, "N", "refuse submissions of more than N steps (default 100000)",
     O_MAX_STEPS},
    {"max-seconds", 0, "S", "kill the re-run after S seconds (default 3600; 0 = none)",
     O_MAX_SECONDS},
    {"max-memory", 0, "SIZE",
     "refuse a submission whose memory, estimated from its\nconfig before anything runs, plus "
     "what the verifier\nholds, is over SIZE (bytes, or with K, M, G, T: 512M,\n2G; default 4G), "
     "and limit the re-run's address space\nto SIZE plus headroom (a GPU program bundle's "
     "memory\nto SIZE, by cgroup: see --gpu)",
     O_MAX_MEMORY},
    {"trusted-keys", 0, "FILE",
     "accept only bundles signed by a key in FILE: one\n\"ed25519 BASE64 NAME\" per line (the "
     "line `repro\nkeygen` prints; # comments); the receipt names the\nsigner, else says "
     "\"signer not pinned\"",
     O_TRUSTED_KEYS},
    {"score", 0, "CMD",
     "the host's evaluator for a program bundle: run as\n`CMD OUTPUT...` on the re-run's declared "
     "outputs\n(outside the sandbox), it prints one number, the host\nscore; a claimed score "
     "that differs is rejected.\nAn experiment's host score is its re-run's eval_accuracy",
     O_SCORE},
    {"data", 0, "DIR",
     "the host's data for a bundle submitted with --data:\nbound read-only, given as "
     "REPRO_DATA; its outputs are\nscored (--score), not compared; the receipt records\nDIR's "
     "digest (never its files)",
     O_DATA},
    {"max-file-size", 0, "SIZE",
     "a program bundle's largest file in the sandbox (build\nand run; default 1G): a larger "
     "write ends the run,\n\"exceeded limits\"",
     O_MAX_FILE_SIZE},
    {"max-disk", 0, "SIZE",
     "what a program bundle's build and run may write in\nall (default 4G): its scratch "
     "directory is a tmpfs of\nSIZE where this host may mount one (root); a run that\nfills "
     "it is \"exceeded limits\"",
     O_MAX_DISK},
    {"unscored-output", 0, "PATH",
     "a program bundle's declared output PATH is not scored\n(it holds a time stamp, or "
     "is nondeterministic by\nnature): one that is not the submitter's is reported,\nnot "
     "\"outputs differ\"; may be repeated",
     O_UNSCORED_OUTPUT},
    {"gpu", 0, NULL,
     "give a program bundle this host's NVIDIA GPU (also\nwithout it when the bundle's environment "
     "class is a\nCUDA one, cuda-...): its device nodes and driver bound\ninto the sandbox, its "
     "memory held to --max-memory by\na cgroup instead of its address space (CUDA reserves\n"
     "tens of GiB of it); a host without /dev/nvidia0,\n/dev/nvidiactl and /dev/nvidia-uvm "
     "refuses (exit 3)",
     O_GPU},
    {"no-sandbox", 0, NULL,
     "run a program bundle without the sandbox (bubblewrap);\nthe receipt records it",
     O_NO_SANDBOX},
    {"key", 0, "FILE", "the host's Ed25519 private key (PEM): signs the receipt", O_KEY},
    {"output", 'o', "FILE", "write the receipt there (unsigned without --key)", O_OUTPUT},
    {"json", 0, NULL, "print the receipt on stdout instead of the summary", O_JSON},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_verify_spec = {"verify", REPRO_CLI_VERIFY, verify_synopsis,
                                          verify_opts, verify_epilogue};

static const char receipt_synopsis[] =
    "usage: repro verify-receipt RECEIPT --pub HOST.pub\n"
    "\n"
    "Checks a receipt written by `repro verify`: it must be exactly as repro\n"
    "wrote it and signed by the key whose public half is HOST.pub. Any edit,\n"
    "even of whitespace, makes it fail. Prints the verdict it certifies.\n";

static const char receipt_epilogue[] =
    "\n"
    "Exit: 0 valid, 1 invalid (edited, forged, another key, unsigned),\n"
    "2 malformed receipt or unreadable key.\n";

static const repro_cli_opt receipt_opts[] = {
    {"pub", 0, "HOST.pub", "the public key of the host that signed it", O_PUB},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_verify_receipt_spec = {"verify-receipt", REPRO_CLI_VERIFY_RECEIPT,
                                                  receipt_synopsis, receipt_opts,
                                                  receipt_epilogue};

static const char keygen_synopsis[] =
    "usage: repro keygen -o KEY.pem\n"
    "\n"
    "Makes an Ed25519 key pair: the private key KEY.pem (mode 0600, never\n"
    "overwritten) and the public key KEY.pem.pub. Submitters sign bundles and\n"
    "hosts sign receipts with the private key; others check with the .pub.\n"
    "Also prints the key's line for a host's `repro verify --trusted-keys`\n"
    "file: \"ed25519 BASE64 NAME\", NAME being KEY.pem's file name without\n"
    "\".pem\" (edit it to the participant's name).\n";

static const char keygen_epilogue[] = "\nExit: 0 ok, 2 usage or the file exists, 3 environment.\n";

static const repro_cli_opt keygen_opts[] = {
    {"output", 'o', "KEY.pem", "the private key's file (the public key: KEY.pem.pub)", O_OUTPUT},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_keygen_spec = {"keygen", REPRO_CLI_KEYGEN, keygen_synopsis,
                                          keygen_opts, keygen_epilogue};

typedef struct {
    repro_verify_opts v;
    const char *key_path, *out_path, *trusted_path;
    int json;
    const char *unscored[UNSCORED_MAX + 1]; /* --unscored-output, NULL-terminated */
    int nunscored;
} verify_cli;

/* One option of verify's with its value; 0 or -1 (error slot). */
static int verify_option(void *ctx, int id, const char *v)
{
    verify_cli *o = ctx;
    char *end;
    switch (id) {
    case O_POLICY: return repro_verify_policy_parse(v, &o->v.policy);
    case O_MAX_STEPS:
        return repro_parse_count("verify: --max-steps", v, 1, LONG_MAX, &o->v.max_steps);
    case O_MAX_SECONDS:
        o->v.max_seconds = strtod(v, &end);
        if (end == v || *end || !isfinite(o->v.max_seconds) || o->v.max_seconds < 0 ||
            o->v.max_seconds > 1e7)
            return repro_error_set(REPRO_EINVAL, "verify: --max-seconds %s: expected seconds >= 0",
                                   v);
        return 0;
    case O_MAX_MEMORY:
        return repro_parse_size("verify: --max-memory", v, 1 << 20, &o->v.max_memory);
    case O_KEY: o->key_path = v; return 0;
    case O_TRUSTED_KEYS: o->trusted_path = v; return 0;
    case O_OUTPUT: o->out_path = v; return 0;
    case O_JSON: o->json = 1; return 0;
    case O_SCORE: o->v.score_cmd = v; return 0;
    case O_NO_SANDBOX: o->v.no_sandbox = 1; return 0;
    case O_GPU: o->v.gpu = 1; return 0;
    case O_DATA: o->v.data_dir = v; return 0;
    case O_MAX_FILE_SIZE:
        return repro_parse_size("verify: --max-file-size", v, 1 << 10, &o->v.max_file_size);
    case O_MAX_DISK:
        return repro_parse_size("verify: --max-disk", v, 1 << 20, &o->v.max_disk);
    case O_UNSCORED_OUTPUT:
        if (o->nunscored == UNSCORED_MAX)
            return repro_error_set(REPRO_EINVAL, "verify: more than %d --unscored-output",
                                   UNSCORED_MAX);
        o->unscored[o->nunscored++] = v;
        o->v.unscored_outputs = o->unscored;
        return 0;
    }
    return 0;
}

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_args(int argc, char **argv, verify_cli *o)
{
    repro_verify_opts_init(&o->v);
    repro_common co = {0};
    repro_cli_parser p;
    int rc = repro_cli_parse(&p, &repro_verify_spec, argc, argv, &co, verify_option, o);
    if (rc)
        return rc;
    if (p.nargs > 1)
        return repro_error_set(REPRO_EINVAL, "verify: more than one bundle ('%s', '%s')",
                               p.args[0], p.args[1]);
    if (!p.nargs)
        return repro_error_set(REPRO_EINVAL, "verify: missing BUNDLE (see `repro help verify`)");
    o->v.bundle_dir = p.args[0];
    return 0;
}

/* Who signed: the pinned key's name (from the host's own file, escaped
 * all the same) or "signer not pinned". */
static void print_signer(const verify_cli *o, const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    if (!r->bundle_ok)
        return;
    if (r->signer)
        printf("  signer: %s (pinned in %s; fingerprint %s)\n", repro_esc(r->signer->name),
               repro_esc(o->trusted_path), b->key_id);
    else if (!o->v.trusted)
        printf("  signer not pinned (%s; no --trusted-keys)\n",
               b->is_signed ? "signed" : "unsigned");
}

/* The re-run's final loss and eval (the receipt's rerun_metrics). */
static void print_rerun_metrics(const repro_verify_result *r)
{
    json_t *m = r->rerun_metrics;
    if (!m || !json_object_size(m))
        return;
    const char *lv = json_string_value(json_object_get(m, "loss_value"));
    const char *el = json_string_value(json_object_get(m, "eval_loss"));
    const char *ea = json_string_value(json_object_get(m, "eval_accuracy"));
    printf("  re-run metrics:");
    if (json_object_get(m, "step"))
        printf(" step %lld loss %s", json_integer_value(json_object_get(m, "step")),
               lv ? lv : "(not finite)");
    if (json_object_get(m, "eval_step"))
        printf("%s eval after step %lld: loss %s, accuracy %s",
               json_object_get(m, "step") ? ";" : "",
               json_integer_value(json_object_get(m, "eval_step")), el ? el : "(not finite)",
               ea ? ea : "(not finite)");
    printf("\n");
}

/* The Python client: the host's the program was given, the one that
 * wrote the claimed trace, and a repro package of the bundle's own. */
static void print_client(const repro_verify_result *r)
{
    if (r->host_client[0] || r->claimed_client[0])
        printf("  python client: %s%s%s (protocol %d)%s; the claimed trace's: %s",
               r->host_client[0] ? "this repro's " : "none on the host",
               repro_esc(r->host_client), r->host_client[0] ? "/repro" : "",
               REPRO_CLIENT_PROTOCOL, r->host_client[0] ? ", read-only on PYTHONPATH" : "",
               r->claimed_client[0] ? repro_esc(r->claimed_client) : "(none)");
    if (r->claimed_protocol)
        printf(" (protocol %d)\n", r->claimed_protocol);
    else if (r->host_client[0] || r->claimed_client[0])
        printf("\n");
    if (r->own_package[0])
        printf("  own client: the bundle's tree carries its own repro package (%s), which "
               "shadows this repro's client when it lies beside the script: the submitter's "
               "code wrote the trace\n",
               repro_esc(r->own_package));
}

/* A program bundle: its sandbox, build, run and outputs. */
static void print_program(const repro_verify_result *r)
{
    if (!r->bundle_ok || !r->bundle.is_program || !r->program_ran)
        return;
    printf("  sandbox: %s\n", repro_esc(r->sandbox));
    if (r->bundle.program.build)
        printf("  build command '%s': %s; ", repro_esc(r->bundle.program.build),
               repro_esc(r->build_status));
    else
        printf("  no build command; ");
    printf("program: %s\n", repro_esc(r->run_status));
    print_client(r);
    if (r->has_data)
        printf("  data: the host's, %ld files, %llu bytes, sha256 %s (the submitter's: %s)\n",
               r->data.files, (unsigned long long)r->data.bytes, r->data.sha256,
               r->bundle.program.data_sha256);
    size_t i;
    json_t *e;
    json_array_foreach(r->outputs, i, e) {
        const char *h = json_string_value(json_object_get(e, "sha256"));
        printf("  output %s sha256 %s%s%s\n",
               repro_esc(json_string_value(json_object_get(e, "path"))), h ? h : "(missing)",
               r->has_data ? " (from the host's data: scored, not compared)"
               : json_is_true(json_object_get(e, "identical")) ? " (the submitter's)"
                                                               : " (not the submitter's)",
               json_is_true(json_object_get(e, "unscored")) ? " (unscored: --unscored-output)"
                                                            : "");
    }
}

/* The host's score and the claimed one. */
static void print_score(const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    if (!r->has_host_score && !(r->bundle_ok && b->has_score))
        return;
    printf("  score: host %s%s%s%s, claimed %s%s\n", r->has_host_score ? r->host_score : "(none)",
           r->has_host_score ? " (" : "", r->has_host_score ? repro_esc(r->score_by) : "",
           r->has_host_score ? (r->has_data ? ", on the host's data)" : ")") : "",
           r->bundle_ok && b->has_score ? repro_esc(b->score) : "(none)",
           r->has_data && b->has_score ? " (on the submitter's data: not compared)" : "");
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
        printf("  memory: about %.1f MiB estimated, and %.1f MiB the verifier holds; limit "
               "%.1f MiB (--max-memory)\n",
               (double)r->memory.total / (1024.0 * 1024.0),
               (double)r->verifier_bytes / (1024.0 * 1024.0),
               (double)o->v.max_memory / (1024.0 * 1024.0));
    print_signer(o, r);
    print_rerun_metrics(r);
    print_program(r);
    print_score(r);
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
    repro_trusted_keys trusted = {0};
    if (o.trusted_path && repro_trusted_keys_load(&trusted, o.trusted_path)) {
        free(r);
        return repro_report_error();
    }
    o.v.trusted = o.trusted_path ? &trusted : NULL;
    if ((o.key_path && repro_sign_load_private(&key, o.key_path)) || repro_verify(&o.v, r) ||
        report(&o, r, key))
        exit_code = repro_report_error();
    else
        exit_code = repro_finish_stdout(exit_code_for(r));
    repro_verify_result_release(r);
    repro_trusted_keys_release(&trusted);
    free(r);
    EVP_PKEY_free(key);
    return exit_code;
}

/* --pub or keygen's -o: the one value these commands take. */
static int path_option(void *ctx, int id, const char *v)
{
    (void)id;
    *(const char **)ctx = v;
    return 0;
}

int repro_cmd_verify_receipt(int argc, char **argv)
{
    const char *pub = NULL;
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_verify_receipt_spec, argc, argv, &co, path_option,
                                 &pub);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed)
        return repro_report_error();
    if (p.nargs > 1) {
        repro_error_set(REPRO_EINVAL, "verify-receipt: more than one receipt");
        return repro_report_error();
    }
    if (!p.nargs || !pub) {
        repro_error_set(REPRO_EINVAL,
                        "verify-receipt: need RECEIPT and --pub HOST.pub (see `repro help "
                        "verify-receipt`)");
        return repro_report_error();
    }
    const char *path = p.args[0];
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

/* The new key's line for a trusted-keys file (verify/trusted.h), named
 * after KEY.pem: "keys/alice.pem" gives "alice". */
static int print_trusted_line(const char *priv, const char *pub_path)
{
    const char *base = strrchr(priv, '/') ? strrchr(priv, '/') + 1 : priv;
    char name[REPRO_TRUSTED_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", base);
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".pem"))
        name[n - 4] = '\0';
    for (char *c = name; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            *c = '_';
    EVP_PKEY *k = NULL;
    char *line = NULL;
    if (repro_sign_load_public(&k, pub_path) || !(line = repro_trusted_key_line(k, name))) {
        EVP_PKEY_free(k);
        return repro_report_error();
    }
    printf("trusted-keys line: %s\n", line);
    free(line);
    EVP_PKEY_free(k);
    return repro_finish_stdout(0);
}

int repro_cmd_keygen(int argc, char **argv)
{
    const char *out = NULL;
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_keygen_spec, argc, argv, &co, path_option, &out);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed)
        return repro_report_error();
    if (p.nargs) {
        repro_error_set(REPRO_EINVAL, "keygen: unexpected '%s' (see `repro help keygen`)",
                        p.args[0]);
        return repro_report_error();
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
    return print_trusted_line(out, pub);
}
