/* bwrap's command line for a sandbox (sandbox.h): what is bound where, the
 * namespaces, the environment. Internal to sandbox.c. */
#ifndef REPRO_SANDBOX_ARGS_H
#define REPRO_SANDBOX_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* A growing NULL-terminated argument vector; every string is its own copy. */
typedef struct {
    char **v;
    size_t n, cap;
    int failed;        /* out of memory on some add */
} repro_argv;

void repro_argv_free(repro_argv *a);

/* The directories and files of the host every sandbox sees read-only. */
extern const char *const repro_sandbox_etc_files[];

/* bwrap's arguments up to and including "--": namespaces, the read-only
 * system, /proc, /dev, a /tmp of tmp_bytes, scratch (read-write, the
 * working directory; NULL: none) and ro_paths (absolute), the Python
 * client's package (client_dir/repro, absolute; NULL: none) read-only at
 * REPRO_SANDBOX_CLIENT_DIR/repro, dev_nodes (host paths of device nodes,
 * NULL-terminated; NULL: none) each with --dev-bind at /dev/<its name>,
 * the root remounted read-only, and an
 * environment of only PATH, HOME (scratch, or /tmp), TMPDIR and env_set
 * ("K=V"). 0, or -1 (error slot) when out of memory or an env_set entry
 * has no '='. */
int repro_sandbox_args(repro_argv *a, const char *bwrap, const char *scratch,
                       const char *const *ro_paths, const char *client_dir,
                       const char *const *dev_nodes, uint64_t tmp_bytes,
                       const char *const *env_set);
/* Appends one argument. */
void repro_argv_add(repro_argv *a, const char *s);

#endif
