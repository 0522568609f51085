/* Training <-> inference parity, the engine under `repro parity`: does the
 * serving path compute, bit for bit, what the trainer's own forward
 * computes on the same weights? In on-policy RL the sampler (an inference
 * engine, batching requests) and the trainer must agree about the policy's
 * numbers; a mismatch silently biases the update (SGLang and slime reached
 * bitwise-identical training and rollout curves in 2025 with
 * batch-invariant kernels on both sides).
 *
 * One check, two sides, one checkpoint, one probes file:
 *  - the trainer: trains to a checkpoint (or is restored from one), then
 *    runs its own forward (eval mode) over the probes in its own batch
 *    composition (batches of its training batch size);
 *  - the inference side: a separate model built from the checkpoint FILE
 *    (config overrides of its own allowed: another kernel variant is
 *    another engine), serving the probes in each requested batch
 *    composition (batch 1, a mixed batch, a full batch);
 *  - every probe's output in every composition compared bit for bit with
 *    the trainer's; the first probe, position and element that differ,
 *    and for a built-in experiment the first op and each side's variant
 *    for it (which side's kernels changed).
 * A mismatch is reported under scope "engine"; the report also says
 * whether the inference side agrees with itself across its compositions
 * (batch invariance). Built-in experiments run in this process
 * (parity.c); a program runs as fresh processes under the parity protocol
 * (parity_program.c, docs/PROTOCOL.md). Errors in the error slot. */
#ifndef REPRO_PARITY_H
#define REPRO_PARITY_H

#include <stdio.h>

#include "core/config.h"

#define REPRO_PARITY_SCOPE "engine"
#define REPRO_PARITY_MAX_SIZES 16
#define REPRO_PARITY_MAX_SETS 16
#define REPRO_PARITY_MAX_PROBES 4096
#define REPRO_PARITY_PROBE_LEN 255
#define REPRO_PARITY_MAX_BATCH 4096
#define REPRO_PARITY_DEFAULT_PROBES 100 /* built-in, no file: held-out samples 0..99 */

/* ---- probes (parity_probes.c) -------------------------------------------- */
/* One probe per line of a text file: blank lines and lines starting with
 * '#' are skipped, surrounding blanks trimmed; printable ASCII, at most
 * REPRO_PARITY_PROBE_LEN bytes. What a probe means is the model's: a
 * built-in experiment reads "test:N" (held-out sample N), a program its
 * own text (charlm: a prompt of a-z and spaces). */
typedef struct {
    int line;                               /* its line in the file (1-based) */
    char text[REPRO_PARITY_PROBE_LEN + 1];
} repro_parity_probe;

typedef struct {
    char path[1024];                        /* "" for the built-in default */
    repro_parity_probe *p;
    int n;
} repro_parity_probes;

/* Loads path. 0, or -1: REPRO_ENOTFOUND (missing), REPRO_EINVAL naming
 * path:line (not printable, too long, too many, none at all). */
int repro_parity_probes_load(repro_parity_probes *ps, const char *path);
/* The built-in default: "test:0" .. "test:<n-1>". 0 or -1 (ENOMEM). */
int repro_parity_probes_default(repro_parity_probes *ps, int n);
void repro_parity_probes_free(repro_parity_probes *ps);
/* Parses probe i's "test:N" for a built-in experiment, N < limit. 0 or -1
 * (EINVAL naming file:line). */
int repro_parity_probe_sample(const repro_parity_probes *ps, int i, long limit, long *sample);

/* ---- options --------------------------------------------------------------- */
typedef struct {
    int sizes[REPRO_PARITY_MAX_SIZES]; /* inference batch sizes (default 1, 7, 64) */
    int nsizes;
    long steps;              /* training steps to the checkpoint (0: the config's) */
    const char *checkpoint;  /* an existing checkpoint: restore it instead of training */
    const char *dir;         /* where the checkpoint and the outputs go (must be given) */
    const char *infer_set[REPRO_PARITY_MAX_SETS]; /* KEY=VALUE for the inference side only */
    int ninfer_set;
    const char *const *train_set; /* a program: KEY=VALUE for its training run */
    int ntrain_set;
    double timeout_s;        /* a program's runs: killed after this long (0: never) */
    int quiet;
} repro_parity_opts;

void repro_parity_opts_init(repro_parity_opts *o);
/* "1,7,64" into o->sizes (what names the option). 0 or -1 (EINVAL). */
int repro_parity_parse_sizes(repro_parity_opts *o, const char *what, const char *list);

/* ---- the result ------------------------------------------------------------ */
typedef struct {
    char label[32];  /* "batch 7" */
    int size;
    int ndiffer;     /* probes whose output differs from the trainer's */
} repro_parity_comp;

/* The first difference: probes in file order, compositions in the order
 * asked, positions and elements in row-major order. */
typedef struct {
    int probe;                  /* index in the probes file (0-based) */
    int line;                   /* its line there */
    char text[64];              /* its text, cut */
    int comp;                   /* the first inference composition that differs */
    int batch, row, bsize;      /* where the probe sat in it */
    int train_batch, train_row, train_bsize; /* and in the trainer's composition */
    long position, element;     /* the first differing value: row (a sequence
                                   position; 0 for a classifier) and column */
    long npositions, nelements; /* the probe's output shape */
    float train_value, infer_value;
    long ndiffer_values;        /* values of this probe's output that differ */
    double max_abs;
    /* built-in experiments: the first op whose row differs, and each side's
     * variant for it; "" when unknown (a program) */
    char first_op[64];
    char op[32];
    char train_variant[32], infer_variant[32];
    int infer_batch_invariant;  /* the registry's flag for the inference variant; -2 unknown */
    /* which side changed: "inference" (its kernels differ from the
     * trainer's for that op), or "batch composition" (the same kernels,
     * another batch), or "unknown" (a program) */
    char changed[32];
    int infer_self_consistent;  /* the probe's output is the same in every
                                   inference composition */
} repro_parity_diff;

typedef struct {
    char experiment[128];
    char checkpoint[1100];
    long step;                 /* the checkpoint's optimizer steps */
    int program;               /* 1: a program under the protocol */
    int nprobes;
    int train_batch;           /* the trainer's batch size (its composition) */
    repro_parity_comp comps[REPRO_PARITY_MAX_SIZES];
    int ncomps;
    int ndiffer;               /* probes that differ in some composition */
    int infer_batch_invariant; /* the inference compositions agree with each other */
    repro_parity_diff first;
    int has_first;
    int parity;                /* the verdict: every output identical */
} repro_parity_result;

/* Runs the check for cfg (loaded, validated, --set applied: the trainer's
 * config). 0 with the verdict in r->parity, or -1 (error slot: EINVAL /
 * ENOTFOUND for bad input, EIO for what could not be tested). */
int repro_parity_run(const repro_config *cfg, const repro_parity_probes *probes,
                     const repro_parity_opts *o, repro_parity_result *r);

/* The same for a program (parity_program.c): a training run and one
 * inference run per batch size, fresh processes. name: the experiment's
 * name in the report. */
int repro_parity_run_program(char *const *cmd, const char *name,
                             const repro_parity_probes *probes, const repro_parity_opts *o,
                             repro_parity_result *r);

/* ---- comparing outputs (parity_compare.c) ---------------------------------- */
/* Every probe's output on each side, host memory: probe i has npos[i] x
 * nelem floats at out[i]. */
typedef struct {
    float **out;
    long *npos;
    long nelem;
} repro_parity_outputs;

/* Compares each composition's outputs with the trainer's and fills r's
 * counts, r->first (without the op fields) and the verdict. place(ctx,
 * comp, probe, &batch, &row, &bsize) says where a probe sat. 0, or -1
 * (EIO: the shapes differ, so the sides could not be compared). */
int repro_parity_compare(const repro_parity_probes *probes, const repro_parity_outputs *train,
                         const repro_parity_outputs *infer, int ncomps, repro_parity_result *r);
/* Where probe i sits when n probes are served in batches of size. */
void repro_parity_place(int n, int size, int i, int *batch, int *row, int *bsize);
int repro_parity_outputs_alloc(repro_parity_outputs *o, int nprobes);
void repro_parity_outputs_free(repro_parity_outputs *o, int nprobes);

/* ---- reports (parity_report.c) --------------------------------------------- */
void repro_parity_print(FILE *out, const repro_parity_result *r);
void *repro_parity_json(const repro_parity_result *r); /* json_t *, new; NULL: no memory */

#endif
