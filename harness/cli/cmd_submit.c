/* `repro submit EXP -o DIR`: runs the experiment once in a fresh process
 * and packs the run into a submission bundle (bundle.h) for a host to
 * check with `repro verify`. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "verify/bundle.h"
#include "cli/cli.h"
#include "core/config.h"
#include "util/error.h"
#include "golden/git.h"
#include "util/child.h"
#include "verify/sign.h"
#include "record/trace.h"
#include "util/version.h"

const char repro_submit_usage[] =
    "usage: repro submit EXP -o DIR [--key submitter.pem] [run options]\n"
    "\n"
    "Runs the experiment EXP once (a fresh `repro run` process) and writes a\n"
    "submission bundle to DIR: DIR/trace.jsonl (the claimed trace) and\n"
    "DIR/manifest.json (the effective config inline, seed, steps, the final\n"
    "chain digest, this environment's fingerprint and class, the commit),\n"
    "optionally signed with the submitter's Ed25519 key. A host checks it with\n"
    "`repro verify DIR`. Only synthetic-data experiments can be submitted: a\n"
    "host cannot re-run on files it does not have.\n"
    "\n"
    "  -o, --output DIR  the bundle directory (created; must not hold a bundle)\n"
    "  --key FILE        sign the manifest with this Ed25519 private key (PEM;\n"
    "                    `repro keygen` or `openssl genpkey -algorithm ed25519`)\n"
    "  --steps N, --seed S, --threads T, --workers W, --set KEY=VALUE\n"
    "                    passed to `repro run` (see `repro help run`)\n"
    "  -q, --quiet       no summary on stdout\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit: 0 ok, 2 bad experiment or option, 3 environment.\n";

#define MAX_PASS 128

static int takes_value(const char *a)
{
    return !strcmp(a, "--steps") || !strcmp(a, "--seed") || !strcmp(a, "--threads") ||
           !strcmp(a, "--workers") || !strcmp(a, "--set");
}

/* The text of a small file (a child's output), malloc'd; "" if unreadable. */
static char *slurp(const char *path)
{
    char *s;
    size_t n;
    if (repro_read_file_limited(path, REPRO_BUNDLE_CONFIG_MAX, &s, &n)) {
        repro_error_clear();
        return strdup("");
    }
    return s;
}

static void commit_id(char *out, size_t len)
{
    repro_git *g = NULL;
    repro_git_commit c;
    snprintf(out, len, "unknown");
    if (repro_git_open(&g, NULL) == 0 && repro_git_head(g, &c) == 0) {
        snprintf(out, len, "%s", c.id);
        repro_git_commit_release(&c);
    }
    repro_git_free(g);
    repro_error_clear(); /* outside a checkout the commit is just unknown */
}

int repro_cmd_submit(int argc, char **argv)
{
    const char *exp = NULL, *dir = NULL, *keypath = NULL;
    char *pass[MAX_PASS];
    int npass = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_submit_usage, stdout);
            return repro_finish_stdout(0);
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--key") ||
                   takes_value(a)) {
            if (i + 1 >= argc) {
                repro_error_set(REPRO_EINVAL, "submit: option '%s' needs a value", a);
                return repro_report_error();
            }
            const char *v = argv[++i];
            if (a[1] == 'o' || !strcmp(a, "--output"))
                dir = v;
            else if (!strcmp(a, "--key"))
                keypath = v;
            else if (npass + 2 <= MAX_PASS - 8) {
                pass[npass++] = (char *)a;
                pass[npass++] = (char *)v;
            } else {
                repro_error_set(REPRO_EINVAL, "submit: too many options");
                return repro_report_error();
            }
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            repro_error_set(REPRO_EINVAL, "submit: unknown option '%s' (see `repro help submit`)",
                            a);
            return repro_report_error();
        } else if (exp) {
            repro_error_set(REPRO_EINVAL, "submit: more than one experiment ('%s', '%s')", exp,
                            a);
            return repro_report_error();
        } else {
            exp = a;
        }
    }
    if (!exp || !dir) {
        repro_error_set(REPRO_EINVAL, "submit: need EXP and -o DIR (see `repro help submit`)");
        return repro_report_error();
    }

    EVP_PKEY *key = NULL;
    repro_trace tr;
    memset(&tr, 0, sizeof tr);
    json_t *doc = NULL;
    char *cfg_text = NULL;
    int rc = -1;
    char p_manifest[1200], p_cfg[1200], p_out[1200], p_err[1200], p_trace[1200];
    snprintf(p_manifest, sizeof p_manifest, "%s/%s", dir, REPRO_BUNDLE_MANIFEST);
    snprintf(p_cfg, sizeof p_cfg, "%s/.submit-config.ini", dir);
    snprintf(p_out, sizeof p_out, "%s/.submit-run.out", dir);
    snprintf(p_err, sizeof p_err, "%s/.submit-run.err", dir);
    snprintf(p_trace, sizeof p_trace, "%s/trace.jsonl", dir);

    if (keypath && repro_sign_load_private(&key, keypath))
        goto cleanup;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        repro_error_set_errno(REPRO_EINVAL, "submit: cannot create %s", dir);
        goto cleanup;
    }
    if (access(p_manifest, F_OK) == 0) {
        repro_error_set(REPRO_EINVAL, "submit: %s already holds a bundle", dir);
        goto cleanup;
    }

    /* 1. The effective config, as `repro run --print-config` dumps it: the
     *    manifest carries it inline, so the host needs no file of ours. */
    char *args[MAX_PASS + 8];
    int n = 0;
    args[n++] = "run";
    args[n++] = (char *)exp;
    for (int i = 0; i < npass; i++)
        args[n++] = pass[i];
    args[n++] = "--print-config";
    args[n] = NULL;
    int st = repro_child_run_self(args, NULL, p_cfg, p_err);
    if (st < 0)
        goto cleanup;
    if (st != 0) {
        char *e = slurp(p_err);
        fputs(e, stderr);
        free(e);
        repro_error_set(st == 2 ? REPRO_EXIT_USAGE : REPRO_EXIT_ENV,
                        "submit: `repro run %s` failed (exit %d)", exp, st);
        goto cleanup;
    }
    static repro_config cfg;
    if (repro_config_load(&cfg, p_cfg))
        goto cleanup;
    if (cfg.data_dataset != REPRO_DATASET_SYNTHETIC) {
        repro_error_set(REPRO_EINVAL,
                        "submit: %s: data.dataset = idx reads local files a host does not have; "
                        "only synthetic-data experiments can be submitted",
                        exp);
        goto cleanup;
    }
    cfg_text = slurp(p_cfg);

    /* 2. The run itself, in a fresh process, its trace inside the bundle. */
    n = 2;
    for (int i = 0; i < npass; i++)
        args[n++] = pass[i];
    args[n++] = "-o";
    args[n++] = p_trace;
    args[n++] = "-q";
    args[n] = NULL;
    st = repro_child_run_self(args, NULL, p_out, p_err);
    if (st < 0)
        goto cleanup;
    if (st != 0) {
        char *e = slurp(p_err);
        fputs(e, stderr);
        free(e);
        repro_error_set(st == 2 ? REPRO_EXIT_USAGE : REPRO_EXIT_ENV,
                        "submit: `repro run %s` failed (exit %d)", exp, st);
        goto cleanup;
    }
    if (repro_trace_read(&tr, p_trace))
        goto cleanup;
    if (!tr.has_trailer) {
        repro_error_set(REPRO_EIO, "submit: %s: the run left no trailer", p_trace);
        goto cleanup;
    }

    char chain[65], commit[65], created[32];
    repro_digest_hex(&tr.trailer_chain, chain);
    commit_id(commit, sizeof commit);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *env = json_object_get((json_t *)tr.header_json, "env");
    doc = json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:s, s:O, s:s, s:s, s:s, s:s}",
                    "repro_bundle", REPRO_BUNDLE_VERSION, "experiment", tr.experiment, "config",
                    cfg_text, "seed", tr.seed, "steps", (json_int_t)tr.trailer_steps, "trace",
                    "trace.jsonl", "chain", chain, "env", env ? env : json_object(), "env_class",
                    tr.env_class, "commit", commit, "repro_version", REPRO_VERSION, "created",
                    created);
    if (!doc) {
        repro_error_set(REPRO_EIO, "submit: cannot build the manifest");
        goto cleanup;
    }
    /* What verify would refuse, submit refuses: check our own manifest. */
    char *text = json_dumps(doc, JSON_COMPACT);
    repro_bundle check;
    memset(&check, 0, sizeof check);
    int bad = !text || repro_bundle_parse(&check, text, strlen(text), p_manifest);
    repro_bundle_release(&check);
    free(text);
    if (bad) {
        repro_error_set(REPRO_EINVAL, "submit: %s", repro_error_message());
        goto cleanup;
    }
    if (repro_bundle_write_manifest(dir, doc, key))
        goto cleanup;
    if (!quiet) {
        printf("bundle %s: %s, seed %s, %ld steps, environment class %s\n", dir, tr.experiment,
               tr.seed, tr.trailer_steps, tr.env_class);
        json_t *sig = json_object_get(doc, "signature");
        if (sig)
            printf("  signed, submitter key id %.16s\n",
                   json_string_value(json_object_get(sig, "key_id")));
        else
            printf("  not signed (use --key to sign)\n");
        printf("chain %s\n", chain);
    }
    rc = 0;
cleanup:
    unlink(p_cfg);
    unlink(p_out);
    unlink(p_err);
    EVP_PKEY_free(key);
    json_decref(doc);
    free(cfg_text);
    repro_trace_release(&tr);
    if (rc)
        return repro_report_error();
    return repro_finish_stdout(0);
}
