/* Between two commits (see git.h): the first-parent range GOOD..BAD that
 * commit bisection searches, and the paths that differ between two
 * commits' trees. */
#include "history/git.h"

#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/git_impl.h"
#include "util/error.h"

/* ---- the first-parent range ----------------------------------------------- */

static int first_parent_is(git_repository *repo, const git_oid *child, const git_oid *parent)
{
    git_commit *c = NULL;
    if (git_commit_lookup(&c, repo, child) < 0)
        return 0;
    const git_oid *p = git_commit_parentcount(c) ? git_commit_parent_id(c, 0) : NULL;
    int ok = p && git_oid_equal(p, parent);
    git_commit_free(c);
    return ok;
}

static int hide_good(const git_oid *id, void *payload)
{
    return git_oid_equal(id, payload);
}

/* Newest first into *ids: a first-parent revwalk from bad with good hidden.
 * Good is hidden by a callback, not git_revwalk_hide(): libgit2 1.5.1
 * parses the ancestors of a hidden commit to mark them, and fails when good
 * is the boundary of a shallow clone (its parent is missing); the callback
 * stops the walk at good itself. */
static int walk(git_repository *repo, const git_oid *good, const git_oid *bad, git_oid **ids,
                size_t *n)
{
    git_revwalk *w = NULL;
    size_t cap = 0, k = 0;
    git_oid *v = NULL, id;
    int rc = git_revwalk_new(&w, repo);
    if (rc == 0)
        rc = git_revwalk_simplify_first_parent(w);
    if (rc == 0)
        rc = git_revwalk_push(w, bad);
    if (rc == 0)
        rc = git_revwalk_add_hide_cb(w, hide_good, (void *)good);
    if (rc < 0) {
        git_revwalk_free(w);
        return repro_git_fail(REPRO_EIO, "cannot walk the history");
    }
    while ((rc = git_revwalk_next(&id, w)) == 0) {
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            git_oid *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                free(v);
                git_revwalk_free(w);
                return repro_error_set(REPRO_ENOMEM, "out of memory");
            }
            v = nv;
        }
        v[k++] = id;
    }
    git_revwalk_free(w);
    *ids = v;
    *n = k;
    return rc == GIT_ITEROVER ? 0 : 1; /* 1: the history ended before good */
}

/* The walk alone cannot tell "good is on the chain" from "good shares
 * history with it" (a merge brought it in, or it is on another branch), so
 * the chain is checked link by link down to good. */
static int range_ids(git_repository *repo, const char *good_hex, const char *bad_hex,
                     git_oid **v, size_t *k)
{
    git_oid good, bad;
    if (git_oid_fromstr(&good, good_hex) < 0 || git_oid_fromstr(&bad, bad_hex) < 0)
        return repro_error_set(REPRO_EINVAL, "not commit ids: %s, %s", good_hex, bad_hex);
    if (git_oid_equal(&good, &bad))
        return repro_error_set(REPRO_EINVAL,
                               "GOOD and BAD are the same commit (%.7s): nothing between them "
                               "to bisect",
                               good_hex);
    int rc = walk(repo, &good, &bad, v, k);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return repro_git_fail(REPRO_EINVAL,
                              "GOOD %.7s is not an ancestor of BAD on its first-parent chain "
                              "(history ends before it: a shallow clone?)",
                              good_hex);
    int linked = *k > 0;
    for (size_t i = 0; i < *k && linked; i++)
        linked = first_parent_is(repo, &(*v)[i], i + 1 < *k ? &(*v)[i + 1] : &good);
    if (!linked)
        return repro_error_set(REPRO_EINVAL,
                               "GOOD %.7s is not an ancestor of BAD %.7s on BAD's first-parent "
                               "chain (git log --first-parent BAD must reach GOOD)",
                               good_hex, bad_hex);
    return 0;
}

int repro_git_first_parent_range(repro_git *g, const char *good, const char *bad,
                                 char (**ids)[41], size_t *n)
{
    git_oid *v = NULL;
    size_t k = 0;
    int rc = range_ids(g->repo, good, bad, &v, &k);
    char(*out)[41] = rc ? NULL : calloc(k, sizeof *out);
    if (!rc && !out)
        rc = repro_error_set(REPRO_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < k; i++) /* oldest first */
        git_oid_tostr(out[i], sizeof out[i], &v[k - 1 - i]);
    free(v);
    if (rc)
        return -1;
    *ids = out;
    *n = k;
    return 0;
}

/* ---- what a commit changed ------------------------------------------------ */

static int tree_of(git_repository *repo, const char *hex, git_tree **out)
{
    git_oid id;
    git_commit *c = NULL;
    int rc = git_oid_fromstr(&id, hex) < 0 || git_commit_lookup(&c, repo, &id) < 0 ||
             git_commit_tree(out, c) < 0;
    git_commit_free(c);
    return rc ? repro_git_fail(REPRO_EIO, "cannot read the tree of %.7s", hex) : 0;
}

/* Adds `path` to the list unless it is there already. */
static int add_path(char **paths, size_t *n, size_t cap, const char *path)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(paths[i], path))
            return 0;
    if (*n == cap || !(paths[*n] = strdup(path)))
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    (*n)++;
    return 0;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Old and new names of every delta, sorted and unique, into *paths. */
static int delta_paths(git_diff *diff, char ***paths, size_t *npaths)
{
    size_t n = git_diff_num_deltas(diff), k = 0;
    char **v = n ? calloc(2 * n, sizeof *v) : NULL;
    if (n && !v)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        if (d->old_file.path)
            rc = add_path(v, &k, 2 * n, d->old_file.path);
        if (rc == 0 && d->new_file.path)
            rc = add_path(v, &k, 2 * n, d->new_file.path);
    }
    if (k)
        qsort(v, k, sizeof *v, cmp_path);
    *paths = v;
    *npaths = k;
    return rc;
}

int repro_git_diff_paths(repro_git *g, const char *from, const char *to,
                         const char *const *prefixes, size_t nprefixes, char ***paths,
                         size_t *npaths)
{
    *paths = NULL;
    *npaths = 0;
    git_repository *repo = g->repo;
    git_tree *a = NULL, *b = NULL;
    git_diff *diff = NULL;
    git_diff_options dopt;
    git_diff_options_init(&dopt, GIT_DIFF_OPTIONS_VERSION);
    dopt.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
    dopt.pathspec.strings = (char **)prefixes;
    dopt.pathspec.count = nprefixes;
    int rc = tree_of(repo, from, &a) || tree_of(repo, to, &b) ? -1 : 0;
    if (rc == 0 && git_diff_tree_to_tree(&diff, repo, a, b, &dopt) < 0)
        rc = repro_git_fail(REPRO_EIO, "cannot diff %.7s against %.7s", to, from);
    if (rc == 0)
        rc = delta_paths(diff, paths, npaths);
    git_diff_free(diff);
    git_tree_free(a);
    git_tree_free(b);
    return rc;
}

void repro_git_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}
