/* Verification of a submission bundle, the engine under `repro verify`:
 * re-runs a submission in a fresh process under the host's limits,
 * compares the re-run with the claimed trace, and gives a verdict and the
 * receipt that records it (receipt.h signs and writes it).
 *
 * Order of work, so that nothing expensive happens for a bad submission:
 *   1. the manifest (bundle.h: size, JSON, known keys, types, ranges, a
 *      trace path inside the bundle, the submitter's signature if any)
 *   2. the host's limits: steps > max_steps is refused here, before any
 *      training (verdict "exceeded limits"); so is, after step 4, a config
 *      whose memory estimate (core/memory.h: repro_memory_estimate_config,
 *      from the config alone, nothing allocated) is over max_memory
 *   3. the claimed trace: read strictly (trace_read.c verifies its chain),
 *      finished, and consistent with the manifest (experiment, seed, steps,
 *      final chain, environment class)
 *   4. the inline config: written to a private temporary directory as
 *      <experiment>.ini, loaded strictly, synthetic data only (a config
 *      naming host files would read them), seed and steps as the manifest
 *      says, numerics digest as the claimed trace's header says
 *   5. the re-run: `repro run` as a child (util/child.h: an argument
 *      vector, never a shell; its own process group; killed at
 *      max_seconds, verdict "exceeded limits"; resource limits). Its
 *      address space is limited (RLIMIT_AS) to max_memory plus headroom
 *      for what the estimate leaves out (this executable's own mappings,
 *      thread stacks, malloc arenas), so an estimate that is wrong still
 *      cannot take the host's memory: a re-run that runs out of memory
 *      there gets "exceeded limits" too — unless repro itself cannot start
 *      under that limit (checked with `repro --version` after a failure):
 *      that is the host's failure (-1, REPRO_EIO), in every build. Not
 *      for backend = cuda (the CUDA driver reserves far more address
 *      space than it uses) nor in an AddressSanitizer build (its shadow
 *      memory does the same).
 *   6. the comparison, under the host's policy (opts.policy, `--policy`;
 *      default bitwise): bitwise compares chain digests; ulp:N and rtol:X
 *      compare per step from the loss bits and the tensor stats. The policy
 *      is never taken from the bundle: the submitter writes env_class, so a
 *      class that differs from the host's (claimed, not proven) is only
 *      reported, never a reason to compare more loosely. A tolerance
 *      verdict whose chain differs from the re-run's says so in its text:
 *      "reproduced within rtol:1e-4 (digests differ)", and the receipt's
 *      "digests" is "differ".
 *
 * A verdict is not an error: repro_verify returns 0 with the verdict in the
 * result for every submission, good or bad; -1 (error slot) only for a
 * failure on the host's side (its environment, a temporary directory, a
 * re-run that fails for reasons of the host), which is no verdict on the
 * submission and gets no receipt.
 *
 * Receipt fields (receipt.h for the signature and form):
 *   repro_receipt 1; verdict; verdict_text ("diverged at step 3"); step
 *   (the divergent step, or 0); reasons [strings]; ran (whether training
 *   ran); comparison ("bitwise", "ulp:N", "rtol:X" or "none"); policy
 *   {requested, applied, why} (requested: the host's, never the bundle's);
 *   digests ("identical" or "differ": the claimed and the re-run's final
 *   chains; null when nothing was re-run); limits {max_steps, max_seconds_ms};
 *   bundle {path, manifest_sha256, experiment, seed, steps, trace,
 *   submitter_signature ("valid" | "none"), submitter_key_id, signer (the
 *   pinned key's name from --trusted-keys, or "signer not pinned"),
 *   signer_pinned (boolean)};
 *   limits also {max_memory_bytes, address_space_bytes (the re-run's
 *   RLIMIT_AS, 0 when none)}; memory_estimate {total, params, grads,
 *   optimizer, working_weights, activations, workspace, loader, dataset,
 *   other, verifier} in bytes (null when the config was not read that far);
 *   submitter {env, env_class, chain, commit, repro_version} (null when the
 *   manifest could not be read); host {env, env_class, chain (null when
 *   nothing ran), rerun_ms}; rerun_metrics (null when nothing was re-run,
 *   else the re-run's trace's final metrics as strings, each present when
 *   the trace has it: step, loss (float32 bits), loss_value, eval_step,
 *   eval_loss, eval_accuracy); repro_version; time (ISO 8601 UTC).
 *
 * A program bundle (bundle.h "program") replaces steps 4 and 5: its tree
 * is unpacked into a private scratch directory, and its build command and
 * then the program run inside the sandbox (verify_program.h; util/
 * sandbox.h), under --max-memory (address space) and --max-seconds (CPU
 * and wall time). A bundle of a CUDA environment class ("cuda-..."), or
 * any with opts.gpu, runs with the host's NVIDIA devices and driver bound
 * and its memory held by a cgroup instead of its address space
 * (util/sandbox_gpu.h); a host without them fails (-1, REPRO_EUNSUPPORTED,
 * naming the missing device nodes), with or without the sandbox, since
 * the program could not run. Without the sandbox tool repro_verify fails (-1,
 * REPRO_EUNSUPPORTED: exit 3, no receipt) saying what to install, unless
 * opts.no_sandbox, which the receipt records. A build that fails is
 * "build failed"; a program that fails, is killed, or leaves no complete
 * trace is "run failed"; a sandbox limit is "exceeded limits". After a
 * "reproduced" comparison its declared outputs are hashed (a missing one
 * is "run failed"), and each must be the submitter's, byte for byte: one
 * that is not is "outputs differ" (the host scores the re-run's outputs,
 * so an output that does not reproduce is a submission that does not),
 * unless the host named it in opts.unscored_outputs (--unscored-output:
 * an output it does not score, or knows to hold a time stamp).
 *
 * 7. The score, after "reproduced": for a program, the host's evaluator
 *    (opts.score_cmd, score.h) run outside the sandbox on the re-run's
 *    outputs; for an experiment, the re-run's final eval_accuracy. A
 *    claimed "score" that is not the host's (compared as numbers) is
 *    "score mismatch", naming both values.
 *
 * Receipt fields for these: program (null for an experiment, else
 * {argv, build, commit, dirty, cwd, tree_files, tree_bytes, sandbox (the
 * sandbox and its limits, in words), no_sandbox, build_status,
 * run_status, build_ms, outputs [{path, sha256 (null: missing), bytes,
 * claimed_sha256, identical, unscored (once compared: whether
 * --unscored-output named it)}], python_client {claimed ("repro-python
 * 0.1.0", the client that wrote the claimed trace, or null), claimed_protocol
 * (or null), host (the directory of the verifier's client on the program's
 * PYTHONPATH, or null), host_protocol, own_package (the repro package the
 * bundle's tree carries, which shadows the host's: its path, or null)}});
 * score {claimed (string or null), host (string or null), by (how the
 * host's was made, or null)}.
 *
 * With opts.data_dir (--data DIR, a bundle submitted with --data; either
 * without the other is a usage error, -1 REPRO_EINVAL): the program runs
 * on the host's data, DIR read-only and named by REPRO_DATA. The trace is
 * compared as always; the declared outputs now come from the host's data,
 * so they are scored (--score), not compared with the submitter's, and a
 * claimed score (the submitter's, on its own data) is reported, not
 * required. Receipt: program.data {sha256 (the host's directory's digest,
 * datadir.h), files, bytes, submitted_sha256 (the manifest's)} or null;
 * program.outputs_compared (false with --data).
 *
 * 3b for a program: a claimed trace written by the Python client (header
 * "client") of a protocol this repro's client does not speak, or where
 * this repro has no client, is refused before anything runs (-1,
 * REPRO_EUNSUPPORTED: exit 3, no receipt; client.h).
 *
 * Two checks around steps 1 and 6:
 *   1b. with opts.trusted (--trusted-keys), a bundle must be signed by a
 *      pinned key: unsigned, or signed by another key (named by its
 *      fingerprint), it is an invalid submission
 *   6b. after a "reproduced" comparison, every loss_value and eval_* field
 *      the claimed trace carries is checked against the re-run's
 *      (claims.h): a mismatch is "diverged at step N", naming the field
 *      and both values; traces whose lines no longer pair up (the claimed
 *      file changed after it was judged) are an invalid submission. */
#ifndef REPRO_VERIFY_H
#define REPRO_VERIFY_H

#include <stddef.h>

#include <jansson.h>

#include "core/memory.h"
#include "record/env.h"
#include "record/hash.h"
#include "util/child.h"
#include "verify/bundle.h"
#include "verify/datadir.h"
#include "verify/trusted.h"

typedef enum {
    REPRO_VERDICT_REPRODUCED,
    REPRO_VERDICT_DIVERGED,
    REPRO_VERDICT_INVALID,  /* invalid submission */
    REPRO_VERDICT_EXCEEDED, /* exceeded the host's limits */
    REPRO_VERDICT_BUILD_FAILED, /* a program bundle's build command failed */
    REPRO_VERDICT_RUN_FAILED,   /* its program failed or left no complete trace */
    REPRO_VERDICT_SCORE,        /* the claimed score is not the host's */
    REPRO_VERDICT_OUTPUTS_DIFFER /* a declared output the host scores is not the submitter's */
} repro_verdict;

/* How the re-run is compared with the claim: the host's choice. */
typedef enum { REPRO_POLICY_BITWISE, REPRO_POLICY_ULP, REPRO_POLICY_RTOL } repro_policy_kind;

typedef struct {
    repro_policy_kind kind;
    long ulp;       /* ULP: the float32 loss within this many ulps (util/ulp.h) */
    double rtol;    /* RTOL: loss, each tensor's L2 norm and sum within this */
    char text[48];  /* as given: "rtol:1e-4" */
} repro_verify_policy;

/* "bitwise", "ulp:N" (N decimal, 0..2^31-1) or "rtol:X" (X in [0, 1]).
 * 0, or -1 (REPRO_EINVAL) naming the text. */
int repro_verify_policy_parse(const char *s, repro_verify_policy *p);

typedef struct {
    const char *bundle_dir;
    repro_verify_policy policy;
    long max_steps;           /* refuse more steps than this */
    double max_seconds;       /* kill the re-run after this long; 0: never */
    uint64_t max_memory;      /* refuse a workload whose estimate is over this
                                 many bytes, and limit the re-run's address
                                 space from it; 0: no limit */
    repro_child_limits limits; /* the re-run's resource limits; 0: inherited,
                                  except as_bytes: 0 derives it from max_memory */
    const char *repro_bin;    /* the repro that re-runs; NULL: this executable */
    const repro_trusted_keys *trusted; /* pinned keys (--trusted-keys); NULL: any
                                          valid signature, or none, is accepted */
    const char *score_cmd;    /* the host's evaluator (--score); NULL: none */
    int no_sandbox;           /* run a program bundle without the sandbox */
    int gpu;                  /* give a program bundle the host's GPU (--gpu; also
                                 when its env class is a CUDA one, "cuda-...") */
    uint64_t max_file_size;   /* a program bundle's largest file (RLIMIT_FSIZE
                                 in the sandbox); 0: the sandbox's default */
    const char *data_dir;     /* --data DIR: the host's inputs for a bundle submitted
                                 with --data (REPRO_DATA, read-only); NULL: none */
    uint64_t max_disk;        /* a program bundle's scratch directory in all (a
                                 tmpfs where one can be mounted); 0: the
                                 sandbox's default */
    const char *const *unscored_outputs; /* NULL-terminated declared output paths the
                                 host does not score (--unscored-output): one
                                 that differs is reported, not a verdict */
} repro_verify_opts;

/* Defaults: policy bitwise, 100000 steps, 3600 s, 4 GiB of memory
 * (REPRO_VERIFY_MAX_MEMORY), no other resource limits. */
#define REPRO_VERIFY_MAX_MEMORY (4ull << 30)
void repro_verify_opts_init(repro_verify_opts *o);

typedef struct {
    repro_verdict verdict;
    long step;             /* DIVERGED: the divergent step */
    json_t *reasons;       /* array of strings, owned */
    int ran;               /* training ran */
    char comparison[48];   /* "bitwise", the policy's text, or "" (none) */
    char why[200];         /* why that comparison */
    int digests_compared;  /* a re-run finished: digests_differ is known */
    int digests_differ;    /* its final chain is not the claimed one */
    long rerun_ms;
    int have_host_chain;
    repro_digest host_chain;
    int have_host_final;      /* the re-run's trailer has final_params_sha256 */
    repro_digest host_final;
    int memory_estimated;  /* memory holds the config's estimate */
    uint64_t verifier_bytes; /* the verifier's own peak resident memory (VmHWM)
                                when the workload was weighed: counted with the
                                estimate against max_memory (0: unknown) */
    repro_memory_estimate memory;
    uint64_t as_bytes;     /* the re-run's RLIMIT_AS (0: none) */
    int bundle_ok;         /* the manifest was read; bundle is filled */
    repro_bundle bundle;
    repro_env host;
    const repro_trusted_key *signer; /* the pinned key that signed (opts.trusted) */
    json_t *rerun_metrics; /* the re-run's final loss and eval (claims.h), owned */
    /* A program bundle (verify_program.h): */
    int program_ran;       /* the build or the program was started */
    char sandbox[1000];    /* repro_sandbox_describe of its sandbox */
    char build_status[260], run_status[260];
    long build_ms;
    json_t *outputs;       /* the declared outputs as re-run, owned (NULL: none) */
    /* Its Python client (client.h): who wrote the claimed trace, the
     * host's client the program was given, a repro package of its own. */
    char claimed_client[128]; /* "repro-python 0.1.0"; "": no "client" in the header */
    int claimed_protocol;     /* 0: none */
    char host_client[600];    /* the dir on the program's PYTHONPATH; "": none */
    char own_package[300];    /* "repro/__init__.py" in the tree; "": none */
    /* --data: the host's data directory the program ran on (datadir.h). */
    int has_data;
    repro_data_digest data;
    char data_real[4096];     /* its resolved path */
    /* The score: the host's (--score for a program, the re-run's
     * eval_accuracy for an experiment) and how it was made. */
    int has_host_score;
    char host_score[32];
    char score_by[300];    /* "--score CMD", "repro eval_accuracy of the re-run" */
} repro_verify_result;

/* Runs steps 1-6 above. r is filled either way and must be released. */
int repro_verify(const repro_verify_opts *o, repro_verify_result *r);
void repro_verify_result_release(repro_verify_result *r);

/* "reproduced", "diverged", "invalid submission", "exceeded limits". */
const char *repro_verdict_name(repro_verdict v);
/* The same, with the step for a divergence: "diverged at step 3", and the
 * policy for a tolerance verdict whose digests differ: "reproduced within
 * rtol:1e-4 (digests differ)". */
void repro_verify_verdict_text(const repro_verify_result *r, char *buf, size_t len);

/* The receipt (fields above), unsigned; NULL when out of memory. */
json_t *repro_verify_receipt(const repro_verify_opts *o, const repro_verify_result *r);

#endif
