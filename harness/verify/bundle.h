/* Submission bundles: the folder `repro submit` writes and `repro verify`
 * checks. Reading is strict because a bundle comes from someone else: the
 * manifest is size-limited, parsed by jansson with duplicate keys refused,
 * every key must be known and of its type and range, and the claimed trace
 * path must stay inside the bundle (checked again after symlinks are
 * resolved). Nothing from a bundle is ever passed to a shell.
 *
 * Layout:  BUNDLE/manifest.json   the manifest below
 *          BUNDLE/trace.jsonl     the claimed trace (the manifest names it)
 *
 * manifest.json (version 1), every key required unless marked optional:
 *   "repro_bundle": 1
 *   "experiment":   name, [A-Za-z0-9][A-Za-z0-9._-]{0,63} (the config's stem)
 *   "config":       the effective experiment config as INI text (what
 *                   `repro run EXP --print-config` prints), at most 64 KiB
 *   "seed":         decimal string, a uint64 (train.seed; a string because
 *                   JSON integers stop at 2^63)
 *   "steps":        integer 1 .. 10^9 (train.steps)
 *   "trace":        relative path of the claimed trace inside the bundle:
 *                   [A-Za-z0-9._/-], no empty, "." or ".." components, at
 *                   most 255 bytes
 *   "chain":        the claimed final chain digest, 64 lowercase hex
 *   "env":          the submitter's environment fingerprint (`repro env
 *                   --json`): an object of strings, plus one nested object
 *                   of strings ("class_fields"); at most 64 members each,
 *                   strings at most 1 KiB
 *   "env_class":    the submitter's environment class id
 *   "commit":       the repro commit the submitter ran, [0-9A-Za-z._-]{1,64}
 *                   ("unknown" outside a git checkout)
 *   "dirty":        optional boolean: the submitter's work tree had
 *                   uncommitted changes (so "commit" is not all it ran)
 *   "repro_version": the submitter's repro version, at most 31 bytes
 *   "created":      optional, ISO 8601 UTC time the bundle was made
 *   "score":        optional, the score the submitter claims, a decimal
 *                   number as a string (at most 31 bytes, finite): checked
 *                   against the host's score (verify --score; for an
 *                   experiment, repro's own eval accuracy of the re-run)
 *   "program":      a program bundle (`repro submit -- PROGRAM`) in place
 *                   of "config" (exactly one of the two): the object below
 *   "signature":    optional, {"alg": "ed25519", "public_key": PEM,
 *                   "key_id": SHA-256 of the raw public key, "value":
 *                   base64 Ed25519 signature over the canonical bytes of
 *                   the manifest without "signature" (sign.h)}
 * The manifest file is at most 1 MiB; the trace at most 256 MiB.
 *
 * "program" (bundle_program.c), every key required unless marked optional:
 *   "tree":    the packed source tree inside the bundle ("tree"): the git
 *              tree of the program's repository at "commit" (verify/pack.h
 *              for its limits: directories and regular files only)
 *   "commit":  the program repository's HEAD, 40 lowercase hex
 *   "dirty":   boolean: the work tree was packed as it was (--allow-dirty)
 *   "cwd":     the directory the program ran in, relative to the tree
 *              ("" for its root)
 *   "argv":    the program's argument vector, 1 to 256 strings of at most
 *              4096 bytes; argv[0] is not an absolute path (a relative one
 *              is resolved from "cwd", a bare name on PATH)
 *   "build":   optional, the build command, run with `sh -c` in the tree's
 *              root before the program (at most 4096 bytes)
 *   "env":     the runner-protocol variables the program ran with, "K=V"
 *              strings (at most 64): REPRO_* (not REPRO_TRACE, REPRO_LIB,
 *              REPRO_DATA, REPRO_FAULT), OMP_NUM_THREADS, MKL_NUM_THREADS,
 *              OPENBLAS_NUM_THREADS, PYTHONHASHSEED
 *   "outputs": the files the program declares as its outputs (at most 64),
 *              each {"path": relative to "cwd", "sha256": 64 hex of the
 *              submitter's file, "bytes": its size}; a copy of each is in
 *              the bundle at outputs/<path>
 *   "data":    optional, the program ran on a data directory (`submit
 *              --data DIR`, given as REPRO_DATA; not in the bundle):
 *              {"sha256": its digest (verify/datadir.h), "files": count,
 *              "bytes": total size}. Such a bundle is verified only with
 *              the host's own data (`verify --data DIR`) */
#ifndef REPRO_BUNDLE_H
#define REPRO_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "record/hash.h"

#define REPRO_BUNDLE_VERSION 1
#define REPRO_BUNDLE_MANIFEST "manifest.json"
#define REPRO_BUNDLE_MANIFEST_MAX (1L << 20)
#define REPRO_BUNDLE_CONFIG_MAX (64L << 10)
#define REPRO_BUNDLE_TRACE_MAX (256L << 20)
#define REPRO_BUNDLE_STEPS_MAX 1000000000L

#define REPRO_BUNDLE_ARGV_MAX 256
#define REPRO_BUNDLE_ENV_MAX 64
#define REPRO_BUNDLE_OUTPUTS_MAX 64
#define REPRO_BUNDLE_CMD_MAX 4096

typedef struct {
    char tree[256];
    char commit[41];
    int dirty;
    char cwd[256];
    const json_t *argv;       /* borrowed from the manifest: strings */
    const char *build;        /* borrowed; NULL: no build step */
    const json_t *env;        /* borrowed: "K=V" strings */
    const json_t *outputs;    /* borrowed: {"path", "sha256", "bytes"} */
    char tree_path[4400];     /* resolved BUNDLE/tree (load) */
    long tree_files;
    uint64_t tree_bytes;
    int has_data;             /* submitted with --data: "data" {"sha256", "files", "bytes"} */
    char data_sha256[65];     /* the submitter's data directory (verify/datadir.h) */
    long data_files;
    uint64_t data_bytes;
} repro_bundle_program;

/* Validates the "program" object into p (bundle_program.c); errors as
 * repro_bundle_parse's. */
int repro_bundle_parse_program(repro_bundle_program *p, const json_t *v, const char *what);
/* Validates a "score" string: a finite decimal number of at most 31 bytes. */
int repro_bundle_parse_score(const json_t *v, const char *what, char *buf, size_t len,
                             double *value);
/* May a manifest's "env" set this variable (name=value)? */
int repro_bundle_env_allowed(const char *kv);

typedef struct {
    char dir[1024];
    char manifest_path[1100];
    char trace_path[4096];    /* resolved (realpath) claimed trace */
    json_t *manifest;         /* owned */
    repro_digest manifest_digest; /* SHA-256 of the manifest file's bytes */
    char experiment[65];
    const char *config;       /* INI text, borrowed from manifest */
    char seed[24];
    uint64_t seed_value;
    long steps;
    char trace[256];
    repro_digest chain;
    char chain_hex[65];
    const json_t *env;        /* borrowed from manifest */
    char env_class[64];
    char commit[65];
    int dirty;                /* 1 dirty, 0 clean, -1 not said */
    char repro_version[32];
    int is_signed;            /* a valid submitter signature (load checks it) */
    int has_score;            /* "score" was claimed */
    char score[32];
    double score_value;
    int is_program;           /* a program bundle: program holds it */
    repro_bundle_program program;
    char key_id[65];          /* the submitter key's id when signed */
} repro_bundle;

/* Validates manifest bytes (no file access): JSON, known keys, types,
 * ranges, and the signature's form (not its validity). Errors: exit 2,
 * "<what>: message". b is released by repro_bundle_release either way. */
int repro_bundle_parse(repro_bundle *b, const char *bytes, size_t len, const char *what);
/* Reads BUNDLE/manifest.json (size-limited), parses it, checks the trace
 * path stays inside the bundle and names a regular file, and checks the
 * signature when there is one (an invalid one is an error). */
int repro_bundle_load(repro_bundle *b, const char *dir);
void repro_bundle_release(repro_bundle *b);

/* Writes `doc` as DIR/manifest.json atomically (signed with key when not
 * NULL): manifest.json.lock, fsync, rename, fsync of the directory. */
int repro_bundle_write_manifest(const char *dir, json_t *doc, EVP_PKEY *key);

/* Writes data to path atomically as above (shared with receipts). */
int repro_write_file_atomic(const char *path, const void *data, size_t len);
/* Reads a whole regular file of at most max bytes (malloc'd, NUL-terminated;
 * *len_out its length). Errors name the file: exit 2. */
int repro_read_file_limited(const char *path, long max, char **out, size_t *len_out);

#endif
