/* Shared by sandbox.c and sandbox_run.c; not an API. */
#ifndef REPRO_SANDBOX_IMPL_H
#define REPRO_SANDBOX_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "util/sandbox.h"

#define REPRO_SANDBOX_INSTALL_HINT "install bubblewrap (Debian/Ubuntu: apt-get install " \
                                   "bubblewrap; Fedora: dnf install bubblewrap)"

/* o with every 0 limit replaced by its default. */
repro_sandbox_opts repro_sandbox_effective(const repro_sandbox_opts *o);
/* bwrap's path from $PATH, as a child would find it: 1, or 0. */
int repro_sandbox_find_bwrap(char *out, size_t len);
/* The first line of a file without its newline, or "" (NULL path: ""). */
void repro_sandbox_first_line(const char *path, char *buf, size_t len);
/* "4.0 GiB", "256.0 MiB", "512 KiB". */
void repro_sandbox_human_bytes(uint64_t b, char *buf, size_t len);

#endif
