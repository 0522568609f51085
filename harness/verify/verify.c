/* Verification of a submission bundle: plan, re-run, judge (see verify.h). */
#include "verify/verify.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "core/config.h"
#include "record/trace.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/progress.h"
#include "util/ulp.h"
#include "util/version.h"
#include "verify/claims.h"
#include "verify/receipt.h"
#include "verify/score.h"
#include "verify/client.h"
#include "verify/verify_program.h"

/* `repro run` exits 2 for a usage or input error: for the re-run, that is
 * the submission's fault (a config this repro refuses), not the host's. */
#define RUN_EXIT_INPUT 2

static const char *const verdict_names[] = {"reproduced",   "diverged",   "invalid submission",
                                            "exceeded limits", "build failed", "run failed",
                                            "score mismatch", "outputs differ"};

const char *repro_verdict_name(repro_verdict v)
{
    return verdict_names[v];
}

void repro_verify_verdict_text(const repro_verify_result *r, char *buf, size_t len)
{
    if (r->verdict == REPRO_VERDICT_DIVERGED)
        snprintf(buf, len, "diverged at step %ld", r->step);
    else if (r->verdict == REPRO_VERDICT_REPRODUCED && r->digests_differ)
        snprintf(buf, len, "reproduced within %s (digests differ)", r->comparison);
    else
        snprintf(buf, len, "%s", verdict_names[r->verdict]);
}

/* ---- options ------------------------------------------------------------ */

int repro_verify_policy_parse(const char *s, repro_verify_policy *p)
{
    char *end;
    memset(p, 0, sizeof *p);
    if (!strcmp(s, "bitwise")) {
        p->kind = REPRO_POLICY_BITWISE;
    } else if (!strncmp(s, "ulp:", 4)) {
        uint64_t v;
        if (repro_parse_decimal_u64(s + 4, &v) || v > 0x7fffffffu)
            return repro_error_set(REPRO_EINVAL, "verify: --policy %s: N must be 0..2^31-1", s);
        p->kind = REPRO_POLICY_ULP;
        p->ulp = (long)v;
    } else if (!strncmp(s, "rtol:", 5)) {
        double v = strtod(s + 5, &end);
        if (end == s + 5 || *end || !isfinite(v) || v < 0 || v > 1)
            return repro_error_set(REPRO_EINVAL,
                                   "verify: --policy %s: X must be a number in [0, 1]", s);
        p->kind = REPRO_POLICY_RTOL;
        p->rtol = v;
    } else {
        return repro_error_set(REPRO_EINVAL,
                               "verify: --policy %s: expected bitwise, ulp:N or rtol:X", s);
    }
    snprintf(p->text, sizeof p->text, "%s", s);
    return 0;
}

void repro_verify_opts_init(repro_verify_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_steps = 100000;
    o->max_seconds = 3600;
    o->max_memory = REPRO_VERIFY_MAX_MEMORY;
    repro_verify_policy_parse("bitwise", &o->policy);
}

/* ---- verdicts and reasons -------------------------------------------------- */

static void reason(repro_verify_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(repro_verify_result *r, const char *fmt, ...)
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

/* Sets the verdict with its reason; returns 1 ("decided") for the steps below. */
static int decide(repro_verify_result *r, repro_verdict v, long step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int decide(repro_verify_result *r, repro_verdict v, long step, const char *fmt, ...)
{
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->verdict = v;
    r->step = step;
    reason(r, "%s", buf);
    return 1;
}

/* Errors from the host itself (environment: I/O, memory, unsupported) are
 * not a verdict on the submission; everything else a bundle load reports is. */
static int is_host_error(int code)
{
    return code == REPRO_EIO || code == REPRO_ENOMEM || code == REPRO_EUNSUPPORTED;
}

/* ---- one verification: its files and state ------------------------------ */

typedef struct {
    const repro_verify_opts *o;
    const repro_bundle *b;
    repro_verify_result *r;
    char tmp[512];
    char p_cfg[1200], p_trace[1200], p_out[1200], p_err[1200];
    repro_trace claim, re;
    repro_config cfg;
    uint64_t own_vm; /* our address space before the claimed trace was read */
} verify_run;

/* Steps 3-6 below return -1 for a host-side failure (error slot), 0 to go
 * on, 1 when the verdict is decided. */

/* The traces the comparison streams must be the ones read before: a file
 * swapped in between would be judged unchecked. */
static int same_as_read(const repro_trace *before, const repro_trace *now)
{
    return before->nsteps == now->nsteps && before->has_trailer == now->has_trailer &&
           repro_digest_eq(&before->trailer_chain, &now->trailer_chain);
}

/* 3. The claimed trace, and that it is the trace the manifest claims. */
static int check_claim(verify_run *v)
{
    const repro_bundle *b = v->b;
    const repro_trace *c = &v->claim;
    repro_verify_result *r = v->r;
    char hx[65];
    if (repro_trace_scan(&v->claim, b->trace_path))
        return decide(r, REPRO_VERDICT_INVALID, 0, "claimed trace: %s", repro_error_message());
    if (!c->has_trailer)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace: truncated (no trailer): the run did not finish");
    if (strcmp(c->experiment, b->experiment))
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace is of experiment '%s', the manifest says '%s'",
                      c->experiment, b->experiment);
    if (strcmp(c->seed, b->seed))
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace was made with seed %s, the manifest says %s", c->seed,
                      b->seed);
    if (c->trailer_steps != b->steps || c->nsteps != b->steps)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace has %ld steps, the manifest says %ld", c->trailer_steps,
                      b->steps);
    if (!repro_digest_eq(&c->trailer_chain, &b->chain)) {
        repro_digest_hex(&c->trailer_chain, hx);
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace's final chain %.16s... is not the manifest's %.16s...", hx,
                      b->chain_hex);
    }
    if (c->env_class[0] && strcmp(c->env_class, b->env_class))
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "claimed trace was made in environment class %s, the manifest says %s",
                      c->env_class, b->env_class);
    return 0;
}

/* 4. The inline config, as strictly as any experiment file. */
static int check_config(verify_run *v)
{
    const repro_bundle *b = v->b;
    repro_verify_result *r = v->r;
    repro_config *cfg = &v->cfg;
    if (repro_write_file_atomic(v->p_cfg, b->config, strlen(b->config)))
        return -1;
    if (repro_config_load(cfg, v->p_cfg) || repro_config_validate(cfg))
        return decide(r, REPRO_VERDICT_INVALID, 0, "config: %s", repro_error_message());
    if (cfg->data_dataset != REPRO_DATASET_SYNTHETIC)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "config: data.dataset = idx would read files on the host; only synthetic "
                      "data can be verified");
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cfg->train_seed);
    if (strcmp(seed, b->seed) || cfg->train_steps != b->steps)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "config says seed %s and %ld steps, the manifest seed %s and %ld steps",
                      seed, (long)cfg->train_steps, b->seed, b->steps);
    repro_digest all, num;
    if (repro_config_digests(cfg, &all, &num))
        return -1;
    if (!repro_digest_eq(&num, &v->claim.numerics_digest)) {
        char hx[65], hy[65];
        repro_digest_hex(&num, hx);
        repro_digest_hex(&v->claim.numerics_digest, hy);
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "the manifest's config (numerics digest %.12s) is not the claimed trace's "
                      "(%.12s)",
                      hx, hy);
    }
    return 0;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* A figure of this process's /proc/self/status in bytes ("VmHWM", the
 * peak resident memory; "VmSize", the address space), 0 when unknown. */
static uint64_t own_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    size_t klen = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':' &&
            sscanf(line + klen + 1, " %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb * 1024;
}

/* 4b. The memory the workload will take, from the config alone, plus what
 * the verifier itself holds (its peak so far, the claimed trace streamed
 * through: one line and its parse at a time, so it does not grow with the
 * trace): over the host's limit, refused before anything is allocated for
 * the workload. */
static int check_memory(verify_run *v)
{
    repro_verify_result *r = v->r;
    const repro_memory_estimate *e = &r->memory;
    repro_memory_estimate_config(&v->cfg, &r->memory);
    r->memory_estimated = 1;
    r->verifier_bytes = own_status_bytes("VmHWM");
    uint64_t limit = v->o->max_memory;
    if (!limit || (e->total <= limit && r->verifier_bytes <= limit - e->total))
        return 0;
    if (e->total > limit)
        return decide(r, REPRO_VERDICT_EXCEEDED, 0,
                      "the workload needs about %.1f MiB (model %.1f, activations and workspaces "
                      "%.1f, loader %.1f, dataset %.1f, other %.1f); this host's limit is %.1f MiB "
                      "(--max-memory): refused before training",
                      mib(e->total),
                      mib(e->params + e->grads + e->optimizer + e->working_weights),
                      mib(e->activations + e->workspace), mib(e->loader), mib(e->dataset),
                      mib(e->other), mib(limit));
    return decide(r, REPRO_VERDICT_EXCEEDED, 0,
                  "the workload needs about %.1f MiB and the verifier itself holds %.1f MiB "
                  "(its peak so far, the claimed trace read): %.1f MiB together, over this "
                  "host's limit of %.1f MiB (--max-memory): refused before training",
                  mib(e->total), mib(r->verifier_bytes), mib(e->total + r->verifier_bytes),
                  mib(limit));
}

/* AddressSanitizer maps terabytes of shadow memory at start: under an
 * address-space limit a sanitizer build of repro cannot start at all. */
#if defined(__SANITIZE_ADDRESS__)
#define REPRO_SANITIZED_ADDRESSES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPRO_SANITIZED_ADDRESSES 1
#endif
#endif
#ifndef REPRO_SANITIZED_ADDRESSES
#define REPRO_SANITIZED_ADDRESSES 0
#endif

/* The re-run's RLIMIT_AS: as the caller set it, else max_memory plus
 * headroom for what the estimate does not count — this executable's own
 * mappings (measured on ourselves, before the claimed trace was read), a
 * stack per thread (train.threads, data.num_workers, and a few of repro's
 * own) and the malloc arenas
 * (MALLOC_ARENA_MAX=2 in the re-run's environment: one extra 64 MiB heap
 * reservation) — plus 256 MiB of slack. Address space, not memory: the
 * headroom is mostly reserved, never touched. 0: no limit (none asked
 * for, or backend = cuda, whose driver reserves address space by the
 * terabyte, or a sanitizer build, whose shadow memory does the same). */
static uint64_t address_space_limit(const verify_run *v)
{
    const repro_verify_opts *o = v->o;
    if (o->limits.as_bytes || !o->max_memory)
        return o->limits.as_bytes;
    if (v->cfg.train_backend != REPRO_BACKEND_CPU || REPRO_SANITIZED_ADDRESSES)
        return 0;
    /* glibc gives a thread RLIMIT_STACK's soft limit as its stack, a
     * default when that is unlimited (2 MiB on x86-64; counted as 32). */
    struct rlimit rl;
    uint64_t stack = 32u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        stack = rl.rlim_cur;
    uint64_t threads = (uint64_t)v->cfg.train_threads + (uint64_t)v->cfg.data_num_workers + 8;
    uint64_t base = v->own_vm ? v->own_vm : 1ull << 30;
    uint64_t headroom = base + threads * (stack + (64u << 10)) + (128ull << 20) + (256ull << 20);
    return o->max_memory > UINT64_MAX - headroom ? 0 : o->max_memory + headroom;
}

/* The last "repro: " line of a child's stderr (not a warning), without the
 * prefix: the error it exited with. Progress lines are skipped. */
static void child_error_line(const char *path, char *buf, size_t len)
{
    char *s;
    size_t n;
    buf[0] = '\0';
    if (repro_read_file_limited(path, 1 << 20, &s, &n)) {
        repro_error_clear();
        return;
    }
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!strncmp(p, "repro: ", 7) && !strstr(p, "warning"))
            snprintf(buf, len, "%.*s", (int)(l - 7), p + 7);
        p += l + (e ? 1 : 0);
    }
    free(s);
}

/* Did the re-run die of its address-space limit? `repro run` exits 3
 * saying "out of memory" when an allocation fails, or that it cannot start
 * a thread (its stack is address space too); an allocation it does not
 * check (a library's) shows as an abort or a segfault. */
static int out_of_memory(const repro_child_status *st, const char *line)
{
    if (st->how == REPRO_CHILD_SIGNALED)
        return st->code == SIGSEGV || st->code == SIGABRT || st->code == SIGBUS;
    return st->how == REPRO_CHILD_EXITED && st->code == 3 &&
           (strstr(line, "out of memory") || strstr(line, "Cannot allocate memory") ||
            strstr(line, "Resource temporarily unavailable") ||
            (strstr(line, "cannot start") && strstr(line, "thread")));
}

/* Two malloc arenas at most: each thread arena reserves 64 MiB of address
 * space, which the limit would otherwise have to allow for every thread.
 * Allocation never changes the bits. */
static const char *const rerun_env[] = {"MALLOC_ARENA_MAX=2", NULL};

/* The repro that re-runs: the caller's, or this executable. */
static const char *rerun_bin(const verify_run *v, char *self, size_t len)
{
    if (v->o->repro_bin)
        return v->o->repro_bin;
    return repro_child_self_path(self, len) ? NULL : self;
}

/* Starts `repro run CONFIG --seed S --steps N -o TRACE -q` and waits for it
 * under the time and resource limits. */
static int run_child(verify_run *v, repro_child_status *st)
{
    char self[PATH_MAX], steps[32];
    const char *bin = rerun_bin(v, self, sizeof self);
    if (!bin)
        return -1;
    snprintf(steps, sizeof steps, "%ld", v->b->steps);
    char *argv[] = {(char *)bin, "run", v->p_cfg, "--seed", (char *)v->b->seed, "--steps", steps,
                    "-o", v->p_trace, "-q", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.env_set = rerun_env;
    c.out_path = v->p_out;
    c.err_path = v->p_err;
    c.timeout_s = v->o->max_seconds;
    c.limits = v->o->limits;
    c.limits.as_bytes = v->r->as_bytes = address_space_limit(v);
    c.capture_limit = repro_child_capture_limit();
    return repro_child_run(&c, st);
}

/* Can repro start at all under the re-run's limits? `repro --version`
 * under the same ones: 1 yes; 0 no, with how it ended in why; -1 error.
 * A re-run that died under an address-space limit is the workload's doing
 * only if repro itself fits there. If not, how it dies depends on the
 * build, not on the submission: the kernel's exec kills an executable
 * whose image is larger than the limit (SIGSEGV: an ASan repro is ~9 MiB),
 * ASan aborts when its shadow memory cannot be mapped, the loader of a
 * plain one fails to map its libraries (exit 127). Only the call tells
 * them all apart from a workload's own SIGSEGV or abort. */
static int starts_under_limits(const verify_run *v, char *why, size_t len)
{
    char self[PATH_MAX];
    const char *bin = rerun_bin(v, self, sizeof self);
    if (!bin)
        return -1;
    char *argv[] = {(char *)bin, "--version", NULL};
    repro_child c = {0};
    c.argv = argv;
    c.env_set = rerun_env;
    c.timeout_s = 60;
    c.limits = v->o->limits;
    c.limits.as_bytes = v->r->as_bytes;
    repro_child_status st;
    if (repro_child_run(&c, &st))
        return -1;
    if (st.how == REPRO_CHILD_EXITED && st.code == 0)
        return 1;
    repro_child_status_text(&st, &c, why, len);
    return 0;
}

/* A re-run that ended non-zero: the host's failure (-1, REPRO_EIO) if
 * repro cannot even start under its address-space limit, whatever the
 * build (see starts_under_limits); "exceeded limits" if it ran out of
 * memory; "invalid submission" if it refused the input; else the host's
 * failure again. */
static int rerun_failed(verify_run *v, const repro_child_status *st)
{
    repro_verify_result *r = v->r;
    int code = repro_child_status_code(st);
    char line[600], why[160];
    child_error_line(v->p_err, line, sizeof line);
    int fits = r->as_bytes ? starts_under_limits(v, why, sizeof why) : 1;
    if (fits < 0)
        return -1;
    if (!fits)
        return repro_error_set(REPRO_EIO,
                               "verify: the re-run failed on this host: repro cannot start in "
                               "the %.1f MiB of address space this host allows it (`repro "
                               "--version` there %s)",
                               mib(r->as_bytes), why);
    if (r->as_bytes && out_of_memory(st, line))
        return decide(r, REPRO_VERDICT_EXCEEDED, 0,
                      "the re-run ran out of memory in the %.1f MiB of address space this "
                      "host allows it (--max-memory %.1f MiB plus headroom; the estimate "
                      "was %.1f MiB): %s",
                      mib(r->as_bytes), mib(v->o->max_memory), mib(r->memory.total),
                      line[0] ? line : repro_child_status_text(st, NULL, line, sizeof line));
    if (code == RUN_EXIT_INPUT)
        return decide(r, REPRO_VERDICT_INVALID, 0, "the re-run refused the submission: %s", line);
    char silence[1600];
    if (!line[0] && repro_child_explain_silence(v->p_err, silence, sizeof silence))
        return repro_error_set(REPRO_EIO,
                               "verify: the re-run failed on this host (exit %d) and said "
                               "nothing: %s",
                               code, silence);
    return repro_error_set(REPRO_EIO, "verify: the re-run failed on this host (exit %d): %s",
                           code, line);
}

/* 5. The re-run: a fresh process, argv only, under the limits. */
static int rerun(verify_run *v)
{
    repro_verify_result *r = v->r;
    repro_child_status st;
    double t0 = repro_now();
    r->ran = 1;
    int rc = run_child(v, &st);
    r->rerun_ms = (long)((repro_now() - t0) * 1000);
    if (rc)
        return -1;
    if (st.how == REPRO_CHILD_TIMED_OUT)
        return decide(r, REPRO_VERDICT_EXCEEDED, 0,
                      "the re-run was stopped after %g s (--max-seconds)", v->o->max_seconds);
    if (repro_child_status_code(&st) != 0)
        return rerun_failed(v, &st);
    if (repro_trace_scan(&v->re, v->p_trace))
        return -1;
    r->have_host_chain = v->re.has_trailer;
    r->host_chain = v->re.trailer_chain;
    r->have_host_final = v->re.has_final_params;
    r->host_final = v->re.final_params;
    r->digests_compared = 1;
    r->digests_differ = !v->re.has_trailer ||
                        !repro_digest_eq(&v->re.trailer_chain, &v->claim.trailer_chain);
    return 0;
}

/* ---- 6. the comparison ------------------------------------------------------ */

/* Bitwise: every step digest and the final chain. */
static int judge_bitwise(verify_run *v)
{
    repro_verify_result *r = v->r;
    const repro_trace *c = &v->claim, *re = &v->re;
    repro_divergence d;
    repro_trace hc, hre; /* the headers again: the steps are streamed */
    int rc = repro_compare_files(v->b->trace_path, v->p_trace, &hc, &hre, 1, 0, &d);
    int same = rc || (same_as_read(c, &hc) && same_as_read(re, &hre));
    repro_trace_release(&hc);
    repro_trace_release(&hre);
    if (rc)
        return decide(r, REPRO_VERDICT_INVALID, 0, "%s", repro_error_message());
    if (!same) {
        repro_divergence_release(&d);
        return decide(r, REPRO_VERDICT_INVALID, 0, "the traces changed while being verified");
    }
    /* The chain over XXH3-128 leaves is not collision-resistant: the final
     * parameters' SHA-256, when the claim has it, must agree too. */
    if (d.identical && c->has_final_params &&
        (!re->has_final_params || !repro_digest_eq(&c->final_params, &re->final_params))) {
        decide(r, REPRO_VERDICT_DIVERGED, c->nsteps,
               "the final parameters' SHA-256 differ (the step digests agree)");
    } else if (d.identical) {
        decide(r, REPRO_VERDICT_REPRODUCED, 0,
               "every step digest and the final chain are identical (%ld steps)%s", c->nsteps,
               c->has_final_params ? ", and the final parameters' SHA-256" : "");
    } else {
        long step = d.first_step ? d.first_step : d.common_steps + 1;
        if (d.first_step && d.ntensors && d.detail_step == d.first_step)
            decide(r, REPRO_VERDICT_DIVERGED, step,
                   "step %ld: the step digests differ; first differing tensor %s (the likely "
                   "origin)",
                   step, d.tensors[0].name);
        else if (d.first_step)
            decide(r, REPRO_VERDICT_DIVERGED, step, "step %ld: the step digests differ", step);
        else
            decide(r, REPRO_VERDICT_DIVERGED, step, "the claim has %ld steps, the re-run %ld",
                   c->nsteps, re->nsteps);
    }
    repro_divergence_release(&d);
    return 1;
}

static double rel(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m == 0 ? 0 : fabs(a - b) / m;
}

/* rtol:X on one tensor: L2 norm within relative error X; the sum within
 * X * sqrt(numel) * L2 (by Cauchy-Schwarz |sum| <= sqrt(n) * L2, so this
 * scales with what the sum could be; a plain relative test on a sum that
 * cancels to ~0 would fail on rounding alone); non-finite counts equal.
 * 1 (diverged, reason given) or 0. */
static int tensor_differs(repro_verify_result *r, long step, const repro_trace_tensor *ta,
                          const repro_trace_tensor *tb, const repro_verify_policy *p)
{
    if (!tb)
        return decide(r, REPRO_VERDICT_DIVERGED, step,
                      "step %ld: tensor %s is missing from the re-run", step, ta->name);
    double numel = 1;
    for (int d = 0; d < ta->ndim; d++)
        numel *= (double)ta->shape[d];
    double sum_tol = p->rtol * sqrt(numel) * fmax(ta->l2, tb->l2);
    if (ta->nonfinite == tb->nonfinite && rel(ta->l2, tb->l2) <= p->rtol &&
        fabs(ta->sum - tb->sum) <= sum_tol)
        return 0;
    return decide(r, REPRO_VERDICT_DIVERGED, step,
                  "step %ld: tensor %s: L2 %.9g vs %.9g (relative error %.3g), sum %.9g vs "
                  "%.9g, non-finite %ld vs %ld (policy %s)",
                  step, ta->name, ta->l2, tb->l2, rel(ta->l2, tb->l2), ta->sum, tb->sum,
                  ta->nonfinite, tb->nonfinite, p->text);
}

/* The loss of one step under the policy (ulp:N on its float32 bits, rtol:X
 * on its value): 1 (diverged, reason given) or 0. */
static int loss_differs(repro_verify_result *r, const repro_trace_step *a,
                        const repro_trace_step *b, const repro_verify_policy *p)
{
    if (p->kind == REPRO_POLICY_ULP) {
        uint64_t u = repro_ulp_distance_f32(a->loss_bits, b->loss_bits);
        if (u <= (uint64_t)p->ulp)
            return 0;
        return decide(r, REPRO_VERDICT_DIVERGED, a->step,
                      "step %ld: loss 0x%08x vs 0x%08x: %llu ulps apart (policy %s)", a->step,
                      a->loss_bits, b->loss_bits, (unsigned long long)u, p->text);
    }
    if (rel(a->loss_value, b->loss_value) > p->rtol ||
        isnan(a->loss_value) != isnan(b->loss_value))
        return decide(r, REPRO_VERDICT_DIVERGED, a->step,
                      "step %ld: loss %.9g vs %.9g: relative error %.3g (policy %s)", a->step,
                      a->loss_value, b->loss_value, rel(a->loss_value, b->loss_value), p->text);
    return 0;
}

/* One detail step under the policy: ulp:N on the float32 loss; rtol:X on
 * the loss and every tensor. 1 (diverged, reason given) or 0. */
static int step_differs(repro_verify_result *r, const repro_trace_step *a,
                        const repro_trace_step *b, const repro_verify_policy *p)
{
    if (loss_differs(r, a, b, p))
        return 1;
    if (p->kind == REPRO_POLICY_ULP)
        return 0;
    for (int t = 0; t < a->ntensors; t++) {
        const repro_trace_tensor *ta = &a->tensors[t], *tb = NULL;
        for (int k = 0; k < b->ntensors && !tb; k++)
            if (!strcmp(b->tensors[k].name, ta->name))
                tb = &b->tensors[k];
        if (tensor_differs(r, a->step, ta, tb, p))
            return 1;
    }
    return 0;
}

/* The first `common` steps of both traces, streamed in pairs, under the
 * policy: 1 (decided), 0 (go on, *checked steps had detail on both sides)
 * or -1. */
static int walk_tolerance(verify_run *v, long common, long *checked)
{
    repro_verify_result *r = v->r;
    repro_trace hc, hre;
    repro_trace_stream *sc = NULL, *sre = NULL;
    memset(&hre, 0, sizeof hre);
    int rc = -1;
    if (repro_trace_stream_open(&sc, &hc, v->b->trace_path) ||
        repro_trace_stream_open(&sre, &hre, v->p_trace)) {
        rc = decide(r, REPRO_VERDICT_INVALID, 0, "%s", repro_error_message());
        goto done;
    }
    rc = 0;
    for (long i = 0; i < common && !rc; i++) {
        const repro_trace_step *a, *b;
        if (repro_trace_stream_next(sc, &a) != 1 || repro_trace_stream_next(sre, &b) != 1) {
            rc = decide(r, REPRO_VERDICT_INVALID, 0, "the traces changed while being verified");
            break;
        }
        if (!a->has_detail || !b->has_detail) {
            /* Between detail steps a version 2 trace still has the loss:
             * all that ulp:N compares, part of what rtol:X does. */
            if (a->has_loss && b->has_loss) {
                *checked += v->o->policy.kind == REPRO_POLICY_ULP;
                rc = loss_differs(r, a, b, &v->o->policy);
            }
            continue;
        }
        ++*checked;
        rc = step_differs(r, a, b, &v->o->policy);
    }
done:
    repro_trace_stream_close(sc);
    repro_trace_stream_close(sre);
    repro_trace_release(&hc);
    repro_trace_release(&hre);
    return rc;
}

/* Across classes: per step, with detail on both sides, under the policy. */
static int judge_tolerance(verify_run *v)
{
    repro_verify_result *r = v->r;
    const repro_trace *c = &v->claim, *re = &v->re;
    const repro_verify_policy *p = &v->o->policy;
    if (strcmp(c->experiment, re->experiment) ||
        !repro_digest_eq(&c->numerics_digest, &re->numerics_digest))
        return decide(r, REPRO_VERDICT_INVALID, 0, "the re-run's config is not the claimed trace's");
    long common = c->nsteps < re->nsteps ? c->nsteps : re->nsteps, checked = 0;
    int rc = walk_tolerance(v, common, &checked);
    if (rc)
        return rc;
    if (c->nsteps != re->nsteps)
        return decide(r, REPRO_VERDICT_DIVERGED, common + 1,
                      "the claim has %ld steps, the re-run %ld", c->nsteps, re->nsteps);
    if (!checked && !r->digests_differ) /* identical bits are within any tolerance */
        return decide(r, REPRO_VERDICT_REPRODUCED, 0,
                      "the digests are identical (%ld steps; no per-step stats to compare)",
                      c->nsteps);
    if (!checked)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "the tolerance policy needs per-step loss and tensor stats, and the traces "
                      "have none (trace.level = step): re-submit with trace.level = tensor");
    if (r->digests_differ)
        return decide(r, REPRO_VERDICT_REPRODUCED, 0,
                      "all %ld steps with stats agree within %s (%ld steps), but the digests "
                      "differ: the claimed chain is not the re-run's, the bits were not "
                      "reproduced",
                      checked, p->text, c->nsteps);
    return decide(r, REPRO_VERDICT_REPRODUCED, 0,
                  "all %ld steps with stats agree within %s (%ld steps), and the digests are "
                  "identical",
                  checked, p->text, c->nsteps);
}

/* 6b. The claimed loss_value and eval_* fields, which the digests do not
 * cover, against the re-run's (claims.h); the re-run's final metrics go
 * to the receipt. */
static int check_claimed_metrics(verify_run *v)
{
    repro_verify_result *r = v->r;
    repro_claims c;
    if (repro_claims_check(v->b->trace_path, v->p_trace, &v->o->policy, &c)) {
        repro_claims_release(&c);
        return -1;
    }
    r->rerun_metrics = c.final;
    c.final = NULL;
    if (c.mismatch)
        return decide(r, REPRO_VERDICT_DIVERGED, c.step, "%s", c.text);
    if (c.unmatched)
        return decide(r, REPRO_VERDICT_INVALID, 0, "%s", c.text);
    return 0;
}

/* Under the host's policy, whatever class the bundle claims: the
 * submitter writes env_class, so letting a differing class loosen the
 * comparison would let any submitter choose a tolerance that ignores the
 * digests. The class is only reported (the why, the receipt). */
static int judge(verify_run *v)
{
    repro_verify_result *r = v->r;
    const repro_verify_policy *p = &v->o->policy;
    const char *cls = !strcmp(r->host.class_id, v->b->env_class)
                          ? "the submitter's claimed class is this host's"
                          : "the submitter's claimed class differs from this host's "
                            "(informational)";
    snprintf(r->comparison, sizeof r->comparison, "%s", p->text);
    snprintf(r->why, sizeof r->why, "the host's policy (--policy %s); %s", p->text, cls);
    return p->kind == REPRO_POLICY_BITWISE ? judge_bitwise(v) : judge_tolerance(v);
}

/* ---- a program bundle, and the score -------------------------------------- */

/* Does the program need the host's GPU? Asked for, or the submitter's
 * class is a CUDA one (env.c names a class by its backend first:
 * "cuda-x86_64-...", "cpu-x86_64-..."). The class is the submitter's
 * claim: it can only give the program the GPU a GPU host has to offer,
 * or have a host without one refuse the bundle. */
static int wants_gpu(const repro_verify_opts *o, const repro_bundle *b)
{
    return o->gpu || !strncmp(b->env_class, "cuda-", 5);
}

/* 5 for a program: build and run in the sandbox (verify_program.h). */
static int rerun_program(verify_run *v, repro_program_run *pr)
{
    repro_verify_result *r = v->r;
    const repro_verify_opts *o = v->o;
    repro_sandbox_opts so;
    repro_sandbox_opts_init(&so);
    so.no_sandbox = o->no_sandbox;
    /* No --max-memory, or a sanitizer build (whose shadow memory needs
     * terabytes of address space, and the program links this librepro):
     * no address-space limit, said as the largest one. */
    so.as_bytes = o->max_memory && !REPRO_SANITIZED_ADDRESSES ? o->max_memory : UINT64_MAX;
    so.wall_seconds = o->max_seconds;
    so.fsize_bytes = o->max_file_size;
    so.disk_bytes = o->max_disk;
    so.cpu_seconds = o->max_seconds > 0 ? (uint64_t)ceil(o->max_seconds) : 0;
    so.gpu = wants_gpu(o, v->b);
    r->ran = r->program_ran = 1;
    double t0 = repro_now();
    int rc = repro_program_rerun(v->b, &so, o->data_dir ? r->data_real : NULL, pr);
    r->rerun_ms = (long)((repro_now() - t0) * 1000);
    snprintf(r->sandbox, sizeof r->sandbox, "%s", pr->sandbox);
    snprintf(r->build_status, sizeof r->build_status, "%s", pr->build_status);
    snprintf(r->run_status, sizeof r->run_status, "%s", pr->run_status);
    snprintf(r->host_client, sizeof r->host_client, "%s", pr->client);
    r->build_ms = pr->build_ms;
    if (rc)
        return -1;
    static const repro_verdict verdicts[] = {REPRO_VERDICT_REPRODUCED,
                                             REPRO_VERDICT_BUILD_FAILED,
                                             REPRO_VERDICT_RUN_FAILED, REPRO_VERDICT_EXCEEDED};
    if (pr->outcome != REPRO_PROGRAM_OK)
        return decide(r, verdicts[pr->outcome], 0, "%s", pr->text);
    snprintf(v->p_trace, sizeof v->p_trace, "%s", pr->trace);
    if (repro_trace_scan(&v->re, v->p_trace))
        return decide(r, REPRO_VERDICT_RUN_FAILED, 0, "the re-run's trace: %s",
                      repro_error_message());
    r->have_host_chain = v->re.has_trailer;
    r->host_chain = v->re.trailer_chain;
    r->digests_compared = 1;
    r->digests_differ = !repro_digest_eq(&v->re.trailer_chain, &v->claim.trailer_chain);
    return 0;
}

/* The declared outputs after a reproduced run; their paths for --score. */
static int program_outputs(verify_run *v, const repro_program_run *pr, json_t *paths)
{
    const char *missing;
    repro_verify_result *r = v->r;
    r->outputs = repro_program_outputs(v->b, pr, paths, &missing);
    if (!r->outputs)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (missing)
        return decide(r, REPRO_VERDICT_RUN_FAILED, 0,
                      "the re-run did not leave its declared output '%s' (a regular file in "
                      "its directory)",
                      missing);
    return 0;
}

/* Did the host name this declared output with --unscored-output? */
static int output_unscored(const repro_verify_opts *o, const char *path)
{
    for (size_t i = 0; o->unscored_outputs && o->unscored_outputs[i]; i++)
        if (!strcmp(o->unscored_outputs[i], path))
            return 1;
    return 0;
}

/* 6c. The declared outputs against the submitter's: the host scores the
 * re-run's files, so one that is not byte for byte the submitter's means
 * the submission did not reproduce, unless the host declared that output
 * unscored. Marks each output's "unscored" in the receipt. This is the
 * one place outputs are compared: a verification that scores them on the
 * host's own data instead, where they must differ, skips it. 1 decided. */
static int compare_declared_outputs(verify_run *v)
{
    repro_verify_result *r = v->r;
    size_t i;
    json_t *e, *first = NULL;
    int differ = 0;
    if (r->has_data) /* computed from the host's data: scored, not compared */
        return 0;
    json_array_foreach(r->outputs, i, e) {
        const char *path = json_string_value(json_object_get(e, "path"));
        int unscored = output_unscored(v->o, path);
        json_object_set_new(e, "unscored", json_boolean(unscored));
        if (!unscored && !json_is_true(json_object_get(e, "identical"))) {
            differ++;
            first = first ? first : e;
        }
    }
    if (!differ)
        return 0;
    const char *path = json_string_value(json_object_get(first, "path"));
    return decide(r, REPRO_VERDICT_OUTPUTS_DIFFER, 0,
                  "the declared output '%s' is not the submitter's: sha256 %s after the "
                  "re-run, %s claimed (%d of %zu declared outputs differ; the host scores "
                  "them: --unscored-output %s if it does not score this one)",
                  path, json_string_value(json_object_get(first, "sha256")),
                  json_string_value(json_object_get(first, "claimed_sha256")), differ,
                  json_array_size(r->outputs), path);
}

/* 7. The host's score, and the claim against it. */
static int check_score(verify_run *v, const json_t *paths)
{
    repro_verify_result *r = v->r;
    const repro_bundle *b = v->b;
    double host = 0;
    if (b->is_program && v->o->score_cmd) {
        if (repro_score_run(v->o->score_cmd, paths, v->o->max_seconds, v->tmp, r->host_score,
                            &host))
            return -1;
        snprintf(r->score_by, sizeof r->score_by, "--score %s", v->o->score_cmd);
        r->has_host_score = 1;
    } else if (!b->is_program && r->rerun_metrics) {
        const char *acc = json_string_value(json_object_get(r->rerun_metrics, "eval_accuracy"));
        if (acc) {
            snprintf(r->host_score, sizeof r->host_score, "%s", acc);
            host = strtod(acc, NULL);
            snprintf(r->score_by, sizeof r->score_by, "repro's eval_accuracy of the re-run");
            r->has_host_score = 1;
        }
    }
    /* On the host's data the claim (made on the submitter's) is not the
     * host's to check: the receipt carries both. */
    if (!b->has_score || !r->has_host_score || b->score_value == host || r->has_data)
        return 0;
    return decide(r, REPRO_VERDICT_SCORE, 0,
                  "the claimed score %s is not the host's score %s (%s)", b->score,
                  r->host_score, r->score_by);
}

/* 3b. The client that wrote the claimed trace, which this host must be
 * able to re-run it with (-1 when not), and a repro package of the
 * bundle's own (client.h). */
static int check_client(verify_run *v)
{
    repro_verify_result *r = v->r;
    const repro_trace *c = &v->claim;
    r->claimed_protocol = c->client_protocol;
    if (c->client_protocol)
        snprintf(r->claimed_client, sizeof r->claimed_client, "%s %s", c->client_name,
                 c->client_version);
    repro_client_own_package(v->b->program.tree_path, r->own_package, sizeof r->own_package);
    return repro_client_check(c, v->o->bundle_dir);
}

/* Steps 3, 5 (in the sandbox), 6 and 7 for a program bundle. */
static int verify_program(verify_run *v)
{
    repro_program_run pr;
    json_t *paths = json_array();
    int rc = check_claim(v);
    if (rc == 0)
        rc = check_client(v);
    if (rc == 0)
        rc = rerun_program(v, &pr);
    if (rc == 0)
        rc = judge(v);
    /* Reproduced (decided, 1): the checks that may still reject it, each
     * 0 to go on. */
    if (rc == 1 && v->r->verdict == REPRO_VERDICT_REPRODUCED) {
        rc = check_claimed_metrics(v);
        if (rc == 0)
            rc = program_outputs(v, &pr, paths);
        if (rc == 0)
            rc = compare_declared_outputs(v);
        if (rc == 0)
            rc = check_score(v, paths);
    }
    if (v->r->program_ran)
        repro_program_cleanup(&pr);
    json_decref(paths);
    return rc;
}

/* ---- the whole verification ---------------------------------------------------- */

/* Steps 3-6 in a private temporary directory, removed afterwards. */
static int verify_bundle(const repro_verify_opts *o, repro_verify_result *r)
{
    verify_run *v = calloc(1, sizeof *v);
    if (!v)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    v->o = o;
    v->b = &r->bundle;
    v->r = r;
    v->own_vm = own_status_bytes("VmSize");
    const char *td = getenv("TMPDIR");
    snprintf(v->tmp, sizeof v->tmp, "%s/repro-verify-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(v->tmp)) {
        free(v);
        return repro_error_set_errno(REPRO_EIO, "verify: cannot create a temporary directory");
    }
    snprintf(v->p_cfg, sizeof v->p_cfg, "%s/%s.ini", v->tmp, v->b->experiment);
    snprintf(v->p_trace, sizeof v->p_trace, "%s/rerun.jsonl", v->tmp);
    snprintf(v->p_out, sizeof v->p_out, "%s/rerun.out", v->tmp);
    snprintf(v->p_err, sizeof v->p_err, "%s/rerun.err", v->tmp);
    int rc;
    if (v->b->is_program) {
        rc = verify_program(v);
    } else {
        rc = check_claim(v);
        if (rc == 0)
            rc = check_config(v);
        if (rc == 0)
            rc = check_memory(v);
        if (rc == 0)
            rc = rerun(v);
        if (rc == 0)
            rc = judge(v);
        if (rc == 1 && r->verdict == REPRO_VERDICT_REPRODUCED) {
            rc = check_claimed_metrics(v);
            if (rc == 0)
                rc = check_score(v, NULL);
        }
    }
    repro_trace_release(&v->claim);
    repro_trace_release(&v->re);
    unlink(v->p_cfg);
    unlink(v->p_trace);
    unlink(v->p_out);
    unlink(v->p_err);
    rmdir(v->tmp);
    free(v);
    return rc < 0 ? -1 : 0;
}

/* 1b. With --trusted-keys, only a signature by a pinned key is accepted
 * (the bundle's signature was verified when it was loaded). 1 decided. */
static int check_pinned(const repro_verify_opts *o, repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    if (!b->is_signed)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "the bundle is not signed, and --trusted-keys %s accepts only bundles "
                      "signed by a pinned key",
                      o->trusted->path);
    r->signer = repro_trusted_keys_find(o->trusted, b->key_id);
    if (!r->signer)
        return decide(r, REPRO_VERDICT_INVALID, 0,
                      "signed by a key that is not pinned: fingerprint %s is not in %s "
                      "(--trusted-keys)",
                      b->key_id, o->trusted->path);
    return 0;
}

/* --data and a bundle submitted with --data go together; the host's
 * directory's digest for the receipt. -1 (error slot) when not. */
static int check_data(const repro_verify_opts *o, repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    int submitted = b->is_program && b->program.has_data;
    if (submitted && !o->data_dir)
        return repro_error_set(REPRO_EINVAL,
                               "verify: %s was submitted with --data (the submitter's data: %ld "
                               "files, sha256 %s): give this host's data with --data DIR",
                               o->bundle_dir, b->program.data_files, b->program.data_sha256);
    if (!o->data_dir)
        return 0;
    if (!submitted)
        return repro_error_set(REPRO_EINVAL,
                               "verify: --data %s: %s was submitted without --data (its "
                               "program reads no REPRO_DATA)",
                               o->data_dir, o->bundle_dir);
    if (!realpath(o->data_dir, r->data_real))
        return repro_error_set_errno(REPRO_EINVAL, "verify: --data %s", o->data_dir);
    if (repro_data_digest_dir(r->data_real, &r->data))
        return repro_error_wrap(repro_error_code(), "verify");
    r->has_data = 1;
    return 0;
}

int repro_verify(const repro_verify_opts *o, repro_verify_result *r)
{
    memset(r, 0, sizeof *r);
    r->reasons = json_array();
    if (!r->reasons)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    /* The host's environment first: a failure there is ours. */
    if (repro_env_get(&r->host))
        return -1;
    snprintf(r->why, sizeof r->why, "nothing was compared");
    r->bundle_ok = repro_bundle_load(&r->bundle, o->bundle_dir) == 0;
    if (!r->bundle_ok) {
        if (is_host_error(repro_error_code()))
            return -1;
        decide(r, REPRO_VERDICT_INVALID, 0, "%s", repro_error_message());
        return 0;
    }
    if (o->trusted && check_pinned(o, r))
        return 0;
    char why[300];
    repro_sandbox_opts so;
    repro_sandbox_opts_init(&so);
    so.no_sandbox = o->no_sandbox;
    so.gpu = wants_gpu(o, &r->bundle);
    if (r->bundle.is_program && !repro_program_sandbox_ready(&so, why, sizeof why))
        return repro_error_set(REPRO_EUNSUPPORTED,
                               "verify: %s is a program bundle, and this host cannot sandbox "
                               "it: %s; or run it unsandboxed, with the host's privileges, with "
                               "--no-sandbox",
                               o->bundle_dir, why);
    if (r->bundle.is_program && !repro_sandbox_gpu_ready(&so, why, sizeof why))
        return repro_error_set(REPRO_EUNSUPPORTED,
                               "verify: %s is a program bundle that needs a GPU (%s), and this "
                               "host has none to give it: %s",
                               o->bundle_dir,
                               o->gpu ? "--gpu" : "its environment class is a CUDA one",
                               why);
    if (check_data(o, r))
        return -1;
    if (r->bundle.steps > o->max_steps) {
        decide(r, REPRO_VERDICT_EXCEEDED, 0,
               "the submission has %ld steps; this host's limit is %ld (--max-steps): refused "
               "before training",
               r->bundle.steps, o->max_steps);
        return 0;
    }
    return verify_bundle(o, r);
}

void repro_verify_result_release(repro_verify_result *r)
{
    json_decref(r->reasons);
    r->reasons = NULL;
    json_decref(r->rerun_metrics);
    r->rerun_metrics = NULL;
    json_decref(r->outputs);
    r->outputs = NULL;
    repro_bundle_release(&r->bundle);
}

/* ---- the receipt ------------------------------------------------------------------ */

static json_t *bundle_json(const repro_verify_opts *o, const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    char hx[65];
    json_t *j = json_pack("{s:s}", "path", o->bundle_dir);
    if (!r->bundle_ok && !b->manifest)
        return j;
    /* Unreadable as a bundle, the bytes may still have been read: say which. */
    repro_digest_hex(&b->manifest_digest, hx);
    json_object_set_new(j, "manifest_sha256", json_string(hx));
    if (!r->bundle_ok)
        return j;
    json_object_set_new(j, "experiment", json_string(b->experiment));
    json_object_set_new(j, "seed", json_string(b->seed));
    json_object_set_new(j, "steps", json_integer(b->steps));
    json_object_set_new(j, "trace", json_string(b->trace));
    json_object_set_new(j, "submitter_signature", json_string(b->is_signed ? "valid" : "none"));
    json_object_set_new(j, "submitter_key_id", b->is_signed ? json_string(b->key_id) : json_null());
    json_object_set_new(j, "signer",
                        json_string(r->signer ? r->signer->name : "signer not pinned"));
    json_object_set_new(j, "signer_pinned", json_boolean(r->signer != NULL));
    return j;
}

static json_t *submitter_json(const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    if (!r->bundle_ok)
        return json_null();
    json_t *j = json_pack("{s:O, s:s, s:s, s:s, s:s}", "env", b->env, "env_class", b->env_class,
                          "chain", b->chain_hex, "commit", b->commit, "repro_version",
                          b->repro_version);
    if (b->dirty >= 0) /* the receipt says whether the submitter's tree was dirty */
        json_object_set_new(j, "dirty", json_boolean(b->dirty));
    return j;
}

static json_t *host_json(const repro_verify_result *r)
{
    char hx[65];
    json_t *j = json_pack("{s:o, s:s, s:I}", "env", repro_env_to_json(&r->host), "env_class",
                          r->host.class_id, "rerun_ms", (json_int_t)r->rerun_ms);
    if (r->have_host_chain) {
        repro_digest_hex(&r->host_chain, hx);
        json_object_set_new(j, "chain", json_string(hx));
    } else {
        json_object_set_new(j, "chain", json_null());
    }
    if (r->have_host_final) { /* SHA-256 of the re-run's final parameters */
        repro_digest_hex(&r->host_final, hx);
        json_object_set_new(j, "final_params_sha256", json_string(hx));
    }
    return j;
}

/* JSON integers are int64: a saturated estimate reads as the largest. */
static json_int_t clamp_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? (json_int_t)INT64_MAX : (json_int_t)v;
}

static json_t *memory_json(const repro_verify_result *r)
{
    const repro_memory_estimate *e = &r->memory;
    if (!r->memory_estimated)
        return json_null();
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "total",
                     clamp_i64(e->total), "params", clamp_i64(e->params), "grads",
                     clamp_i64(e->grads), "optimizer", clamp_i64(e->optimizer), "working_weights",
                     clamp_i64(e->working_weights), "activations", clamp_i64(e->activations),
                     "workspace", clamp_i64(e->workspace), "loader", clamp_i64(e->loader),
                     "dataset", clamp_i64(e->dataset), "other", clamp_i64(e->other), "verifier",
                     clamp_i64(r->verifier_bytes));
}

static json_t *string_or_null(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *client_json(const repro_verify_result *r)
{
    json_t *j = json_pack("{s:o, s:o, s:o, s:i, s:o}", "claimed",
                          string_or_null(r->claimed_client), "claimed_protocol",
                          r->claimed_protocol ? json_integer(r->claimed_protocol) : json_null(),
                          "host", string_or_null(r->host_client), "host_protocol",
                          REPRO_CLIENT_PROTOCOL, "own_package", string_or_null(r->own_package));
    return j ? j : json_null();
}

/* The data the outputs came from: the host's (--data), by digest. */
static json_t *data_json(const repro_verify_result *r)
{
    if (!r->has_data)
        return json_null();
    json_t *j = json_pack("{s:s, s:I, s:I, s:s}", "sha256", r->data.sha256, "files",
                          (json_int_t)r->data.files, "bytes", clamp_i64(r->data.bytes),
                          "submitted_sha256", r->bundle.program.data_sha256);
    return j ? j : json_null();
}

static json_t *program_json(const repro_verify_opts *o, const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    if (!r->bundle_ok || !b->is_program)
        return json_null();
    const repro_bundle_program *p = &b->program;
    json_t *j = json_pack("{s:O, s:s, s:b, s:s, s:I, s:I, s:b}", "argv", p->argv, "commit",
                          p->commit, "dirty", p->dirty, "cwd", p->cwd, "tree_files",
                          (json_int_t)p->tree_files, "tree_bytes", clamp_i64(p->tree_bytes),
                          "no_sandbox", o->no_sandbox);
    json_object_set_new(j, "build", p->build ? json_string(p->build) : json_null());
    json_object_set_new(j, "sandbox", r->program_ran ? json_string(r->sandbox) : json_null());
    json_object_set_new(j, "build_status", json_string(r->build_status[0] ? r->build_status : "not run"));
    json_object_set_new(j, "run_status", json_string(r->run_status[0] ? r->run_status : "not run"));
    json_object_set_new(j, "build_ms", json_integer(r->build_ms));
    json_object_set_new(j, "outputs", r->outputs ? json_incref(r->outputs) : json_null());
    json_object_set_new(j, "python_client", client_json(r));
    json_object_set_new(j, "data", data_json(r));
    json_object_set_new(j, "outputs_compared", json_boolean(!r->has_data));
    return j;
}

static json_t *score_json(const repro_verify_result *r)
{
    const repro_bundle *b = &r->bundle;
    return json_pack("{s:o, s:o, s:o}", "claimed",
                     r->bundle_ok && b->has_score ? json_string(b->score) : json_null(), "host",
                     r->has_host_score ? json_string(r->host_score) : json_null(), "by",
                     r->has_host_score ? json_string(r->score_by) : json_null());
}

json_t *repro_verify_receipt(const repro_verify_opts *o, const repro_verify_result *r)
{
    char text[96], when[32];
    repro_verify_verdict_text(r, text, sizeof text);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *cmp = r->comparison[0] ? r->comparison : "none";
    json_t *doc = json_pack(
        "{s:i, s:s, s:s, s:I, s:O, s:b, s:s, s:{s:s, s:s, s:s}, s:o, s:{s:I, s:I, s:I, s:I}, "
        "s:o, s:o, s:o, s:o, s:O, s:s, s:s}",
        "repro_receipt", REPRO_RECEIPT_VERSION, "verdict", verdict_names[r->verdict],
        "verdict_text", text, "step",
        (json_int_t)(r->verdict == REPRO_VERDICT_DIVERGED ? r->step : 0), "reasons", r->reasons,
        "ran", r->ran, "comparison", cmp, "policy", "requested", o->policy.text, "applied", cmp,
        "why", r->why, "digests",
        r->digests_compared ? json_string(r->digests_differ ? "differ" : "identical") : json_null(),
        "limits", "max_steps", (json_int_t)o->max_steps, "max_seconds_ms",
        (json_int_t)(o->max_seconds * 1000), "max_memory_bytes", clamp_i64(o->max_memory),
        "address_space_bytes", clamp_i64(r->as_bytes), "memory_estimate", memory_json(r),
        "bundle", bundle_json(o, r), "submitter", submitter_json(r), "host", host_json(r),
        "rerun_metrics", r->rerun_metrics ? r->rerun_metrics : json_null(), "repro_version",
        REPRO_VERSION, "time", when);
    if (doc) {
        json_object_set_new(doc, "program", program_json(o, r));
        json_object_set_new(doc, "score", score_json(r));
    }
    return doc;
}
