/* The repository handle (see git.h): libgit2 set up once per process,
 * discovery of the repository, its work tree, and a shallow clone's
 * boundary list, which every history walk needs (git_walk.c). */
#include "history/git.h"

#include <errno.h>
#include <git2.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history/git_impl.h"
#include "util/error.h"


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

/* ---- shallow boundaries ------------------------------------------------- */

/* libgit2 1.5.1 does not read .git/shallow: git_revwalk_next() in a shallow
 * clone fails with "object not found" on the first missing parent, and with
 * a sort order set it fails before yielding a single commit. So the boundary
 * list is read here and the boundary commits are hidden from every walk
 * (git_revwalk_add_hide_cb), which keeps the walk above the missing parents. */
int repro_git_cmp_oid(const void *a, const void *b)
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
        if (repro_git_grow(&g->boundary, &cap, g->nboundary, sizeof *g->boundary)) {
            ret = -1;
            break;
        }
        g->boundary[g->nboundary++] = id;
    }
    fclose(f);
    if (g->nboundary > 1)
        qsort(g->boundary, g->nboundary, sizeof *g->boundary, repro_git_cmp_oid);
    return ret;
}

int repro_git_is_boundary(const repro_git *g, const git_oid *id)
{
    return g->nboundary &&
           bsearch(id, g->boundary, g->nboundary, sizeof *g->boundary, repro_git_cmp_oid) != NULL;
}

int repro_git_hide_boundary(const git_oid *id, void *payload)
{
    return repro_git_is_boundary(payload, id);
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
    if (!(g->workdir = repro_git_strdup(wd)))
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
