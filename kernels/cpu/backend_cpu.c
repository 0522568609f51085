/* The CPU backend: backend.h's table over the CPU kernels (ops.h, atomic.h,
 * conv_algos.h, precision.h, elementwise.h, splitk.h). The context is the kernels'
 * thread pool; memory is host memory, so the copies are memcpy and
 * synchronize has nothing to wait for. Every entry is a thin adapter: the
 * numerics are the kernels' own, unchanged. tensor_leaves hashes with the
 * shared XXH3-128 or SHA-256 (kernels/shared/xxh3.h, sha256.h), the code the
 * CUDA backend runs on the device, so the CPU suite tests it against
 * libxxhash and OpenSSL. */
#include "kernels/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "conv_algos.h"
#include "elementwise.h"
#include "ops.h"
#include "pool.h"
#include "precision.h"
#include "splitk.h"
#include "kernels/shared/sha256.h"
#include "kernels/shared/xxh3.h"
#include "kernels/shared/stats.h"

typedef struct {
    repro_pool *pool;
} cpu_ctx;

static repro_pool *pool_of(void *ctx)
{
    return ((cpu_ctx *)ctx)->pool;
}

/* ---- context and memory ---------------------------------------------------- */

static int cpu_create(void **ctx, const repro_backend_options *o, char *why, size_t why_len)
{
    int threads = o ? o->threads : 1;
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c || threads < 1 || repro_pool_new(&c->pool, threads)) {
        free(c);
        snprintf(why, why_len, "cannot start %d kernel threads", threads);
        return -1;
    }
    *ctx = c;
    return 0;
}

static void cpu_destroy(void *ctx)
{
    if (!ctx)
        return;
    repro_pool_free(pool_of(ctx));
    free(ctx);
}

static int cpu_synchronize(void *ctx)
{
    (void)ctx; /* every kernel has returned when its call returns */
    return 0;
}

static const char *cpu_last_error(void *ctx)
{
    (void)ctx;
    return "";
}

static void *cpu_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    void *p = NULL;
    return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void cpu_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes)
        memcpy(dst, src, bytes);
}

enum { ZERO_CHUNK = 64 * 1024 }; /* bytes */

typedef struct {
    unsigned char *p;
    size_t bytes;
} zero_ctx;

static void zero_chunk(void *vctx, long chunk)
{
    const zero_ctx *z = vctx;
    size_t off = (size_t)chunk * ZERO_CHUNK;
    memset(z->p + off, 0, z->bytes - off < ZERO_CHUNK ? z->bytes - off : ZERO_CHUNK);
}

/* zero_grad's memset, shared by the pool's threads (a serial megabyte a
 * step kept the other thread waiting). */
static void cpu_zero(void *ctx, void *p, size_t bytes)
{
    zero_ctx z = {p, bytes};
    if (bytes)
        repro_pool_run(pool_of(ctx), (long)((bytes + ZERO_CHUNK - 1) / ZERO_CHUNK), zero_chunk, &z);
}

/* ---- linear ------------------------------------------------------------------ */

static size_t cpu_linear_workspace_bytes(void *ctx, int B, int in, int out)
{
    (void)ctx;
    (void)B;
    return (size_t)in * (size_t)out * sizeof(float); /* w transposed */
}

static void cpu_linear_forward(void *ctx, int variant, const float *x, const float *w,
                               const float *b, float *y, int B, int in, int out, void *workspace)
{
    if (variant == REPRO_VARIANT_SPLITK) /* the batch-invariance negative control */
        repro_linear_forward_splitk(pool_of(ctx), x, w, b, y, B, in, out, workspace);
    else
        repro_linear_forward(pool_of(ctx), x, w, b, y, B, in, out, workspace);
}

static void cpu_linear_backward_data(void *ctx, const float *dy, const float *w, float *dx,
                                     int B, int in, int out)
{
    repro_linear_backward_data(pool_of(ctx), dy, w, dx, B, in, out);
}

static void cpu_linear_backward_weight(void *ctx, int variant, const float *dy, const float *x,
                                       float *dw, int B, int in, int out, int accumulate)
{
    if (variant != REPRO_VARIANT_ORDERED)
        repro_linear_backward_weight_atomic(pool_of(ctx), dy, x, dw, B, in, out, accumulate);
    else
        repro_linear_backward_weight(pool_of(ctx), dy, x, dw, B, in, out, accumulate);
}

static void cpu_linear_backward_weight_sharded(void *ctx, const float *dy, const float *x,
                                               float *dw, int B, int in, int out, int S,
                                               int accumulate)
{
    repro_linear_backward_weight_sharded(pool_of(ctx), dy, x, dw, B, in, out, S, accumulate);
}

static void cpu_linear_backward_bias(void *ctx, int variant, const float *dy, float *db, int B,
                                     int out, int accumulate)
{
    if (variant != REPRO_VARIANT_ORDERED)
        repro_linear_backward_bias_atomic(pool_of(ctx), dy, db, B, out, accumulate);
    else
        repro_linear_backward_bias(pool_of(ctx), dy, db, B, out, accumulate);
}

/* ---- conv2d ------------------------------------------------------------------ */

static int cpu_conv_algo_eligible(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    (void)ctx;
    return repro_conv_algo_eligible(a, s);
}

static int cpu_conv_algo_deterministic(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    return cpu_conv_algo_eligible(ctx, a, s); /* each has one fixed order */
}

static size_t cpu_conv_workspace_bytes(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    (void)ctx;
    return repro_conv_workspace_floats(a, s) * sizeof(float);
}

static void cpu_conv2d_forward(void *ctx, repro_conv_algo a, const repro_conv_shape *s,
                               const float *x, const float *w, const float *b, float *y,
                               void *workspace)
{
    repro_conv2d_forward_algo(pool_of(ctx), a, s, x, w, b, y, workspace);
}

static void cpu_conv2d_backward_data(void *ctx, const repro_conv_shape *s, const float *dy,
                                     const float *w, float *dx)
{
    repro_conv2d_backward_data(pool_of(ctx), s, dy, w, dx);
}

static int cpu_conv2d_backward_filter_sharded(void *ctx, const repro_conv_shape *s, int nq,
                                              const float *dy, const float *x, float *dw,
                                              float *db, int accumulate)
{
    return repro_conv2d_backward_filter_sharded(pool_of(ctx), s, nq, dy, x, dw, db, accumulate);
}

static void cpu_conv2d_backward_filter(void *ctx, int variant, const repro_conv_shape *s,
                                       const float *dy, const float *x, float *dw, float *db,
                                       int accumulate)
{
    if (variant != REPRO_VARIANT_ORDERED)
        repro_conv2d_backward_filter_atomic(pool_of(ctx), s, dy, x, dw, db, accumulate);
    else
        repro_conv2d_backward_filter(pool_of(ctx), s, dy, x, dw, db, accumulate);
}

/* ---- elementwise layers --------------------------------------------------------- */

static void cpu_relu_forward(void *ctx, const float *x, float *y, long n)
{
    repro_relu_forward(pool_of(ctx), x, y, n);
}

static void cpu_relu_backward(void *ctx, const float *y, const float *dy, float *dx, long n)
{
    repro_relu_backward(pool_of(ctx), y, dy, dx, n);
}

static void cpu_maxpool2d_forward(void *ctx, int B, int C, int H, int W, int k, const float *x,
                                  float *y, int32_t *argmax)
{
    repro_maxpool2d_forward(pool_of(ctx), B, C, H, W, k, x, y, argmax);
}

static void cpu_maxpool2d_backward(void *ctx, int B, int C, int H, int W, int k,
                                   const int32_t *argmax, const float *dy, float *dx)
{
    repro_maxpool2d_backward(pool_of(ctx), B, C, H, W, k, argmax, dy, dx);
}

static void cpu_maxpool2d_relu_forward(void *ctx, int B, int C, int H, int W, int k,
                                       const float *x, float *y, int32_t *argmax)
{
    repro_maxpool2d_relu_forward(pool_of(ctx), B, C, H, W, k, x, y, argmax);
}

static void cpu_maxpool2d_relu_backward(void *ctx, int B, int C, int H, int W, int k,
                                        const int32_t *argmax, const float *dy,
                                        const float *pool_y, float *dx)
{
    repro_maxpool2d_relu_backward(pool_of(ctx), B, C, H, W, k, argmax, dy, pool_y, dx);
}

static void cpu_dropout_forward(void *ctx, const float *x, float *y, uint8_t *mask, long n,
                                float p, uint64_t key)
{
    repro_dropout_forward(pool_of(ctx), x, y, mask, n, p, key);
}

static void cpu_dropout_backward(void *ctx, const float *dy, const uint8_t *mask, float *dx,
                                 long n, float p)
{
    repro_dropout_backward(pool_of(ctx), dy, mask, dx, n, p);
}

/* ---- loss, optimizers, scatter ------------------------------------------------- */

static double cpu_softmax_xent_forward(void *ctx, const float *logits, const int32_t *labels,
                                       float *probs, int B, int C)
{
    (void)ctx;
    return repro_softmax_xent_forward(logits, labels, probs, B, C);
}

static void cpu_softmax_xent_backward(void *ctx, const float *probs, const int32_t *labels,
                                      float *dlogits, int B, int C)
{
    (void)ctx;
    repro_softmax_xent_backward(probs, labels, dlogits, B, C);
}

static void cpu_sgd_step(void *ctx, float *p, const float *g, float *buf, long n, float lr,
                         float momentum, float wd, int first_step)
{
    repro_sgd_step(pool_of(ctx), p, g, buf, n, lr, momentum, wd, first_step);
}

static void cpu_adamw_step(void *ctx, float *p, const float *g, float *m, float *v, long n,
                           double lr, double beta1, double beta2, float eps, double wd, double bc1,
                           double bc2)
{
    repro_adamw_step(pool_of(ctx), p, g, m, v, n, lr, beta1, beta2, eps, wd, bc1, bc2);
}

static void cpu_index_add(void *ctx, int variant, float *out, int nrows, const int32_t *index,
                          const float *src, long n, int width)
{
    if (variant != REPRO_VARIANT_ORDERED)
        repro_index_add_atomic(pool_of(ctx), out, nrows, index, src, n, width);
    else
        repro_index_add(pool_of(ctx), out, nrows, index, src, n, width);
}

/* ---- mixed precision ------------------------------------------------------------ */

static void cpu_round_to(void *ctx, float *x, long n, int format)
{
    (void)ctx; /* precision.h's ids are REPRO_ROUND_BF16 = 1, _FP16 = 2 */
    repro_round_buffer(x, n, format);
}

static void cpu_div_scalar(void *ctx, float *x, long n, float d)
{
    (void)ctx;
    repro_div_scalar(x, n, d);
}

static void cpu_mul_scalar(void *ctx, float *x, long n, float s)
{
    (void)ctx;
    repro_mul_scalar(x, n, s);
}

static void cpu_add(void *ctx, float *y, const float *x, long n)
{
    (void)ctx;
    repro_add_into(y, x, n);
}

static int cpu_unscale_check(void *ctx, float *g, long n, float inv)
{
    (void)ctx;
    return repro_unscale_check(g, n, inv);
}

/* ---- hashing, memory figures, device ------------------------------------------ */

/* The shared XXH3-128 or SHA-256 over host memory, leaf by leaf, and the
 * stats in the recorder's order: the very code the CUDA backend runs on
 * the device. */
static int cpu_tensor_leaves(void *ctx, int fn, const void *p, size_t nbytes, uint8_t *leaves,
                             repro_buffer_stats *stats)
{
    (void)ctx;
    if (fn != 0 && fn != 1)
        return -1; /* an unknown digest function: nothing to hash with */
    const uint8_t *bytes = p;
    for (size_t off = 0, i = 0; off < nbytes; off += 4096, i++) {
        size_t len = nbytes - off < 4096 ? nbytes - off : 4096;
        if (fn == 1) {
            repro_hd_sha256(bytes + off, len, leaves + 32 * i);
            continue;
        }
        repro_hd_xxh3_128(bytes + off, len, leaves + 32 * i);
        memset(leaves + 32 * i + 16, 0, 16);
    }
    if (stats) {
        repro_hd_lane l[4];
        for (int j = 0; j < 4; j++)
            l[j] = repro_hd_lane_of(p, nbytes / 4, j);
        double l2sq;
        repro_hd_lanes_combine(l, &l2sq, &stats->sum, &stats->max_abs, &stats->nonfinite);
        stats->l2 = sqrt(l2sq);
    }
    return 0;
}

/* Host memory is malloc's: nothing is cached or pinned, and the model's
 * own accounting (core/memory.h) gives the sizes. */
static void cpu_memory_stats(void *ctx, repro_memory_stats *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
}

static void cpu_empty_cache(void *ctx)
{
    (void)ctx;
}

static void cpu_set_idle_work(void *ctx, int (*work)(void *arg), void *arg)
{
    repro_pool_set_idle(pool_of(ctx), work, arg);
}

static int cpu_describe_device(int device, repro_device_info *out, char *why, size_t why_len)
{
    (void)device;
    memset(out, 0, sizeof *out);
    snprintf(why, why_len, "the cpu backend has no device");
    return -1;
}

const repro_backend repro_backend_cpu = {
    .name = "cpu",
    .host_memory = 1,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .synchronize = cpu_synchronize,
    .last_error = cpu_last_error,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_h2d = cpu_copy,
    .copy_d2h = cpu_copy,
    .copy_d2d = cpu_copy,
    .zero = cpu_zero,
    .linear_workspace_bytes = cpu_linear_workspace_bytes,
    .linear_forward = cpu_linear_forward,
    .linear_backward_data = cpu_linear_backward_data,
    .linear_backward_weight = cpu_linear_backward_weight,
    .linear_backward_bias = cpu_linear_backward_bias,
    .linear_backward_weight_sharded = cpu_linear_backward_weight_sharded,
    .conv_algo_eligible = cpu_conv_algo_eligible,
    .conv_algo_deterministic = cpu_conv_algo_deterministic,
    .conv_algo_choose = NULL, /* the harness's rule and timing */
    .conv_workspace_bytes = cpu_conv_workspace_bytes,
    .conv2d_forward = cpu_conv2d_forward,
    .conv2d_backward_data = cpu_conv2d_backward_data,
    .conv2d_backward_filter = cpu_conv2d_backward_filter,
    .conv2d_backward_filter_sharded = cpu_conv2d_backward_filter_sharded,
    .relu_forward = cpu_relu_forward,
    .relu_backward = cpu_relu_backward,
    .maxpool2d_forward = cpu_maxpool2d_forward,
    .maxpool2d_backward = cpu_maxpool2d_backward,
    .maxpool2d_relu_forward = cpu_maxpool2d_relu_forward,
    .maxpool2d_relu_backward = cpu_maxpool2d_relu_backward,
    .dropout_forward = cpu_dropout_forward,
    .dropout_backward = cpu_dropout_backward,
    .softmax_xent_forward = cpu_softmax_xent_forward,
    .softmax_xent_backward = cpu_softmax_xent_backward,
    .sgd_step = cpu_sgd_step,
    .adamw_step = cpu_adamw_step,
    .index_add = cpu_index_add,
    .round_to = cpu_round_to,
    .div_scalar = cpu_div_scalar,
    .mul_scalar = cpu_mul_scalar,
    .add = cpu_add,
    .unscale_check = cpu_unscale_check,
    .tensor_leaves = cpu_tensor_leaves,
    .memory_stats = cpu_memory_stats,
    .empty_cache = cpu_empty_cache,
    .set_idle_work = cpu_set_idle_work,
    .describe_device = cpu_describe_device,
};
