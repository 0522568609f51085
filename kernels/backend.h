/* The backend seam: ONE table of operations (repro_backend) that the model,
 * the trainer and mixed precision call, so that a CUDA backend can sit
 * behind the same model, trainer and recorder as the CPU kernels do. A
 * backend is this table plus an opaque context (`void *ctx`: the CPU
 * backend's holds its thread pool; a CUDA one would hold a stream and
 * library handles). This header is the whole contract: a backend is
 * written from it alone.
 *
 * ---- Conventions for every entry ----------------------------------------
 *  - Tensors are float32, row-major, NCHW; linear weights are [out][in]
 *    (PyTorch's layout). Every pointer argument except those named "host"
 *    is backend memory from alloc() (or a view into it); n, B, ... count
 *    elements, never bytes, unless the name says bytes.
 *  - Ordering: entries execute in call order, as on one CUDA stream. An op
 *    may return before its work is done (a device backend's launches do),
 *    but every later entry sees its results. copy_d2h returns when the
 *    bytes are in host memory; copy_h2d may be called with a host buffer
 *    the caller reuses at once (it is read before the call returns).
 *    Entries that return a value to the host (softmax_xent_forward,
 *    unscale_check) wait for the work they depend on.
 *  - A context is used by one thread at a time (the training thread).
 *  - Determinism: an entry or variant listed as deterministic in
 *    kernels/variants.h must give bitwise identical outputs for identical
 *    inputs on every call, whatever the thread or block count. The
 *    reduction order stated per entry is the CPU backend's; a backend that
 *    follows it reproduces the CPU bits exactly, one that does not must
 *    still use one fixed order (goldens are recorded per backend).
 *  - No FMA contraction of a*b + c unless an entry says so (the CPU build
 *    uses -ffp-contract=off; nvcc needs --fmad=false for the same bits).
 *  - `accumulate` = 0 overwrites the output (sums start from +0), 1 adds
 *    to it: each sum continues from the output's current value, then adds
 *    its terms in the stated order.
 *  - Kernels include nothing from harness/; errors are reported through
 *    return values and last_error(), never by printing or exiting.
 */
#ifndef REPRO_BACKEND_H
#define REPRO_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shared types -------------------------------------------------------- */

/* A 2-D convolution, stride 1, zero padding `pad` on each side: input
 * B x C x H x W, K filters of C x R x R, output B x K x OH x OW. */
typedef struct {
    int B, C, H, W; /* input: B x C x H x W */
    int K, R;       /* K filters of C x R x R */
    int pad;        /* zero padding on each side */
} repro_conv_shape;

static inline int repro_conv_oh(const repro_conv_shape *s) { return s->H + 2 * s->pad - s->R + 1; }
static inline int repro_conv_ow(const repro_conv_shape *s) { return s->W + 2 * s->pad - s->R + 1; }

/* Convolution forward algorithms (as cuDNN's): the same convolution
 * rounded three ways. Ids and names are shared by every backend; which
 * ones a backend implements for a shape is conv_algo_eligible's answer. */
typedef enum {
    REPRO_CONV_DIRECT = 0,   /* bias, then one running sum over (c, ry, rx) */
    REPRO_CONV_IM2COL = 1,   /* unfold + GEMM, the reduction in blocks of 16 */
    REPRO_CONV_WINOGRAD = 2, /* F(2x2, 3x3) (Lavin & Gray), R == 3 only */
    REPRO_CONV_NALGOS,       /* the portable algorithms end here: their rounding is
                                stated below, every backend may implement them */
    /* cuDNN's forward algorithms (REPRO_CONV_CUDNN_BASE +
     * cudnnConvolutionFwdAlgo_t): the CUDA backend's only; how they round is
     * cuDNN's (fixed per algorithm, shape and library version). */
    REPRO_CONV_CUDNN_BASE = 8,
    REPRO_CONV_CUDNN_IMPLICIT_GEMM = 8,
    REPRO_CONV_CUDNN_IMPLICIT_PRECOMP_GEMM = 9,
    REPRO_CONV_CUDNN_GEMM = 10,
    REPRO_CONV_CUDNN_DIRECT = 11,
    REPRO_CONV_CUDNN_FFT = 12,
    REPRO_CONV_CUDNN_FFT_TILING = 13,
    REPRO_CONV_CUDNN_WINOGRAD = 14,
    REPRO_CONV_CUDNN_WINOGRAD_NONFUSED = 15,
    REPRO_CONV_ALGO_LIMIT = 16 /* one past every id: size of per-algorithm arrays */
} repro_conv_algo;

/* "direct", "im2col", "winograd", "cudnn_implicit_gemm", ...,
 * "cudnn_winograd_nonfused"; "?" for anything else. */
const char *repro_conv_algo_name(repro_conv_algo a);
/* The algorithm with that name, or -1. */
int repro_conv_algo_from_name(const char *name);

/* Kernel variant ids (kernels/variants.h names them per op). 0 is every
 * op's deterministic, batch-invariant default ("ordered", or "direct" for
 * conv2d); 1 is the op's other variant: the unordered atomic-add one for the
 * backward reductions and index_add (an entry treats any nonzero id as
 * ATOMIC), the split-K one for linear_forward. The ids equal the index of
 * the variant in the op's choices in the config. */
enum { REPRO_VARIANT_ORDERED = 0, REPRO_VARIANT_ATOMIC = 1, REPRO_VARIANT_SPLITK = 1 };

/* linear_forward's SPLITK variant: the input dimension is cut into this
 * many contiguous chunks of ceil(in / chunks) inputs, chosen from the row
 * count B as BLAS libraries and cuBLAS heuristics choose a split-K for
 * skinny problems: 4 below 8 rows, 2 for 8..31, 1 from 32. Deterministic
 * (fixed for a shape), NOT batch-invariant: a row's rounding depends on how
 * many rows share its call. The negative control of `repro check
 * --batch-invariance`. */
static inline int repro_splitk_chunks(int B) { return B >= 32 ? 1 : B >= 8 ? 2 : 4; }

/* Reduced-precision formats of round_to (round to nearest, ties to even,
 * stored back as float: the mixed-precision emulation). */
enum { REPRO_ROUND_BF16 = 1, REPRO_ROUND_FP16 = 2 };

typedef struct {
    int threads; /* CPU kernel threads, >= 1 (results never depend on it) */
    int device;  /* device ordinal for device backends (cpu ignores it) */
} repro_backend_options;

/* What describe_device reports: the environment fingerprint's GPU fields. */
typedef struct {
    char name[128];    /* "NVIDIA H200" */
    int sm_count;
    int cc_major, cc_minor;
    char driver[32];   /* CUDA driver API version, "13.0" */
    char runtime[32];  /* CUDA runtime version */
    char cudnn[32];    /* "9.13.0" */
    char cublas[32];
    size_t total_memory; /* bytes */
} repro_device_info;

/* Memory figures of a context (bytes). */
typedef struct {
    size_t in_use;   /* handed out by alloc and not freed */
    size_t peak;     /* the largest in_use so far */
    size_t cached;   /* freed blocks the backend keeps for reuse */
    size_t pinned;   /* page-locked host staging memory */
    size_t device_free, device_total; /* the device's (cudaMemGetInfo); 0: a host backend */
} repro_memory_stats;

/* Summary statistics of a float buffer, in the recorder's fixed order
 * (tensor_leaves; field for field repro_tensor_stats of repro/repro.h). */
typedef struct {
    double l2, sum, max_abs;
    int64_t nonfinite;
} repro_buffer_stats;

/* ---- the table ----------------------------------------------------------- */

typedef struct repro_backend {
    const char *name; /* "cpu", "cuda": what repro_backend_get looks up */
    /* 1 when alloc() returns host memory the host may read and write
     * directly (cpu); 0 when buffers are reached only through copy_*. */
    int host_memory;

    /* -- context -- */
    /* Creates a context (threads, streams, handles). Returns 0, or -1 with
     * a one-line reason in why[0..why_len) and *ctx untouched. */
    int (*create)(void **ctx, const repro_backend_options *opts, char *why, size_t why_len);
    /* Frees the context and its threads; ctx may be NULL. Buffers must have
     * been freed before. */
    void (*destroy)(void *ctx);
    /* Waits for all work issued on ctx. Returns 0, or -1 when some earlier
     * entry failed (a device fault, a launch error): last_error says what. */
    int (*synchronize)(void *ctx);
    /* The message of the last failure on ctx ("" if none). */
    const char *(*last_error)(void *ctx);

    /* -- memory -- */
    /* bytes > 0. Returns backend memory aligned to at least 64 bytes, with
     * unspecified contents, or NULL when out of memory. */
    void *(*alloc)(void *ctx, size_t bytes);
    /* p may be NULL. */
    void (*free)(void *ctx, void *p);
    void (*copy_h2d)(void *ctx, void *dst, const void *host_src, size_t bytes);
    void (*copy_d2h)(void *ctx, void *host_dst, const void *src, size_t bytes);
    void (*copy_d2d)(void *ctx, void *dst, const void *src, size_t bytes); /* no overlap */
    /* Sets `bytes` bytes at p to 0 (so floats are +0.0f). */
    void (*zero)(void *ctx, void *p, size_t bytes);

    /* -- linear: x [B][in], w [out][in], b [out], y [B][out] -- */
    /* Bytes of workspace linear_forward needs for this shape (cpu: w
     * transposed, in*out floats). */
    size_t (*linear_workspace_bytes)(void *ctx, int B, int in, int out);
    /* y = x w^T + b: y[b][o] = b[o] + x[b][0]*w[o][0] + x[b][1]*w[o][1] + ...
     * summed in ascending input index. workspace holds
     * linear_workspace_bytes(B, in, out) bytes; its contents on return are
     * unspecified. Each row of y depends on its row of x only: batch-invariant.
     * SPLITK (variant 1): with n = repro_splitk_chunks(B) chunks of
     * L = ceil(in / n) inputs, chunk 0's partial starts from b[o] and chunk
     * j > 0's from +0, each adding its inputs [jL, min((j+1)L, in)) in
     * ascending index; y = ((p0 + p1) + p2) + p3 (n = 1: exactly the
     * ordered sum). A backend without it returns having written nothing and
     * says so in last_error (and synchronize fails). */
    void (*linear_forward)(void *ctx, int variant, const float *x, const float *w,
                           const float *b, float *y, int B, int in, int out, void *workspace);
    /* dx = dy w: dx[b][i] = sum over o ascending of dy[b][o]*w[o][i]
     * (overwrites dx). */
    void (*linear_backward_data)(void *ctx, const float *dy, const float *w, float *dx, int B,
                                 int in, int out);
    /* dw (+)= dy^T x: dw[o][i] sums dy[b][o]*x[b][i] over b ascending.
     * ATOMIC: chunks of 4 samples each sum their slice (b ascending) and add
     * the partial into dw in scheduler order (zeroing dw first unless
     * accumulate): nondeterministic. */
    void (*linear_backward_weight)(void *ctx, int variant, const float *dy, const float *x,
                                   float *dw, int B, int in, int out, int accumulate);
    /* db (+)= sum over b ascending of dy[b][o]. ATOMIC: per-chunk (4
     * samples) partials added in scheduler order: nondeterministic. */
    void (*linear_backward_bias)(void *ctx, int variant, const float *dy, float *db, int B,
                                 int out, int accumulate);

    /* Optional (NULL: the caller runs linear_backward_weight per shard into
     * buffers of its own and adds them): the shard rule's weight gradient,
     * ORDERED only. The batch is shards of S samples (S divides B); shard
     * q's partial P_q[o][i] sums dy[b][o]*x[b][i] over its samples b
     * ascending from +0; dw = P_0, then dw + P_1, ... in shard order, or,
     * with accumulate, the old dw + that sum. Bitwise what the caller's way
     * gives, without the buffers. */
    void (*linear_backward_weight_sharded)(void *ctx, const float *dy, const float *x,
                                           float *dw, int B, int in, int out, int S,
                                           int accumulate);

    /* -- conv2d (repro_conv_shape), w [K][C][R][R], b [K] -- */
    /* 1 when algorithm a handles shape s on this backend (cpu: direct and
     * im2col always, winograd when R == 3). */
    int (*conv_algo_eligible)(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
    /* 1 when eligible algorithm a gives identical bits on every call for s
     * (cpu: all; cuda: what cuDNN's perf results report as
     * CUDNN_DETERMINISTIC, and our own kernels). deterministic = on admits
     * only these. */
    int (*conv_algo_deterministic)(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
    /* The backend's own algorithm choice for s, as cuDNN makes it, or NULL
     * (cpu) for the harness's rule and timing (core/algo_select.h). Among
     * eligible algorithms (deterministic ones only when deterministic_only):
     * benchmark = 0 takes the heuristic's first
     * (cudnnGetConvolutionForwardAlgorithm_v7); benchmark = 1 times them on
     * the real x, w, b, y (cudnnFindConvolutionForwardAlgorithmEx) and takes
     * the fastest, writing each timed one's time in microseconds to
     * time_us[a] (time_us has REPRO_CONV_ALGO_LIMIT entries, preset to -1).
     * workspace holds workspace_bytes bytes. Returns the algorithm, or -1
     * (last_error says why). */
    int (*conv_algo_choose)(void *ctx, const repro_conv_shape *s, int benchmark,
                            int deterministic_only, const float *x, const float *w,
                            const float *b, float *y, void *workspace, size_t workspace_bytes,
                            double *time_us);
    /* Bytes of workspace conv2d_forward needs for (a, s); 0 when none. */
    size_t (*conv_workspace_bytes)(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
    /* y[b][k][oy][ox] = b[k] + sum of w[k][c][ry][rx] * x[b][c][oy+ry-pad][ox+rx-pad]
     * (out-of-range x terms are 0), computed by algorithm a, each of which
     * is deterministic and rounds in its own fixed way:
     *   direct   bias, then one running sum over (c, ry, rx) in
     *            lexicographic order;
     *   im2col   per output: the C*R*R terms in (c, ry, rx) order summed in
     *            blocks of 16 (each block from 0, ascending), the block sums
     *            added ascending to the bias;
     *   winograd F(2x2, 3x3), R == 3, all in float, each 2x2 output block
     *            Y = A^T [sum over c of (G g G^T) .* (B^T d B)] A, d the 4x4
     *            input tile at (2ty - pad, 2tx - pad), zero outside, with
     *            G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
     *            B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
     *            A^T = [1 1 1 0; 0 1 -1 -1]; transforms columns first, then
     *            rows, as u1 = ((g0 + g1) + g2) * 0.5, u2 = ((g0 - g1) + g2) * 0.5;
     *            v0 = d0 - d2, v1 = d1 + d2, v2 = d2 - d1, v3 = d1 - d3;
     *            M = +0 then M + U*V for c ascending; y0 = (m0 + m1) + m2,
     *            y1 = (m1 - m2) - m3; finally y = (b[k] or +0) + that.
     * b may be NULL (no bias). An ineligible or unknown portable a computes
     * direct; a vendor id (cuDNN's) that is ineligible for s is refused: an
     * error (last_error), y untouched, never another algorithm under its name.
     * workspace holds conv_workspace_bytes(a, s) bytes (NULL when 0). */
    void (*conv2d_forward)(void *ctx, repro_conv_algo a, const repro_conv_shape *s,
                           const float *x, const float *w, const float *b, float *y,
                           void *workspace);
    /* dx[b][c][iy][ix] = sum over (k, ry, rx) in lexicographic order of
     * w[k][c][ry][rx] * dy[b][k][iy-ry+pad][ix-rx+pad], out-of-range terms
     * skipped (overwrites dx). One algorithm (direct). */
    void (*conv2d_backward_data)(void *ctx, const repro_conv_shape *s, const float *dy,
                                 const float *w, float *dx);
    /* dw[k][c][ry][rx] (+)= sum over (b, oy, ox) of dy[b][k][oy][ox] *
     * x[b][c][oy+ry-pad][ox+rx-pad]: summed per output column ox over
     * (b, oy) ascending, then the column sums added in ascending ox.
     * db (may be NULL) (+)= sum of dy[b][k][.][.] in the same order.
     * ATOMIC: one partial per sample (in the order above), added into dw/db
     * in scheduler order: nondeterministic. */
    void (*conv2d_backward_filter)(void *ctx, int variant, const repro_conv_shape *s,
                                   const float *dy, const float *x, float *dw, float *db,
                                   int accumulate);
    /* Optional (NULL: the caller runs conv2d_backward_filter per shard into
     * buffers of its own and adds them): the shard rule's dw and db, ORDERED
     * only. dy and x hold nq shards of s->B samples; shard q's partials sum
     * from +0 as conv2d_backward_filter does; dw = P_0, then dw + P_1, ...
     * in shard order, or, with accumulate, the old dw + that sum (db
     * likewise). 0, or -1 with nothing written when this backend cannot
     * for this shape (the caller then takes its own way). */
    int (*conv2d_backward_filter_sharded)(void *ctx, const repro_conv_shape *s, int nq,
                                          const float *dy, const float *x, float *dw, float *db,
                                          int accumulate);

    /* -- elementwise layers -- */
    /* y = x > 0 || x is NaN ? x : +0 (NaN propagates, as torch.relu). */
    void (*relu_forward)(void *ctx, const float *x, float *y, long n);
    /* dx = y > 0 ? dy : 0, y being the forward output. */
    void (*relu_backward)(void *ctx, const float *y, const float *dy, float *dx, long n);
    /* Window k x k, stride k, floor: y is B x C x (H/k) x (W/k). argmax[i]
     * is the input offset within the (b, c) plane of the window's first
     * maximum in row-major window order; a NaN wins. */
    void (*maxpool2d_forward)(void *ctx, int B, int C, int H, int W, int k, const float *x,
                              float *y, int32_t *argmax);
    /* dx (B x C x H x W) fully overwritten: 0 except dy at each argmax. */
    void (*maxpool2d_backward)(void *ctx, int B, int C, int H, int W, int k,
                               const int32_t *argmax, const float *dy, float *dx);
    /* Optional, both or neither (NULL: relu_forward then maxpool2d_forward,
     * maxpool2d_backward then relu_backward): a ReLU and the pool after it
     * in one pass each way. Forward: y = relu(the window's maximum of x),
     * the window's maximum of relu(x), relu(x) not stored; argmax is x's
     * (it may differ from relu(x)'s only where y is +0). Backward: dx = 0
     * except, at each argmax, pool_y > 0 ? dy : 0 (pool_y: the pool's
     * output). Bitwise the two ops each way. */
    void (*maxpool2d_relu_forward)(void *ctx, int B, int C, int H, int W, int k, const float *x,
                                   float *y, int32_t *argmax);
    void (*maxpool2d_relu_backward)(void *ctx, int B, int C, int H, int W, int k,
                                    const int32_t *argmax, const float *dy, const float *pool_y,
                                    float *dx);
    /* Element i is kept iff repro_u32_to_unit(repro_philox_at(key, i, 0).v[0])
     * >= p (kernels/philox.h: Philox4x32-10, counter (i lo, i hi, 0, 0));
     * with s = 1.0f / (1.0f - p) in float: mask[i] = kept,
     * y[i] = x[i] * (kept ? s : 0.0f) (so a dropped NaN stays NaN, as a
     * multiply by the mask does). p = 0 copies x bit for bit (mask all 1). */
    void (*dropout_forward)(void *ctx, const float *x, float *y, uint8_t *mask, long n,
                            float p, uint64_t key);
    /* dx[i] = dy[i] * (mask[i] ? s : 0.0f), s as above; p = 0 copies dy. */
    void (*dropout_backward)(void *ctx, const float *dy, const uint8_t *mask, float *dx, long n,
                             float p);

    /* -- loss: logits, probs, dlogits [B][C]; labels [B] in [0, C) -- */
    /* probs[b] = softmax(logits[b]) computed in double (max-subtracted,
     * exp/log by repro_exp/repro_log of the CPU kernels' mathx.c, not libm)
     * and rounded to float. Returns (to the host) the mean over b of
     * log(sum_j e^(z_j - max)) - (z_label - max), summed in ascending b in
     * double, divided by B; 0 when B = 0. */
    double (*softmax_xent_forward)(void *ctx, const float *logits, const int32_t *labels,
                                   float *probs, int B, int C);
    /* dlogits[b][j] = (probs[b][j] - (j == label[b])) / B, in float. */
    void (*softmax_xent_backward)(void *ctx, const float *probs, const int32_t *labels,
                                  float *dlogits, int B, int C);

    /* -- optimizers (PyTorch's update rules), elementwise over n -- */
    /* torch.optim.SGD, dampening 0, no Nesterov, in float:
     * g' = g + wd*p; buf = first_step ? g' : momentum*buf + g'; p = p - lr*buf. */
    void (*sgd_step)(void *ctx, float *p, const float *g, float *buf, long n, float lr,
                     float momentum, float wd, int first_step);
    /* torch.optim.AdamW (single-tensor path), step t >= 1, with
     * bc1 = 1 - beta1^t, bc2 = 1 - beta2^t from the caller (host, by
     * repeated multiplication). lr, the betas and wd are doubles, as
     * PyTorch's Python floats are. Constants, in double then rounded to float:
     *   decay = 1 - lr*wd, w = 1 - beta1, c2 = 1 - beta2, beta2 (as float),
     *   neg_step = -(lr / bc1), bc2_sqrt = sqrt(bc2) (correctly rounded);
     * per element, in float, left to right:
     *   p = p * decay
     *   m = (-0.5 < w < 0.5) ? m + w * (g - m) : g - (g - m) * (1 - w)   (lerp)
     *   v = v * beta2;  v = v + c2 * g * g
     *   p = p + neg_step * m / (sqrtf(v) / bc2_sqrt + eps)  (sqrtf correctly rounded) */
    void (*adamw_step)(void *ctx, float *p, const float *g, float *m, float *v, long n,
                       double lr, double beta1, double beta2, float eps, double wd, double bc1,
                       double bc2);

    /* -- scatter -- */
    /* out[index[i]*width + j] += src[i*width + j] for i in [0, n), j in
     * [0, width): accumulates into out (the caller zeroes it). ORDERED:
     * every output element receives its terms in ascending i. ATOMIC: terms
     * that share an output row meet in scheduler order: nondeterministic.
     * Every index[i] is in [0, nrows) (the caller guarantees it). */
    void (*index_add)(void *ctx, int variant, float *out, int nrows, const int32_t *index,
                      const float *src, long n, int width);

    /* -- mixed precision, elementwise over n -- */
    /* x[i] = the REPRO_ROUND_BF16 / _FP16 value nearest x[i] (ties to even;
     * NaN stays NaN, quiet; overflow to inf as the format does; subnormals
     * of the format correctly rounded), as a float. Other formats: no-op. */
    void (*round_to)(void *ctx, float *x, long n, int format);
    /* x[i] = x[i] / d (a float division: loss / k for accumulation). */
    void (*div_scalar)(void *ctx, float *x, long n, float d);
    /* x[i] = x[i] * s (the fp16 loss scale). */
    void (*mul_scalar)(void *ctx, float *x, long n, float s);
    /* y[i] = y[i] + x[i] (a bf16/fp16 micro-batch gradient into fp32). */
    void (*add)(void *ctx, float *y, const float *x, long n);
    /* GradScaler.unscale_: g[i] = g[i] * inv; returns (to the host) 1 if any
     * result is inf or NaN, else 0. */
    int (*unscale_check)(void *ctx, float *g, long n, float inv);

    /* -- hashing -- */
    /* The leaf digests of backend buffer p (nbytes; each REPRO_LEAF_BYTES =
     * 4096-byte leaf, the last shorter, none when nbytes is 0) under digest
     * function fn (repro/digest.h's repro_digest_fn: 0 XXH3-128,
     * kernels/shared/xxh3.h, 16 bytes a leaf followed by 16 zero bytes; 1
     * SHA-256, kernels/shared/sha256.h, 32 bytes) into host
     * leaves[32 * nleaves], computed where the buffer lives (cuda: one GPU
     * thread per leaf; only the digests cross the bus); the tensor digest
     * is then repro_tensor_digest_from_leaves_fn's.
     * stats (may be NULL) receives the buffer's statistics as nbytes / 4
     * floats in the recorder's order: element i into lane i % 4, each lane
     * in double in ascending i (a non-finite element adds 0 and counts in
     * nonfinite), lanes combined as (0 + 1) + (2 + 3), l2 the square root of
     * the combined sum of squares. Waits for the work before it. Returns 0
     * or -1 (last_error; an unknown fn is an error). */
    int (*tensor_leaves)(void *ctx, int fn, const void *p, size_t nbytes, uint8_t *leaves,
                         repro_buffer_stats *stats);

    /* -- memory accounting -- */
    void (*memory_stats)(void *ctx, repro_memory_stats *out);
    /* Returns the cached free blocks to the system (torch.cuda.empty_cache;
     * cpu: nothing is cached, a no-op). */
    void (*empty_cache)(void *ctx);

    /* -- host threads -- */
    /* Optional (NULL: no host threads to lend; cuda). Lends the backend's
     * idle host threads to the caller: while they wait for the next
     * kernel, work(arg) is called, one unit of a few microseconds a call,
     * returning nonzero if it did any (cpu: its kernel threads, not the
     * calling thread; kernels/cpu/pool.h). work = NULL stops it, returning
     * once no call is in progress. Kernel results never depend on it. */
    void (*set_idle_work)(void *ctx, int (*work)(void *arg), void *arg);

    /* -- the device, without a context -- */
    /* Describes device `device` (repro env). Returns 0, or -1 with a
     * one-line reason in why (cpu: it has none; cuda: no driver, no device,
     * or the ordinal out of range). */
    int (*describe_device)(int device, repro_device_info *out, char *why, size_t why_len);
} repro_backend;

/* The backend named `name` ("cpu"), or NULL when this build has none by
 * that name. A new backend adds itself to the list in kernels/backend.c. */
const repro_backend *repro_backend_get(const char *name);
/* Every backend of this build, NULL-terminated, "cpu" first. */
const repro_backend *const *repro_backend_list(void);

/* The CPU backend (kernels/cpu/backend_cpu.c). */
extern const repro_backend repro_backend_cpu;

/* Why this build has no backend by that name, for the message of a config
 * or option that asks for it ("this build has no CUDA backend (built
 * without nvcc)"); NULL when it has one. */
const char *repro_backend_missing(const char *name);
/* 1 when this build compiled the CUDA backend in. */
int repro_backend_have_cuda(void);
/* One line on the CUDA backend of this build: compiled or not, for which
 * GPUs, and whether it was verified on hardware (repro env, make all). */
const char *repro_backend_cuda_status(void);

#ifdef __cplusplus
}
#endif
#endif
