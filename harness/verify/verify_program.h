/* The re-run of a program bundle (verify.h, step 5 for a program): the
 * packed tree unpacked into a private scratch directory, the build
 * command and then the program run inside the sandbox (util/sandbox.h)
 * with the runner protocol in their environment, and the declared
 * outputs the re-run left, hashed.
 *
 * Inside the sandbox the scratch directory is the only writable host
 * path, capped in all at opts->disk_bytes where a tmpfs can be mounted on
 * it (util/sandbox_disk.h; the sandbox's description says which); the bundle and this repro's installation (its binary's
 * directory, and the install prefix above a bin/) are bound read-only
 * so the program can build against librepro and record, and this
 * repro's Python client (client.h) is on its PYTHONPATH, read-only, so
 * that `import repro` finds the verifier's own whatever its prefix (a
 * package in the program's own tree still comes first). Both commands
 * go through /bin/sh only to change into the tree ("cd DIR && exec
 * ..."): the program's argv is passed as arguments, never as text. */
#ifndef REPRO_VERIFY_PROGRAM_H
#define REPRO_VERIFY_PROGRAM_H

#include <jansson.h>

#include "util/sandbox.h"
#include "verify/bundle.h"

typedef enum {
    REPRO_PROGRAM_OK,           /* built, ran, left a complete trace */
    REPRO_PROGRAM_BUILD_FAILED, /* the build command failed */
    REPRO_PROGRAM_RUN_FAILED,   /* the program failed or left no complete trace */
    REPRO_PROGRAM_LIMIT         /* a sandbox limit stopped the build or the run */
} repro_program_outcome;

typedef struct {
    repro_program_outcome outcome;
    char text[1400];        /* why, when not OK (quotes the program's stderr) */
    char scratch[600];      /* the private scratch directory */
    char workdir[1200];     /* where the program ran: scratch/tree/<cwd> */
    char trace[700];        /* the re-run's trace */
    char sandbox[1000];     /* repro_sandbox_describe */
    char client[600];       /* this repro's Python client dir, read-only on the
                               program's PYTHONPATH (client.h); "": none */
    int no_sandbox;
    int disk_capped;        /* a tmpfs of the disk limit is mounted on scratch */
    char build_status[260]; /* "none", "exited 0", "exited 2", ... */
    char run_status[260];   /* "not run", "exited 0", ... */
    long build_ms, run_ms;
} repro_program_run;

/* 1 when the sandbox can run here, or when opts ask for none; else 0
 * with why (what to install). */
int repro_program_sandbox_ready(const repro_sandbox_opts *o, char *why, size_t len);
/* Unpacks, builds and runs b's program under opts (scratch_dir and
 * ro_paths are set here); data_dir (absolute; NULL: none) is bound
 * read-only at its own path and given as REPRO_DATA. 0 with pr filled
 * (outcome says how it went), or -1 (error slot) for a failure of the
 * host's. */
int repro_program_rerun(const repro_bundle *b, const repro_sandbox_opts *opts,
                        const char *data_dir, repro_program_run *pr);
/* The declared outputs as the re-run left them: [{"path", "sha256" (null
 * when missing), "bytes", "claimed_sha256", "identical"}]; *missing names
 * the first missing one (NULL when all are there); host paths of those
 * present are appended to paths (a JSON array of strings). */
json_t *repro_program_outputs(const repro_bundle *b, const repro_program_run *pr,
                              json_t *paths, const char **missing);
/* Removes the scratch directory. */
void repro_program_cleanup(repro_program_run *pr);

#endif
