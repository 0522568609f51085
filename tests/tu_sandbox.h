/* The directories a sandbox test works in (check_sandbox.c,
 * check_sandbox_gpu.c): a fresh root under the run's temporary directory
 * and named paths in it, some of them made as directories. */
#ifndef REPRO_TU_SANDBOX_H
#define REPRO_TU_SANDBOX_H

#include <stddef.h>

#include "testutil.h"

/* Room for "<root>/<name>" with a short name. */
#define TU_SB_LEN (TU_TMP_LEN + 16)

/* One path under the root: its name there, where its full path goes, and
 * whether to make it a directory (else only the path: a file to come). */
typedef struct {
    const char *name;
    char *path; /* TU_SB_LEN bytes */
    int mkdir;
} tu_sb_path;

/* Makes a fresh root "<tag>-XXXXXX" into root (TU_TMP_LEN bytes) and fills
 * each of paths (ended by a NULL name), making those marked as
 * directories; fails the test if it cannot. */
void tu_sandbox_dirs(const char *tag, char *root, const tu_sb_path *paths);

/* Writes text into dir/name (a new or truncated file); fails the test if
 * it cannot. */
void tu_sandbox_write(const char *dir, const char *name, const char *text);

#endif
