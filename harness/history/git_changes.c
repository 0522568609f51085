/* Changed paths since a commit, and a path's history (see git.h): both
 * collected by one walk (git_walk.c) and turned into the public structs. */
#include "history/git.h"

#include <git2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/git_impl.h"
#include "util/error.h"


/* changes_since: collect commits, then invert into per-path lists. */
typedef struct {
    repro_git_changes *res;
    size_t cap;
} changes_acc;

static int changes_add(git_commit *c, repro_git_strvec *paths, void *arg)
{
    changes_acc *acc = arg;
    repro_git_changes *r = acc->res;
    if (repro_git_grow(&r->commits, &acc->cap, r->n, sizeof *r->commits))
        return -1;
    repro_git_change *ch = &r->commits[r->n];
    memset(ch, 0, sizeof *ch);
    r->n++;
    if (repro_git_fill_commit(c, &ch->commit))
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
        pc->path = repro_git_strdup(hits[i].path);
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
    return repro_git_strdup(buf);
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
    repro_git_prefix_set ps;
    git_commit *x = NULL, *head = NULL;
    repro_git_changes *r = NULL;
    if (repro_git_prefixes_init(&ps, prefixes, nprefixes))
        return -1;
    if (!(r = calloc(1, sizeof *r))) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    if (repro_git_resolve(g, NULL, &head, NULL))
        goto cleanup;
    int notfound = 0;
    if (repro_git_resolve(g, since, &x, &notfound)) {
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
        int anc = repro_git_is_ancestor(g, git_commit_id(x), git_commit_id(head));
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
    if (repro_git_walk_changes(g, x ? git_commit_id(x) : NULL, &ps, changes_add, &acc, boundary,
                               &cut))
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
    repro_git_prefixes_release(&ps);
    return ret;
}

typedef struct {
    repro_git_history *res;
    size_t cap, max;
} history_acc;

static int history_add(git_commit *c, repro_git_strvec *paths, void *arg)
{
    (void)paths;
    history_acc *acc = arg;
    repro_git_history *h = acc->res;
    if (repro_git_grow(&h->commits, &acc->cap, h->n, sizeof *h->commits))
        return -1;
    if (repro_git_fill_commit(c, &h->commits[h->n])) {
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
    repro_git_prefix_set ps;
    const char *one[1] = {prefix};
    repro_git_history *h = NULL;
    if (repro_git_prefixes_init(&ps, one, 1))
        return -1;
    if (!(h = calloc(1, sizeof *h))) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    history_acc acc = {h, 0, max};
    char boundary[41];
    int cut = 0;
    if (repro_git_walk_changes(g, NULL, &ps, history_add, &acc, boundary, &cut))
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
    repro_git_prefixes_release(&ps);
    return ret;
}
