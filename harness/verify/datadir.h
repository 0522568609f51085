/* The digest of a data directory (`repro submit|verify --data DIR`): what
 * a receipt and a manifest say of the inputs a program ran on, never their
 * contents.
 *
 * Every regular file under DIR, at any depth, by its path relative to DIR
 * ("a/b.txt"), sorted bytewise; the canonical listing is one line per
 * file, "<sha256 of its bytes, 64 hex>  <relative path>\n" (the form of
 * sha256sum's output), and the digest is the SHA-256 of that listing.
 * Directories only contribute their files (an empty one nothing).
 * Anything else (a symbolic link, a FIFO, a device), a path with a
 * newline, or more than REPRO_DATA_FILES_MAX files is refused, naming it.
 * So `cd DIR && find . -type f | sed 's|^\./||' | LC_ALL=C sort | while
 * read f; do sha256sum "$f"; done | sha256sum` gives the same digest. */
#ifndef REPRO_VERIFY_DATADIR_H
#define REPRO_VERIFY_DATADIR_H

#include <stdint.h>

#define REPRO_DATA_FILES_MAX 1000000L

typedef struct {
    char sha256[65];   /* the digest above, hex */
    long files;        /* regular files counted */
    uint64_t bytes;    /* their total size */
} repro_data_digest;

/* 0 with d filled, or -1 (REPRO_EINVAL naming the entry or DIR; REPRO_EIO
 * for a read error, REPRO_ENOMEM). */
int repro_data_digest_dir(const char *dir, repro_data_digest *d);

#endif
