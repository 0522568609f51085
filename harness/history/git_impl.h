/* Inside the history layer: the repository handle's fields and the helpers
 * its files share. Only harness/history/ includes this (and <git2.h>);
 * everyone else sees git.h. Conventions as in git.h: 0 or -1 with the
 * error slot set. The files call one another in one direction only:
 * git_paths.c and git_repo.c at the bottom, then git_commits.c, then
 * git_walk.c, then git_changes.c; git_dirty.c, git_range.c and
 * git_worktree.c use the bottom two. */
#ifndef REPRO_HISTORY_GIT_IMPL_H
#define REPRO_HISTORY_GIT_IMPL_H

#include <git2.h>
#include <stddef.h>

#include "history/git.h"

struct repro_git {
    git_repository *repo;
    char *workdir; /* realpath of the work tree, no trailing '/' */
    int shallow;
    /* A shallow clone's boundary commits (from $GIT_COMMON_DIR/shallow),
     * sorted: present themselves, but their parents are not. */
    size_t nboundary;
    git_oid *boundary;
};

/* ---- git_paths.c: strings and prefixes ---------------------------------- */

/* strdup that sets the error slot (NULL: "") on failure. */
char *repro_git_strdup(const char *s);
/* Grows *arr (of *cap elements of size el) to hold at least n+1. */
int repro_git_grow(void *arrp, size_t *cap, size_t n, size_t el);
/* qsort comparator for an array of char *. */
int repro_git_cmp_str(const void *a, const void *b);

/* Normalised prefixes: no leading "./", no trailing '/'. "" matches all. */
typedef struct {
    size_t n;
    char **p;
    int all; /* some prefix is "" (or there are none): everything matches */
} repro_git_prefix_set;

int repro_git_prefixes_init(repro_git_prefix_set *ps, const char *const *prefixes, size_t n);
void repro_git_prefixes_release(repro_git_prefix_set *ps);
/* Is path inside one of the prefixes (a directory takes what is under it)? */
int repro_git_prefixes_match(const repro_git_prefix_set *ps, const char *path);
/* The pathspec handed to libgit2: it only narrows the traversal (matching
 * is literal, DISABLE_PATHSPEC_MATCH); repro_git_prefixes_match decides. */
git_strarray repro_git_prefixes_pathspec(const repro_git_prefix_set *ps);

/* A growable list of strings. */
typedef struct {
    size_t n, cap;
    char **s;
} repro_git_strvec;

void repro_git_strvec_release(repro_git_strvec *v);
int repro_git_strvec_push(repro_git_strvec *v, const char *s);
/* Sorts and drops duplicates. */
void repro_git_strvec_uniq(repro_git_strvec *v);

/* ---- git_repo.c: shallow boundaries ------------------------------------- */

int repro_git_cmp_oid(const void *a, const void *b);
/* Is id one of a shallow clone's boundary commits? */
int repro_git_is_boundary(const repro_git *g, const git_oid *id);
/* A revwalk hide callback (payload: the repro_git) hiding the boundary. */
int repro_git_hide_boundary(const git_oid *id, void *payload);

/* ---- git_commits.c ------------------------------------------------------ */

int repro_git_fill_commit(git_commit *c, repro_git_commit *out);
/* "HEAD ... has no commits yet" (exit 3); returns -1. */
int repro_git_unborn_error(repro_git *g);
/* The commit `rev` names (NULL: HEAD): unknown revs fail with exit 2, an
 * unborn HEAD with exit 3; *notfound (may be NULL) is set to 1 when rev
 * simply does not exist here, so callers can choose not to fail. */
int repro_git_resolve(repro_git *g, const char *rev, git_commit **out, int *notfound);

/* ---- git_walk.c --------------------------------------------------------- */

/* Called for each commit of a walk whose first-parent diff touches the
 * prefixes, with those paths: 0 to go on, 1 to stop, -1 on error. */
typedef int (*repro_git_walk_fn)(git_commit *c, repro_git_strvec *paths, void *arg);

/* One walk from HEAD (hiding `hide` and its ancestors if non-NULL), newest
 * first. *cut is set when history ran out at a shallow boundary, and
 * boundary_id then names the boundary commit ("" if the walk failed on a
 * missing object before one was seen, which a shallow clone also means). */
int repro_git_walk_changes(repro_git *g, const git_oid *hide, const repro_git_prefix_set *ps,
                      repro_git_walk_fn fn, void *arg, char boundary_id[41], int *cut);
/* 1 when `anc` is `desc` or one of its ancestors, 0 when not, -1 on error. */
int repro_git_is_ancestor(repro_git *g, const git_oid *anc, const git_oid *desc);

#endif
