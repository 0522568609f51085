/* A temporary linked worktree (see git.h; `git worktree add` with HEAD
 * detached), in which commit bisection checks commits out and builds them
 * without touching the user's checkout. It holds its own libgit2
 * repositories, opened at the handle's work tree and at the worktree, so it
 * lives and dies apart from the handle. */
#include "history/git.h"

#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static int open_repo(repro_git *g, git_repository **out)
{
    if (git_repository_open(out, repro_git_workdir(g)) < 0)
        return repro_git_fail(REPRO_EIO, "cannot open %s", repro_git_workdir(g));
    return 0;
}

/* ---- the worktree --------------------------------------------------------- */

struct repro_git_worktree {
    git_repository *repo;     /* the user's repository */
    git_repository *wt;       /* the worktree, opened as a repository */
    git_worktree *worktree;
    git_reference *branch;    /* the worktree's branch, until its HEAD is detached */
    char name[64];
    char path[PATH_MAX];
};

/* libgit2's git_worktree_add needs a branch (it makes one named after the
 * worktree when given none), so one is made at `at`, and deleted as soon
 * as the worktree's HEAD is detached. Deleted as a reference, not with
 * git_branch_delete(): that also removes the branch's config section (it
 * has none) through a regex match that leaks in libgit2 1.5.1 with pcre2. */
static int worktree_make(repro_git_worktree *w, const git_oid *at, const char *at_hex)
{
    git_commit *commit = NULL;
    if (git_commit_lookup(&commit, w->repo, at) < 0)
        return repro_git_fail(REPRO_EIO, "cannot read commit %s", at_hex);
    int rc = git_branch_create(&w->branch, w->repo, w->name, commit, 0);
    git_commit_free(commit);
    if (rc < 0)
        return repro_git_fail(REPRO_EIO, "cannot create the branch %s for the worktree", w->name);
    git_worktree_add_options wo;
    git_worktree_add_options_init(&wo, GIT_WORKTREE_ADD_OPTIONS_VERSION);
    wo.ref = w->branch;
    if (git_worktree_add(&w->worktree, w->repo, w->name, w->path, &wo) < 0)
        return repro_git_fail(REPRO_EIO, "cannot add a worktree at %s", w->path);
    if (git_repository_open(&w->wt, w->path) < 0 ||
        git_repository_set_head_detached(w->wt, at) < 0)
        return repro_git_fail(REPRO_EIO, "cannot open the worktree at %s", w->path);
    if (git_reference_delete(w->branch) < 0)
        return repro_git_fail(REPRO_EIO, "cannot delete the temporary branch %s", w->name);
    git_reference_free(w->branch);
    w->branch = NULL;
    return 0;
}

int repro_git_worktree_add(repro_git *g, const char *name, const char *path, const char *at,
                           repro_git_worktree **out)
{
    *out = NULL;
    repro_git_worktree *w = calloc(1, sizeof *w);
    if (!w)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    snprintf(w->name, sizeof w->name, "%s", name);
    snprintf(w->path, sizeof w->path, "%s", path);
    git_oid id;
    int rc = open_repo(g, &w->repo);
    if (rc == 0 && git_oid_fromstr(&id, at) < 0)
        rc = repro_error_set(REPRO_EINVAL, "not a commit id: %s", at);
    if (rc == 0)
        rc = worktree_make(w, &id, at);
    if (rc) {
        char why[1024]; /* removing must not overwrite why it failed */
        snprintf(why, sizeof why, "%s", repro_error_message());
        int code = repro_error_code();
        repro_git_worktree_remove(w);
        return repro_error_set(code, "%s", why);
    }
    *out = w;
    return 0;
}

int repro_git_worktree_checkout(repro_git_worktree *w, const char *hex)
{
    git_oid id;
    git_commit *commit = NULL;
    if (git_oid_fromstr(&id, hex) < 0 || git_commit_lookup(&commit, w->wt, &id) < 0)
        return repro_git_fail(REPRO_EIO, "cannot read commit %s", hex);
    /* FORCE rather than SAFE: nothing in the worktree is anyone's work. */
    git_checkout_options co;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    co.checkout_strategy = GIT_CHECKOUT_FORCE;
    int rc = git_checkout_tree(w->wt, (const git_object *)commit, &co);
    git_commit_free(commit);
    if (rc < 0 || git_repository_set_head_detached(w->wt, &id) < 0)
        return repro_git_fail(REPRO_EIO, "cannot check %.7s out into the worktree", hex);
    return 0;
}

/* Safe at any point of a failed add: a worktree that was never made is
 * looked up by name (nothing to prune if it is not there). */
int repro_git_worktree_remove(repro_git_worktree *w)
{
    if (!w)
        return 0;
    int rc = 0;
    git_repository_free(w->wt);
    if (!w->worktree && w->repo && git_worktree_lookup(&w->worktree, w->repo, w->name) < 0)
        w->worktree = NULL;
    if (w->worktree) {
        git_worktree_prune_options po;
        git_worktree_prune_options_init(&po, GIT_WORKTREE_PRUNE_OPTIONS_VERSION);
        po.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_LOCKED |
                   GIT_WORKTREE_PRUNE_WORKING_TREE;
        if (git_worktree_prune(w->worktree, &po) < 0)
            rc = repro_git_fail(REPRO_EIO, "cannot prune the worktree %s", w->name);
        git_worktree_free(w->worktree);
    }
    if (w->branch) {
        git_reference_delete(w->branch);
        git_reference_free(w->branch);
    }
    git_repository_free(w->repo);
    free(w);
    return rc;
}

