/* The files of a commit's tree, for packing a program's source into a
 * submission bundle (verify/pack.c): every blob with its path and whether
 * it is executable. A symbolic link or a submodule is refused by name: a
 * bundle holds regular files only (a link could point anywhere on the
 * host that unpacks it, a submodule's files are not in this tree). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/git_impl.h"
#include "util/error.h"

typedef struct {
    repro_git_tree_file *files;
    size_t n, cap;
    char bad[1024]; /* the first link or submodule met */
} tree_walk;

static int visit(const char *root, const git_tree_entry *e, void *arg)
{
    tree_walk *w = arg;
    git_filemode_t mode = git_tree_entry_filemode(e);
    if (mode == GIT_FILEMODE_TREE)
        return 0;
    if (mode == GIT_FILEMODE_LINK || mode == GIT_FILEMODE_COMMIT) {
        snprintf(w->bad, sizeof w->bad, "%s%s is a %s", root, git_tree_entry_name(e),
                 mode == GIT_FILEMODE_LINK ? "symbolic link" : "submodule");
        return -1;
    }
    if (repro_git_grow(&w->files, &w->cap, w->n, sizeof *w->files))
        return -1;
    repro_git_tree_file *f = &w->files[w->n];
    size_t len = strlen(root) + strlen(git_tree_entry_name(e)) + 1;
    if (!(f->path = malloc(len)))
        return -1;
    snprintf(f->path, len, "%s%s", root, git_tree_entry_name(e));
    f->executable = mode == GIT_FILEMODE_BLOB_EXECUTABLE;
    git_oid_tostr(f->blob, sizeof f->blob, git_tree_entry_id(e));
    w->n++;
    return 0;
}

int repro_git_tree_files(repro_git *g, const char *rev, repro_git_tree_file **files, size_t *n)
{
    git_commit *c;
    git_tree *t = NULL;
    if (repro_git_resolve(g, rev, &c, NULL))
        return -1;
    tree_walk w = {0};
    int rc = git_commit_tree(&t, c);
    if (rc == 0)
        rc = git_tree_walk(t, GIT_TREEWALK_PRE, visit, &w);
    git_tree_free(t);
    git_commit_free(c);
    if (rc) {
        repro_git_tree_files_free(w.files, w.n);
        if (w.bad[0])
            return repro_error_set(REPRO_EINVAL, "%s: a bundle holds regular files only",
                                   w.bad);
        return repro_git_fail(REPRO_EIO, "cannot list the tree of %s", rev ? rev : "HEAD");
    }
    *files = w.files;
    *n = w.n;
    return 0;
}

void repro_git_tree_files_free(repro_git_tree_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(files[i].path);
    free(files);
}
