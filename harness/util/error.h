/* One error slot per thread: library code records what failed and returns -1;
 * the public API returns the slot's code (a negative REPRO_E*, repro.h), and
 * only the CLI turns codes into exit codes (cli/cli.h). libgit2's pattern. */
#ifndef REPRO_ERROR_H
#define REPRO_ERROR_H

#include "repro/repro.h"

/* Records a printf-style message and its code (REPRO_EINVAL, REPRO_EIO, ...);
 * returns -1 so callers can write `return repro_error_set(...)`. */
int repro_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(errno)". */
int repro_error_set_errno(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts context before the recorded cause: the slot becomes
 * "<formatted prefix>: <cause>" with the given code. The cause is copied
 * out first, so `repro_error_wrap(c, "golden %s", path)` is the safe form of
 * `repro_error_set(c, "golden %s: %s", path, repro_error_message())`, which
 * formats the slot into itself (overlapping vsnprintf: undefined, and in
 * practice the cause comes out garbled). When both do not fit, the prefix
 * is cut (ending "...") before the cause is: the cause names file:line.
 * Returns -1. */
int repro_error_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *repro_error_message(void);
/* The code of the last error (REPRO_EINVAL if none was given). */
int repro_error_code(void);
void repro_error_clear(void);

#endif
