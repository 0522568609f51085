/* `repro verify BUNDLE`: re-runs a submission in a fresh process under the
 * host's limits, compares the re-run with the claimed trace, and writes a
 * receipt signed with the host's key; `repro verify-receipt` checks one;
 * `repro keygen` makes an Ed25519 key pair for either side.
 *
 * Order of work, so that nothing expensive happens for a bad submission:
 *   1. the manifest (bundle.h: size, JSON, known keys, types, ranges, a
 *      trace path inside the bundle, the submitter's signature if any)
 *   2. the host's limits: steps > --max-steps is refused here, before any
 *      training (verdict "exceeded limits")
 *   3. the claimed trace: read strictly (trace_read.c verifies its chain),
 *      finished, and consistent with the manifest (experiment, seed, steps,
 *      final chain, environment class)
 *   4. the inline config: written to a private temporary directory as
 *      <experiment>.ini, loaded strictly, synthetic data only (a config
 *      naming host files would read them), seed and steps as the manifest
 *      says, numerics digest as the claimed trace's header says
 *   5. the re-run: `repro run` via posix_spawn (an argument vector, never a
 *      shell), in its own process group, killed at --max-seconds (verdict
 *      "exceeded limits")
 *   6. the comparison: bitwise (chain digests) when the host's environment
 *      class is the submitter's — that is the determinism contract's
 *      promise; otherwise under --policy, per step from the loss bits and
 *      the tensor stats (compare_tolerance below). The receipt says which.
 *
 * Verdicts and exit codes: reproduced 0; diverged (at step N) 1; exceeded
 * limits 1 (not reproduced: the host did not accept the work); invalid
 * submission 2; a host-side environment failure 3, with no receipt (it is
 * not a verdict on the submission). Usage errors exit 2 with no receipt.
 *
 * Receipt fields (receipt.h for the signature and form):
 *   repro_receipt 1; verdict; verdict_text ("diverged at step 3"); step
 *   (the divergent step, or 0); reasons [strings]; ran (whether training
 *   ran); comparison ("bitwise", "ulp:N", "rtol:X" or "none"); policy
 *   {requested, applied, why}; limits {max_steps, max_seconds_ms};
 *   bundle {path, manifest_sha256, experiment, seed, steps, trace,
 *   submitter_signature ("valid" | "none"), submitter_key_id};
 *   submitter {env, env_class, chain, commit, repro_version} (null when the
 *   manifest could not be read); host {env, env_class, chain (null when
 *   nothing ran), rerun_ms}; repro_version; time (ISO 8601 UTC). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "verify/bundle.h"
#include "cli/cli.h"
#include "analysis/compare.h"
#include "core/config.h"
#include "record/env.h"
#include "util/error.h"
#include "verify/receipt.h"
#include "verify/sign.h"
#include "record/trace.h"
#include "util/version.h"

const char repro_verify_usage[] =
    "usage: repro verify BUNDLE [options]\n"
    "\n"
    "Checks a submission bundle (`repro submit`): validates its manifest\n"
    "strictly, refuses it when it exceeds the host's limits, re-runs the\n"
    "experiment in a fresh process and compares the re-run with the claimed\n"
    "trace — bitwise (chain digests) when this host's environment class is the\n"
    "submitter's, otherwise per step under the tolerance policy — and writes a\n"
    "receipt signed with the host's key.\n"
    "\n"
    "  --policy P        tolerance across environment classes: bitwise (no\n"
    "                    tolerance), ulp:N (float32 loss within N ulps), or\n"
    "                    rtol:X (loss, and every tensor's L2 norm and sum, within\n"
    "                    relative error X); default rtol:1e-4\n"
    "  --max-steps N     refuse submissions of more than N steps (default 100000)\n"
    "  --max-seconds S   kill the re-run after S seconds (default 3600; 0 = none)\n"
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

enum { V_REPRODUCED, V_DIVERGED, V_INVALID, V_EXCEEDED };
static const char *const verdict_names[] = {"reproduced", "diverged", "invalid submission",
                                            "exceeded limits"};

enum { P_BITWISE, P_ULP, P_RTOL };

typedef struct {
    int kind;
    long ulp;
    double rtol;
    char text[48];
} policy;

typedef struct {
    const char *bundle_dir, *key_path, *out_path;
    policy pol;
    long max_steps;
    double max_seconds;
    int json;
} verify_opts;

typedef struct {
    int verdict;
    long step;
    json_t *reasons;
    int ran;
    char comparison[48];
    char applied[48], why[160];
    long rerun_ms;
    int have_host_chain;
    repro_digest host_chain;
} outcome;

static int parse_policy(const char *s, policy *p)
{
    char *end;
    memset(p, 0, sizeof *p);
    if (!strcmp(s, "bitwise")) {
        p->kind = P_BITWISE;
    } else if (!strncmp(s, "ulp:", 4)) {
        errno = 0;
        long v = strtol(s + 4, &end, 10);
        if (end == s + 4 || *end || errno || v < 0 || v > 0x7fffffffL)
            return repro_error_set(REPRO_EINVAL, "verify: --policy %s: N must be 0..2^31-1", s);
        p->kind = P_ULP;
        p->ulp = v;
    } else if (!strncmp(s, "rtol:", 5)) {
        double v = strtod(s + 5, &end);
        if (end == s + 5 || *end || !isfinite(v) || v < 0 || v > 1)
            return repro_error_set(REPRO_EINVAL,
                                   "verify: --policy %s: X must be a number in [0, 1]", s);
        p->kind = P_RTOL;
        p->rtol = v;
    } else {
        return repro_error_set(REPRO_EINVAL,
                               "verify: --policy %s: expected bitwise, ulp:N or rtol:X", s);
    }
    snprintf(p->text, sizeof p->text, "%s", s);
    return 0;
}

static int parse_args(int argc, char **argv, verify_opts *o)
{
    o->max_steps = 100000;
    o->max_seconds = 3600;
    if (parse_policy("rtol:1e-4", &o->pol))
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_verify_usage, stdout);
            return 1;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            int known = !strcmp(a, "--policy") || !strcmp(a, "--max-steps") ||
                        !strcmp(a, "--max-seconds") || !strcmp(a, "--key") || !strcmp(a, "-o") ||
                        !strcmp(a, "--output");
            if (!known)
                return repro_error_set(REPRO_EINVAL,
                                       "verify: unknown option '%s' (see `repro help verify`)", a);
            if (i + 1 >= argc)
                return repro_error_set(REPRO_EINVAL, "verify: option '%s' needs a value", a);
            const char *v = argv[++i];
            char *end;
            if (!strcmp(a, "--policy")) {
                if (parse_policy(v, &o->pol))
                    return -1;
            } else if (!strcmp(a, "--max-steps")) {
                errno = 0;
                o->max_steps = strtol(v, &end, 10);
                if (end == v || *end || errno || o->max_steps < 1)
                    return repro_error_set(REPRO_EINVAL,
                                           "verify: --max-steps %s: expected a positive integer", v);
            } else if (!strcmp(a, "--max-seconds")) {
                o->max_seconds = strtod(v, &end);
                if (end == v || *end || !isfinite(o->max_seconds) || o->max_seconds < 0 ||
                    o->max_seconds > 1e7)
                    return repro_error_set(REPRO_EINVAL,
                                           "verify: --max-seconds %s: expected seconds >= 0", v);
            } else if (!strcmp(a, "--key")) {
                o->key_path = v;
            } else {
                o->out_path = v;
            }
            continue;
        }
        if (o->bundle_dir)
            return repro_error_set(REPRO_EINVAL, "verify: more than one bundle ('%s', '%s')",
                                   o->bundle_dir, a);
        o->bundle_dir = a;
    }
    if (!o->bundle_dir)
        return repro_error_set(REPRO_EINVAL, "verify: missing BUNDLE (see `repro help verify`)");
    return 0;
}

static void reason(outcome *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(outcome *r, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_t *s = json_string(buf);
    if (!s) /* a message quoting invalid UTF-8 from the bundle */
        s = json_string("(message not UTF-8)");
    json_array_append_new(r->reasons, s);
}

static int invalid(outcome *r, const char *msg)
{
    r->verdict = V_INVALID;
    reason(r, "%s", msg);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

extern char **environ;

/* posix_spawn of /proc/self/exe in its own process group (so a kill at the
 * deadline takes all of it), polled until it exits or the deadline passes.
 * Returns the exit status (0..255, 128+signal), -2 when killed at the
 * deadline, or -1 with the error slot set. */
static int spawn_limited(char *const argv[], const char *out_path, const char *err_path,
                         double max_seconds)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return repro_error_set_errno(REPRO_EIO, "cannot find the repro executable");
    self[n] = '\0';
    char *args[32];
    int argc = 0;
    args[argc++] = self;
    for (int i = 0; argv[i] && argc < 31; i++)
        args[argc++] = argv[i];
    args[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, &at, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        errno = rc;
        return repro_error_set_errno(REPRO_EIO, "cannot start %s", self);
    }
    double deadline = max_seconds > 0 ? now_s() + max_seconds : 0;
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return repro_error_set_errno(REPRO_EIO, "waiting for %s", self);
        if (deadline && now_s() >= deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -2;
        }
        struct timespec ts = {0, 2000000}; /* 2 ms: small against any run */
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The first line of a child's stderr, without "repro: ", for a reason. */
static void first_line(const char *path, char *buf, size_t len)
{
    char *s;
    size_t n;
    buf[0] = '\0';
    if (repro_read_file_limited(path, 1 << 20, &s, &n)) {
        repro_error_clear();
        return;
    }
    const char *p = s;
    while (*p) { /* the last "repro: " line is the error; progress lines are not */
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!strncmp(p, "repro: ", 7) && !strstr(p, "warning"))
            snprintf(buf, len, "%.*s", (int)(l - 7), p + 7);
        p += l + (e ? 1 : 0);
    }
    free(s);
}

/* float32 bits -> a line on which adjacent floats are adjacent integers. */
static int64_t ordered(uint32_t b)
{
    return (b & 0x80000000u) ? -(int64_t)(b & 0x7fffffffu) : (int64_t)b;
}

static uint64_t ulp_distance(uint32_t a, uint32_t b)
{
    int nan_a = (a & 0x7f800000u) == 0x7f800000u && (a & 0x7fffffu);
    int nan_b = (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
    if (nan_a || nan_b)
        return a == b ? 0 : UINT64_MAX;
    int64_t d = ordered(a) - ordered(b);
    return (uint64_t)(d < 0 ? -d : d);
}

static double rel(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m == 0 ? 0 : fabs(a - b) / m;
}

/* Tolerance comparison, per step with detail on both sides. ulp:N: the
 * float32 loss within N ulps. rtol:X: the loss, and each tensor's L2 norm,
 * within relative error X; each tensor's sum within X * sqrt(numel) * L2
 * (by Cauchy-Schwarz |sum| <= sqrt(n) * L2, so this scales with what the
 * sum could be; a plain relative test on a sum that cancels to ~0 would
 * fail on rounding alone); non-finite counts equal. Returns 0 with the
 * verdict in r, or -1 (error slot) on a bug-level failure. */
static void compare_tolerance(const repro_trace *claim, const repro_trace *re, const policy *p,
                              outcome *r)
{
    long common = claim->nsteps < re->nsteps ? claim->nsteps : re->nsteps;
    long checked = 0;
    for (long i = 0; i < common; i++) {
        const repro_trace_step *a = &claim->steps[i], *b = &re->steps[i];
        if (!a->has_detail || !b->has_detail)
            continue;
        checked++;
        uint64_t u = ulp_distance(a->loss_bits, b->loss_bits);
        if (p->kind == P_ULP && u > (uint64_t)p->ulp) {
            r->verdict = V_DIVERGED;
            r->step = a->step;
            reason(r, "step %ld: loss 0x%08x vs 0x%08x: %llu ulps apart (policy %s)", a->step,
                   a->loss_bits, b->loss_bits, (unsigned long long)u, p->text);
            return;
        }
        if (p->kind != P_RTOL)
            continue;
        if (rel(a->loss_value, b->loss_value) > p->rtol || isnan(a->loss_value) != isnan(b->loss_value)) {
            r->verdict = V_DIVERGED;
            r->step = a->step;
            reason(r, "step %ld: loss %.9g vs %.9g: relative error %.3g (policy %s)", a->step,
                   a->loss_value, b->loss_value, rel(a->loss_value, b->loss_value), p->text);
            return;
        }
        for (int t = 0; t < a->ntensors; t++) {
            const repro_trace_tensor *ta = &a->tensors[t], *tb = NULL;
            for (int k = 0; k < b->ntensors && !tb; k++)
                if (!strcmp(b->tensors[k].name, ta->name))
                    tb = &b->tensors[k];
            if (!tb) {
                r->verdict = V_DIVERGED;
                r->step = a->step;
                reason(r, "step %ld: tensor %s is missing from the re-run", a->step, ta->name);
                return;
            }
            double numel = 1;
            for (int d = 0; d < ta->ndim; d++)
                numel *= (double)ta->shape[d];
            double sum_tol = p->rtol * sqrt(numel) * fmax(ta->l2, tb->l2);
            if (ta->nonfinite != tb->nonfinite || rel(ta->l2, tb->l2) > p->rtol ||
                fabs(ta->sum - tb->sum) > sum_tol) {
                r->verdict = V_DIVERGED;
                r->step = a->step;
                reason(r,
                       "step %ld: tensor %s: L2 %.9g vs %.9g (relative error %.3g), sum %.9g vs "
                       "%.9g, non-finite %ld vs %ld (policy %s)",
                       a->step, ta->name, ta->l2, tb->l2, rel(ta->l2, tb->l2), ta->sum, tb->sum,
                       ta->nonfinite, tb->nonfinite, p->text);
                return;
            }
        }
    }
    if (claim->nsteps != re->nsteps) {
        r->verdict = V_DIVERGED;
        r->step = common + 1;
        reason(r, "the claim has %ld steps, the re-run %ld", claim->nsteps, re->nsteps);
        return;
    }
    if (!checked) {
        r->verdict = V_INVALID;
        reason(r, "the tolerance policy needs per-step loss and tensor stats, and the traces "
                  "have none (trace.level = step): re-submit with trace.level = tensor");
        return;
    }
    r->verdict = V_REPRODUCED;
    reason(r, "all %ld steps with stats agree within %s (%ld steps)", checked, p->text,
           claim->nsteps);
}

/* Steps 3-6 of the header comment. Returns 0 with the verdict in r, or
 * -1 for a host-side failure (error slot, exit 3). */
static int verify_bundle(const verify_opts *o, const repro_bundle *b, const repro_env *host,
                         outcome *r, const char *tmp)
{
    repro_trace claim, re;
    memset(&claim, 0, sizeof claim);
    memset(&re, 0, sizeof re);
    static repro_config cfg;
    int rc = 0;
    char p_cfg[1200], p_trace[1200], p_out[1200], p_err[1200];
    snprintf(p_cfg, sizeof p_cfg, "%s/%s.ini", tmp, b->experiment);
    snprintf(p_trace, sizeof p_trace, "%s/rerun.jsonl", tmp);
    snprintf(p_out, sizeof p_out, "%s/rerun.out", tmp);
    snprintf(p_err, sizeof p_err, "%s/rerun.err", tmp);

    /* 3. The claimed trace, and that it is the trace the manifest claims. */
    if (repro_trace_read(&claim, b->trace_path)) {
        char m[1400];
        snprintf(m, sizeof m, "claimed trace: %s", repro_error_message());
        invalid(r, m);
        goto done;
    }
    char hx[65], hy[65];
    if (!claim.has_trailer) {
        invalid(r, "claimed trace: truncated (no trailer): the run did not finish");
        goto done;
    }
    if (strcmp(claim.experiment, b->experiment)) {
        r->verdict = V_INVALID;
        reason(r, "claimed trace is of experiment '%s', the manifest says '%s'", claim.experiment,
               b->experiment);
        goto done;
    }
    if (strcmp(claim.seed, b->seed)) {
        r->verdict = V_INVALID;
        reason(r, "claimed trace was made with seed %s, the manifest says %s", claim.seed,
               b->seed);
        goto done;
    }
    if (claim.trailer_steps != b->steps || claim.nsteps != b->steps) {
        r->verdict = V_INVALID;
        reason(r, "claimed trace has %ld steps, the manifest says %ld", claim.trailer_steps,
               b->steps);
        goto done;
    }
    if (!repro_digest_eq(&claim.trailer_chain, &b->chain)) {
        repro_digest_hex(&claim.trailer_chain, hx);
        r->verdict = V_INVALID;
        reason(r, "claimed trace's final chain %.16s... is not the manifest's %.16s...", hx,
               b->chain_hex);
        goto done;
    }
    if (claim.env_class[0] && strcmp(claim.env_class, b->env_class)) {
        r->verdict = V_INVALID;
        reason(r, "claimed trace was made in environment class %s, the manifest says %s",
               claim.env_class, b->env_class);
        goto done;
    }

    /* 4. The inline config, as strictly as any experiment file. */
    if (repro_write_file_atomic(p_cfg, b->config, strlen(b->config))) {
        rc = -1;
        goto done;
    }
    if (repro_config_load(&cfg, p_cfg) || repro_config_validate(&cfg)) {
        char m[1400];
        snprintf(m, sizeof m, "config: %s", repro_error_message());
        invalid(r, m);
        goto done;
    }
    if (cfg.data_dataset != REPRO_DATASET_SYNTHETIC) {
        invalid(r, "config: data.dataset = idx would read files on the host; only synthetic "
                   "data can be verified");
        goto done;
    }
    char seedbuf[32];
    snprintf(seedbuf, sizeof seedbuf, "%llu", (unsigned long long)cfg.train_seed);
    if (strcmp(seedbuf, b->seed) || cfg.train_steps != b->steps) {
        r->verdict = V_INVALID;
        reason(r, "config says seed %s and %ld steps, the manifest seed %s and %ld steps",
               seedbuf, (long)cfg.train_steps, b->seed, b->steps);
        goto done;
    }
    repro_digest all, num;
    if (repro_config_digests(&cfg, &all, &num)) {
        rc = -1;
        goto done;
    }
    if (!repro_digest_eq(&num, &claim.numerics_digest)) {
        repro_digest_hex(&num, hx);
        repro_digest_hex(&claim.numerics_digest, hy);
        r->verdict = V_INVALID;
        reason(r, "the manifest's config (numerics digest %.12s) is not the claimed trace's "
                  "(%.12s)",
               hx, hy);
        goto done;
    }

    /* 5. The re-run: a fresh process, argv only, under the time limit. */
    char steps_s[32];
    snprintf(steps_s, sizeof steps_s, "%ld", b->steps);
    char *argv[] = {"run", p_cfg, "--seed", (char *)b->seed, "--steps", steps_s,
                    "-o", p_trace, "-q", NULL};
    double t0 = now_s();
    r->ran = 1;
    int st = spawn_limited(argv, p_out, p_err, o->max_seconds);
    r->rerun_ms = (long)((now_s() - t0) * 1000);
    if (st == -1) {
        rc = -1;
        goto done;
    }
    if (st == -2) {
        r->verdict = V_EXCEEDED;
        reason(r, "the re-run was stopped after %g s (--max-seconds)", o->max_seconds);
        goto done;
    }
    if (st != 0) {
        char line[600];
        first_line(p_err, line, sizeof line);
        if (st == REPRO_EXIT_USAGE) {
            r->verdict = V_INVALID;
            reason(r, "the re-run refused the submission: %s", line);
            goto done;
        }
        rc = repro_error_set(REPRO_EIO, "verify: the re-run failed on this host (exit %d): %s",
                             st, line);
        goto done;
    }
    if (repro_trace_read(&re, p_trace)) {
        rc = -1;
        goto done;
    }
    r->have_host_chain = re.has_trailer;
    r->host_chain = re.trailer_chain;

    /* 6. Bitwise within a class, the policy across classes. */
    int same_class = !strcmp(host->class_id, b->env_class);
    if (same_class || o->pol.kind == P_BITWISE) {
        snprintf(r->comparison, sizeof r->comparison, "bitwise");
        snprintf(r->why, sizeof r->why, "%s",
                 same_class ? "environment classes match: bitwise identity is promised"
                            : "classes differ, and the policy asks for bitwise identity");
        repro_divergence d;
        if (repro_compare_traces(&claim, &re, &d)) {
            char m[1400];
            snprintf(m, sizeof m, "%s", repro_error_message());
            invalid(r, m);
            goto done;
        }
        if (d.identical) {
            r->verdict = V_REPRODUCED;
            reason(r, "every step digest and the final chain are identical (%ld steps)",
                   claim.nsteps);
        } else {
            r->verdict = V_DIVERGED;
            r->step = d.first_step ? d.first_step : d.common_steps + 1;
            if (d.first_step && d.ntensors)
                reason(r, "step %ld: the step digests differ; first differing tensor %s (the "
                          "likely origin)",
                       r->step, d.tensors[0].name);
            else if (d.first_step)
                reason(r, "step %ld: the step digests differ", r->step);
            else
                reason(r, "the claim has %ld steps, the re-run %ld", claim.nsteps, re.nsteps);
        }
        repro_divergence_release(&d);
    } else {
        snprintf(r->comparison, sizeof r->comparison, "%s", o->pol.text);
        snprintf(r->why, sizeof r->why,
                 "environment classes differ (%s here): bitwise identity is not promised",
                 host->class_id);
        if (strcmp(claim.experiment, re.experiment) ||
            !repro_digest_eq(&claim.numerics_digest, &re.numerics_digest)) {
            invalid(r, "the re-run's config is not the claimed trace's");
            goto done;
        }
        compare_tolerance(&claim, &re, &o->pol, r);
    }
done:
    repro_trace_release(&claim);
    repro_trace_release(&re);
    unlink(p_cfg);
    unlink(p_trace);
    unlink(p_out);
    unlink(p_err);
    return rc;
}

static void iso_now(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *build_receipt(const verify_opts *o, const repro_bundle *b, int bundle_ok,
                             const repro_env *host, outcome *r)
{
    char text[96], hx[65], when[32];
    if (r->verdict == V_DIVERGED)
        snprintf(text, sizeof text, "diverged at step %ld", r->step);
    else
        snprintf(text, sizeof text, "%s", verdict_names[r->verdict]);
    iso_now(when, sizeof when);
    json_t *bundle = json_pack("{s:s}", "path", o->bundle_dir);
    json_t *submitter = json_null();
    if (bundle_ok) {
        repro_digest_hex(&b->manifest_digest, hx);
        json_object_set_new(bundle, "manifest_sha256", json_string(hx));
        json_object_set_new(bundle, "experiment", json_string(b->experiment));
        json_object_set_new(bundle, "seed", json_string(b->seed));
        json_object_set_new(bundle, "steps", json_integer(b->steps));
        json_object_set_new(bundle, "trace", json_string(b->trace));
        json_object_set_new(bundle, "submitter_signature",
                            json_string(b->is_signed ? "valid" : "none"));
        json_object_set_new(bundle, "submitter_key_id",
                            b->is_signed ? json_string(b->key_id) : json_null());
        submitter = json_pack("{s:O, s:s, s:s, s:s, s:s}", "env", b->env, "env_class",
                              b->env_class, "chain", b->chain_hex, "commit", b->commit,
                              "repro_version", b->repro_version);
    } else if (b->manifest) {
        /* Unreadable as a bundle, but the bytes were read: say which. */
        repro_digest_hex(&b->manifest_digest, hx);
        json_object_set_new(bundle, "manifest_sha256", json_string(hx));
    }
    json_t *hostj = json_pack("{s:o, s:s, s:I}", "env", repro_env_to_json(host), "env_class",
                              host->class_id, "rerun_ms", (json_int_t)r->rerun_ms);
    if (r->have_host_chain) {
        repro_digest_hex(&r->host_chain, hx);
        json_object_set_new(hostj, "chain", json_string(hx));
    } else {
        json_object_set_new(hostj, "chain", json_null());
    }
    json_t *doc = json_pack(
        "{s:i, s:s, s:s, s:I, s:O, s:b, s:s, s:{s:s, s:s, s:s}, s:{s:I, s:I}, s:o, s:o, s:o, "
        "s:s, s:s}",
        "repro_receipt", REPRO_RECEIPT_VERSION, "verdict", verdict_names[r->verdict],
        "verdict_text", text, "step", (json_int_t)(r->verdict == V_DIVERGED ? r->step : 0),
        "reasons", r->reasons, "ran", r->ran, "comparison",
        r->comparison[0] ? r->comparison : "none", "policy", "requested", o->pol.text, "applied",
        r->comparison[0] ? r->comparison : "none", "why", r->why, "limits", "max_steps",
        (json_int_t)o->max_steps, "max_seconds_ms", (json_int_t)(o->max_seconds * 1000),
        "bundle", bundle, "submitter", submitter, "host", hostj, "repro_version", REPRO_VERSION,
        "time", when);
    return doc;
}

int repro_cmd_verify(int argc, char **argv)
{
    verify_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc == 1)
        return repro_finish_stdout(0);
    if (rc)
        return repro_report_error();

    EVP_PKEY *key = NULL;
    repro_bundle b;
    memset(&b, 0, sizeof b);
    static repro_env host;
    outcome r;
    memset(&r, 0, sizeof r);
    r.reasons = json_array();
    json_t *doc = NULL;
    char tmp[512] = "";
    int exit_code = REPRO_EXIT_ENV;
    /* The host's own key and environment first: failures there are ours. */
    if ((o.key_path && repro_sign_load_private(&key, o.key_path)) || repro_env_get(&host))
        goto fail;
    snprintf(r.why, sizeof r.why, "nothing was compared");

    int bundle_ok = repro_bundle_load(&b, o.bundle_dir) == 0;
    if (!bundle_ok) {
        if (repro_exit_code_for(repro_error_code()) == REPRO_EXIT_ENV)
            goto fail;
        invalid(&r, repro_error_message());
    } else if (b.steps > o.max_steps) {
        r.verdict = V_EXCEEDED;
        reason(&r, "the submission has %ld steps; this host's limit is %ld (--max-steps): "
                   "refused before training",
               b.steps, o.max_steps);
    } else {
        const char *td = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/repro-verify-XXXXXX", td && *td ? td : "/tmp");
        if (!mkdtemp(tmp)) {
            repro_error_set_errno(REPRO_EIO, "verify: cannot create a temporary directory");
            tmp[0] = '\0';
            goto fail;
        }
        if (verify_bundle(&o, &b, &host, &r, tmp))
            goto fail;
    }

    doc = build_receipt(&o, &b, bundle_ok, &host, &r);
    if (!doc) {
        repro_error_set(REPRO_EIO, "verify: cannot build the receipt");
        goto fail;
    }
    if (o.out_path && repro_receipt_write(o.out_path, doc, key))
        goto fail;
    if (o.out_path && !key)
        fprintf(stderr, "repro: warning: %s is not signed (no --key)\n", o.out_path);
    if (o.json) {
        char *t = repro_receipt_text(doc);
        if (t)
            fputs(t, stdout);
        free(t);
    } else {
        printf("repro verify %s: %s\n", o.bundle_dir,
               json_string_value(json_object_get(doc, "verdict_text")));
        if (bundle_ok)
            printf("  %s, seed %s, %ld steps; submitter class %s, host class %s\n", b.experiment,
                   b.seed, b.steps, b.env_class, host.class_id);
        printf("  comparison: %s (%s)\n", r.comparison[0] ? r.comparison : "none", r.why);
        size_t i;
        json_t *v;
        json_array_foreach(r.reasons, i, v) printf("  reason: %s\n", json_string_value(v));
        if (bundle_ok)
            printf("  claimed chain %s\n", b.chain_hex);
        if (r.have_host_chain) {
            char hx[65];
            repro_digest_hex(&r.host_chain, hx);
            printf("  re-run  chain %s\n", hx);
        }
        if (o.out_path)
            printf("  receipt %s (%s)\n", o.out_path, key ? "signed" : "NOT signed");
    }
    exit_code = r.verdict == V_REPRODUCED ? REPRO_EXIT_OK
                : r.verdict == V_INVALID  ? REPRO_EXIT_USAGE
                                          : REPRO_EXIT_MISMATCH;
    if (r.verdict == V_INVALID)
        fprintf(stderr, "repro: invalid submission: %s\n",
                json_string_value(json_array_get(r.reasons, 0)));
    exit_code = repro_finish_stdout(exit_code);
    goto cleanup;
fail:
    exit_code = repro_report_error();
cleanup:
    if (tmp[0])
        rmdir(tmp);
    json_decref(doc);
    json_decref(r.reasons);
    repro_bundle_release(&b);
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
    printf("%s: valid receipt, signed by key id %.16s\n", path,
           json_string_value(json_object_get(json_object_get(doc, "signature"), "key_id")));
    printf("  verdict: %s\n", json_string_value(json_object_get(doc, "verdict_text")));
    const char *t = json_string_value(json_object_get(doc, "time"));
    printf("  time: %s\n", t ? t : "?");
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
