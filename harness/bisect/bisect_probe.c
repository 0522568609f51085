/* One probe of commit bisection (bisect_ctx.h): the temporary worktree,
 * then per commit checkout, build, K runs (the commit's own `./repro run
 * EXP`, or the user's program through bisect_program.h) and the verdict:
 * the runs agree, and match GOOD's reference. */
#include "bisect/bisect_ctx.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "bisect/bisect_program.h"
#include "analysis/multirun.h"
#include "util/error.h"

/* ---- the worktree --------------------------------------------------------- */

/* A linked worktree (git.h) in a fresh temporary directory, so probes
 * never touch the user's checkout. */
int repro_bisect_worktree_create(repro_bisect_ctx *c, const char *at)
{
    snprintf(c->wt_path, sizeof c->wt_path, "%s/wt", c->tmp);
    snprintf(c->wt_name, sizeof c->wt_name, "repro-bisect-%ld", (long)getpid());
    if (repro_git_worktree_add(c->g, c->wt_name, c->wt_path, at, &c->wt))
        return repro_bisect_git_error();
    return 0;
}

/* Removes the worktree and the temporary directory. Safe to call at any
 * point of a failed setup. */
void repro_bisect_worktree_remove(repro_bisect_ctx *c)
{
    if (repro_git_worktree_remove(c->wt))
        fprintf(stderr, "repro: bisect: %s (git worktree prune removes it)\n",
                repro_error_message());
    c->wt = NULL;
    if (c->tmp[0])
        repro_bisect_remove_tree(c->tmp);
}

/* Checks commit `hex` out into the worktree: only what differs is written,
 * so every probe after the first is an incremental build, which is what
 * makes a bisect fast. */
static int checkout(repro_bisect_ctx *c, const char *hex)
{
    return repro_git_worktree_checkout(c->wt, hex) ? repro_bisect_git_error() : 0;
}

/* ---- one probe ------------------------------------------------------------- */

/* Builds the checked-out commit with the user's command line. It is theirs,
 * with pipes, && and redirections, so /bin/sh -c runs it: the one place in
 * repro where going through a shell is right. */
static int build(repro_bisect_ctx *c, const char *log, int *status)
{
    char *argv[] = {"sh", "-c", (char *)c->build, NULL};
    c->r->builds++;
    return repro_bisect_spawn_logged(c->wt_path, "/bin/sh", argv, log, status);
}

/* The commit's own `./repro run EXP -q -o TRACE [run options]`, in the
 * worktree. */
static int run_once(repro_bisect_ctx *c, const char *trace, const char *log, int *status)
{
    char self[PATH_MAX + 16];
    snprintf(self, sizeof self, "%s/repro", c->wt_path);
    char *argv[8 + 2 * 64] = {"./repro", "run", c->r->exp_rel, "-q", "-o", (char *)trace};
    int n = 6;
    for (int i = 0; i < c->o->npass && n < (int)(sizeof argv / sizeof argv[0]) - 1; i++)
        argv[n++] = c->o->pass[i];
    argv[n] = NULL;
    c->r->runs++;
    return repro_bisect_spawn_logged(c->wt_path, self, argv, log, status);
}

/* Compares runs 2..K with run 1: any difference is nondeterminism at this
 * commit, so it is bad whatever the reference says. 1 when all agree. */
static int runs_agree(repro_bisect_cand *cd, const repro_trace *runs, int k)
{
    for (int i = 1; i < k; i++) {
        repro_divergence d;
        if (repro_compare_traces(&runs[0], &runs[i], &d)) {
            repro_bisect_set_verdict(cd, REPRO_BISECT_SKIP, 0,
                                     "runs 1 and %d cannot be compared: %s", i + 1,
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
            repro_bisect_set_verdict(cd, REPRO_BISECT_BAD, step, "runs disagree at step %ld", step);
        else
            repro_bisect_set_verdict(cd, REPRO_BISECT_BAD, 0,
                                     "runs disagree: run 1 has %ld steps, run %d %ld", sa, i + 1,
                                     sb);
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
void repro_bisect_match_reference(repro_bisect_ctx *c, repro_bisect_cand *cd,
                                  const repro_trace *run1, int k)
{
    if (!c->has_ref) {
        repro_bisect_set_verdict(cd, REPRO_BISECT_GOOD, 0, "%d run%s agree", k, k == 1 ? "" : "s");
        return;
    }
    repro_divergence d;
    if (repro_compare_traces(&c->ref, run1, &d)) {
        repro_bisect_set_verdict(cd, REPRO_BISECT_BAD, 0, "%s: its config differs from %s %s",
                                 c->o->program ? "the recorded config changed"
                                               : "the experiment file changed",
                                 c->ref_label, refusal(repro_error_message()));
        repro_error_clear();
        return;
    }
    int match = d.identical || (d.first_step == 0 && d.common_steps > 0);
    long step = d.first_step;
    repro_divergence_release(&d);
    if (match)
        repro_bisect_set_verdict(cd, REPRO_BISECT_GOOD, 0, "%d run%s agree, match %s", k,
                                 k == 1 ? "" : "s", c->ref_label);
    else if (step)
        repro_bisect_set_verdict(cd, REPRO_BISECT_BAD, step, "differs from %s at step %ld",
                                 c->ref_label, step);
    else
        repro_bisect_set_verdict(cd, REPRO_BISECT_BAD, 0, "no step in common with %s",
                                 c->ref_label);
}

/* The commit's own `./repro run EXP` K times into runs[0..K): 0, 1 when
 * the commit cannot be tested (its verdict says why), -1 to stop. */
static int exp_runs(repro_bisect_ctx *c, repro_bisect_cand *cd, const char *dir, repro_trace *runs)
{
    int k = c->o->repeat;
    for (int i = 0; i < k; i++) {
        char trace[PATH_MAX + 64], log[PATH_MAX + 64];
        snprintf(trace, sizeof trace, "%s/run-%d/trace.jsonl", dir, i + 1);
        snprintf(log, sizeof log, "%s/run-%d.log", dir, i + 1);
        repro_bisect_progress(c, "%s: run %d/%d", cd->commit.short_id, i + 1, k);
        int st;
        if (run_once(c, trace, log, &st))
            return -1;
        if (st != 0) {
            repro_bisect_set_verdict(cd, REPRO_BISECT_SKIP, 0, "run %d exited %d", i + 1, st);
            repro_bisect_show_tail(c, log, 8);
            return 1;
        }
        if (repro_trace_read(&runs[i], trace)) {
            repro_bisect_set_verdict(cd, REPRO_BISECT_SKIP, 0, "run %d's trace cannot be read: %s",
                                     i + 1, repro_error_message());
            repro_error_clear();
            return 1;
        }
    }
    return 0;
}

/* The user's program K times, in the worktree, through the runner
 * protocol (bisect_program.h): 0, 1 when it cannot be tested at this
 * commit (skipped), -1 to stop. */
static int program_runs(repro_bisect_ctx *c, repro_bisect_cand *cd, const char *dir,
                        repro_trace *runs)
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
    s.env_unset = repro_bisect_scrubbed_env;
    s.interrupt = &repro_bisect_interrupted;
    repro_bisect_progress(c, "%s: running %s %d time%s", cd->commit.short_id, o->program[0],
                          o->repeat, o->repeat == 1 ? "" : "s");
    char why[512], detail[4096];
    c->r->runs += o->repeat;
    int rc = repro_bisect_program_runs(&s, runs, why, sizeof why, detail, sizeof detail);
    if (repro_bisect_check_interrupted())
        return -1;
    if (rc == 1) {
        repro_bisect_set_verdict(cd, REPRO_BISECT_SKIP, 0, "%s", why);
        repro_bisect_show_text(c, detail);
    }
    return rc;
}

/* Runs the built commit K times and judges it. `keep`: where run 1's trace
 * goes when the commit is good (GOOD's probe makes it the reference). */
static int test_runs(repro_bisect_ctx *c, repro_bisect_cand *cd, const char *dir, repro_trace *keep)
{
    int k = c->o->repeat;
    repro_trace *runs = calloc((size_t)k, sizeof *runs);
    if (!runs)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = c->o->program ? program_runs(c, cd, dir, runs) : exp_runs(c, cd, dir, runs);
    if (rc == 0 && runs_agree(cd, runs, k))
        repro_bisect_match_reference(c, cd, &runs[0], k);
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
int repro_bisect_probe(repro_bisect_ctx *c, repro_bisect_cand *cd, repro_trace *keep)
{
    char dir[PATH_MAX + 32], log[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/probe-%d", c->tmp, c->probes + 1);
    snprintf(log, sizeof log, "%s/build.log", dir);
    if (mkdir(dir, 0755) && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "bisect: cannot create %s", dir);
    repro_bisect_progress(c, "%s: checking out %s", cd->commit.short_id, cd->commit.summary);
    if (checkout(c, cd->commit.id))
        return -1;
    repro_bisect_progress(c, "%s: building (%s)", cd->commit.short_id, c->build);
    int st, rc;
    if ((rc = build(c, log, &st)) == 0) {
        if (st != 0) {
            repro_bisect_set_verdict(cd, REPRO_BISECT_SKIP, 0, "build failed (exit %d)", st);
            repro_bisect_show_tail(c, log, 10);
        } else {
            rc = test_runs(c, cd, dir, keep);
        }
    }
    repro_bisect_remove_tree(dir);
    return rc;
}
