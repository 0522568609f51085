/* TEMPORARY (branch `bundle`): a copy of the agreed header of the sandbox
 * helper's harness/util/sandbox.h, so that verify can be written against
 * it; the lead replaces this file and sandbox.c with the real ones at
 * merge. A sandbox for a program repro did not write: bubblewrap, with
 * a private writable scratch directory, read-only binds, and limits. */
#ifndef REPRO_SANDBOX_H
#define REPRO_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *scratch_dir;       /* host dir, bound read-write at the same path; the program's cwd */
    const char *const *ro_paths;   /* NULL-terminated host paths bound read-only at the same path */
    uint64_t as_bytes, cpu_seconds, fsize_bytes, max_procs;  /* 0: the documented defaults */
    double wall_seconds;           /* 0: default */
    int no_sandbox;                /* run unsandboxed (recorded in the receipt) */
} repro_sandbox_opts;

void repro_sandbox_opts_init(repro_sandbox_opts *o);
int repro_sandbox_available(char *why, size_t why_len);  /* 1 or 0 + what to install */

typedef struct {
    int exited, code, signal, timed_out, limit_hit;
    char limit_name[32];
    char what[256];
} repro_sandbox_result;

int repro_sandbox_run(const repro_sandbox_opts *o, char *const argv[], const char *const *env_set,
                      const char *out_path, const char *err_path, repro_sandbox_result *res);
void repro_sandbox_describe(const repro_sandbox_opts *o, char *buf, size_t len);

#endif
