/* The one table of experiment keys: it drives the config struct, the
 * defaults, the strict parser, `repro help config` and the dump of the
 * effective config (inih's ini_xmacros pattern). Include with X defined:
 *
 *   X(section, key, TYPE, default, min, max, choices, help)
 *
 * Kernel variants, one key per op in section [variant], are listed with
 *
 *   XV(field, "op.name", choices, help)
 *
 * (the first choice is the default and deterministic; `repro kernels` says
 * which are not). Include sites define both X and XV.
 *
 * TYPE is INT, U64, REAL, BOOL, ENUM (choices "a|b|c", stored as the index),
 * STR (a path) or LIST (comma-separated positive ints). min/max bound INT,
 * REAL and LIST entries; for REAL, choices "min-open" makes min exclusive. */

/* [model] */
X(model, type,          ENUM, "mlp",    0, 0,   "mlp|cnn", "network: mlp (linear layers) or cnn (conv blocks + linear head)")
X(model, hidden,        LIST, "256,128", 1, 65536, "",     "mlp: hidden layer widths, input 784 and output 10 are implied")
X(model, conv_channels, LIST, "8,16",   1, 1024, "",       "cnn: output channels of each conv 3x3 + ReLU + maxpool 2 block")
X(model, kernel_size,   INT,  "3",      1, 9,    "",       "cnn: convolution kernel size (square, stride 1)")
X(model, padding,       INT,  "0",      0, 4,    "",       "cnn: zero padding on each side")
X(model, dropout,       REAL, "0",      0, 0.95, "",       "dropout probability after each hidden activation (0 = off)")
/* [data] */
X(data, dataset,        ENUM, "synthetic", 0, 0, "synthetic|idx", "synthetic (generated from the seed) or idx files")
X(data, train_images,   STR,  "",       0, 0,    "",       "idx: training images (n x 28 x 28 ubyte), path relative to the working directory")
X(data, train_labels,   STR,  "",       0, 0,    "",       "idx: training labels (n ubyte, values 0..9)")
X(data, test_images,    STR,  "",       0, 0,    "",       "idx: held-out images (optional: else the last test_size training samples are held out)")
X(data, test_labels,    STR,  "",       0, 0,    "",       "idx: held-out labels")
X(data, train_size,     INT,  "8192",   1, 1000000, "",    "synthetic: training samples")
X(data, test_size,      INT,  "1024",   1, 1000000, "",    "held-out samples (synthetic: generated; idx without test files: taken from the end)")
X(data, num_workers,    INT,  "0",      0, 64,   "",       "loader workers: threads, or streams the kernel threads fill when threads fills every CPU (0 = load in the training thread)")
X(data, prefetch,       INT,  "2",      1, 64,   "",       "batches in flight per worker")
X(data, shuffle,        BOOL, "on",     0, 0,    "",       "reshuffle every epoch with the seeded generator")
X(data, augment_seed,   ENUM, "sample", 0, 0,    "sample|worker", "sample: augmentation keyed by (base_seed, sample id); worker: by the worker's RNG (PyTorch)")
X(data, shift,          INT,  "0",      0, 8,    "",       "augmentation: random translation up to +-shift pixels")
X(data, flip,           BOOL, "off",    0, 0,    "",       "augmentation: horizontal flip with probability 1/2")
X(data, noise,          REAL, "0",      0, 1,    "",       "augmentation: additive normal noise, standard deviation on the 0..1 pixel scale")
/* [train] */
X(train, seed,          U64,  "0",      0, 0,    "",       "global seed; every stream is derived from it (seed scheme repro-seed/v1)")
X(train, steps,         INT,  "200",    1, 100000000, "",  "optimizer steps")
X(train, batch_size,    INT,  "64",     1, 65536, "",      "samples per step")
X(train, lr,            REAL, "0.05",   0, 10,   "min-open", "learning rate (> 0)")
X(train, optimizer,     ENUM, "sgd",    0, 0,    "sgd|adamw", "sgd (with momentum) or adamw")
X(train, momentum,      REAL, "0.9",    0, 0.999999, "",   "sgd momentum")
X(train, weight_decay,  REAL, "0",      0, 1,    "",       "sgd: L2 added to the gradient; adamw: decoupled decay")
X(train, beta1,         REAL, "0.9",    0, 0.999999, "",   "adamw beta1")
X(train, beta2,         REAL, "0.999",  0, 0.999999, "",   "adamw beta2")
X(train, eps,           REAL, "1e-8",   0, 1,    "min-open", "adamw epsilon (> 0)")
X(train, threads,       INT,  "1",      1, 256,  "",       "kernel threads; results are bitwise identical for any value")
X(train, backend,       ENUM, "cpu",    0, 0,    "cpu|cuda", "kernel backend: cpu, or cuda (GPU: cuDNN convolutions and our own kernels; changes bits; exit 3 without a usable GPU or a CUDA build)")
X(train, deterministic, ENUM, "on",     0, 0,    "on|off|warn", "on: refuse nondeterministic kernel variants (exit 2); warn: run them with a warning; off: run them")
X(train, benchmark,     BOOL, "off",    0, 0,    "",       "autotune the convolution algorithm per call site (time eligible ones at the first call, keep the fastest; off: a fixed rule)")
X(train, accumulation_steps, INT, "1",  1, 64,   "",       "micro-batches of batch_size whose gradients accumulate into one optimizer step (loss = their mean)")
X(train, zero_grad,     ENUM, "zero",   0, 0,    "zero|none", "zero: memset the gradients before each step; none: set_to_none (the first micro-batch writes them); bitwise identical")
X(train, precision,     ENUM, "fp32",   0, 0,    "fp32|bf16|fp16", "compute precision (emulated: every op output rounded to nearest even); fp32 master weights; fp16 uses a loss scaler")
X(train, init_scale,    REAL, "65536",  0, 1e30, "min-open", "fp16 loss scaler: initial scale (GradScaler init_scale)")
X(train, growth_factor, REAL, "2",      1, 1e6,  "min-open", "fp16 loss scaler: scale *= this after growth_interval steps without inf/NaN (> 1)")
X(train, backoff_factor, REAL, "0.5",   0, 1,    "min-open", "fp16 loss scaler: scale *= this when a step's gradients hold inf/NaN (the step is skipped)")
X(train, growth_interval, INT, "2000",  1, 100000000, "",  "fp16 loss scaler: consecutive good steps before the scale grows")
X(train, log_every,     INT,  "50",     1, 100000000, "",  "progress line every N steps when stderr is not a terminal")
X(train, ranks,         INT,  "1",      1, 4096, "",       "data-parallel processes (MPI ranks): repro run starts them through mpirun, or joins the MPI job it runs in; bitwise the same for any value with allreduce = ordered")
X(train, shard_size,    INT,  "0",      0, 65536, "",      "samples per gradient shard: the batch is cut into fixed shards whose gradients are summed in shard order, on one process as on N (0 = the whole batch is one shard; ranks > 1 needs it)")
X(train, eval_every,    INT,  "0",      0, 100000000, "",  "evaluate the held-out split in eval mode after every N-th step, into the trace (0 = off; never changes training bits)")
/* [trace] */
X(trace, level,         ENUM, "tensor", 0, 0,    "step|tensor|op", "trace detail: step (digests only), tensor (every tensor's digest and stats), op (also every kernel output)")
X(trace, every,         INT,  "10",     1, 100000000, "",  "record tensors every K-th step (and the last); every step keeps its digests and loss")
X(trace, digest,        ENUM, "xxh3",   0, 0,    "xxh3|sha256", "tensor leaf digest: xxh3 (XXH3-128, fast; catches accidental divergence, not a crafted collision) or sha256 (cryptographic at every step, ~5x the hashing time); roots, steps and chain are SHA-256 either way")
/* [replay] */
X(replay, every,        INT,  "0",      0, 100000000, "",  "recompute every K-th step's forward and backward a second time from the same state before the optimizer commits, and stop (exit 1) when the gradients differ: hardware or nondeterminism (0 = off; never changes training bits; needs accumulation_steps = 1)")
/* [parallel] */
X(parallel, tp,         INT,  "1",      1, 64,   "",       "tensor-parallel processes (MPI ranks) per replica: mlp fc1 column-parallel, fc2 row-parallel, its K sum carried rank to rank in ascending order; bitwise the same for any value with linear.tp_reduce = ordered; times ranks = processes")
/* [variant] */
XV(linear_fwd,        "linear.fwd",        "ordered|splitk", "linear forward: ordered sums, or split-K with the split chosen from the batch size (deterministic, NOT batch-invariant: the negative control of check --batch-invariance)")
XV(linear_bwd_weight, "linear.bwd_weight", "ordered|atomic", "linear backward weight: ordered sums, or atomic adds of per-chunk partial sums (nondeterministic)")
XV(linear_bwd_bias,   "linear.bwd_bias",   "ordered|atomic", "linear backward bias: ordered sums, or atomic adds (nondeterministic)")
XV(conv2d_bwd_filter, "conv2d.bwd_filter", "direct|atomic",  "conv2d backward filter and bias: fixed-order direct, or atomic adds per sample (nondeterministic)")
XV(allreduce,         "allreduce",         "ordered|ring|arrival", "data-parallel gradient sum: ordered (every shard's sum added in shard order: the same bits for any ranks), ring (a ring reduce as NCCL/Gloo: deterministic, bits change with ranks), arrival (added as messages arrive: nondeterministic)")
XV(linear_tp_reduce,  "linear.tp_reduce",  "ordered|ring", "tensor-parallel row-parallel sum: ordered (the running sums passed rank to rank in ascending input order: the same bits for any tp), ring (each rank sums its slice, then a ring all-reduce as Megatron/NCCL: deterministic, bits change with tp)")
XV(index_add,         "index_add",         "ordered|atomic", "per-class feature sums (scatter/index-add): ordered, or atomic adds (nondeterministic)")
