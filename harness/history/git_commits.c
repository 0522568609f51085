/* Commits, trees and blobs (see git.h): what a rev names, and a file or
 * tree as it is at a commit. */
#include "history/git.h"

#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history/git_impl.h"
#include "util/error.h"

/* ---- commits ------------------------------------------------------------ */

void repro_git_commit_release(repro_git_commit *c)
{
    if (!c)
        return;
    free(c->summary);
    c->summary = NULL;
}

int repro_git_fill_commit(git_commit *c, repro_git_commit *out)
{
    memset(out, 0, sizeof *out);
    git_oid_tostr(out->id, sizeof out->id, git_commit_id(c));
    memcpy(out->short_id, out->id, 7);
    out->short_id[7] = '\0';
    const git_signature *a = git_commit_author(c);
    out->time = a ? (int64_t)a->when.time : (int64_t)git_commit_time(c);
    time_t t = (time_t)out->time;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(out->time_iso, sizeof out->time_iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* git_commit_summary() can return NULL (allocation failure, or 1.5.1 on
     * odd messages); an empty subject is still a commit. */
    const char *s = git_commit_summary(c);
    out->summary = repro_git_strdup(s ? s : "");
    return out->summary ? 0 : -1;
}

int repro_git_unborn_error(repro_git *g)
{
    return repro_error_set(REPRO_EIO,
                           "HEAD of the repository at %s has no commits yet: commit first, "
                           "golden records are tied to commits",
                           g->workdir);
}

/* Looks up the commit `rev` names (NULL: HEAD). Unknown revs fail with
 * exit 2; an unborn HEAD with exit 3. *notfound (may be NULL) is set to 1
 * when rev simply does not exist here, so callers can choose not to fail. */
int repro_git_resolve(repro_git *g, const char *rev, git_commit **out, int *notfound)
{
    git_object *obj = NULL, *peeled = NULL;
    if (notfound)
        *notfound = 0;
    if (!rev)
        rev = "HEAD";
    int is_head = !strcmp(rev, "HEAD");
    if (is_head && git_repository_head_unborn(g->repo) == 1)
        return repro_git_unborn_error(g);
    int rc = git_revparse_single(&obj, g->repo, rev);
    if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC) {
        if (notfound)
            *notfound = 1;
        return repro_error_set(REPRO_EINVAL, "no commit '%s' in this repository", rev);
    }
    if (rc == GIT_EAMBIGUOUS)
        return repro_error_set(REPRO_EINVAL, "'%s' is ambiguous: give more of the commit id",
                               rev);
    if (rc < 0)
        return repro_git_fail(is_head ? REPRO_EIO : REPRO_EINVAL, "cannot resolve '%s'", rev);
    rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
    git_object_free(obj);
    if (rc < 0)
        return repro_error_set(REPRO_EINVAL, "'%s' does not name a commit", rev);
    *out = (git_commit *)peeled;
    return 0;
}

int repro_git_lookup(repro_git *g, const char *rev, repro_git_commit *out)
{
    git_commit *c = NULL;
    if (repro_git_resolve(g, rev, &c, NULL))
        return -1;
    repro_git_commit tmp;
    int rc = repro_git_fill_commit(c, &tmp);
    git_commit_free(c);
    if (rc) {
        repro_git_commit_release(&tmp);
        return -1;
    }
    *out = tmp;
    return 0;
}

int repro_git_head(repro_git *g, repro_git_commit *out)
{
    return repro_git_lookup(g, NULL, out);
}

/* ---- trees and blobs ---------------------------------------------------- */

/* The entry at `path` in commit c's tree; *entry NULL when absent. */
static int entry_at(repro_git *g, git_commit *c, const char *path, git_tree_entry **entry,
                    git_tree **root)
{
    *entry = NULL;
    *root = NULL;
    if (git_commit_tree(root, c) < 0)
        return repro_git_fail(REPRO_EIO, "cannot read the tree of commit %.7s in %s",
                        git_oid_tostr_s(git_commit_id(c)), g->workdir);
    char clean[PATH_MAX];
    const char *p = path;
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    snprintf(clean, sizeof clean, "%s", p);
    size_t len = strlen(clean);
    while (len > 0 && clean[len - 1] == '/')
        clean[--len] = '\0';
    if (len == 0 || !strcmp(clean, "."))
        return 0; /* the root itself: *entry stays NULL, caller uses *root */
    int rc = git_tree_entry_bypath(entry, *root, clean);
    if (rc == GIT_ENOTFOUND) {
        *entry = NULL;
        return 0;
    }
    if (rc < 0)
        return repro_git_fail(REPRO_EIO, "cannot look up %s at commit %.7s", clean,
                        git_oid_tostr_s(git_commit_id(c)));
    return 0;
}

static int is_root_path(const char *path)
{
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    return strspn(path, "/") == strlen(path) || !strcmp(path, ".");
}

int repro_git_tree_id(repro_git *g, const char *rev, const char *path, char out[41])
{
    git_commit *c = NULL;
    git_tree *root = NULL;
    git_tree_entry *e = NULL;
    int ret = -1;
    if (repro_git_resolve(g, rev, &c, NULL) || entry_at(g, c, path, &e, &root))
        goto cleanup;
    if (e)
        git_oid_tostr(out, 41, git_tree_entry_id(e));
    else if (is_root_path(path))
        git_oid_tostr(out, 41, git_tree_id(root));
    else
        out[0] = '\0';
    ret = 0;

cleanup:
    git_tree_entry_free(e);
    git_tree_free(root);
    git_commit_free(c);
    return ret;
}

int repro_git_read_blob(repro_git *g, const char *rev, const char *path, void **data,
                        size_t *len)
{
    git_commit *c = NULL;
    git_tree *root = NULL;
    git_tree_entry *e = NULL;
    git_blob *b = NULL;
    int ret = -1;
    if (repro_git_resolve(g, rev, &c, NULL) || entry_at(g, c, path, &e, &root))
        goto cleanup;
    char id[41];
    git_oid_tostr(id, sizeof id, git_commit_id(c));
    if (!e || git_tree_entry_type(e) != GIT_OBJECT_BLOB) {
        repro_error_set(REPRO_EINVAL, "%s: %s at commit %.7s", path,
                        e ? "not a file" : "no such file", id);
        goto cleanup;
    }
    if (git_blob_lookup(&b, g->repo, git_tree_entry_id(e)) < 0) {
        repro_git_fail(REPRO_EIO, "%s: cannot read its blob at commit %.7s", path, id);
        goto cleanup;
    }
    size_t n = (size_t)git_blob_rawsize(b);
    char *buf = malloc(n + 1);
    if (!buf) {
        repro_error_set(REPRO_ENOMEM, "out of memory reading %s at commit %.7s", path, id);
        goto cleanup;
    }
    if (n)
        memcpy(buf, git_blob_rawcontent(b), n);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    ret = 0;

cleanup:
    git_blob_free(b);
    git_tree_entry_free(e);
    git_tree_free(root);
    git_commit_free(c);
    return ret;
}
