/* Commit bisection (see bisect_commits.h): the range and its candidates,
 * GOOD's reference, and the binary search that goes around skipped
 * commits; each probe (checkout, build, K runs, verdict) is
 * bisect_probe.c's. */
#include "bisect/bisect_commits.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bisect/bisect_ctx.h"
#include "analysis/multirun.h"
#include "golden/golden.h"
#include "record/env.h"
#include "util/error.h"
#include "util/progress.h"

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
static int list_candidates(repro_bisect_ctx *c, const char *good, const char *bad)
{
    char(*ids)[41] = NULL;
    size_t n = 0;
    if (repro_git_first_parent_range(c->g, good, bad, &ids, &n))
        return repro_bisect_git_error();
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
static int load_golden(repro_bisect_ctx *c)
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
static void report_probe(repro_bisect_ctx *c, long idx, const char *role, int left)
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
static int search(repro_bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    long lo = -1, hi = (long)r->ncand - 1, m;
    while ((m = pick_probe(r, lo, hi)) >= 0) {
        if (repro_bisect_probe(c, &r->cand[m], NULL))
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
static int golden_fits_good(repro_bisect_ctx *c, char *why, size_t len)
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
static int good_must_be_good(repro_bisect_ctx *c, const char *why)
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
static int probe_good(repro_bisect_ctx *c, const char *why)
{
    repro_bisect_result *r = c->r;
    int golden = c->has_ref;
    if (golden)
        repro_bisect_progress(c, "GOOD %s is built too: %s", r->good.commit.short_id, why);
    if (repro_bisect_probe(c, &r->good, golden ? NULL : &c->ref))
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
static int program_reference(repro_bisect_ctx *c, repro_trace *run1)
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
        repro_bisect_match_reference(c, &r->good, run1, c->o->repeat);
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
static int probe_good_program(repro_bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    repro_trace run1;
    memset(&run1, 0, sizeof run1);
    if (repro_bisect_probe(c, &r->good, &run1))
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
static int probe_bad(repro_bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    long last = (long)r->ncand - 1;
    if (repro_bisect_probe(c, &r->cand[last], NULL))
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
static int touched_paths(repro_bisect_ctx *c)
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
static int exp_missing(repro_bisect_ctx *c, const repro_git_commit *at, const char *which)
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
static int program_in_checkout(repro_bisect_ctx *c)
{
    const char *prog = c->o->program[0];
    char *rel = NULL;
    if (prog[0] != '/' || repro_git_relpath(c->g, prog, &rel)) {
        repro_error_clear();
        return 0;
    }
    repro_error_set(
        REPRO_EINVAL,
        "bisect: %s is in your checkout (%s): every probe would run that one build. "
        "Give it relative to the repository's top level (e.g. ./%s), so that each "
        "commit runs its own from its worktree",
        prog, repro_git_workdir(c->g), rel);
    free(rel);
    return -1;
}

/* What is bisected: the experiment (in both ends' trees; its stem names
 * its goldens) or the program (named by GOOD's run, later). */
static int subject(repro_bisect_ctx *c, const repro_git_commit *badc)
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
static int make_tmp(repro_bisect_ctx *c)
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
        repro_bisect_remove_tree(c->tmp);
        c->tmp[0] = '\0';
        return -1;
    }
    snprintf(c->tmp, sizeof c->tmp, "%s", abs);
    return 0;
}

/* Everything before the first build: range, repository, experiment or
 * program, candidates, reference, worktree. */
static int setup(repro_bisect_ctx *c)
{
    repro_bisect_result *r = c->r;
    char *good_rev = NULL, *bad_rev = NULL;
    int rc = -1;
    repro_git_commit badc = {0};
    if (repro_bisect_parse_range(c->o->range, &good_rev, &bad_rev) || repro_git_open(&c->g, NULL) ||
        repro_git_lookup(c->g, good_rev, &r->good.commit) ||
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
    repro_bisect_progress(c, "%zu commit%s after GOOD %s up to BAD %s; reference: %s", r->ncand,
                          r->ncand == 1 ? "" : "s", r->good.commit.short_id, badc.short_id,
                          c->has_ref ? r->reference
                          : c->o->program
                              ? "GOOD's golden if it has one, else its own run (GOOD is built "
                                "first)"
                          : c->o->npass ? "GOOD's own run (run options given: no golden "
                                          "applies)"
                                        : "GOOD's own run (no golden for this class)");
    rc = repro_bisect_worktree_create(c, badc.id);
done:
    repro_git_commit_release(&badc);
    free(good_rev);
    free(bad_rev);
    return rc;
}

static int bisect(repro_bisect_ctx *c)
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
    repro_bisect_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.r = r;
    r->program = o->program;
    c.build = o->build && o->build[0] ? o->build : "make";
    double t0 = repro_now();
    repro_bisect_signals sigs;
    repro_bisect_signals_catch(&sigs);
    int rc = setup(&c);
    if (rc == 0)
        rc = bisect(&c);
    if (rc >= 0)
        r->outcome = rc;
    repro_bisect_worktree_remove(&c);
    repro_trace_release(&c.ref); /* (safe when never filled) */
    repro_git_free(c.g);
    repro_bisect_signals_restore(&sigs);
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
