/* The git layer over libgit2 (see git.h): repository discovery, HEAD, dirty
 * state, tree ids, and history walks that survive shallow clones. */
#include "history/git.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"

struct repro_git {
    git_repository *repo;
    char *workdir; /* realpath of the work tree, no trailing '/' */
    int shallow;
    /* A shallow clone's boundary commits (from $GIT_COMMON_DIR/shallow),
     * sorted: present themselves, but their parents are not. */
    size_t nboundary;
    git_oid *boundary;
};

/* libgit2 is initialised once per process and never shut down: shutting
 * down while another thread still holds a repository would free its
 * global state underneath it, and the cost of staying up is nil. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void init_libgit2(void)
{
    init_rc = git_libgit2_init();
}

static int ensure_init(void)
{
    pthread_once(&init_once, init_libgit2);
    if (init_rc < 0)
        return repro_error_set(REPRO_EIO, "libgit2 failed to initialise");
    return 0;
}

/* Sets the error slot to "WHAT: <libgit2's message>". libgit2 1.5.1 may
 * leave no error behind (git_error_last() returns NULL), so that is
 * checked rather than assumed. Returns -1. */
int repro_git_fail(int code, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const git_error *e = git_error_last();
    if (e && e->message && e->message[0])
        return repro_error_set(code, "%s: %s", what, e->message);
    return repro_error_set(code, "%s", what);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        repro_error_set(REPRO_ENOMEM, "out of memory");
    return d;
}

/* Grows *arr (of *cap elements of size el) to hold at least n+1. */
static int grow(void *arrp, size_t *cap, size_t n, size_t el)
{
    void **arr = arrp;
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, nc * el);
    if (!p)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    *arr = p;
    *cap = nc;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- prefixes ---------------------------------------------------------- */

/* Normalised prefixes: no leading "./", no trailing '/'. "" matches all. */
typedef struct {
    size_t n;
    char **p;
    int all; /* some prefix is "" (or there are none): everything matches */
} prefix_set;

static void prefixes_release(prefix_set *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i]);
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

static int prefixes_init(prefix_set *ps, const char *const *prefixes, size_t n)
{
    memset(ps, 0, sizeof *ps);
    ps->all = n == 0;
    if (n == 0)
        return 0;
    ps->p = calloc(n, sizeof *ps->p);
    if (!ps->p)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *s = prefixes[i] ? prefixes[i] : "";
        while (s[0] == '.' && s[1] == '/')
            s += 2;
        if (!strcmp(s, "."))
            s = "";
        char *d = xstrdup(s);
        if (!d) {
            prefixes_release(ps);
            return -1;
        }
        size_t len = strlen(d);
        while (len > 0 && d[len - 1] == '/')
            d[--len] = '\0';
        ps->p[ps->n++] = d;
        if (len == 0)
            ps->all = 1;
    }
    return 0;
}

static int path_under(const char *path, const char *prefix)
{
    size_t len = strlen(prefix);
    return len == 0 || (!strncmp(path, prefix, len) && (path[len] == '\0' || path[len] == '/'));
}

static int prefixes_match(const prefix_set *ps, const char *path)
{
    if (ps->all)
        return 1;
    for (size_t i = 0; i < ps->n; i++)
        if (path_under(path, ps->p[i]))
            return 1;
    return 0;
}

/* The pathspec handed to libgit2 only narrows its traversal; matching is
 * literal (DISABLE_PATHSPEC_MATCH, so '*' in a file name is not a glob) and
 * prefixes_match() decides what is reported. */
static git_strarray prefixes_pathspec(const prefix_set *ps)
{
    git_strarray a = {NULL, 0};
    if (!ps->all) {
        a.strings = ps->p;
        a.count = ps->n;
    }
    return a;
}

/* ---- shallow boundaries ------------------------------------------------- */

/* libgit2 1.5.1 does not read .git/shallow: git_revwalk_next() in a shallow
 * clone fails with "object not found" on the first missing parent, and with
 * a sort order set it fails before yielding a single commit. So the boundary
 * list is read here and the boundary commits are hidden from every walk
 * (git_revwalk_add_hide_cb), which keeps the walk above the missing parents. */
static int cmp_oid(const void *a, const void *b)
{
    return git_oid_cmp(a, b);
}

static int read_shallow(repro_git *g)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/shallow", git_repository_commondir(g->repo));
    FILE *f = fopen(path, "r");
    if (!f)
        return 0; /* shallow but no list: walks fall back to stopping on errors */
    size_t cap = 0;
    char line[128];
    int ret = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        git_oid id;
        if (strlen(line) != GIT_OID_HEXSZ || git_oid_fromstr(&id, line) < 0)
            continue;
        if (grow(&g->boundary, &cap, g->nboundary, sizeof *g->boundary)) {
            ret = -1;
            break;
        }
        g->boundary[g->nboundary++] = id;
    }
    fclose(f);
    if (g->nboundary > 1)
        qsort(g->boundary, g->nboundary, sizeof *g->boundary, cmp_oid);
    return ret;
}

static int is_boundary(const repro_git *g, const git_oid *id)
{
    return g->nboundary &&
           bsearch(id, g->boundary, g->nboundary, sizeof *g->boundary, cmp_oid) != NULL;
}

static int hide_boundary(const git_oid *id, void *payload)
{
    return is_boundary(payload, id);
}

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
    return is_boundary(h->g, id) ||
           (h->n && bsearch(id, h->ids, h->n, sizeof *h->ids, cmp_oid) != NULL);
}

static int hide_set_init(hide_set *h, repro_git *g, const git_oid *since)
{
    git_revwalk *w = NULL;
    git_oid oid;
    size_t cap = 0;
    int rc, ret = -1;
    memset(h, 0, sizeof *h);
    h->g = g;
    if (grow(&h->ids, &cap, 0, sizeof *h->ids))
        return -1;
    h->ids[h->n++] = *since;
    if (git_revwalk_new(&w, g->repo) < 0 || git_revwalk_push(w, since) < 0 ||
        (g->nboundary && git_revwalk_add_hide_cb(w, hide_boundary, (void *)g) < 0)) {
        repro_git_fail(REPRO_EIO, "cannot walk the history of %s", g->workdir);
        goto cleanup;
    }
    while ((rc = git_revwalk_next(&oid, w)) == 0) {
        if (grow(&h->ids, &cap, h->n, sizeof *h->ids))
            goto cleanup;
        h->ids[h->n++] = oid;
    }
    git_error_clear(); /* stopping on a missing object is the boundary, not a failure */
    qsort(h->ids, h->n, sizeof *h->ids, cmp_oid);
    ret = 0;

cleanup:
    git_revwalk_free(w);
    if (ret) {
        free(h->ids);
        memset(h, 0, sizeof *h);
    }
    return ret;
}

/* ---- open --------------------------------------------------------------- */

int repro_git_open(repro_git **out, const char *start_path)
{
    if (ensure_init())
        return -1;
    const char *start = start_path ? start_path : ".";
    char shown[PATH_MAX];
    if (!realpath(start, shown))
        return repro_error_set_errno(REPRO_EINVAL, "%s: cannot search for a git repository "
                                     "from here", start);

    git_repository *repo = NULL;
    repro_git *g = NULL;
    int rc = git_repository_open_ext(&repo, start, 0, NULL);
    if (rc == GIT_ENOTFOUND) {
        repro_error_set(REPRO_EIO,
                        "not in a git repository (searched from %s): golden records are tied "
                        "to commits",
                        shown);
        goto cleanup;
    }
    if (rc == GIT_EOWNER) {
        repro_git_fail(REPRO_EIO,
                 "cannot open the git repository containing %s (if it is yours, "
                 "git config --global --add safe.directory <repo>)",
                 shown);
        goto cleanup;
    }
    if (rc < 0) {
        repro_git_fail(REPRO_EIO, "cannot open the git repository containing %s", shown);
        goto cleanup;
    }
    if (git_repository_is_bare(repo) || !git_repository_workdir(repo)) {
        repro_error_set(REPRO_EIO,
                        "%s is a bare git repository: golden records need a work tree",
                        git_repository_path(repo));
        goto cleanup;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    char wd[PATH_MAX];
    if (!realpath(git_repository_workdir(repo), wd)) {
        repro_error_set_errno(REPRO_EIO, "%s: cannot resolve the work tree",
                              git_repository_workdir(repo));
        goto cleanup;
    }
    size_t len = strlen(wd);
    while (len > 1 && wd[len - 1] == '/')
        wd[--len] = '\0';
    if (!(g->workdir = xstrdup(wd)))
        goto cleanup;
    /* libgit2 1.5.1 looks for "shallow" in a linked worktree's own git
     * directory, where it never is: check the common directory too. */
    g->shallow = git_repository_is_shallow(repo) == 1;
    if (!g->shallow) {
        char sp[4200];
        snprintf(sp, sizeof sp, "%s/shallow", git_repository_commondir(repo));
        g->shallow = access(sp, F_OK) == 0;
    }
    g->repo = repo;
    if (g->shallow && read_shallow(g)) {
        g->repo = NULL;
        goto cleanup;
    }
    *out = g;
    return 0;

cleanup:
    if (g) {
        free(g->workdir);
        free(g->boundary);
    }
    free(g);
    git_repository_free(repo);
    return -1;
}

void repro_git_free(repro_git *g)
{
    if (!g)
        return;
    git_repository_free(g->repo);
    free(g->workdir);
    free(g->boundary);
    free(g);
}

const char *repro_git_workdir(const repro_git *g)
{
    return g->workdir;
}

int repro_git_is_shallow(const repro_git *g)
{
    return g->shallow;
}

const char *repro_git_backend_version(void)
{
    static char buf[32];
    int maj = 0, min = 0, rev = 0;
    git_libgit2_version(&maj, &min, &rev);
    snprintf(buf, sizeof buf, "libgit2 %d.%d.%d", maj, min, rev);
    return buf;
}

/* ---- paths -------------------------------------------------------------- */

/* Appends component `c` (len n) to the absolute path in buf, handling "."
 * and ".." lexically. Returns 0, or -1 if it does not fit. */
static int push_component(char *buf, size_t cap, const char *c, size_t n)
{
    if (n == 0 || (n == 1 && c[0] == '.'))
        return 0;
    size_t len = strlen(buf);
    if (n == 2 && c[0] == '.' && c[1] == '.') {
        char *slash = strrchr(buf, '/');
        if (slash == buf)
            buf[1] = '\0';
        else if (slash)
            *slash = '\0';
        return 0;
    }
    int need_slash = len > 0 && buf[len - 1] != '/';
    if (len + (size_t)need_slash + n + 1 > cap)
        return -1;
    if (need_slash)
        buf[len++] = '/';
    memcpy(buf + len, c, n);
    buf[len + n] = '\0';
    return 0;
}

int repro_git_relpath(const repro_git *g, const char *path, char **out)
{
    char abs[PATH_MAX * 2], resolved[PATH_MAX * 2];
    if (path[0] == '/') {
        snprintf(abs, sizeof abs, "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return repro_error_set_errno(REPRO_EIO, "cannot read the current directory");
        snprintf(abs, sizeof abs, "%s/%s", cwd, path);
    }
    /* Resolve the longest existing ancestor with realpath (symlinks, as the
     * work tree root was resolved), then add the rest lexically: the path
     * may name a file not written yet. */
    size_t cut = strlen(abs);
    for (;;) {
        char save = abs[cut];
        abs[cut] = '\0';
        char *ok = realpath(cut ? abs : "/", resolved);
        abs[cut] = save;
        if (ok)
            break;
        if (errno != ENOENT && errno != ENOTDIR)
            return repro_error_set_errno(REPRO_EINVAL, "%s: cannot resolve", path);
        while (cut > 0 && abs[cut - 1] != '/')
            cut--;
        while (cut > 0 && abs[cut - 1] == '/')
            cut--;
    }
    for (const char *p = abs + cut; *p;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (push_component(resolved, sizeof resolved, p, n))
            return repro_error_set(REPRO_EINVAL, "%s: path too long", path);
        p += n;
    }
    size_t wl = strlen(g->workdir);
    const char *rel;
    if (!strcmp(g->workdir, "/"))
        rel = resolved + 1;
    else if (!strncmp(resolved, g->workdir, wl) && resolved[wl] == '\0')
        rel = "";
    else if (!strncmp(resolved, g->workdir, wl) && resolved[wl] == '/')
        rel = resolved + wl + 1;
    else
        return repro_error_set(REPRO_EINVAL, "%s: outside the git work tree %s", path,
                               g->workdir);
    return (*out = xstrdup(rel)) ? 0 : -1;
}

/* ---- commits ------------------------------------------------------------ */

void repro_git_commit_release(repro_git_commit *c)
{
    if (!c)
        return;
    free(c->summary);
    c->summary = NULL;
}

static int fill_commit(git_commit *c, repro_git_commit *out)
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
    out->summary = xstrdup(s ? s : "");
    return out->summary ? 0 : -1;
}

static int unborn_error(repro_git *g)
{
    return repro_error_set(REPRO_EIO,
                           "HEAD of the repository at %s has no commits yet: commit first, "
                           "golden records are tied to commits",
                           g->workdir);
}

/* Looks up the commit `rev` names (NULL: HEAD). Unknown revs fail with
 * exit 2; an unborn HEAD with exit 3. *notfound (may be NULL) is set to 1
 * when rev simply does not exist here, so callers can choose not to fail. */
static int resolve(repro_git *g, const char *rev, git_commit **out, int *notfound)
{
    git_object *obj = NULL, *peeled = NULL;
    if (notfound)
        *notfound = 0;
    if (!rev)
        rev = "HEAD";
    int is_head = !strcmp(rev, "HEAD");
    if (is_head && git_repository_head_unborn(g->repo) == 1)
        return unborn_error(g);
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
    if (resolve(g, rev, &c, NULL))
        return -1;
    repro_git_commit tmp;
    int rc = fill_commit(c, &tmp);
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

/* ---- dirty state -------------------------------------------------------- */

static char status_letter(unsigned s)
{
    if (s & GIT_STATUS_CONFLICTED)
        return 'U';
    if (s & GIT_STATUS_INDEX_NEW)
        return 'A';
    if (s & GIT_STATUS_INDEX_RENAMED)
        return 'R';
    if (s & GIT_STATUS_INDEX_DELETED)
        return 'D';
    if (s & (GIT_STATUS_INDEX_MODIFIED | GIT_STATUS_INDEX_TYPECHANGE))
        return 'M';
    if (s & GIT_STATUS_WT_NEW)
        return '?';
    if (s & GIT_STATUS_WT_DELETED)
        return 'D';
    if (s & GIT_STATUS_WT_RENAMED)
        return 'R';
    if (s & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE | GIT_STATUS_WT_UNREADABLE))
        return 'M';
    return 0; /* current or ignored */
}

static int cmp_dirty(const void *a, const void *b)
{
    return strcmp(((const repro_git_dirty_entry *)a)->path,
                  ((const repro_git_dirty_entry *)b)->path);
}

void repro_git_dirty_free(repro_git_dirty *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->entries[i].path);
        free(d->entries[i].old_path);
    }
    free(d->entries);
    free(d);
}

int repro_git_dirty_list(repro_git *g, const char *const *prefixes, size_t nprefixes,
                         repro_git_dirty **out)
{
    int ret = -1;
    prefix_set ps;
    git_status_list *list = NULL;
    size_t cap = 0;
    repro_git_dirty *d = calloc(1, sizeof *d);
    if (prefixes_init(&ps, prefixes, nprefixes) || !d) {
        if (!d)
            repro_error_set(REPRO_ENOMEM, "out of memory");
        free(d);
        return -1;
    }
    /* The _init functions, not the INIT macros: the macros leave fields
     * unnamed and -Wmissing-field-initializers (-Wextra) rejects them. */
    git_status_options opts;
    git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
    opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                 GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX |
                 GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
    opts.pathspec = prefixes_pathspec(&ps);
    if (git_status_list_new(&list, g->repo, &opts) < 0) {
        repro_git_fail(REPRO_EIO, "cannot read the status of %s", g->workdir);
        goto cleanup;
    }
    size_t n = git_status_list_entrycount(list);
    for (size_t i = 0; i < n; i++) {
        const git_status_entry *e = git_status_byindex(list, i);
        char letter = e ? status_letter(e->status) : 0;
        if (!letter)
            continue;
        const git_diff_delta *dd = e->head_to_index ? e->head_to_index : e->index_to_workdir;
        if (!dd)
            continue;
        const char *path = dd->new_file.path ? dd->new_file.path : dd->old_file.path;
        const char *old = letter == 'R' ? dd->old_file.path : NULL;
        if (!prefixes_match(&ps, path) && !(old && prefixes_match(&ps, old)))
            continue;
        if (grow(&d->entries, &cap, d->n, sizeof *d->entries))
            goto cleanup;
        repro_git_dirty_entry *de = &d->entries[d->n];
        memset(de, 0, sizeof *de);
        de->status = letter;
        de->path = xstrdup(path);
        if (old)
            de->old_path = xstrdup(old);
        d->n++;
        if (!de->path || (old && !de->old_path))
            goto cleanup;
    }
    if (d->n > 1)
        qsort(d->entries, d->n, sizeof *d->entries, cmp_dirty);
    *out = d;
    d = NULL;
    ret = 0;

cleanup:
    repro_git_dirty_free(d);
    git_status_list_free(list);
    prefixes_release(&ps);
    return ret;
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
    if (resolve(g, rev, &c, NULL) || entry_at(g, c, path, &e, &root))
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
    if (resolve(g, rev, &c, NULL) || entry_at(g, c, path, &e, &root))
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

/* ---- history walks ------------------------------------------------------ */

/* A growable list of strings. */
typedef struct {
    size_t n, cap;
    char **s;
} strvec;

static void strvec_release(strvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->s[i]);
    free(v->s);
    memset(v, 0, sizeof *v);
}

static int strvec_push(strvec *v, const char *s)
{
    if (grow(&v->s, &v->cap, v->n, sizeof *v->s))
        return -1;
    if (!(v->s[v->n] = xstrdup(s)))
        return -1;
    v->n++;
    return 0;
}

/* Sorts and drops duplicates. */
static void strvec_uniq(strvec *v)
{
    if (v->n < 2)
        return;
    qsort(v->s, v->n, sizeof *v->s, cmp_str);
    size_t w = 1;
    for (size_t i = 1; i < v->n; i++) {
        if (!strcmp(v->s[i], v->s[w - 1]))
            free(v->s[i]);
        else
            v->s[w++] = v->s[i];
    }
    v->n = w;
}

/* The paths inside ps that commit c changed relative to its first parent,
 * into v (sorted). *boundary is set when c's first parent is missing (the
 * edge of a shallow clone): then what c changed is unknown and v stays
 * empty. A root commit is diffed against the empty tree. */
static int commit_changed_paths(repro_git *g, git_commit *c, const prefix_set *ps, strvec *v,
                                int *boundary)
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
    opts.pathspec = prefixes_pathspec(ps);
    if (git_diff_tree_to_tree(&diff, g->repo, old, new, &opts) < 0) {
        repro_git_fail(REPRO_EIO, "cannot diff commit %.7s against its parent",
                 git_oid_tostr_s(git_commit_id(c)));
        goto cleanup;
    }
    size_t n = git_diff_num_deltas(diff);
    for (size_t i = 0; i < n; i++) {
        const git_diff_delta *d = git_diff_get_delta(diff, i);
        const char *np = d->new_file.path, *op = d->old_file.path;
        if (np && prefixes_match(ps, np) && strvec_push(v, np))
            goto cleanup;
        if (op && (!np || strcmp(op, np)) && prefixes_match(ps, op) && strvec_push(v, op))
            goto cleanup;
    }
    strvec_uniq(v);
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
typedef int (*walk_fn)(git_commit *c, strvec *paths, void *arg);

static int walk_changes(repro_git *g, const git_oid *hide, const prefix_set *ps, walk_fn fn,
                        void *arg, char boundary_id[41], int *cut)
{
    git_revwalk *w = NULL;
    git_commit *c = NULL;
    strvec paths = {0};
    hide_set hs = {g, 0, NULL};
    int ret = -1, rc;
    git_oid oid;
    boundary_id[0] = '\0';
    *cut = 0;
    if (git_repository_head_unborn(g->repo) == 1)
        return unborn_error(g);
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
        is_boundary(g, &head)) {
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
            if (p && is_boundary(g, p) &&
                !(hs.n && bsearch(p, hs.ids, hs.n, sizeof *hs.ids, cmp_oid))) {
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
        strvec_release(&paths);
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
    strvec_release(&paths);
    git_commit_free(c);
    git_revwalk_free(w);
    free(hs.ids);
    return ret;
}

/* 1 when `anc` is `desc` or one of its ancestors, 0 when not, -1 on error.
 * git_graph_descendant_of() walks parents and fails on the missing ones of
 * a shallow clone, so there a walk with the boundary hidden decides (a
 * boundary commit is never yielded, so parents are checked too). */
static int is_ancestor(repro_git *g, const git_oid *anc, const git_oid *desc)
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
        (g->nboundary && git_revwalk_add_hide_cb(w, hide_boundary, g) < 0)) {
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

/* changes_since: collect commits, then invert into per-path lists. */
typedef struct {
    repro_git_changes *res;
    size_t cap;
} changes_acc;

static int changes_add(git_commit *c, strvec *paths, void *arg)
{
    changes_acc *acc = arg;
    repro_git_changes *r = acc->res;
    if (grow(&r->commits, &acc->cap, r->n, sizeof *r->commits))
        return -1;
    repro_git_change *ch = &r->commits[r->n];
    memset(ch, 0, sizeof *ch);
    r->n++;
    if (fill_commit(c, &ch->commit))
        return -1;
    /* Take the strings over; the walker's vector is left empty. */
    ch->paths = paths->s;
    ch->npaths = paths->n;
    memset(paths, 0, sizeof *paths);
    return 0;
}

typedef struct {
    const char *path;
    size_t commit;
} path_hit;

static int cmp_hit(const void *a, const void *b)
{
    const path_hit *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->commit > y->commit) - (x->commit < y->commit);
}

static int build_path_index(repro_git_changes *r)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n; i++)
        total += r->commits[i].npaths;
    if (total == 0)
        return 0;
    path_hit *hits = malloc(total * sizeof *hits);
    r->paths = calloc(total, sizeof *r->paths);
    if (!hits || !r->paths) {
        free(hits);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t j = 0; j < r->commits[i].npaths; j++)
            hits[k++] = (path_hit){r->commits[i].paths[j], i};
    qsort(hits, total, sizeof *hits, cmp_hit);
    int ret = -1;
    for (size_t i = 0; i < total;) {
        size_t j = i;
        while (j < total && !strcmp(hits[j].path, hits[i].path))
            j++;
        repro_git_path_changes *pc = &r->paths[r->npaths++];
        pc->path = xstrdup(hits[i].path);
        pc->commits = malloc((j - i) * sizeof *pc->commits);
        if (!pc->path || !pc->commits) {
            repro_error_set(REPRO_ENOMEM, "out of memory");
            goto cleanup;
        }
        for (size_t m = i; m < j; m++)
            pc->commits[pc->ncommits++] = hits[m].commit;
        i = j;
    }
    ret = 0;

cleanup:
    free(hits);
    return ret;
}

static char *make_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *make_note(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return xstrdup(buf);
}

void repro_git_changes_free(repro_git_changes *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        repro_git_commit_release(&c->commits[i].commit);
        for (size_t j = 0; j < c->commits[i].npaths; j++)
            free(c->commits[i].paths[j]);
        free(c->commits[i].paths);
    }
    free(c->commits);
    for (size_t i = 0; i < c->npaths; i++) {
        free(c->paths[i].path);
        free(c->paths[i].commits);
    }
    free(c->paths);
    free(c->note);
    free(c);
}

int repro_git_changes_since(repro_git *g, const char *since, const char *const *prefixes,
                            size_t nprefixes, repro_git_changes **out)
{
    int ret = -1;
    prefix_set ps;
    git_commit *x = NULL, *head = NULL;
    repro_git_changes *r = NULL;
    if (prefixes_init(&ps, prefixes, nprefixes))
        return -1;
    if (!(r = calloc(1, sizeof *r))) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    if (resolve(g, NULL, &head, NULL))
        goto cleanup;
    int notfound = 0;
    if (resolve(g, since, &x, &notfound)) {
        if (!notfound)
            goto cleanup;
        repro_error_clear();
        x = NULL;
    }
    /* `since` may exist here yet not be an ancestor of HEAD (history was
     * rewritten after blessing): the walk then stops where the histories
     * meet, which is named when libgit2 can find it. */
    int not_ancestor = 0;
    char base[41] = "";
    if (x) {
        int anc = is_ancestor(g, git_commit_id(x), git_commit_id(head));
        if (anc < 0)
            goto cleanup;
        not_ancestor = !anc;
    }
    if (not_ancestor) {
        git_oid mb;
        if (git_merge_base(&mb, g->repo, git_commit_id(head), git_commit_id(x)) == 0)
            git_oid_tostr(base, sizeof base, &mb);
        git_error_clear();
    }
    changes_acc acc = {r, 0};
    char boundary[41];
    int cut = 0;
    if (walk_changes(g, x ? git_commit_id(x) : NULL, &ps, changes_add, &acc, boundary, &cut))
        goto cleanup;
    if (build_path_index(r))
        goto cleanup;
    const char *where = g->shallow ? "this clone's history (shallow clone?)"
                                   : "this repository's history (history rewritten?)";
    char oldest[24] = "";
    if (boundary[0])
        snprintf(oldest, sizeof oldest, " (%.7s)", boundary);
    if (!x) {
        r->incomplete = 1;
        r->note = cut ? make_note("commit %.7s is not in %s: changes listed from the oldest "
                                  "commit available%s",
                                  since, where, oldest)
                      : make_note("commit %.7s is not in %s: changes listed from the root "
                                  "commit",
                                  since, where);
    } else if (not_ancestor) {
        r->incomplete = 1;
        r->note = base[0] ? make_note("commit %.7s is not an ancestor of HEAD (history "
                                      "rewritten?): changes listed since their common "
                                      "ancestor %.7s",
                                      since, base)
                          : make_note("commit %.7s is not an ancestor of HEAD (history "
                                      "rewritten?): changes listed are those not reachable "
                                      "from it",
                                      since);
    } else if (cut) {
        r->incomplete = 1;
        r->note = make_note("history stops at the shallow clone's boundary%s before reaching "
                            "commit %.7s: older changes are not listed",
                            oldest, since);
    }
    if (r->incomplete && !r->note)
        goto cleanup;
    *out = r;
    r = NULL;
    ret = 0;

cleanup:
    repro_git_changes_free(r);
    git_commit_free(x);
    git_commit_free(head);
    prefixes_release(&ps);
    return ret;
}

typedef struct {
    repro_git_history *res;
    size_t cap, max;
} history_acc;

static int history_add(git_commit *c, strvec *paths, void *arg)
{
    (void)paths;
    history_acc *acc = arg;
    repro_git_history *h = acc->res;
    if (grow(&h->commits, &acc->cap, h->n, sizeof *h->commits))
        return -1;
    if (fill_commit(c, &h->commits[h->n])) {
        repro_git_commit_release(&h->commits[h->n]);
        return -1;
    }
    h->n++;
    return acc->max && h->n >= acc->max ? 1 : 0;
}

void repro_git_history_free(repro_git_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        repro_git_commit_release(&h->commits[i]);
    free(h->commits);
    free(h->note);
    free(h);
}

int repro_git_path_history(repro_git *g, const char *prefix, size_t max,
                           repro_git_history **out)
{
    int ret = -1;
    prefix_set ps;
    const char *one[1] = {prefix};
    repro_git_history *h = NULL;
    if (prefixes_init(&ps, one, 1))
        return -1;
    if (!(h = calloc(1, sizeof *h))) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    history_acc acc = {h, 0, max};
    char boundary[41];
    int cut = 0;
    if (walk_changes(g, NULL, &ps, history_add, &acc, boundary, &cut))
        goto cleanup;
    /* Stopping early at `max` means the boundary was not necessarily met. */
    if (cut && !(max && h->n >= max)) {
        h->incomplete = 1;
        if (!(h->note = make_note("history stops at %s%.7s (shallow clone): older changes to "
                                  "%s are not listed",
                                  boundary[0] ? "commit " : "the clone's boundary", boundary,
                                  prefix)))
            goto cleanup;
    }
    *out = h;
    h = NULL;
    ret = 0;

cleanup:
    repro_git_history_free(h);
    prefixes_release(&ps);
    return ret;
}
