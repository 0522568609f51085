/* A program's source tree in a submission bundle (BUNDLE/tree/): packed
 * by `repro submit -- PROGRAM` from the git tree of the program's
 * repository at HEAD (through history/), checked and unpacked by `repro
 * verify`. A packed tree holds directories and regular files only, at
 * most REPRO_PACK_FILES_MAX files and REPRO_PACK_BYTES_MAX bytes: a
 * symbolic link, a device or a FIFO is refused by name when packing and
 * when checking (a bundle comes from someone else). Files keep one bit of
 * their mode, executable or not. */
#ifndef REPRO_PACK_H
#define REPRO_PACK_H

#include <stddef.h>
#include <stdint.h>

#define REPRO_PACK_FILES_MAX 10000L
#define REPRO_PACK_BYTES_MAX (256ull << 20)

typedef struct {
    char root[4096];   /* the repository's work tree */
    char commit[41];   /* HEAD */
    int dirty;         /* the work tree had uncommitted changes (packed as they are) */
    long files;
    uint64_t bytes;
} repro_pack_info;

/* Packs the repository containing `start` (a directory) into dest (which
 * must not exist): HEAD's tree, or with allow_dirty and a dirty tree the
 * work tree's files (tracked ones as they are now, untracked ones that
 * are not ignored, deleted ones left out). A dirty tree without
 * allow_dirty is an error (exit 2) naming a changed path. */
int repro_pack_tree(const char *start, int allow_dirty, const char *dest, repro_pack_info *info);

/* Checks a packed tree: directories and regular files only, within the
 * limits. 0 with *files and *bytes, or -1 (REPRO_EINVAL) naming the path. */
int repro_pack_check(const char *dir, long *files, uint64_t *bytes);
/* Copies a checked tree src to dst (made; must not exist). */
int repro_pack_copy(const char *src, const char *dst);
/* Removes a directory tree without following symbolic links (a program
 * may leave links to anywhere in its scratch directory). */
void repro_pack_remove(const char *dir);

/* SHA-256 of a regular file, not through a symbolic link, as 64 hex
 * digits; *bytes its size. 0, or -1 (REPRO_EINVAL) naming the path. */
int repro_pack_sha256_file(const char *path, char hex[65], uint64_t *bytes);

/* Is rel a safe relative path: [A-Za-z0-9._/+-], no empty, "." or ".."
 * component, at most 255 bytes? */
int repro_pack_rel_ok(const char *rel);

#endif
