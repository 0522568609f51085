/* Commit bisection (see bisect_commits.h): the first-parent revwalk, the
 * temporary linked worktree, one probe per commit (checkout, build, K runs,
 * comparisons) and the binary search that goes around skipped commits. */
#include "bisect/bisect_commits.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "analysis/multirun.h"
#include "bisect/bisect_program.h"
#include "record/env.h"
#include "util/child.h"
#include "util/error.h"
#include "golden/golden.h"
#include "util/progress.h"
#include "record/trace.h"

typedef struct {
    const repro_bisect_opts *o;
    repro_bisect_result *r;
    repro_git *g;             /* the user's repository, through the history layer */
    repro_git_worktree *wt;   /* the temporary linked worktree */
    char tmp[PATH_MAX];       /* mkdtemp root: the worktree and the probes' files */
    char wt_path[PATH_MAX + 8];
    char wt_name[64];
    const char *build;        /* the build command line */
    repro_trace ref;          /* GOOD's reference: its golden, or its run 1 */
    int has_ref;
    const char *ref_label;    /* "GOOD's golden" / "GOOD's run" */
    int probes;               /* probes decided so far */
    char prog_name[128];      /* a program's name, for its runs' messages */
} bisect_ctx;

/* ---- small helpers ------------------------------------------------------ */


static void progress(const bisect_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const bisect_ctx *c, const char *fmt, ...)
{
    if (c->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("bisect: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The history layer's message, prefixed "bisect: " (the code kept). */
static int bisect_error(void)
{
    char why[1024]; /* the slot's own text cannot be formatted into the slot */
    snprintf(why, sizeof why, "%s", repro_error_message());
    return repro_error_set(repro_error_code(), "bisect: %s", why);
}

static void set_verdict(repro_bisect_cand *cd, int verdict, long step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_verdict(repro_bisect_cand *cd, int verdict, long step, const char *fmt, ...)
{
    cd->verdict = verdict;
    cd->step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cd->reason, sizeof cd->reason, fmt, ap);
    va_end(ap);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0; /* keep going: remove as much as can be removed */
}

/* rm -rf, never following symlinks out of the tree. */
static void remove_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Prints the last `nlines` lines of a log to stderr, indented: the log itself
 * lives in the temporary directory, which is gone when the bisect ends. */
static void show_tail(const bisect_ctx *c, const char *path, int nlines)
{
    if (c->o->quiet)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *lines[32] = {0};
    char buf[512];
    int n = 0;
    if (nlines > 32)
        nlines = 32;
    while (fgets(buf, sizeof buf, f)) {
        free(lines[n % nlines]);
        lines[n % nlines] = strdup(buf);
        n++;
    }
    fclose(f);
    for (int i = n > nlines ? n - nlines : 0; i < n; i++) {
        char *l = lines[i % nlines];
        if (l)
            fprintf(stderr, "    | %s%s", l, l[strlen(l) - 1] == '\n' ? "" : "\n");
    }
    for (int i = 0; i < nlines; i++)
        free(lines[i]);
}

/* Prints a message of several lines to stderr, indented as show_tail does. */
static void show_text(const bisect_ctx *c, const char *text)
{
    for (const char *p = text; !c->o->quiet && *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(stderr, "    | %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* ---- interruption ---------------------------------------------------------- */

/* Children run in their own process group (see spawn_logged), so Ctrl-C
 * reaches only repro: the handler notes it, the child's group gets the same
 * signal, and the worktree is still removed on the way out. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

typedef struct {
    struct sigaction old_int, old_term;
} signal_state;

static void signals_catch(signal_state *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    /* A signal our parent chose to ignore (nohup, a background job) stays ignored. */
    if (s->old_int.sa_handler == SIG_IGN)
        sigaction(SIGINT, &s->old_int, NULL);
    if (s->old_term.sa_handler == SIG_IGN)
        sigaction(SIGTERM, &s->old_term, NULL);
}

static void signals_restore(const signal_state *s)
{
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
}

static int check_interrupted(void)
{
    if (interrupted)
        return repro_error_set(128 + interrupted, "bisect: interrupted (signal %d)",
                               (int)interrupted);
    return 0;
}

/* ---- children ------------------------------------------------------------- */

/* The children's environment: ours, minus what would make them act on
 * something other than the worktree. make's MAKEFLAGS and friends (when
 * repro itself runs under make, as `make check` does, `BUILD=...` and -j
 * settings would leak into the user's build command); GIT_DIR and friends
 * (set in git hooks and `git bisect run`, they would point the build and
 * `repro run` at the user's checkout instead of the worktree). */
static const char *const scrubbed[] = {"MAKEFLAGS",      "MFLAGS",       "MAKELEVEL",
                                       "MAKEOVERRIDES",  "GIT_DIR",      "GIT_WORK_TREE",
                                       "GIT_INDEX_FILE", "GIT_COMMON_DIR", NULL};

/* Runs `path argv...` in `cwd` with stdin from /dev/null and stdout and
 * stderr appended to `log`, and waits. It leads its own process group
 * (child.h), so that an interruption reaches everything it started (make's
 * compilers too), and not a stray grandchild left writing into a worktree
 * that is being removed: an interruption is forwarded to that group.
 * *status: the exit status, 128+signal, or 127 when it could not be
 * started (as a shell says for a missing command). Returns -1 only when
 * interrupted or when waiting fails. */
static int spawn_logged(const char *cwd, const char *path, char *const argv[], const char *log,
                        int *status)
{
    repro_child c = {0};
    c.path = path;
    c.argv = argv;
    c.cwd = cwd;
    c.env_unset = scrubbed;
    c.out_path = log;
    c.append = 1;
    c.err_to_out = 1;
    c.interrupt = &interrupted;
    repro_child_status st;
    if (repro_child_start(&c)) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "repro bisect: %s\n", repro_error_message());
            fclose(f);
        }
        repro_error_clear();
        *status = 127;
        return check_interrupted();
    }
    if (repro_child_wait(&c, &st)) {
        *status = 127;
        return -1;
    }
    *status = repro_child_status_code(&st);
    return check_interrupted();
}

/* ---- the range and its candidates --------------------------------------- */

int repro_bisect_parse_range(const char *arg, char **good, char **bad)
{
    const char *dots = arg ? strstr(arg, "..") : NULL;
    if (!dots || dots == arg || !dots[2] || dots[2] == '.' || strstr(dots + 2, ".."))
        return repro_error_set(REPRO_EINVAL,
                               "bisect: --commits %s: expected GOOD..BAD, two revs joined by "
                               "'..' (e.g. v1.0..HEAD)",
                               arg ? arg : "");
    char *g = strndup(arg, (size_t)(dots - arg)), *b = strdup(dots + 2);
    if (!g || !b) {
        free(g);
        free(b);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    *good = g;
    *bad = b;
    return 0;
}

/* Fills r->cand (oldest first): BAD's first-parent chain after GOOD. */
static int list_candidates(bisect_ctx *c, const char *good, const char *bad)
{
    char(*ids)[41] = NULL;
    size_t n = 0;
    if (repro_git_first_parent_range(c->g, good, bad, &ids, &n))
        return bisect_error();
    c->r->cand = calloc(n, sizeof *c->r->cand);
    c->r->steps = calloc(n + 1, sizeof *c->r->steps);
    if (!c->r->cand || !c->r->steps) {
        free(ids);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (repro_git_lookup(c->g, ids[i], &c->r->cand[i].commit)) {
            free(ids);
            return -1;
        }
        c->r->ncand = i + 1;
    }
    free(ids);
    return 0;
}

/* ---- GOOD's golden -------------------------------------------------------- */

/* The golden of GOOD for this environment class, read from GOOD's tree (not
 * the work tree: the reference is what was blessed as of GOOD) through a
 * temporary file, since the trace reader reads files. 0 with c->has_ref set,
 * or 0 without it when GOOD has no golden for this class. */
static int load_golden(bisect_ctx *c)
{
    char rel[256], tmp[PATH_MAX + 32];
    snprintf(rel, sizeof rel, "golden/%s/%s.jsonl", c->r->exp_name, c->r->env_class);
    void *data = NULL;
    size_t len = 0;
    if (repro_git_read_blob(c->g, c->r->good.commit.id, rel, &data, &len)) {
        repro_error_clear();
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s/good-golden.jsonl", c->tmp);
    FILE *f = fopen(tmp, "w");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    free(data);
    if (!ok)
        return repro_error_set_errno(REPRO_EIO, "bisect: writing %s", tmp);
    if (repro_trace_read(&c->ref, tmp)) {
        char why[1024]; /* the slot's own text cannot be formatted into the slot */
        snprintf(why, sizeof why, "%s", repro_error_message());
        return repro_error_set(REPRO_EINVAL, "bisect: GOOD's golden %s cannot be read: %s",
                               rel, why);
    }
    c->has_ref = 1;
    c->ref_label = "GOOD's golden";
    snprintf(c->r->reference, sizeof c->r->reference, "GOOD's golden %s", rel);
    return 0;
}

/* ---- the worktree --------------------------------------------------------- */

/* A linked worktree (git.h) in a fresh temporary directory, so probes
 * never touch the user's checkout. */
static int worktree_create(bisect_ctx *c, const char *at)
{
    snprintf(c->wt_path, sizeof c->wt_path, "%s/wt", c->tmp);
    snprintf(c->wt_name, sizeof c->wt_name, "repro-bisect-%ld", (long)getpid());
    if (repro_git_worktree_add(c->g, c->wt_name, c->wt_path, at, &c->wt))
        return bisect_error();
    return 0;
}

/* Removes the worktree and the temporary directory. Safe to call at any
 * point of a failed setup. */
static void worktree_remove(bisect_ctx *c)
{
    if (repro_git_worktree_remove(c->wt))
        fprintf(stderr, "repro: bisect: %s (git worktree prune removes it)\n",
                repro_error_message());
    c->wt = NULL;
    if (c->tmp[0])
        remove_tree(c->tmp);
}

/* Checks commit `hex` out into the worktree: only what differs is written,
 * so every probe after the first is an incremental build, which is what
 * makes a bisect fast. */
static int checkout(bisect_ctx *c, const char *hex)
{
    return repro_git_worktree_checkout(c->wt, hex) ? bisect_error() : 0;
}

/* ---- one probe ------------------------------------------------------------- */

/* Builds the checked-out commit with the user's command line. It is theirs,
 * with pipes, && and redirections, so /bin/sh -c runs it: the one place in
 * repro where going through a shell is right. */
static int build(bisect_ctx *c, const char *log, int *status)
{
    char *argv[] = {"sh", "-c", (char *)c->build, NULL};
    c->r->builds++;
    return spawn_logged(c->wt_path, "/bin/sh", argv, log, status);
}

/* The commit's own `./repro run EXP -q -o TRACE [run options]`, in the
 * worktree. */
static int run_once(bisect_ctx *c, const char *trace, const char *log, int *status)
{
    char self[PATH_MAX + 16];
    snprintf(self, sizeof self, "%s/repro", c->wt_path);
    char *argv[8 + 2 * 64] = {"./repro", "run", c->r->exp_rel, "-q", "-o", (char *)trace};
    int n = 6;
    for (int i = 0; i < c->o->npass && n < (int)(sizeof argv / sizeof argv[0]) - 1; i++)
        argv[n++] = c->o->pass[i];
    argv[n] = NULL;
    c->r->runs++;
    return spawn_logged(c->wt_path, self, argv, log, status);
}

/* Compares runs 2..K with run 1: any difference is nondeterminism at this
 * commit, so it is bad whatever the reference says. 1 when all agree. */
static int runs_agree(repro_bisect_cand *cd, const repro_trace *runs, int k)
{
    for (int i = 1; i < k; i++) {
        repro_divergence d;
        if (repro_compare_traces(&runs[0], &runs[i], &d)) {
            set_verdict(cd, REPRO_BISECT_SKIP, 0, "runs 1 and %d cannot be compared: %s", i + 1,
                        repro_error_message());
            repro_error_clear();
            return 0;
        }
        int same = d.identical;
        long step = d.first_step, sa = d.steps_a, sb = d.steps_b;
        repro_divergence_release(&d);
        if (same)
            continue;
        if (step)
            set_verdict(cd, REPRO_BISECT_BAD, step, "runs disagree at step %ld", step);
        else
            set_verdict(cd, REPRO_BISECT_BAD, 0, "runs disagree: run 1 has %ld steps, run %d %ld",
                        sa, i + 1, sb);
        return 0;
    }
    return 1;
}

/* The reason a comparison refused, without the temporary paths it names:
 * "(numerics digest a vs b): train.lr 0.05 vs 0.02" or "experiments: x vs y". */
static const char *refusal(const char *msg)
{
    const char *p = strstr(msg, "different configs ");
    if (p)
        return p + strlen("different configs ");
    p = strstr(msg, "different ");
    return p ? p : msg;
}

/* Run 1 against GOOD's reference (a run that is a prefix of it, or it of the
 * run, matches, as in `repro check`). Without a reference yet (GOOD's own
 * probe) agreeing runs are good. */
static void match_reference(bisect_ctx *c, repro_bisect_cand *cd, const repro_trace *run1, int k)
{
    if (!c->has_ref) {
        set_verdict(cd, REPRO_BISECT_GOOD, 0, "%d run%s agree", k, k == 1 ? "" : "s");
        return;
    }
    repro_divergence d;
    if (repro_compare_traces(&c->ref, run1, &d)) {
        set_verdict(cd, REPRO_BISECT_BAD, 0, "%s: its config differs from %s %s",
                    c->o->program ? "the recorded config changed" : "the experiment file changed",
                    c->ref_label, refusal(repro_error_message()));
        repro_error_clear();
        return;
    }
    int match = d.identical || (d.first_step == 0 && d.common_steps > 0);
    long step = d.first_step;
    repro_divergence_release(&d);
    if (match)
        set_verdict(cd, REPRO_BISECT_GOOD, 0, "%d run%s agree, match %s", k, k == 1 ? "" : "s",
                    c->ref_label);
    else if (step)
        set_verdict(cd, REPRO_BISECT_BAD, step, "differs from %s at step %ld", c->ref_label, step);
    else
        set_verdict(cd, REPRO_BISECT_BAD, 0, "no step in common with %s", c->ref_label);
}

/* The commit's own `./repro run EXP` K times into runs[0..K): 0, 1 when
 * the commit cannot be tested (its verdict says why), -1 to stop. */
static int exp_runs(bisect_ctx *c, repro_bisect_cand *cd, const char *dir, repro_trace *runs)
{
    int k = c->o->repeat;
    for (int i = 0; i < k; i++) {
        char trace[PATH_MAX + 64], log[PATH_MAX + 64];
        snprintf(trace, sizeof trace, "%s/run-%d/trace.jsonl", dir, i + 1);
        snprintf(log, sizeof log, "%s/run-%d.log", dir, i + 1);
        progress(c, "%s: run %d/%d", cd->commit.short_id, i + 1, k);
        int st;
        if (run_once(c, trace, log, &st))
            return -1;
        if (st != 0) {
            set_verdict(cd, REPRO_BISECT_SKIP, 0, "run %d exited %d", i + 1, st);
            show_tail(c, log, 8);
            return 1;
        }
        if (repro_trace_read(&runs[i], trace)) {
            set_verdict(cd, REPRO_BISECT_SKIP, 0, "run %d's trace cannot be read: %s", i + 1,
                        repro_error_message());
            repro_error_clear();
            return 1;
        }
    }
    return 0;
}

/* The user's program K times, in the worktree, through the runner
 * protocol (bisect_program.h): 0, 1 when it cannot be tested at this
 * commit (skipped), -1 to stop. */
static int program_runs(bisect_ctx *c, repro_bisect_cand *cd, const char *dir, repro_trace *runs)
{
    const repro_bisect_opts *o = c->o;
    repro_bisect_program_spec s = {0};
    s.argv = o->program;
    s.name = c->prog_name;
    s.cwd = c->wt_path;
    s.dir = dir;
    s.repeat = o->repeat;
    s.timeout_s = o->timeout_s;
    s.pass = o->pass;
    s.npass = o->npass;
    s.env_unset = scrubbed;
    s.interrupt = &interrupted;
    progress(c, "%s: running %s %d time%s", cd->commit.short_id, o->program[0], o->repeat,
             o->repeat == 1 ? "" : "s");
    char why[512], detail[4096];
    c->r->runs += o->repeat;
    int rc = repro_bisect_program_runs(&s, runs, why, sizeof why, detail, sizeof detail);
    if (check_interrupted())
        return -1;
    if (rc == 1) {
        set_verdict(cd, REPRO_BISECT_SKIP, 0, "%s", why);
        show_text(c, detail);
    }
    return rc;
}

/* Runs the built commit K times and judges it. `keep`: where run 1's trace
 * goes when the commit is good (GOOD's probe makes it the reference). */
static int test_runs(bisect_ctx *c, repro_bisect_cand *cd, const char *dir, repro_trace *keep)
{
    int k = c->o->repeat;
    repro_trace *runs = calloc((size_t)k, sizeof *runs);
    if (!runs)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = c->o->program ? program_runs(c, cd, dir, runs) : exp_runs(c, cd, dir, runs);
    if (rc == 0 && runs_agree(cd, runs, k))
        match_reference(c, cd, &runs[0], k);
    if (rc == 0 && keep && cd->verdict == REPRO_BISECT_GOOD) {
        *keep = runs[0];
        memset(&runs[0], 0, sizeof runs[0]);
    }
    for (int i = 0; i < k; i++) /* (safe on the zeroed ones) */
        repro_trace_release(&runs[i]);
    free(runs);
    return rc < 0 ? -1 : 0;
}

/* One probe: check out, build, run, judge. A build or run that fails makes
 * the commit "skip" (git bisect's 125), not an error. Returns -1 only for
 * what stops the whole bisect (libgit2, interruption). */
static int probe(bisect_ctx *c, repro_bisect_cand *cd, repro_trace *keep)
{
    char dir[PATH_MAX + 32], log[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/probe-%d", c->tmp, c->probes + 1);
    snprintf(log, sizeof log, "%s/build.log", dir);
    if (mkdir(dir, 0755) && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "bisect: cannot create %s", dir);
    progress(c, "%s: checking out %s", cd->commit.short_id, cd->commit.summary);
    if (checkout(c, cd->commit.id))
        return -1;
    progress(c, "%s: building (%s)", cd->commit.short_id, c->build);
    int st, rc;
    if ((rc = build(c, log, &st)) == 0) {
        if (st != 0) {
            set_verdict(cd, REPRO_BISECT_SKIP, 0, "build failed (exit %d)", st);
            show_tail(c, log, 10);
        } else {
            rc = test_runs(c, cd, dir, keep);
        }
    }
    remove_tree(dir);
    return rc;
}

/* ---- the search --------------------------------------------------------- */

/* How many more probes a binary search over the untested commits strictly
 * between lo and hi needs, at most: ceil(log2(u + 1)). */
static int probes_left(const repro_bisect_result *r, long lo, long hi)
{
    long u = 0;
    for (long i = lo + 1; i < hi; i++)
        u += r->cand[i].verdict == REPRO_BISECT_UNTESTED;
    int k = 0;
    while ((1L << k) < u + 1)
        k++;
    return k;
}

/* Records a decided probe and prints its line. */
static void report_probe(bisect_ctx *c, long idx, const char *role, int left)
{
    repro_bisect_result *r = c->r;
    r->steps[r->nsteps++] = idx;
    c->probes++;
    if (c->o->steps) {
        repro_bisect_print_probe(c->o->steps, idx < 0 ? &r->good : &r->cand[idx], role, c->probes,
                                 c->probes + left);
        fflush(c->o->steps);
    }
}

/* The commit to probe between lo (good) and hi (bad): the middle one, or
 * when it was skipped its nearest untested neighbour, alternating above and
 * below (git bisect also moves away from a skipped midpoint); -1 when only
 * skipped commits are left between them. */
static long pick_probe(const repro_bisect_result *r, long lo, long hi)
{
    long mid = lo + (hi - lo) / 2;
    for (long d = 0; mid + d < hi || mid - d > lo; d++) {
        if (mid + d > lo && mid + d < hi && r->cand[mid + d].verdict == REPRO_BISECT_UNTESTED)
            return mid + d;
        if (d && mid - d > lo && r->cand[mid - d].verdict == REPRO_BISECT_UNTESTED)
            return mid - d;
    }
    return -1;
}

/* Binary search with skips between GOOD (index -1, good) and BAD (last,
 * verified bad). Invariant: cand[lo] (or GOOD) is good, cand[hi] is bad;
 * the first bad commit is in (lo, hi]. */
static int search(bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    long lo = -1, hi = (long)r->ncand - 1, m;
    while ((m = pick_probe(r, lo, hi)) >= 0) {
        if (probe(c, &r->cand[m], NULL))
            return -1;
        if (r->cand[m].verdict == REPRO_BISECT_GOOD)
            lo = m;
        else if (r->cand[m].verdict == REPRO_BISECT_BAD)
            hi = m;
        report_probe(c, m, NULL, probes_left(r, lo, hi));
    }
    if (hi - lo == 1) {
        r->first_bad = hi;
        return REPRO_BISECT_FOUND;
    }
    r->range_lo = lo + 1; /* all skipped up to hi: any of them, or hi, is the first bad */
    r->range_hi = hi;
    return REPRO_BISECT_UNRESOLVED;
}

/* Does GOOD's golden still describe GOOD? Its header records the tree ids
 * of the numerics paths it was blessed with; when GOOD has the same ones
 * (and the bless was clean), GOOD gives the golden's bits and need not be
 * built. A golden carried forward past a numerics change that nobody
 * re-blessed would otherwise make every commit look bad. 1 when it fits;
 * 0 with `why` filled when GOOD must be checked against it. */
static int golden_fits_good(bisect_ctx *c, char *why, size_t len)
{
    json_t *gold = json_object_get((json_t *)c->ref.header_json, "golden");
    json_t *trees = json_object_get(gold, "numerics_trees");
    const char *at = json_string_value(json_object_get(json_object_get(gold, "commit"), "short"));
    const char *path;
    json_t *v;
    if (!json_is_object(trees) || !json_object_size(trees)) {
        snprintf(why, len, "the golden records no tree ids");
        return 0;
    }
    if (json_is_true(json_object_get(gold, "dirty"))) {
        snprintf(why, len, "the golden was blessed on a dirty tree");
        return 0;
    }
    json_object_foreach(trees, path, v) {
        char id[41];
        if (repro_git_tree_id(c->g, c->r->good.commit.id, path, id)) {
            repro_error_clear();
            id[0] = '\0';
        }
        if (!json_is_string(v) || strcmp(id, json_string_value(v))) {
            snprintf(why, len, "%s changed between the golden's bless at %s and GOOD", path,
                     at ? at : "?");
            return 0;
        }
    }
    return 1;
}

/* After GOOD's probe: it must be good, or there is nothing to bisect from.
 * `why`: why a golden that may not fit GOOD was checked, or NULL. */
static int good_must_be_good(bisect_ctx *c, const char *why)
{
    const repro_bisect_cand *g = &c->r->good;
    if (g->verdict == REPRO_BISECT_SKIP)
        return repro_error_set(REPRO_EINVAL,
                               "bisect: GOOD %s is not good: it cannot be tested (%s)",
                               g->commit.short_id, g->reason);
    if (g->verdict == REPRO_BISECT_GOOD)
        return 0;
    if (!why)
        return repro_error_set(REPRO_EINVAL, "bisect: GOOD %s is not good: %s",
                               g->commit.short_id, g->reason);
    return repro_error_set(REPRO_EINVAL,
                           "bisect: GOOD %s is not good: %s (%s; bisect from the golden's "
                           "commit, or re-bless)",
                           g->commit.short_id, g->reason, why);
}

/* GOOD's own probe. Without a golden, its K runs must agree and its run 1
 * becomes the reference; with a golden that may not fit it (`why`), its
 * runs must agree and match the golden. */
static int probe_good(bisect_ctx *c, const char *why)
{
    repro_bisect_result *r = c->r;
    int golden = c->has_ref;
    if (golden)
        progress(c, "GOOD %s is built too: %s", r->good.commit.short_id, why);
    if (probe(c, &r->good, golden ? NULL : &c->ref))
        return -1;
    report_probe(c, -1, "GOOD", 1 + probes_left(r, -1, (long)r->ncand - 1));
    if (good_must_be_good(c, golden ? why : NULL))
        return -1;
    if (golden)
        return 0;
    c->has_ref = 1;
    c->ref_label = "GOOD's run";
    snprintf(r->reference, sizeof r->reference,
             "GOOD's run 1 (GOOD has no golden/%s/%s.jsonl)", r->exp_name, r->env_class);
    return 0;
}

/* ---- a program's reference ---------------------------------------------- */

/* GOOD's program has run and its runs agree: its run 1 names the golden
 * (golden/<--name, else the experiment it records>/<the class it records,
 * else this machine's>.jsonl at GOOD, as `repro check -- PROGRAM` looks it
 * up). With one, GOOD's run 1 must match it and it is the reference; else
 * run 1 is. Takes run1 (released or kept). */
static int program_reference(bisect_ctx *c, repro_trace *run1)
{
    repro_bisect_result *r = c->r;
    const char *name = c->o->name ? c->o->name : run1->experiment;
    const char *none = NULL; /* why no golden applies, beyond "there is none" */
    snprintf(r->exp_name, sizeof r->exp_name, "%s", name);
    if (run1->env_class[0])
        snprintf(r->env_class, sizeof r->env_class, "%s", run1->env_class);
    if (!c->o->name && repro_golden_name_check(name)) {
        repro_error_clear();
        none = "the name it records cannot name a golden (give --name)";
    } else if (c->o->overridden) {
        none = "--seed/--set change the run, so no golden applies";
    } else if (load_golden(c)) {
        repro_trace_release(run1);
        return -1;
    }
    if (c->has_ref) { /* GOOD's golden: GOOD's run 1 must match it */
        match_reference(c, &r->good, run1, c->o->repeat);
        repro_trace_release(run1);
        return 0;
    }
    c->ref = *run1;
    memset(run1, 0, sizeof *run1);
    c->has_ref = 1;
    c->ref_label = "GOOD's run";
    if (none)
        snprintf(r->reference, sizeof r->reference, "GOOD's run 1 (%s)", none);
    else
        snprintf(r->reference, sizeof r->reference,
                 "GOOD's run 1 (GOOD has no golden/%s/%s.jsonl)", r->exp_name, r->env_class);
    return 0;
}

/* A program's GOOD is always built and run: its runs must agree, and then
 * its golden, if it has one, is checked and becomes the reference. */
static int probe_good_program(bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    repro_trace run1;
    memset(&run1, 0, sizeof run1);
    if (probe(c, &r->good, &run1))
        return -1;
    if (r->good.verdict == REPRO_BISECT_GOOD && program_reference(c, &run1))
        return -1;
    repro_trace_release(&run1); /* (safe when taken or never filled) */
    report_probe(c, -1, "GOOD", 1 + probes_left(r, -1, (long)r->ncand - 1));
    return good_must_be_good(c, c->has_ref && r->good.verdict == REPRO_BISECT_BAD ? r->reference
                                                                                  : NULL);
}

/* BAD is assumed bad, as git bisect assumes; it is verified first so that a
 * range with nothing to find does not cost a whole search. */
static int probe_bad(bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    long last = (long)r->ncand - 1;
    if (probe(c, &r->cand[last], NULL))
        return -1;
    int left = r->cand[last].verdict == REPRO_BISECT_BAD ? probes_left(r, -1, last) : 0;
    report_probe(c, last, "BAD", left);
    if (r->cand[last].verdict == REPRO_BISECT_GOOD)
        return REPRO_BISECT_NOTHING;
    if (r->cand[last].verdict == REPRO_BISECT_SKIP) {
        r->range_lo = r->range_hi = last; /* cannot even say that BAD is bad */
        return REPRO_BISECT_UNRESOLVED;
    }
    return REPRO_BISECT_FOUND; /* bad: go on */
}

/* ---- what the first bad commit changed -------------------------------- */

/* The numerics paths (and the experiment file) the first bad commit changed
 * against its first parent: a tree-to-tree diff limited to those prefixes
 * (for a program, whose numerics could be anywhere: every path).
 * This is what repro_git_changes_since(parent) reports for a HEAD at the
 * first bad commit, asked directly: the user's HEAD is theirs, and the git
 * layer opened on the worktree misses a shallow clone's boundary (libgit2
 * 1.5.1 looks for `shallow` in the worktree's own git dir), where both trees
 * compared here are always present. */
static int touched_paths(bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    const char *child = r->cand[r->first_bad].commit.id;
    const char *parent = r->first_bad ? r->cand[r->first_bad - 1].commit.id : r->good.commit.id;
    const char *prefixes[16];
    size_t np = 0;
    for (int i = 0; !r->program && i < repro_numerics_npaths && np < 15; i++)
        prefixes[np++] = repro_numerics_paths[i];
    if (!r->program)
        prefixes[np++] = r->exp_rel;
    return repro_git_diff_paths(c->g, parent, child, prefixes, np, &r->paths, &r->npaths);
}

/* ---- setup and the whole run ----------------------------------------------- */

/* The experiment's stem names its golden directory (as config.c names it). */
static void exp_stem(const char *rel, char *out, size_t len)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *dot = strrchr(base, '.');
    int n = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(out, len, "%.*s", n, base);
}

/* The experiment must be in both ends' trees: each commit runs its own
 * copy, and without one at GOOD there is no reference to compare with. */
static int exp_missing(bisect_ctx *c, const repro_git_commit *at, const char *which)
{
    void *blob = NULL;
    size_t len;
    if (repro_git_read_blob(c->g, at->id, c->r->exp_rel, &blob, &len) == 0) {
        free(blob);
        return 0;
    }
    return repro_error_set(REPRO_EINVAL,
                           "bisect: %s is not a file in %s %s: the experiment must be committed "
                           "there (each commit is built and run with its own tree)",
                           c->r->exp_rel, which, at->short_id);
}

/* An absolute PROGRAM inside the user's checkout would be the same build
 * at every probe (the checkout's, not the worktree's): refused, since the
 * bisect would silently test nothing. */
static int program_in_checkout(bisect_ctx *c)
{
    const char *prog = c->o->program[0];
    char *rel = NULL;
    if (prog[0] != '/' || repro_git_relpath(c->g, prog, &rel)) {
        repro_error_clear();
        return 0;
    }
    repro_error_set(REPRO_EINVAL,
                    "bisect: %s is in your checkout (%s): every probe would run that one build. "
                    "Give it relative to the repository's top level (e.g. ./%s), so that each "
                    "commit runs its own from its worktree",
                    prog, repro_git_workdir(c->g), rel);
    free(rel);
    return -1;
}

/* What is bisected: the experiment (in both ends' trees; its stem names
 * its goldens) or the program (named by GOOD's run, later). */
static int subject(bisect_ctx *c, const repro_git_commit *badc)
{
    repro_bisect_result *r = c->r;
    if (c->o->program) {
        repro_program_name(c->o->program, c->prog_name, sizeof c->prog_name);
        return program_in_checkout(c);
    }
    if (repro_git_relpath(c->g, c->o->exp, &r->exp_rel))
        return -1;
    exp_stem(r->exp_rel, r->exp_name, sizeof r->exp_name);
    return exp_missing(c, badc, "BAD") || exp_missing(c, &r->good.commit, "GOOD") ? -1 : 0;
}

/* The temporary directory, absolute (a program runs in the worktree, and
 * is told where to write its trace). */
static int make_tmp(bisect_ctx *c)
{
    const char *tmpdir = getenv("TMPDIR");
    snprintf(c->tmp, sizeof c->tmp, "%s/repro-bisect-XXXXXX",
             tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    if (!mkdtemp(c->tmp)) {
        repro_error_set_errno(REPRO_EIO, "bisect: cannot create %s", c->tmp);
        c->tmp[0] = '\0';
        return -1;
    }
    char abs[PATH_MAX];
    if (!realpath(c->tmp, abs)) {
        repro_error_set_errno(REPRO_EIO, "bisect: cannot resolve %s", c->tmp);
        remove_tree(c->tmp);
        c->tmp[0] = '\0';
        return -1;
    }
    snprintf(c->tmp, sizeof c->tmp, "%s", abs);
    return 0;
}

/* Everything before the first build: range, repository, experiment or
 * program, candidates, reference, worktree. */
static int setup(bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    char *good_rev = NULL, *bad_rev = NULL;
    int rc = -1;
    repro_git_commit badc = {0};
    if (repro_bisect_parse_range(c->o->range, &good_rev, &bad_rev) ||
        repro_git_open(&c->g, NULL) || repro_git_lookup(c->g, good_rev, &r->good.commit) ||
        repro_git_lookup(c->g, bad_rev, &badc) || subject(c, &badc))
        goto done;
    if (list_candidates(c, r->good.commit.id, badc.id))
        goto done;
    repro_env env;
    if (repro_env_get(&env))
        goto done;
    snprintf(r->env_class, sizeof r->env_class, "%s", env.class_id);
    /* Run options change the run: no golden describes it, GOOD's run does. */
    if (make_tmp(c) || (!c->o->program && !c->o->npass && load_golden(c)))
        goto done;
    progress(c, "%zu commit%s after GOOD %s up to BAD %s; reference: %s", r->ncand,
             r->ncand == 1 ? "" : "s", r->good.commit.short_id, badc.short_id,
             c->has_ref       ? r->reference
             : c->o->program ? "GOOD's golden if it has one, else its own run (GOOD is built "
                               "first)"
                             : c->o->npass ? "GOOD's own run (run options given: no golden "
                                             "applies)"
                                           : "GOOD's own run (no golden for this class)");
    rc = worktree_create(c, badc.id);
done:
    repro_git_commit_release(&badc);
    free(good_rev);
    free(bad_rev);
    return rc;
}

static int bisect(bisect_ctx *c)
{
    char why[600] = "";
    if (c->o->program) {
        if (probe_good_program(c))
            return -1;
    } else if ((!c->has_ref || !golden_fits_good(c, why, sizeof why)) && probe_good(c, why)) {
        return -1;
    }
    int rc = probe_bad(c);
    if (rc != REPRO_BISECT_FOUND)
        return rc;
    rc = search(c);
    if (rc == REPRO_BISECT_FOUND && touched_paths(c)) {
        /* The answer stands without the list; say why it is missing. */
        fprintf(stderr, "repro: bisect: cannot list the paths the first bad commit changed: %s\n",
                repro_error_message());
        repro_error_clear();
    }
    return rc;
}

int repro_bisect_commits(const repro_bisect_opts *o, repro_bisect_result *r)
{
    memset(r, 0, sizeof *r);
    r->first_bad = r->range_lo = r->range_hi = -1;
    bisect_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.r = r;
    r->program = o->program;
    c.build = o->build && o->build[0] ? o->build : "make";
    double t0 = repro_now();
    signal_state sigs;
    signals_catch(&sigs);
    int rc = setup(&c);
    if (rc == 0)
        rc = bisect(&c);
    if (rc >= 0)
        r->outcome = rc;
    worktree_remove(&c);
    repro_trace_release(&c.ref); /* (safe when never filled) */
    repro_git_free(c.g);
    signals_restore(&sigs);
    r->seconds = repro_now() - t0;
    return rc;
}

void repro_bisect_result_release(repro_bisect_result *r)
{
    repro_git_commit_release(&r->good.commit);
    for (size_t i = 0; i < r->ncand; i++)
        repro_git_commit_release(&r->cand[i].commit);
    free(r->cand);
    free(r->steps);
    for (size_t i = 0; i < r->npaths; i++)
        free(r->paths[i]);
    free(r->paths);
    free(r->exp_rel);
    memset(r, 0, sizeof *r);
}
