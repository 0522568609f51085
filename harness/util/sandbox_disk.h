/* The sandbox's total-disk cap: everything a program writes on the host
 * lands in its scratch directory (the rest of its file system is
 * read-only or a private tmpfs), and RLIMIT_FSIZE bounds each file, not
 * their sum. A tmpfs of the cap's size mounted on the scratch directory
 * before anything is put in it bounds the sum: a write past it fails
 * with ENOSPC, and nothing of it reaches the host's disk (a tmpfs is
 * memory, which the kernel may swap). Mounting needs CAP_SYS_ADMIN on
 * the host (repro run as root, as a verifier in a container usually is);
 * elsewhere the scratch directory stays uncapped, and the sandbox's
 * description says so, as for the process-count limit. */
#ifndef REPRO_SANDBOX_DISK_H
#define REPRO_SANDBOX_DISK_H

#include <stddef.h>
#include <stdint.h>

/* Mounts a tmpfs of bytes (mode 0700) on dir, a fresh empty directory.
 * 0, or -1 with why saying what stopped it (the error slot is not
 * touched: uncapped is not an error). */
int repro_sandbox_disk_cap(const char *dir, uint64_t bytes, char *why, size_t len);
/* Unmounts it (lazily: a process still inside does not keep it); its
 * contents are gone. Nothing when dir is not a capped scratch. */
void repro_sandbox_disk_release(const char *dir);

#endif
