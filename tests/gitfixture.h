/* Scratch git repositories for the suites that need real history (git,
 * bisect_commits, bisect_program): the git CLI run with a HOME of the
 * test's own and no system config, so a user's settings (commit signing,
 * hooks, init.defaultBranch) cannot change what a test builds; GIT_DIR
 * and friends, and make's MAKEFLAGS, are unset in case the suite runs from
 * a git hook or under make. Commits get fixed dates (TU_GIT_T0 + 60 n for
 * the n-th since tu_git_home), so ids and order are the same on every run.
 * Every helper fails the test (ck_assert) when its command fails. */
#ifndef REPRO_GITFIXTURE_H
#define REPRO_GITFIXTURE_H

#include <stddef.h>

#define TU_GIT_T0 1700000000 /* 2023-11-14T22:13:20Z */

/* That environment, as a shell prefix with one %s for HOME: for a test
 * that starts a command of its own (repro) the way git runs here. */
#define TU_GIT_ENV                                                                               \
    "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_CEILING_DIRECTORIES MAKEFLAGS MAKELEVEL; "  \
    "export HOME='%s' GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t "           \
    "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t; "

/* The HOME every command below runs with (an existing directory, kept by
 * the caller); restarts the commit dates at TU_GIT_T0. */
void tu_git_home(const char *home);
/* The date (seconds) of the next commit, counted as one. */
int tu_git_next_time(void);

/* Runs a shell command line in the environment above; must exit 0. */
void tu_git_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, with its whole standard output in out, trailing newlines
 * removed (one line comes back as that line). */
void tu_git_capture(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* `git init -q -b main DIR` (DIR is made if missing). */
void tu_git_init(const char *dir);
/* Writes text to DIR/REL (fopen mode "w" or "a"), making REL's parent
 * directories. */
void tu_git_write(const char *dir, const char *rel, const char *mode, const char *text);
/* `git add -A && git commit` in dir at the next fixed date; id (may be
 * NULL) gets the new commit's 40 hex digits. */
void tu_git_commit_all(const char *dir, const char *msg, char id[41]);

/* A suite's scratch directory (made from tu_tmp_template(tag)), which is
 * also the HOME of tu_git_home, and the repro binary under test (REPRO_BIN,
 * else ./build/repro) as an absolute path in bin (PATH_MAX bytes). */
void tu_git_scratch(char *base, size_t base_len, const char *tag, char *bin);
/* Removes a scratch directory and everything in it (a suite's teardown). */
void tu_git_scratch_remove(const char *base);
/* DIR/Makefile building DIR/prog from prog.c against the staged install
 * (REPRO_STAGE: headers and librepro), as a user's program links repro
 * (a sanitizer build of librepro needs its runtime in the program too). */
void tu_git_write_program_makefile(const char *dir);

#endif
