/* Paths and lists of them, for the history layer's other files
 * (git_impl.h): prefix sets (what "kernels/" matches), growable string
 * lists, and repro_git_relpath (git.h). No libgit2 calls but the
 * pathspec a prefix set hands to one. */
#include "history/git.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history/git_impl.h"
#include "util/error.h"

char *repro_git_strdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        repro_error_set(REPRO_ENOMEM, "out of memory");
    return d;
}

/* Grows *arr (of *cap elements of size el) to hold at least n+1. */
int repro_git_grow(void *arrp, size_t *cap, size_t n, size_t el)
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

int repro_git_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- prefixes ---------------------------------------------------------- */

/* Normalised prefixes: no leading "./", no trailing '/'. "" matches all. */

void repro_git_prefixes_release(repro_git_prefix_set *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->p[i]);
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

int repro_git_prefixes_init(repro_git_prefix_set *ps, const char *const *prefixes, size_t n)
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
        char *d = repro_git_strdup(s);
        if (!d) {
            repro_git_prefixes_release(ps);
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

int repro_git_prefixes_match(const repro_git_prefix_set *ps, const char *path)
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
 * repro_git_prefixes_match() decides what is reported. */
git_strarray repro_git_prefixes_pathspec(const repro_git_prefix_set *ps)
{
    git_strarray a = {NULL, 0};
    if (!ps->all) {
        a.strings = ps->p;
        a.count = ps->n;
    }
    return a;
}

/* ---- string lists ------------------------------------------------------- */

/* A growable list of strings. */

void repro_git_strvec_release(repro_git_strvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->s[i]);
    free(v->s);
    memset(v, 0, sizeof *v);
}

int repro_git_strvec_push(repro_git_strvec *v, const char *s)
{
    if (repro_git_grow(&v->s, &v->cap, v->n, sizeof *v->s))
        return -1;
    if (!(v->s[v->n] = repro_git_strdup(s)))
        return -1;
    v->n++;
    return 0;
}

/* Sorts and drops duplicates. */
void repro_git_strvec_uniq(repro_git_strvec *v)
{
    if (v->n < 2)
        return;
    qsort(v->s, v->n, sizeof *v->s, repro_git_cmp_str);
    size_t w = 1;
    for (size_t i = 1; i < v->n; i++) {
        if (!strcmp(v->s[i], v->s[w - 1]))
            free(v->s[i]);
        else
            v->s[w++] = v->s[i];
    }
    v->n = w;
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
    return (*out = repro_git_strdup(rel)) ? 0 : -1;
}
