/* History walks (git_impl.h): from HEAD, newest first, each commit's
 * changed paths against its first parent, surviving shallow clones (the
 * boundary is hidden from every walk: see git_repo.c), and ancestry. */
#include "history/git.h"

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/git_impl.h"
#include "util/error.h"


/* What a shallow walk hides: the boundary, and the commits `since` and its
 * ancestors. git_revwalk_hide() cannot be used there, because 1.5.1 marks
 * a hidden commit's ancestors by parsing each of them ("we don't like
 * missing objects", revwalk.c) and fails at the boundary; so the ancestors
 * are collected here by a walk from `since` that the boundary stops. */
typedef struct {
    const repro_git *g;
    size_t n;
    git_oid *ids; /* sorted */
} hide_set;

static int hide_in_set(const git_oid *id, void *payload)
{
    const hide_set *h = payload;
    return repro_git_is_boundary(h->g, id) ||
           (h->n && bsearch(id, h->ids, h->n, sizeof *h->ids, repro_git_cmp_oid) != NULL);
}

static int hide_set_init(hide_set *h, repro_git *g, const git_oid *since)
{
    git_revwalk *w = NULL;
    git_oid oid;
    size_t cap = 0;
    int rc, ret = -1;
    memset(h, 0, sizeof *h);
    h->g = g;
    if (repro_git_grow(&h->ids, &cap, 0, sizeof *h->ids))
        return -1;
    h->ids[h->n++] = *since;
    if (git_revwalk_new(&w, g->repo) < 0 || git_revwalk_push(w, since) < 0 ||
        (g->nboundary && git_revwalk_add_hide_cb(w, repro_git_hide_boundary, (void *)g) < 0)) {
        repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
        goto cleanup;
    }
    while ((rc = git_revwalk_next(&oid, w)) == 0) {
        if (repro_git_grow(&h->ids, &cap, h->n, sizeof *h->ids))
            goto cleanup;
        h->ids[h->n++] = oid;
    }
    git_error_clear(); /* stopping on a missing object is the boundary, not a failure */
    qsort(h->ids, h->n, sizeof *h->ids, repro_git_cmp_oid);
    ret = 0;

cleanup:
    git_revwalk_free(w);
    if (ret) {
        free(h->ids);
        memset(h, 0, sizeof *h);
    }
    return ret;
}


/* The paths inside ps that commit c changed relative to its first parent,
 * into v (sorted). *boundary is set when c's first parent is missing (the
 * edge of a shallow clone): then what c changed is unknown and v stays
 * empty. A root commit is diffed against the empty tree. */
static int commit_changed_paths(repro_git *g, git_commit *c, const repro_git_prefix_set *ps,
                                repro_git_strvec *v, int *boundary)
{
    git_commit *parent = NULL;
    git_tree *old = NULL, *new = NULL;
    git_diff *diff = NULL;
    int ret = -1;
    *boundary = 0;
    if (git_commit_parentcount(c) > 0) {
        int rc = git_commit_parent(&parent, c, 0);
        if (rc == GIT_ENOTFOUND) {
            *boundary = 1;
            git_error_clear();
            return 0;
        }
        if (rc < 0)
            return repro_git_fail(REPRO_EIO, "cannot read the parent of commit %.7s",
                            git_oid_tostr_s(git_commit_id(c)));
        if (git_commit_tree(&old, parent) < 0) {
            repro_git_fail(REPRO_EIO, "cannot read the tree of commit %.7s",
                     git_oid_tostr_s(git_commit_id(parent)));
            goto cleanup;
        }
    }
    if (git_commit_tree(&new, c) < 0) {
        repro_git_fail(REPRO_EIO, "cannot read the tree of commit %.7s",
                 git_oid_tostr_s(git_commit_id(c)));
        goto cleanup;
    }
    git_diff_options opts;
    git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
    opts.flags = GIT_DIFF_DISABLE_PATHSPEC_MATCH;
    opts.pathspec = repro_git_prefixes_pathspec(ps);
    if (git_diff_tree_to_tree(&diff, g->repo, old, new, &opts) < 0) {
        repro_git_fail(REPRO_EIO, "cannot diff commit %.7s against its parent",
                 git_oid_tostr_s(git_commit_id(c)));
        goto cleanup;
    }
    size_t n = git_diff_num_deltas(diff);
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        const char *np = d->new_file.path, *op = d->old_file.path;
        if (np && repro_git_prefixes_match(ps, np) && repro_git_strvec_push(v, np))
            goto cleanup;
        if (op && (!np || strcmp(op, np)) && repro_git_prefixes_match(ps, op) &&
            repro_git_strvec_push(v, op))
            goto cleanup;
    }
    repro_git_strvec_uniq(v);
    ret = 0;

cleanup:
    git_diff_free(diff);
    git_tree_free(new);
    git_tree_free(old);
    git_commit_free(parent);
    return ret;
}

/* One walk from HEAD (hiding `hide` if non-NULL), newest first. For each
 * commit whose first-parent diff touches ps, calls fn(c, paths, arg);
 * fn returns 0 to go on, 1 to stop, -1 on error. *cut is set when history
 * ran out at a shallow boundary, and boundary_id then names the boundary
 * commit ("" if the walk itself failed on a missing object before one was
 * seen, which a shallow clone also means). */

int repro_git_walk_changes(repro_git *g, const git_oid *hide, const repro_git_prefix_set *ps,
                           repro_git_walk_fn fn, void *arg, char boundary_id[41], int *cut)
{
    git_revwalk *w = NULL;
    git_commit *c = NULL;
    repro_git_strvec paths = {0};
    hide_set hs = {g, 0, NULL};
    int ret = -1, rc;
    git_oid oid;
    boundary_id[0] = '\0';
    *cut = 0;
    if (git_repository_head_unborn(g->repo) == 1)
        return repro_git_unborn_error(g);
    if (g->shallow && hide && hide_set_init(&hs, g, hide))
        return -1;
    if (git_revwalk_new(&w, g->repo) < 0 ||
        git_revwalk_sorting(w, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME) < 0 ||
        git_revwalk_push_head(w) < 0) {
        repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
        goto cleanup;
    }
    if (g->shallow ? git_revwalk_add_hide_cb(w, hide_in_set, &hs) < 0
                   : hide && git_revwalk_hide(w, hide) < 0) {
        repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
        goto cleanup;
    }
    /* HEAD itself may be the boundary (--depth 1): the walk is then empty. */
    git_oid head;
    if (g->nboundary && git_reference_name_to_id(&head, g->repo, "HEAD") == 0 &&
        repro_git_is_boundary(g, &head)) {
        git_oid_tostr(boundary_id, 41, &head);
        *cut = 1;
    }
    while ((rc = git_revwalk_next(&oid, w)) == 0) {
        if (git_commit_lookup(&c, g->repo, &oid) < 0) {
            repro_git_fail(REPRO_EIO, "cannot read commit %s", git_oid_tostr_s(&oid));
            goto cleanup;
        }
        /* A parent on the boundary is where this walk's history runs out,
         * unless that parent is `since` or older, hidden anyway. */
        for (unsigned i = 0; !*cut && i < git_commit_parentcount(c); i++) {
            const git_oid *p = git_commit_parent_id(c, i);
            if (p && repro_git_is_boundary(g, p) &&
                !(hs.n && bsearch(p, hs.ids, hs.n, sizeof *hs.ids, repro_git_cmp_oid))) {
                git_oid_tostr(boundary_id, 41, p);
                *cut = 1;
            }
        }
        int boundary = 0;
        if (commit_changed_paths(g, c, ps, &paths, &boundary))
            goto cleanup;
        if (boundary && !*cut) {
            git_oid_tostr(boundary_id, 41, &oid);
            *cut = 1;
        }
        if (paths.n) {
            int r = fn(c, &paths, arg);
            if (r < 0)
                goto cleanup;
            if (r > 0)
                break;
        }
        repro_git_strvec_release(&paths);
        git_commit_free(c);
        c = NULL;
    }
    if (rc < 0 && rc != GIT_ITEROVER) {
        /* A shallow clone whose boundary list could not be read fails here
         * on the first missing parent (see read_shallow); what came before
         * is still right, and the caller says the list is incomplete. */
        if (!g->shallow) {
            repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
            goto cleanup;
        }
        git_error_clear();
        *cut = 1;
    }
    ret = 0;

cleanup:
    repro_git_strvec_release(&paths);
    git_commit_free(c);
    git_revwalk_free(w);
    free(hs.ids);
    return ret;
}

/* 1 when `anc` is `desc` or one of its ancestors, 0 when not, -1 on error.
 * git_graph_descendant_of() walks parents and fails on the missing ones of
 * a shallow clone, so there a walk with the boundary hidden decides (a
 * boundary commit is never yielded, so parents are checked too). */
int repro_git_is_ancestor(repro_git *g, const git_oid *anc, const git_oid *desc)
{
    if (git_oid_equal(anc, desc))
        return 1;
    if (!g->shallow) {
        int r = git_graph_descendant_of(g->repo, desc, anc);
        if (r < 0)
            return repro_git_fail(REPRO_EIO, "cannot relate commit %.7s to HEAD",
                            git_oid_tostr_s(anc));
        return r;
    }
    git_revwalk *w = NULL;
    git_oid oid;
    int found = 0;
    if (git_revwalk_new(&w, g->repo) < 0 || git_revwalk_push(w, desc) < 0 ||
        (g->nboundary && git_revwalk_add_hide_cb(w, repro_git_hide_boundary, g) < 0)) {
        git_revwalk_free(w);
        return repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
    }
    while (!found && git_revwalk_next(&oid, w) == 0) {
        git_commit *c = NULL;
        found = git_oid_equal(&oid, anc);
        if (!found && git_commit_lookup(&c, g->repo, &oid) == 0)
            for (unsigned i = 0; !found && i < git_commit_parentcount(c); i++)
                found = git_oid_equal(git_commit_parent_id(c, i), anc);
        git_commit_free(c);
    }
    git_error_clear(); /* a walk cut short by the boundary is not an error here */
    git_revwalk_free(w);
    return found;
}
