/* librepro: record a training run so that repro can prove it reproducible.
 *
 * A program opens a recorder, records its named tensors each step (weights,
 * gradients, outputs: whatever should not change between runs), ends the
 * step, and closes the recorder. The trace it writes is what `repro diff`,
 * `repro check -- CMD` and the golden records compare. Tensors recorded in a
 * step go into the step digest in the order they were recorded; each step
 * digest is chained into the previous one, so one digest certifies the whole
 * trajectory.
 *
 * Conventions: functions that can fail return 0 or a negative REPRO_E* code,
 * with a message in repro_error_last() (per thread). Out-parameters come
 * first. Nothing here exposes OpenSSL, jansson or libgit2 types.
 *
 *     repro_recorder *r;
 *     repro_run_info info = {"my-model", 1234, NULL};
 *     if (repro_recorder_open(&r, NULL, &info))      // NULL: $REPRO_TRACE
 *         die(repro_error_last());
 *     for (int64_t step = 1; step <= steps; step++) {
 *         train_one_step(...);
 *         repro_recorder_tensor(r, "fc.weight", REPRO_F32, 2, shape, w);
 *         repro_recorder_step(r, step, loss);
 *     }
 *     char chain[65];
 *     repro_recorder_close(r, chain);
 *
 * The trace format is documented in docs/FORMATS.md. */
#ifndef REPRO_REPRO_H
#define REPRO_REPRO_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "random.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on every incompatible change of this API (pkg-config: repro). */
#define REPRO_API_VERSION 1

/* The API version the library was built with (compare with
 * REPRO_API_VERSION to catch a header/library mismatch), and its release. */
int repro_api_version(void);
const char *repro_version_string(void);

/* ---- errors ------------------------------------------------------------ */
enum {
    REPRO_OK = 0,
    REPRO_ENOTFOUND = -1,    /* a file, key or step that is not there */
    REPRO_EINVAL = -2,       /* invalid input or argument */
    REPRO_ECORRUPT = -3,     /* a file that is not what it claims to be */
    REPRO_EIO = -4,          /* reading, writing, a library or the system failed */
    REPRO_ENOMEM = -5,       /* out of memory */
    REPRO_EUNSUPPORTED = -6, /* not available in this build or on this machine */
    REPRO_EMISMATCH = -7     /* a verification found a difference */
};

/* The message of the last error on this thread ("" if none). */
const char *repro_error_last(void);
/* Its code (a REPRO_E* value, or REPRO_OK). */
int repro_error_last_code(void);

/* ---- tensors ------------------------------------------------------------ */
typedef enum {
    REPRO_F32,
    REPRO_F64,
    REPRO_F16,
    REPRO_BF16,
    REPRO_I32,
    REPRO_I64,
    REPRO_U8,
    REPRO_U32
} repro_dtype;

/* Bytes per element (0 for an unknown dtype) and the trace's name
 * ("f32", "f64", "f16", "bf16", "i32", "i64", "u8", "u32"; NULL if unknown). */
size_t repro_dtype_size(repro_dtype dtype);
const char *repro_dtype_name(repro_dtype dtype);
/* The inverse of repro_dtype_name; REPRO_EINVAL if unknown. */
int repro_dtype_from_name(repro_dtype *out, const char *name);

/* ---- the recorder -------------------------------------------------------- */
typedef struct repro_recorder repro_recorder;

typedef struct {
    const char *experiment;  /* a name for the run: goldens are filed under it */
    uint64_t seed;           /* the global seed the run used */
    const char *config_json; /* the effective config as a JSON object; may be NULL */
} repro_run_info;

/* How much a trace says about each step (REPRO_TRACE_LEVEL). At STEP, only
 * the step and chain digests; at TENSOR, also each tensor's digest and
 * summary stats (every `every`-th step and the last); at OP, also the op
 * outputs recorded with repro_recorder_op. The digests do not depend on the
 * level. */
typedef enum { REPRO_LEVEL_STEP = 0, REPRO_LEVEL_TENSOR = 1, REPRO_LEVEL_OP = 2 } repro_level;

typedef struct {
    repro_level level;           /* default REPRO_LEVEL_TENSOR */
    int every;                   /* detail every K-th step; default 10, as `repro run`
                                    (every step keeps its digests and loss) */
    int64_t total_steps;         /* if known (> 0), that step also gets detail, and
                                    the trailer binds its param.* tensors
                                    ("final_params_sha256", SHA-256) */
    int threads, workers;        /* recorded in the header (default 1 and 0) */
    const char *experiment_path; /* recorded in the header (default: experiment) */
    const char *header_json;     /* more header keys, a JSON object; may be NULL */
    int64_t start_step;          /* resuming: the first step is start_step + 1 */
    const repro_digest *start_chain; /* ...continuing this chain (NULL: zeros) */
    const char *backend;         /* what the run computes on: "cpu" (default, NULL) or
                                    "cuda" (the GPU is then part of the environment class) */
    repro_digest_fn digest;      /* the tensor leaves' digest (repro/digest.h): default
                                    REPRO_DIGEST_XXH3; REPRO_DIGEST_SHA256 keeps every
                                    per-step digest cryptographic (REPRO_SET_TRACE_DIGEST) */
} repro_recorder_options;

/* Fills *o with the defaults above. */
void repro_recorder_options_init(repro_recorder_options *o);

/* Creates the trace (and its parent directories) and writes its header.
 * trace_path NULL: $REPRO_TRACE; if that is unset too, nothing is written
 * and only digests are computed. */
int repro_recorder_open(repro_recorder **out, const char *trace_path, const repro_run_info *info);
int repro_recorder_open_ex(repro_recorder **out, const char *trace_path, const repro_run_info *info,
                           const repro_recorder_options *opts);

/* Says how many compute threads and data-loader workers the run really
 * uses ("threads_used", "workers_used" in the trace header), which may
 * differ from what REPRO_THREADS and REPRO_WORKERS asked for (a library
 * that picks its own count, a loader that ignores it). `repro check
 * --threads 1,2` warns that the scope was not exercised when the runs do
 * not say different counts. -1 leaves a count unsaid. Call it after open
 * and before the first step ends; again to change it. */
int repro_recorder_set_threads(repro_recorder *r, int threads, int workers);

/* Says the tensor-parallel size the run really used ("tp_used" in the
 * trace header; REPRO_TP asks for one): `repro check --tp 1,2` warns that
 * the scope was not exercised when the runs do not say different sizes.
 * Call it after open and before the first step ends. */
int repro_recorder_set_tp(repro_recorder *r, int tp);

/* Says how many threads one of the process's thread pools really has
 * ("thread_pools" in the trace header: name -> threads), beside the
 * program's own count above: a BLAS library's ("blas.openblas",
 * "blas.mkl": put "blas" in a BLAS pool's name), OpenMP's ("openmp"), a
 * framework's ("torch.intra_op"). `repro check --threads` then tells a run
 * whose pools were all equal from one where a pool differed, and names
 * it. A name of 1 to 31 bytes, at most 8 names, threads >= 1; again with
 * the same name replaces it. Before the first step ends. */
int repro_recorder_set_pool(repro_recorder *r, const char *name, int threads);

/* Adds an informational key to the trace header (not hashed; readers
 * ignore keys they do not know): json_value is any JSON text. A key the
 * header already has is refused. The Python client names each hooked
 * module's class this way ("modules": {"fc1": "Linear"}), so that a
 * report can say what the first divergent op is. Before the first step
 * ends. */
int repro_recorder_header_set(repro_recorder *r, const char *key, const char *json_value);

/* Records one tensor of the current step: its digest (tree hash of its bytes,
 * docs/FORMATS.md) goes into the step digest in recording order. host_data is
 * read during the call only. shape may be NULL when ndim is 0 (a scalar);
 * ndim at most 8. Names are unique within a step, at most 63 bytes. */
int repro_recorder_tensor(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                          const int64_t *shape, const void *host_data);

/* Records one tensor of the program's starting state (initial weights,
 * optimizer state: what the first step computes from) as the tensor
 * "input.state.<name>" of the first step. Call it after open and before the
 * first step ends; name at most 51 bytes. Without it, `repro bisect -- PROGRAM`
 * cannot tell an op that is nondeterministic from one given another
 * initialization at step 1, and says so (docs/bisect.md). */
int repro_recorder_state(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                         const int64_t *shape, const void *host_data);

/* The same tensor given by the digests of its 4 KiB leaves, computed
 * elsewhere (on a GPU): leaves[repro_leaf_count(nbytes)]. stats may be NULL
 * (the trace then shows zeros). The result equals repro_recorder_tensor on
 * the same bytes. */
typedef struct {
    double l2, sum, max_abs; /* over the finite elements, in double */
    int64_t nonfinite;
} repro_tensor_stats;
int repro_recorder_tensor_leaves(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                                 const int64_t *shape, uint64_t nbytes,
                                 const repro_digest *leaves, const repro_tensor_stats *stats);

/* Also writes the values of every tensor (and op output) recorded on a
 * detail step as DIR/step-NNNNNN/NAME.npy, the layout of `repro run
 * --dump`, so that `repro diff --tolerance` can measure how far two traces'
 * tensors are apart (a trace holds only their digests). dir NULL: `dump/`
 * beside the trace (REPRO_EINVAL when the recorder writes no trace). f16
 * and bf16 tensors have no .npy form here, and tensors given as leaf
 * digests (repro_recorder_tensor_leaves) no bytes: both are left out. Takes effect
 * from the next tensor recorded; a directory of at most 1,000 bytes. */
int repro_recorder_values(repro_recorder *r, const char *dir);

/* At level OP: records an op output of the current step (in call order; not
 * part of the step digest, so digests agree across levels). Ignored at
 * lower levels. */
int repro_recorder_op(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                      const int64_t *shape, const void *host_data);

/* Ends the step: step digest over the tensors recorded since the last step,
 * chain digest, one trace line (flushed). Steps count from 1 and must
 * increase by one. */
int repro_recorder_step(repro_recorder *r, int64_t step, double loss);

typedef struct {
    int64_t step;
    int epoch;              /* -1: not recorded */
    double loss;            /* shown in the trace (not hashed: record it as a tensor to hash it) */
    const float *loss_f32;  /* if not NULL, the loss as the program computed it in float32 */
    const char *extra_json; /* informational keys for the line (a JSON object); may be NULL */
} repro_step_info;
int repro_recorder_step_ex(repro_recorder *r, const repro_step_info *info);

/* The chain digest after the last ended step and that step (0 before any). */
int64_t repro_recorder_chain(const repro_recorder *r, repro_digest *chain);

/* Writes the trailer (step count and final chain digest, so a cut-short
 * trace is detected), fsyncs and closes the file, frees r. chain_hex (may be
 * NULL) receives the final chain digest. r is freed even on error. */
int repro_recorder_close(repro_recorder *r, char chain_hex[65]);
/* The same with informational trailer keys (a JSON object; may be NULL). */
int repro_recorder_close_ex(repro_recorder *r, char chain_hex[65], const char *trailer_json);
/* Frees r without a trailer (after an error): the trace stays a valid,
 * visibly incomplete prefix. NULL does nothing. */
void repro_recorder_abort(repro_recorder *r);

/* ---- the runner protocol ---------------------------------------------------
 * `repro check -- CMD ARGS...` (and run, compare, bisect, bless) starts CMD
 * as fresh processes with the controlled settings in the environment:
 *
 *   REPRO_TRACE        where to write the trace (the recorder's default)
 *   REPRO_SEED         the global seed, decimal uint64
 *   REPRO_THREADS      compute threads the program should use
 *   REPRO_WORKERS      data-loader workers
 *   REPRO_DETERMINISTIC  on | off | warn
 *   REPRO_BENCHMARK    on | off (autotuned algorithm choice)
 *   REPRO_TRACE_LEVEL  step | tensor | op
 *   REPRO_RUN_INDEX    which run of a check this is (0, 1, ...)
 *   REPRO_BATCH_SIZE   a batch size to use (batch-invariance checks)
 *   REPRO_SET_<KEY>    each --set KEY=VALUE (KEY upper-cased, '.' -> '_')
 *
 * Outside repro, none is set and the defaults below apply. */
typedef struct {
    int under_repro;       /* 1 if REPRO_TRACE is set */
    const char *trace_path; /* REPRO_TRACE, or NULL */
    uint64_t seed;         /* default: the caller's */
    int threads;           /* default 1 */
    int workers;           /* default 0 */
    int deterministic;     /* 1 on (default), 0 off, 2 warn */
    int benchmark;         /* 0 off (default), 1 on */
    repro_level level;     /* default REPRO_LEVEL_TENSOR */
    int run_index;         /* default 0 */
    int batch_size;        /* 0: not set */
} repro_run_env;

/* Reads the protocol's variables into *out (defaults for the unset ones;
 * default_seed for REPRO_SEED). A malformed value is REPRO_EINVAL naming the
 * variable: a program should stop rather than run on a guess. */
int repro_run_env_read(repro_run_env *out, uint64_t default_seed);
/* The value of --set KEY=VALUE as passed to this program (REPRO_SET_<KEY>,
 * KEY case-insensitive, '.' and '-' read as '_'), or NULL. */
const char *repro_run_env_setting(const char *key);
/* Recorder options from the protocol: level, threads and workers, and the
 * trace settings `repro ... --set` passes (REPRO_SET_TRACE_DIGEST,
 * REPRO_SET_TRACE_EVERY). */
void repro_recorder_options_from_env(repro_recorder_options *o, const repro_run_env *env);

#ifdef __cplusplus
}
#endif
#endif
