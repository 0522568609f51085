/* The one rule for writing a file at a path a user named (--junit, --plot,
 * verify -o, run -o, run --dump's files, keygen -o, ...). What is at the
 * path decides how it is written:
 *
 * - nothing (a new path) or a regular file: a temporary file beside it,
 *   renamed over it once complete (a reader never sees half a file, and a
 *   failed write leaves the old one in place);
 * - a symlink (or a chain of them) to a regular file, or to a new path in
 *   an existing directory: written through, the same way at the target (the
 *   temporary file in the target's directory): the link stays a link;
 * - a character device or a FIFO (/dev/null, /dev/stdout on a terminal or
 *   a pipe, a named pipe), directly or through symlinks: opened and written
 *   in place, never renamed over or replaced;
 * - a name for one of repro's own open files (/dev/stdout, /dev/stderr,
 *   /dev/fd/N, /proc/self/fd/N): written through that descriptor, at its
 *   offset, as a shell redirection would (never reopened or replaced);
 * - anything else (a directory, a socket, a block device, a symlink whose
 *   target's directory is missing, a symlink loop) is refused with an error
 *   naming the path and what it is (REPRO_EIO: exit 3, as for any place
 *   that cannot be written).
 *
 * The streaming form (repro_outfile_open_stream) keeps the same rule but
 * writes a regular file in place, truncated, for a file that readers follow
 * while it grows (a run's trace). */
#ifndef REPRO_OUTPATH_H
#define REPRO_OUTPATH_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct {
    FILE *f;             /* write here */
    char path[4096];     /* the path as named */
    char target[4096];   /* the file that ends up written (a link's target) */
    char tmp[4200];      /* the temporary file; "" when written in place */
    int exclusive;       /* repro_outfile_open_new: never put over a file */
} repro_outfile;

/* Opens o->f for `path` by the rule above; `what` names the file in
 * messages ("JUnit report", "plot"; NULL: none). 0, or -1 with the error
 * slot set and nothing left behind. */
int repro_outfile_open(repro_outfile *o, const char *path, const char *what);
/* The same, a regular file written in place (see above). */
int repro_outfile_open_stream(repro_outfile *o, const char *path, const char *what);
/* The same for a file that must never replace one (a private key): an
 * existing regular file at the path, directly or through symlinks, is
 * refused (REPRO_EINVAL, "File exists"); a new path (or a dangling
 * symlink's target) gets a temporary file created with permissions `mode`,
 * put in place by link() at commit, so a file that appeared meanwhile is
 * not replaced either; a device, FIFO or own descriptor is written in place
 * as by the rule. */
int repro_outfile_open_new(repro_outfile *o, const char *path, const char *what, mode_t mode);
/* Finishes: flushes and closes, and for a temporary file fsyncs it and
 * renames it over the target. 0, or -1 (error slot; the temporary file
 * removed, the target as it was). */
int repro_outfile_commit(repro_outfile *o);
/* Gives up: closes and removes the temporary file. */
void repro_outfile_abort(repro_outfile *o);

/* open + fwrite + commit: `len` bytes of `data` at `path`. */
int repro_outfile_write(const char *path, const char *what, const void *data, size_t len);

#endif
