/* What commit bisection does around its probes (bisect_ctx.h): messages
 * on stderr, the children it starts (a build, a run) with a scrubbed
 * environment in their own process group, and interruption by SIGINT or
 * SIGTERM, forwarded to the running child. */
#include "bisect/bisect_ctx.h"

#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/child.h"
#include "util/error.h"

/* ---- small helpers ------------------------------------------------------ */

void repro_bisect_progress(const repro_bisect_ctx *c, const char *fmt, ...)
{
    if (c->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("bisect: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The history layer's message, prefixed "bisect: " (the code kept). */
int repro_bisect_git_error(void)
{
    char why[1024]; /* the slot's own text cannot be formatted into the slot */
    snprintf(why, sizeof why, "%s", repro_error_message());
    return repro_error_set(repro_error_code(), "bisect: %s", why);
}

void repro_bisect_set_verdict(repro_bisect_cand *cd, int verdict, long step, const char *fmt, ...)
{
    cd->verdict = verdict;
    cd->step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cd->reason, sizeof cd->reason, fmt, ap);
    va_end(ap);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    remove(path);
    return 0; /* keep going: remove as much as can be removed */
}

/* rm -rf, never following symlinks out of the tree. */
void repro_bisect_remove_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Prints the last `nlines` lines of a log to stderr, indented: the log itself
 * lives in the temporary directory, which is gone when the bisect ends. */
void repro_bisect_show_tail(const repro_bisect_ctx *c, const char *path, int nlines)
{
    if (c->o->quiet)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *lines[32] = {0};
    char buf[512];
    int n = 0;
    if (nlines > 32)
        nlines = 32;
    while (fgets(buf, sizeof buf, f)) {
        free(lines[n % nlines]);
        lines[n % nlines] = strdup(buf);
        n++;
    }
    fclose(f);
    for (int i = n > nlines ? n - nlines : 0; i < n; i++) {
        char *l = lines[i % nlines];
        if (l)
            fprintf(stderr, "    | %s%s", l, l[strlen(l) - 1] == '\n' ? "" : "\n");
    }
    for (int i = 0; i < nlines; i++)
        free(lines[i]);
}

/* Prints a message of several lines to stderr, indented as show_tail does. */
void repro_bisect_show_text(const repro_bisect_ctx *c, const char *text)
{
    for (const char *p = text; !c->o->quiet && *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(stderr, "    | %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* ---- interruption ---------------------------------------------------------- */

/* Children run in their own process group (see spawn_logged), so Ctrl-C
 * reaches only repro: the handler notes it, the child's group gets the same
 * signal, and the worktree is still removed on the way out. */
volatile sig_atomic_t repro_bisect_interrupted;

static void on_signal(int sig)
{
    repro_bisect_interrupted = sig;
}

void repro_bisect_signals_catch(repro_bisect_signals *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    repro_bisect_interrupted = 0;
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    /* A signal our parent chose to ignore (nohup, a background job) stays ignored. */
    if (s->old_int.sa_handler == SIG_IGN)
        sigaction(SIGINT, &s->old_int, NULL);
    if (s->old_term.sa_handler == SIG_IGN)
        sigaction(SIGTERM, &s->old_term, NULL);
}

void repro_bisect_signals_restore(const repro_bisect_signals *s)
{
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
}

int repro_bisect_check_interrupted(void)
{
    if (repro_bisect_interrupted)
        return repro_error_set(128 + repro_bisect_interrupted, "bisect: interrupted (signal %d)",
                               (int)repro_bisect_interrupted);
    return 0;
}

/* ---- children ------------------------------------------------------------- */

/* The children's environment: ours, minus what would make them act on
 * something other than the worktree. make's MAKEFLAGS and friends (when
 * repro itself runs under make, as `make check` does, `BUILD=...` and -j
 * settings would leak into the user's build command); GIT_DIR and friends
 * (set in git hooks and `git bisect run`, they would point the build and
 * `repro run` at the user's checkout instead of the worktree). */
const char *const repro_bisect_scrubbed_env[] = {
    "MAKEFLAGS",      "MFLAGS",         "MAKELEVEL", "MAKEOVERRIDES", "GIT_DIR", "GIT_WORK_TREE",
    "GIT_INDEX_FILE", "GIT_COMMON_DIR", NULL};

/* Runs `path argv...` in `cwd` with stdin from /dev/null and stdout and
 * stderr appended to `log`, and waits. It leads its own process group
 * (child.h), so that an interruption reaches everything it started (make's
 * compilers too), and not a stray grandchild left writing into a worktree
 * that is being removed: an interruption is forwarded to that group.
 * *status: the exit status, 128+signal, or 127 when it could not be
 * started (as a shell says for a missing command). Returns -1 only when
 * interrupted or when waiting fails. */
int repro_bisect_spawn_logged(const char *cwd, const char *path, char *const argv[],
                              const char *log, int *status)
{
    repro_child c = {0};
    c.path = path;
    c.argv = argv;
    c.cwd = cwd;
    c.env_unset = repro_bisect_scrubbed_env;
    c.out_path = log;
    c.append = 1;
    c.err_to_out = 1;
    c.interrupt = &repro_bisect_interrupted;
    repro_child_status st;
    if (repro_child_start(&c)) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "repro bisect: %s\n", repro_error_message());
            fclose(f);
        }
        repro_error_clear();
        *status = 127;
        return repro_bisect_check_interrupted();
    }
    if (repro_child_wait(&c, &st)) {
        *status = 127;
        return -1;
    }
    *status = repro_child_status_code(&st);
    return repro_bisect_check_interrupted();
}
