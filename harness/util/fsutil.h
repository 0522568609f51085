/* Small file-system helpers shared by the commands that write run
 * directories, goldens and dumps, and the one way to open a file someone
 * else gave us (configs, traces, goldens, bundles, manifests, keys, IDX). */
#ifndef REPRO_FSUTIL_H
#define REPRO_FSUTIL_H

#include <stdio.h>

/* mkdir -p of `dir` itself (every component, 0777 & umask). Returns 0, or -1
 * with the error slot set (exit 3) naming the directory that failed. */
int repro_mkdirs(const char *dir);
/* mkdir -p of the directory part of a file path ("a/b/c.txt": a/b). */
int repro_mkdirs_for(const char *path);
/* fsyncs the directory holding `path`, so a rename into it is durable
 * (best effort: nothing to report if the directory cannot be opened). */
void repro_fsync_parent_dir(const char *path);

/* Can this process write a file in `dir` now? Creates a small probe file
 * there (O_EXCL, removed at once), writes a byte and fsyncs it — what a
 * full disk (ENOSPC), a quota (EDQUOT), a file-size limit (EFBIG), a
 * read-only mount (EROFS) or permissions refuse. 0 when it works; -1 with
 * `why` saying what failed, e.g. "No space left on device (0 bytes free
 * there)". Leaves the error slot alone: for explaining another failure. */
int repro_write_probe(const char *dir, char *why, size_t len);

/* Opens `path` read-only, close-on-exec, for reading untrusted input, and
 * only if it is a regular file: it is opened with O_NONBLOCK (so a FIFO or
 * a device given as the path cannot block the open), checked with fstat,
 * and O_NONBLOCK is cleared again before any read. `what` names the file's
 * role in messages ("experiment", "IDX file", ...; NULL: none). Returns 0
 * with *fd_out set, or -1 with the error slot set (REPRO_EINVAL):
 * "PATH: cannot open WHAT: strerror" (no WHAT: "PATH: strerror"), or
 * "PATH: not a regular file (a FIFO): only regular files are read". */
int repro_open_regular(const char *path, const char *what, int *fd_out);
/* The same as a stdio stream (mode "r"); NULL with the error slot set. */
FILE *repro_fopen_regular(const char *path, const char *what);

#endif
