/* The networks of the shipped experiments, as a flat list of layers over a
 * backend's kernels (kernels/backend.h): MLP (linear, ReLU, dropout ...)
 * and CNN (conv 3x3, ReLU, maxpool 2 blocks, then a linear head). Owns the
 * backend context, parameters, gradients, optimizer state and activations;
 * knows nothing about data or hashing.
 *
 * Parameters, gradients, optimizer state and the bf16/fp16 working weights
 * each live in ONE backend allocation (an arena, repro_model_arena) with
 * the same layout: parameter j at `offset` floats, each view rounded up to
 * REPRO_ARENA_ALIGN floats, the padding zero. repro_param's pointers are
 * views into them, so one allocation, one transfer and one hash walk cover
 * a whole kind (as llm.c does). Every buffer is backend memory: host
 * pointers for the CPU backend (host_memory), reached only through the
 * backend's copies otherwise. */
#ifndef REPRO_MODEL_H
#define REPRO_MODEL_H

#include <stdint.h>

#include "core/algo_select.h"
#include "core/config.h"
#include "kernels/backend.h"

/* Sized from the config's limits, not guessed: a list key holds at most
 * REPRO_CONFIG_LIST_MAX entries, and each entry adds one weighted layer
 * (weight + bias) and up to four layers (CNN: conv, relu, dropout, maxpool),
 * plus the linear head. A config with 8 hidden layers used to write past
 * params[16] (found by the hostile-input audit). */
#define REPRO_MAX_LAYERS (4 * REPRO_CONFIG_LIST_MAX + 1)
#define REPRO_MAX_PARAMS (2 * (REPRO_CONFIG_LIST_MAX + 1))

typedef enum {
    REPRO_LAYER_LINEAR,
    REPRO_LAYER_CONV,
    REPRO_LAYER_RELU,
    REPRO_LAYER_MAXPOOL,
    REPRO_LAYER_DROPOUT
} repro_layer_kind;

typedef struct {
    char name[32];  /* "fc1.weight" */
    int ndim;
    int shape[4];
    long numel;
    float *data;
    float *grad;
    float *state1;  /* sgd momentum buffer / adamw first moment */
    float *state2;  /* adamw second moment (NULL for sgd) */
    float *work;    /* bf16/fp16: the weights cast for forward and backward-data
                       (rounded copy of data, refreshed every forward); else NULL */
    size_t offset;  /* floats from each arena's base to this parameter's view
                       (state2: from the optimizer arena's second half) */
} repro_param;

/* One allocation per kind (see the top of this file). */
typedef enum {
    REPRO_ARENA_PARAMS,   /* data */
    REPRO_ARENA_GRADS,    /* grad */
    REPRO_ARENA_OPTIMIZER,/* state1 of every parameter, then state2 of every
                             parameter (adamw; sgd has only state1) */
    REPRO_ARENA_WORK,     /* work (bf16/fp16 only; empty otherwise) */
    REPRO_NARENAS
} repro_arena_kind;

/* Views start at multiples of 16 floats (64 bytes: a cache line, and
 * aligned for vector loads on every backend). */
#define REPRO_ARENA_ALIGN 16

typedef struct {
    repro_layer_kind kind;
    char name[16];    /* "fc1", "conv2", "relu1", "pool1", "drop1" */
    int in_c, in_h, in_w;   /* per-sample input shape (linear: in_c features, 1 x 1) */
    int out_c, out_h, out_w;
    int param;        /* index of the weight in params (bias follows), or -1 */
    int index;        /* position in the layer list (dropout stream key) */
    float p;          /* dropout probability */
    int k;            /* maxpool window / conv kernel size */
    int pad;          /* conv zero padding */
    float *workspace; /* conv: scratch for any eligible algorithm, at capacity */
    int32_t *argmax;  /* maxpool: batch x out */
    int relu_fused;   /* maxpool: the last forward ran the ReLU before it in the same
                         pass (model_pass.c), whose output was then not stored */
    uint8_t *mask;    /* dropout: batch x out */
    int tp;           /* tensor parallel (core/tp.h): REPRO_TP_COLUMN, REPRO_TP_ROW, or 0 */
} repro_layer;

typedef struct {
    int nlayers, nparams;
    int capacity;          /* largest batch the buffers hold */
    repro_layer layers[REPRO_MAX_LAYERS];
    repro_param params[REPRO_MAX_PARAMS];
    /* act[0] is the input batch (not owned), act[i+1] the output of layer i;
     * dact[i] the gradient of the loss with respect to act[i]. */
    float *act[REPRO_MAX_LAYERS + 1];
    float *dact[REPRO_MAX_LAYERS + 1];
    float *scratch;        /* linear forward workspace, largest layer */
    int optimizer;         /* REPRO_OPT_*: decides which state is allocated */
    /* Mixed precision (REPRO_PRECISION_*): bf16/fp16 round every op output,
     * the input batch (into xin) and the weights (into params[].work) to the
     * precision, emulating autocast on the CPU; 0 = fp32, nothing rounded. */
    int precision;
    float *xin;            /* the input batch on the backend (rounded under bf16/fp16;
                              a host_memory backend under fp32 reads x in place) */
    float *gscratch;       /* bf16/fp16 with accumulation_steps > 1: one micro-batch's
                              dw and db before they are rounded and added into the
                              fp32 grads; else NULL */
    /* Convolution algorithm per call site (algo_select.h). */
    repro_algo_policy algo;
    /* Kernel variants (config [variant]): 0 = the deterministic default. */
    int var_linear_fwd, var_linear_bwd_weight, var_linear_bwd_bias, var_conv2d_bwd_filter;
    /* Optional observer of every kernel output, in forward then backward
     * order ("fwd.conv1", "bwd.fc2.dw", "bwd.fc2.db", "bwd.fc2.dx"): trace
     * level op. Called on the training thread right after the kernel. The
     * data is the live output and may be replaced (bisect's quarantine
     * substitutes a reference run's output there). */
    void (*on_op)(void *ctx, const char *name, float *data, int ndim, const long *shape);
    void *on_op_ctx;
    /* The backend every kernel call goes through, and its context (threads,
     * streams), created by repro_model_init and destroyed by release. */
    const repro_backend *be;
    void *be_ctx;
    /* The shard rule (repro_model_set_shards): the batch's rows are shards
     * of shard_rows samples, shard-major; local shard q is global shard
     * shard_first + q * shard_stride (its dropout stream and its place in
     * the gradient sum). shard_rows = 0: the whole batch is one shard and
     * the kernels write (or accumulate into) the grads themselves, as
     * before shards existed. */
    int shard_rows, shard_first, shard_stride, nshards;
    float *shard_slots;    /* nshards x (largest layer's dw + db): one layer's partials */
    float *shard_sum;      /* their sum, before it is written or added to the grads */
    /* Sums nlocal partials of n floats (local shard q at slots + q * n) over
     * every shard of the global batch in shard order into out (set by
     * repro_model_set_shards: the local ordered sum; the trainer replaces it
     * with the data-parallel reduce). Returns 0 or -1 (error slot). */
    int (*reduce)(void *ctx, const float *slots, int nlocal, long n, float *out);
    void *reduce_ctx;
    int reduce_failed;     /* a reduce returned -1: the step fails (error slot set) */
    /* Tensor parallel (core/tp.h, set by repro_tp_attach): the layers
     * marked tp are computed in slices across the group; NULL: none. */
    struct repro_tp *tp;
    /* The arenas (repro_model_arena) and the floats of one layout (the sum
     * of the padded parameter sizes). */
    void *arena[REPRO_NARENAS];
    size_t arena_bytes[REPRO_NARENAS];
    size_t layout_floats;
} repro_model;

/* Builds the network the config describes on backend `be` (a context with
 * train.threads threads), buffers for `capacity` samples. Parameters,
 * gradients and optimizer state are zero until repro_model_init_params.
 * Returns 0, or -1 with the error slot set (the model is then released). */
int repro_model_init(repro_model *m, const repro_config *cfg, int capacity,
                     const repro_backend *be);
/* Frees every buffer, then the backend context. */
void repro_model_release(repro_model *m);

/* The arena of kind k: its base (backend memory) and size in bytes
 * (padding included); NULL and 0 for an empty one (WORK under fp32). */
void *repro_model_arena(const repro_model *m, repro_arena_kind k, size_t *bytes);

/* PyTorch's default init (kaiming_uniform with a = sqrt(5)): weights and
 * biases uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)). Element i of
 * parameter j draws philox_at(derive(seed, INIT, 0,0,0, j), i) — so the
 * values never depend on layout, threads or device. Computed on the host,
 * uploaded in one transfer; optimizer state zeroed. Returns 0, or -1 with
 * the error slot set (out of memory). */
int repro_model_init_params(repro_model *m, uint64_t seed);

/* Forward over `B` <= capacity samples of x (B x 1 x 28 x 28, host
 * memory). `train` enables dropout, whose stream for layer L at this step
 * is derive(seed, DROPOUT, step, 0, s, L) for global shard s (0: no shards). Returns the logits (B x 10,
 * backend memory), or NULL with the error slot set (an algorithm lock that
 * does not fit, a backend failure while benchmarking). */
const float *repro_model_forward(repro_model *m, const float *x, int B, int train, uint64_t seed,
                                 long step);

/* Backward from dlogits (B x 10, backend memory) after a train forward of
 * the same batch: fills every parameter's grad (overwritten, not
 * accumulated). */
void repro_model_backward(repro_model *m, const float *dlogits, int B);
/* The same with gradient accumulation: `accumulate` = 0 writes every
 * parameter's grad (the sums start from +0), 1 adds this batch's gradient
 * to it. fp32: the kernels' accumulate flag, i.e. each sum continues from
 * the old grad value in its stated order. bf16/fp16: this batch's dw/db are
 * computed (from +0), rounded to the precision, then added in float to the
 * fp32 grad (PyTorch's AccumulateGrad on an fp32 master gradient).
 * bf16/fp16 also round dlogits and every dx to the precision. */
void repro_model_backward_acc(repro_model *m, const float *dlogits, int B, int accumulate);

/* Turns the shard rule on: every train batch is nshards shards of
 * `rows` samples (shard-major), local shard q being global shard
 * first + q * stride. Each shard's parameter gradients are computed on
 * their own (the kernels' sums over its rows) and the shards' partials
 * summed by m->reduce in shard order; each shard's dropout mask is keyed by
 * its global index. Allocates the partials (host-memory backends only).
 * Returns 0, or -1 with the error slot set. */
int repro_model_set_shards(repro_model *m, int rows, int nshards, int first, int stride);

int repro_model_out_features(const repro_model *m);
/* Bytes of conv layer l's workspace at capacity: the largest any of the
 * backend's eligible algorithms needs (at least one float). */
size_t repro_model_conv_workspace(const repro_model *m, const repro_layer *l);
/* Reports an output computed outside the layers (the loss metrics) to the
 * op observer, in execution order. */
void repro_model_report_op(repro_model *m, const char *name, float *data, int ndim,
                           const long *shape);
long repro_model_param_count(const repro_model *m);

#endif
