/* One error slot per thread: library code records what failed and returns -1;
 * only main() prints it and picks the exit code (libgit2's giterr pattern). */
#ifndef REPRO_ERROR_H
#define REPRO_ERROR_H

/* Exit codes, as DESIGN.md promises them to CI and `git bisect run`. */
enum {
    REPRO_EXIT_OK = 0,
    REPRO_EXIT_MISMATCH = 1,
    REPRO_EXIT_USAGE = 2, /* usage or input error: message names file:line */
    REPRO_EXIT_ENV = 3,   /* environment problem: missing library, device, memory */
    REPRO_EXIT_SKIP = 125
};

/* Records a printf-style message and the exit code it maps to; returns -1 so
 * callers can write `return repro_error_set(...)`. */
int repro_error_set(int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(errno)". */
int repro_error_set_errno(int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *repro_error_message(void);
int repro_error_exit_code(void);
void repro_error_clear(void);

#endif
