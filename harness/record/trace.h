/* Trace files: the per-step record of a run, JSON Lines (one JSON object per
 * line), written and read with jansson, never by hand.
 *
 * Line 1, the header:
 *   {"repro_trace": 2, "type": "header",
 *    "experiment": "mlp", "experiment_path": "experiments/mlp.ini",
 *    "config": {"model": {"type": "mlp", ...}, "data": {...}, "train": {...}, "trace": {...}},
 *                                   every key of the effective config, values as strings
 *    "config_digest": hex,          SHA-256 of the effective config dumped as INI
 *    "numerics_digest": hex,        the same without the keys promised not to change
 *                                   bits or that only bound the run (threads, num_workers,
 *                                   prefetch, steps, log_every, trace.*, deterministic)
 *                                   and without keys at their default value (so a new
 *                                   key does not orphan old goldens): traces whose
 *                                   numerics digests differ are different experiments
 *    "seed": "1234", "seed_scheme": "repro-seed/v1", "rng": "philox4x32-10/v1",
 *    "tensor_hash": "repro-tensor/v2-xxh3-128",  the tree hash's leaf digest
 *                                   (repro/digest.h): XXH3-128, or "repro-tensor/v1"
 *                                   (SHA-256 leaves: `[trace] digest = sha256`, and
 *                                   every trace written before XXH3)
 *    "repro_version": "0.1.0",
 *    "compiler": "...", "cflags": "...",
 *    "level": "tensor", "every": 1,
 *    "threads": 1, "num_workers": 2,  the counts the run was asked for
 *    "threads_used": 2, "workers_used": 0,  the counts it says it really used
 *                                   (optional: absent when the program did not
 *                                   record them, repro_recorder_set_threads)
 *    "client": {"name": "repro-python", "version": "0.1.0", "protocol": 1}
 *                                   optional, not hashed: the client library that
 *                                   wrote a program's trace (the Python client), and
 *                                   its client protocol (util/version.h,
 *                                   REPRO_CLIENT_PROTOCOL), which `repro verify`
 *                                   requires its own client to speak
 *    "thread_pools": {"torch.intra_op": 1, "blas.openblas": 2, ...},
 *                                   optional: the thread pools the process really
 *                                   had (repro_recorder_set_pool; the Python client
 *                                   reads torch's, OpenBLAS's, MKL's and OpenMP's),
 *                                   name -> threads (>= 1), at most
 *                                   REPRO_TRACE_MAX_POOLS names of < 32 bytes; a BLAS
 *                                   library's pool has "blas" in its name. Not hashed
 *    "world_size_used": 2,          the data-parallel world size it ran in
 *                                   (optional: the Python client writes it,
 *                                   torch.distributed's, 1 without a group)
 *    "tp_used": 2,                  the tensor-parallel size it ran at (optional:
 *                                   repro_recorder_set_tp; not hashed)
 *    "env": {...},                  the environment fingerprint (env.h, `repro env --json`)
 *    "env_class": "cpu-x86_64-..."} its class id; goldens are keyed by it (absent in older traces)
 *
 * Then one line per recorded step n = 1, 2, ... (after n optimizer steps):
 *   {"type": "step", "step": n, "step_digest": hex, "chain": hex,
 *    "loss": "0x3e148e44"}          (float32 bits: the loss tensor the step digest covers)
 * plus, at level tensor or op on detail steps (every K-th, `[trace] every`,
 * default 10, and the last):
 *    "epoch": e, "loss_value": 0.145...,
 *    "tensors": [{"name": "param.fc1.weight", "dtype": "f32", "shape": [256, 784],
 *                 "digest": hex, "l2": 12.3, "sum": -0.4, "max_abs": 0.9,
 *                 "nonfinite": 0}, ...]       in the step-digest order below
 * and at level op also
 *    "ops": [ same objects, for every kernel output in forward then
 *             backward order, named "fwd.<layer>" and "bwd.<layer>.dx" ]
 * So a step between detail steps costs ~210 bytes whatever the model: the
 * size of a trace grows with the number of steps, and the per-tensor detail
 * (~6 KB for the MLP) with the number of detail steps.
 * "chain" may be left out of a step line without "tensors" (a golden does,
 * golden.h): the reader computes it from the previous chain and the step
 * digest, as it checks it when present; detail lines and the trailer
 * always carry it.
 * Version 1 (still read): "loss" only on detail steps, "chain" on every
 * step line, default every = 1.
 *
 * A resumed run (`repro run --resume CKPT`) adds to the header
 *    "resumed_from": {"path": CKPT, "step": k, "chain": hex (chain[k])}
 * and its step lines start at k + 1, continuing the chain from chain[k]: on
 * steps k+1.. they equal the uninterrupted run's lines.
 * With train.eval_every = N, every N-th step's line also carries the eval of
 * the held-out split after that step's update (informational, not hashed:
 * eval reads the parameters only, so the chain is the same with or without
 * it; the exact bits are there to compare):
 *    "eval_loss": 2.30..., "eval_loss_bits": "0x4002..." (float64 bits),
 *    "eval_accuracy": 0.12          (null when not finite)
 *
 * Last line, the trailer: {"type": "trailer", "steps": N, "chain": hex},
 * with the built-in workload "final_params_sha256": hex, SHA-256 over the
 * SHA-256 tree digests (repro-tensor/v1) of the param.* tensors after the
 * last step in forward order (a program's: in the order recorded, when
 * its recorder knew total_steps and saw those tensors' bytes): the final state bound cryptographically
 * whatever the per-step digest function (docs/DESIGN.md, Digests);
 * plus informational keys that are not hashed and may differ between runs:
 * "train_seconds", "eval_loss", "eval_accuracy". Step 1's line also carries
 * "algorithms": the convolution algorithm chosen per call site, with the
 * measured times when benchmark = on (the algorithm lock, see --algo-lock).
 * A trace without it was cut short (a crash leaves a valid prefix, since each
 * line is flushed as it is written).
 *
 * Step digest: SHA-256 over the tensor digests of the step, in this order
 * (forward/backward order, so the first differing tensor is the likely
 * origin): batch.ids, batch.x, batch.y, logits, loss, metrics.class_features
 * (the last layer's input summed per label: an index-add), grad.<p> for each
 * parameter in backward order (last layer first; with accumulation_steps > 1
 * the accumulated gradient, after fp16's unscaling; batch.*, logits,
 * metrics.class_features are the step's last micro-batch's, loss the mean
 * over its micro-batches), only with precision = fp16 scaler.scale (f32
 * scalar: the loss scale this step's backward used) and scaler.skipped (u32
 * scalar: 1 if the scaler found inf/NaN and skipped this step's update, so
 * param.* and the optimizer state equal the previous step's), param.<p> in forward order
 * (after the update), the optimizer state (sgd.momentum.<p>, or
 * adamw.exp_avg.<p> and adamw.exp_avg_sq.<p>) in forward order, and rng.state
 * (loader generator block and position, epoch, base_seed, batches drawn).
 * Op outputs are not part of it, so digests agree across trace levels.
 * Chain: chain[0] = 32 zero bytes, chain[n] = SHA-256(chain[n-1] || step[n]).
 * Stats are computed in double in element order over the finite elements;
 * "nonfinite" counts the others. */
#ifndef REPRO_TRACE_H
#define REPRO_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "record/hash.h"
#include "repro/trace.h"

/* The version this repro writes; it reads REPRO_TRACE_VERSION_MIN and up. */
#define REPRO_TRACE_VERSION 2
#define REPRO_TRACE_VERSION_MIN 1
/* The largest step number a trace may name (2^53: exact in a double, far
 * from overflow when counts are added to it). */
#define REPRO_TRACE_MAX_STEP ((int64_t)1 << 53)

/* The largest step number or count the reader accepts from a file: 2^53,
 * the largest integer a double (JSON's number) holds exactly, and far past
 * train.steps' own limit (10^8). With every step, resume point and count
 * bounded by it, first_step + nsteps and every step arithmetic after it
 * stay far from LONG_MAX (a resume point near INT64_MAX used to overflow
 * `diff` and `verify`). */
#define REPRO_TRACE_STEP_MAX (1L << 53)

/* The most thread pools a header names ("thread_pools"). */
#define REPRO_TRACE_MAX_POOLS 8

enum { REPRO_TRACE_STEP = 0, REPRO_TRACE_TENSOR = 1, REPRO_TRACE_OP = 2 };

/* One tensor of a step, as recorded. */
typedef struct {
    char name[64];
    char dtype[8];
    int ndim;
    long shape[8];
    repro_digest digest;
    double l2, sum, max_abs;
    long nonfinite;
} repro_trace_tensor;

typedef struct {
    long step;
    int epoch;
    int has_detail;          /* tensors present (and the loss) */
    int has_loss;            /* loss_bits and loss_value present: every step of a
                                version 2 trace, only detail steps of version 1 */
    uint32_t loss_bits;
    double loss_value;
    repro_digest step_digest, chain;
    int ntensors, nops;
    repro_trace_tensor *tensors;
    repro_trace_tensor *ops;
    int line;                /* line number in the file */
    void *extra;             /* writing: a json_t object of informational keys (borrowed) */
} repro_trace_step;

struct repro_trace {
    char path[1024];
    int version;             /* "repro_trace": 1 or 2 (the line shapes differ) */
    /* header */
    char experiment[128];
    char experiment_path[1024];
    repro_digest config_digest, numerics_digest;
    char seed[32], seed_scheme[64], rng[64], repro_version[32];
    char compiler[256], cflags[1024];
    char env_class[64];      /* "" when the trace predates it */
    char tensor_hash[64];    /* the digest function's name (repro/digest.h) */
    repro_digest_fn digest_fn; /* ... and which one it is */
    int level, every, threads, num_workers;
    int threads_used, workers_used; /* -1: not recorded */
    char client_name[64], client_version[32]; /* header "client" */
    int client_protocol;     /* ... its protocol; 0: no "client" */
    struct {
        char name[32];
        int threads;
    } pools[REPRO_TRACE_MAX_POOLS]; /* "thread_pools", in the header's key order */
    int npools;
    int world_size_used;     /* -1: not recorded */
    int tp_used;             /* -1: not recorded */
    void *header_json;       /* json_t *, owned: the whole header object */
    /* steps and trailer */
    long nsteps;             /* step lines read (streaming: so far) */
    repro_trace_step *steps; /* all of them; NULL when streamed */
    long last_line;          /* line of the last step read (0: none) */
    int has_trailer;
    long trailer_steps;
    repro_digest trailer_chain;
    int has_final_params;        /* the trailer's "final_params_sha256" (optional) */
    repro_digest final_params;
    /* A resumed run's trace (header "resumed_from": {"path", "step": k,
     * "chain": hex}) starts at step k + 1 and its chain continues from the
     * checkpoint's chain[k]; otherwise first_step = 1, start_chain = 0. */
    long first_step;
    repro_digest start_chain;
};

/* ---- writing (trace_write.c) ------------------------------------------- */
typedef struct repro_trace_writer repro_trace_writer;

/* A header (json_t object, new reference) with the fields every trace
 * carries: format version, experiment, seed and schemes, build, level,
 * every, threads, workers, the environment fingerprint and its class. The
 * caller adds "config", "config_digest" and "numerics_digest" (and any
 * informational keys) before opening. `backend` ("cpu", "cuda"; NULL:
 * cpu) selects the environment class. NULL with the error slot set. */
void *repro_trace_header_new(const char *experiment, const char *experiment_path, uint64_t seed,
                             int level, int every, int threads, int workers,
                             const char *backend);
/* Creates the file (and its parent directories) and writes `header` (a
 * json_t object, borrowed) as line 1. */
int repro_trace_writer_open(repro_trace_writer **out, const char *path, void *header);
/* Writes header (json_t *) again in place of the first: only while it is the
 * only line (a program may say how many threads it used before step 1). */
int repro_trace_writer_rewrite_header(repro_trace_writer *w, void *header);
/* Writes one step line and flushes it. `detail`: include loss and tensors. */
int repro_trace_writer_step(repro_trace_writer *w, const repro_trace_step *s, int detail);
/* Writes the trailer, flushes, fsyncs and closes. w is freed either way.
 * `extra` (may be NULL; borrowed) adds informational keys to the trailer
 * (timings, eval results: not hashed, may differ between runs). */
int repro_trace_writer_close(repro_trace_writer *w, long steps, const repro_digest *chain,
                             void *extra);
/* Closes without a trailer (after an error): the file stays a valid prefix. */
void repro_trace_writer_abort(repro_trace_writer *w);

/* ---- reading (trace_read.c) -------------------------------------------- */
/* Reads a whole trace. Errors (missing file, not JSON, wrong version or
 * type, missing or mistyped fields, steps out of order) return -1 with
 * "path:line: message" in the error slot, exit code 2. A trace without a
 * trailer is read (has_trailer = 0); callers decide what that means. */
int repro_trace_read(repro_trace *out, const char *path);
void repro_trace_release(repro_trace *t);

/* Streaming: the same checks, one step in memory at a time, for readers
 * that walk the steps in order (diff, check, verify). open reads and checks
 * the header into *t (steps stays NULL; nsteps counts the step lines read
 * so far; has_trailer, trailer_* once the end is reached). next: 1 with
 * *step valid until the next call, 0 at the end of the file, -1 on error
 * (the same "path:line: message" as repro_trace_read). close frees the
 * stream; *t is the caller's to release (repro_trace_release). */
typedef struct repro_trace_stream repro_trace_stream;
int repro_trace_stream_open(repro_trace_stream **out, repro_trace *t, const char *path);
int repro_trace_stream_next(repro_trace_stream *st, const repro_trace_step **step);
void repro_trace_stream_close(repro_trace_stream *st);

/* Reads and checks a whole trace as the stream does, keeping only the
 * header and the trailer (steps NULL, nsteps the step count): what a
 * reader that compares streams later (repro_compare_files) needs to know
 * first. Errors as repro_trace_read. */
int repro_trace_scan(repro_trace *out, const char *path);

/* The step record with number `step`, or NULL. */
const repro_trace_step *repro_trace_find_step(const repro_trace *t, long step);
/* The position (1-based) of op `name` among t's ops at `step` (0: not
 * there), and in *nops their number. */
int repro_trace_op_position(const repro_trace *t, long step, const char *name, int *nops);

#endif
