/* The history layer (harness/history/, the only code that includes
 * <git2.h>): the few questions repro asks of the repository a golden
 * record is tied to (which commit, is the tree dirty, what changed in the
 * numerics paths since the golden was blessed, how a golden evolved), asked
 * through libgit2 and answered in plain structs the caller frees.
 *
 * Conventions (as the rest of harness/):
 * - Functions that can fail return 0 or -1 with the error slot set
 *   (error.h): exit 3 (REPRO_EIO) for "no usable repository" (outside
 *   a repo, bare repo, unborn HEAD, libgit2 failures), exit 2
 *   (REPRO_EINVAL) for a commit or path the caller named that does not
 *   exist. Out-parameters come first and are untouched on failure.
 * - `_release` frees what a caller-owned struct holds; `_free` frees a struct
 *   this module allocated, and `_free(NULL)` does nothing.
 * - Paths are repo-relative with '/' separators ("kernels/cpu/conv2d.c").
 * - A "prefix" names a directory or a file: "kernels" (or "kernels/")
 *   matches "kernels" itself and everything under kernels/, but not
 *   "kernels.txt"; "" matches every path. A list of prefixes is
 *   (prefixes, nprefixes); nprefixes == 0 means every path.
 * - A "rev" is anything git would accept for one commit: a full or
 *   abbreviated id, "HEAD", "HEAD~2", a branch or tag. NULL means HEAD.
 * - A repro_git handle is for one thread at a time (libgit2 repositories are
 *   not safe to share without locking); open one per thread if needed.
 *
 * Shallow clones (CI's `git clone --depth 1`) have history that stops at a
 * boundary commit whose parents are missing. Nothing here fails because of
 * that: walks stop at the boundary and set `incomplete` with a `note` saying
 * why. A boundary commit is never reported as having changed anything,
 * because without its parent what it changed cannot be known. */
#ifndef REPRO_GIT_H
#define REPRO_GIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct repro_git repro_git;

/* Discovers the repository containing start_path (NULL: the current
 * directory), searching up through parent directories as git does; works
 * in a normal clone, a shallow clone and a linked worktree (`git worktree
 * add`). Fails with exit 3 outside any repository ("not in a git repository
 * (searched from PATH): golden records are tied to commits"), for a bare
 * repository, and when libgit2 refuses the repository (e.g. it is owned by
 * another user: the message says so); with exit 2 when start_path does not
 * exist. */
int repro_git_open(repro_git **out, const char *start_path);
void repro_git_free(repro_git *g);

/* The work tree's root: absolute, symlinks resolved, no trailing '/'. For a
 * linked worktree this is the worktree, not the main checkout. */
const char *repro_git_workdir(const repro_git *g);
/* 1 when the repository is a shallow clone, else 0. */
int repro_git_is_shallow(const repro_git *g);

/* Converts `path` (absolute, or relative to the current working directory;
 * it need not exist) to a path relative to the work tree root, in *out
 * (malloc'd; "" for the root itself): "experiments/mlp.ini". Symlinks in
 * the existing part of the path are resolved. Fails (exit 2) when the path
 * lies outside the work tree. */
int repro_git_relpath(const repro_git *g, const char *path, char **out);

/* One commit, as reports show it. */
typedef struct {
    char id[41];       /* 40 lowercase hex digits */
    char short_id[8];  /* the first 7 of them (fixed length, for stable output) */
    char *summary;     /* subject line, never NULL ("" if the message is empty) */
    int64_t time;      /* author time, seconds since the epoch */
    char time_iso[21]; /* the same, ISO 8601 UTC: "2024-05-01T12:00:00Z" */
} repro_git_commit;

void repro_git_commit_release(repro_git_commit *c);

/* The commit HEAD points to (detached or not). Fails with exit 3 when HEAD
 * is unborn (a repository with no commits yet). */
int repro_git_head(repro_git *g, repro_git_commit *out);
/* The commit `rev` names (NULL: HEAD). Fails with exit 2 when it names no
 * commit in this repository, exit 3 for an unborn HEAD. */
int repro_git_lookup(repro_git *g, const char *rev, repro_git_commit *out);

/* Dirty state: one entry per path that differs from HEAD, as `git status`
 * would show it, ignored files excluded and untracked directories listed
 * file by file; submodules are not looked into. */
typedef struct {
    char status;    /* 'M' modified (or type change), 'A' staged new file,
                       'D' deleted, 'R' renamed (staged), '?' untracked,
                       'U' unmerged (conflict) */
    char *path;     /* the path now (for 'R' the new name) */
    char *old_path; /* for 'R' the old name, else NULL */
} repro_git_dirty_entry;

typedef struct {
    size_t n;
    repro_git_dirty_entry *entries; /* sorted by path */
} repro_git_dirty;

/* Lists dirty paths, limited to the given prefixes. An empty list (n == 0)
 * means clean. A staged change takes precedence over a work-tree one for the
 * letter (a new file staged and then edited is 'A'). As with `git status --
 * PATH`, a staged rename whose new name is outside the prefixes shows as its
 * old name, 'D'. */
int repro_git_dirty_list(repro_git *g, const char *const *prefixes, size_t nprefixes,
                         repro_git_dirty **out);
void repro_git_dirty_free(repro_git_dirty *d);

/* The id (40 hex) of the tree or blob at `path` in the commit `rev` (NULL:
 * HEAD), e.g. path "kernels" gives what `git rev-parse HEAD:kernels` does;
 * "" gives the commit's root tree. A path absent at that commit gives an
 * empty string and returns 0: "not there" is an answer, not an error. */
int repro_git_tree_id(repro_git *g, const char *rev, const char *path, char out[41]);

/* Reads the file `path` as it is at commit `rev` (NULL: HEAD). *data is
 * malloc'd and NUL-terminated (data[len] == '\0', not counted in len), so
 * text can be used as a string. Fails with exit 2 when rev names no commit
 * or the path is not a file at that commit (the message names both). */
int repro_git_read_blob(repro_git *g, const char *rev, const char *path, void **data,
                        size_t *len);

/* One commit that changed some of the paths asked about, with those paths. */
typedef struct {
    repro_git_commit commit;
    size_t npaths;
    char **paths; /* changed paths inside the prefixes, sorted */
} repro_git_change;

/* One changed path and the commits (of the same result) that changed it. */
typedef struct {
    char *path;
    size_t ncommits;
    size_t *commits; /* indices into repro_git_changes.commits, newest first */
} repro_git_path_changes;

typedef struct {
    size_t n;
    repro_git_change *commits; /* newest first (topological, then time order) */
    size_t npaths;
    repro_git_path_changes *paths; /* sorted by path */
    int incomplete;                /* 1 when history ran out before `since` */
    char *note;                    /* why incomplete (a sentence), else NULL */
} repro_git_changes;

/* The commits reachable from HEAD but not from `since` (git log
 * since..HEAD) whose diff against their first parent touches any of the
 * prefixes, each with the paths it changed; and per path, which of those
 * commits changed it. since == HEAD gives none. When `since` is not in this
 * repository (a shallow clone, or history rewritten since the golden was
 * blessed) this does not fail: it walks what exists, sets incomplete and
 * note ("commit a1b2c3d is not in this clone's history (shallow clone?):
 * changes listed from the oldest commit available"). When `since` exists but
 * is not an ancestor of HEAD (a rebase), commits since the common ancestor
 * are listed and incomplete is set too. A merge commit counts with what it
 * brought in relative to its first parent. */
int repro_git_changes_since(repro_git *g, const char *since, const char *const *prefixes,
                            size_t nprefixes, repro_git_changes **out);
void repro_git_changes_free(repro_git_changes *c);

/* The commits that changed anything under `prefix` (a directory such as
 * "golden/mlp/" or one file), newest first, walking from HEAD: each one's
 * diff against its first parent touches the prefix (a root commit that adds
 * it counts). `max` limits the count (0: no limit). Read a file as it was at
 * each commit with repro_git_read_blob(g, commits[i].id, path, ...). In a
 * shallow clone, reaching the boundary sets incomplete and note. */
typedef struct {
    size_t n;
    repro_git_commit *commits;
    int incomplete;
    char *note;
} repro_git_history;

int repro_git_path_history(repro_git *g, const char *prefix, size_t max,
                           repro_git_history **out);
void repro_git_history_free(repro_git_history *h);

/* ---- what commit bisection needs (git_range.c, git_worktree.c) --------- */

/* The commits after `good` up to `bad` on bad's first-parent chain, oldest
 * first (*ids: malloc'd, 40-hex each; *n their count, >= 1): a
 * first-parent walk from bad that stops at good, then checked link by link
 * down to good. good and bad are full commit ids. Fails with exit 2 when
 * they are the same commit or good is not on bad's first-parent chain
 * (history ends before it, as in a shallow clone, or a merge brought it
 * in), exit 3 for libgit2 failures. */
int repro_git_first_parent_range(repro_git *g, const char *good, const char *bad,
                                 char (**ids)[41], size_t *n);

/* A temporary linked worktree (git worktree add), for building commits
 * without touching the user's checkout. */
typedef struct repro_git_worktree repro_git_worktree;

/* Adds the worktree `name` at `path` (which must not exist yet) with HEAD
 * detached at commit `at`; no branch is left behind. On failure whatever
 * was made is removed again and *out is NULL (exit 3). */
int repro_git_worktree_add(repro_git *g, const char *name, const char *path, const char *at,
                           repro_git_worktree **out);
/* Checks commit `id` out into the worktree and detaches HEAD there. Only
 * files that differ from what the worktree holds are written (untracked
 * files, such as build outputs, are kept), so unchanged sources keep their
 * timestamps and an incremental build rebuilds only what changed. */
int repro_git_worktree_checkout(repro_git_worktree *w, const char *id);
/* Prunes the worktree together with its working tree and frees w (NULL:
 * nothing). -1 (error slot) when it could not be pruned (`git worktree
 * prune` then removes it); w is freed either way. */
int repro_git_worktree_remove(repro_git_worktree *w);

/* The paths that differ between the trees of commits `from` and `to`,
 * limited to the prefixes taken literally (a directory takes everything
 * under it): old and new names of every change, sorted, each once
 * (*paths: malloc'd strings in a malloc'd array; release with
 * repro_git_paths_free). Both commits must be present (exit 3 if not). */
int repro_git_diff_paths(repro_git *g, const char *from, const char *to,
                         const char *const *prefixes, size_t nprefixes, char ***paths,
                         size_t *npaths);
void repro_git_paths_free(char **paths, size_t n);

/* ---- a commit's files (git_tree.c) ----------------------------------- */

/* One file of a commit's tree. */
typedef struct {
    char *path;       /* repo-relative, '/'-separated */
    int executable;   /* mode 100755 */
    char blob[41];    /* the blob's id */
} repro_git_tree_file;

/* Every file of the tree of commit `rev` (NULL: HEAD), in tree order. A
 * symbolic link or a submodule in it is an error (exit 2) naming it.
 * Read each with repro_git_read_blob(g, rev, path, ...). */
int repro_git_tree_files(repro_git *g, const char *rev, repro_git_tree_file **files, size_t *n);
void repro_git_tree_files_free(repro_git_tree_file *files, size_t n);

/* Sets the error slot to "WHAT: <libgit2's last message>" (libgit2 1.5.1
 * may leave none: git_error_last() can return NULL) and returns -1: for
 * the history layer's files. */
int repro_git_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "libgit2 1.5.1", for environment fingerprints and `repro env`. */
const char *repro_git_backend_version(void);

#endif
