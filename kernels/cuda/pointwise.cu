/* The pointwise layers, the loss, the optimizers, index-add and the mixed-
 * precision step kernels on the GPU. Every per-element formula is the one
 * the CPU kernels use (kernels/shared: pointwise.h, softmax.h, optim.h,
 * round.h, and Philox in kernels/philox.h), compiled here for the device,
 * so each output has the CPU's bits. One thread per output element (grid-
 * stride), no reductions except where stated:
 *   softmax  one thread per row (the row in double, as the CPU), then one
 *            thread sums the row losses in ascending b: the CPU's order;
 *   maxpool  forward: one thread per window, the CPU's scan and tie rule;
 *            backward: zero dx, then each window stores its dy at its
 *            argmax: windows do not overlap, so no two stores collide;
 *   index_add ORDERED: one thread per output element walks the inputs in
 *            ascending i (the CPU's order); ATOMIC: one thread per input
 *            element, atomicAdd into its row (nondeterministic). */
#include "ctx.cuh"

#include <math.h>

#include "kernels/shared/optim.h"
#include "kernels/shared/pointwise.h"
#include "kernels/shared/round.h"
#include "kernels/shared/softmax.h"

#define LAUNCH(c, n, kernel, ...)                                                          \
    do {                                                                                   \
        kernel<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, (c)->stream>>>(__VA_ARGS__); \
        launchCheck(c);                                                                    \
    } while (0)

/* ---- ReLU -------------------------------------------------------------------- */

__global__ void relu_fwd(const float *x, float *y, long n)
{
    REPRO_CUDA_FOR(i, n) { y[i] = repro_hd_relu(x[i]); }
}

__global__ void relu_bwd(const float *y, const float *dy, float *dx, long n)
{
    REPRO_CUDA_FOR(i, n) { dx[i] = repro_hd_relu_grad(y[i], dy[i]); }
}

static int relu_forward(repro_cuda_ctx *c, const float *x, float *y, long n)
{
    if (n > 0)
        LAUNCH(c, n, relu_fwd, x, y, n);
    return 0;
}

static int relu_backward(repro_cuda_ctx *c, const float *y, const float *dy, float *dx, long n)
{
    if (n > 0)
        LAUNCH(c, n, relu_bwd, y, dy, dx, n);
    return 0;
}

void repro_cuda_relu_forward(void *ctx, const float *x, float *y, long n)
{
    relu_forward(repro_cuda(ctx), x, y, n);
}

void repro_cuda_relu_backward(void *ctx, const float *y, const float *dy, float *dx, long n)
{
    relu_backward(repro_cuda(ctx), y, dy, dx, n);
}

/* ---- max pooling ------------------------------------------------------------ */

__global__ void pool_fwd(long n, int H, int W, int k, const float *x, float *y, int32_t *argmax)
{
    int OH = H / k, OW = W / k;
    REPRO_CUDA_FOR(i, n)
    {
        long plane = i / ((long)OH * OW);
        int ox = (int)(i % OW), oy = (int)((i / OW) % OH);
        const float *xp = x + plane * H * W;
        int first = oy * k * W + ox * k;
        float best = xp[first];
        int32_t at = first;
        for (int dy = 0; dy < k; dy++)
            for (int dx = 0; dx < k; dx++) {
                int off = (oy * k + dy) * W + ox * k + dx;
                float v = xp[off];
                /* the first of equal maxima stays; a NaN wins and stays */
                if (v > best || (v != v && best == best)) {
                    best = v;
                    at = off;
                }
            }
        y[i] = best;
        argmax[i] = at;
    }
}

__global__ void pool_bwd(long n, int H, int W, int k, const int32_t *argmax, const float *dy,
                         float *dx)
{
    int OH = H / k, OW = W / k;
    REPRO_CUDA_FOR(i, n)
    {
        long plane = i / ((long)OH * OW);
        dx[plane * H * W + argmax[i]] = dy[i]; /* disjoint windows: a store, not a sum */
    }
}

static int pool_forward(repro_cuda_ctx *c, int B, int C, int H, int W, int k, const float *x,
                        float *y, int32_t *argmax)
{
    long n = (long)B * C * (H / k) * (W / k);
    if (n > 0)
        LAUNCH(c, n, pool_fwd, n, H, W, k, x, y, argmax);
    return 0;
}

static int pool_backward(repro_cuda_ctx *c, int B, int C, int H, int W, int k,
                         const int32_t *argmax, const float *dy, float *dx)
{
    long n = (long)B * C * (H / k) * (W / k);
    size_t bytes = (size_t)B * C * H * W * sizeof(float);
    if (bytes)
        cudaCheck(c, cudaMemsetAsync(dx, 0, bytes, c->stream));
    if (n > 0)
        LAUNCH(c, n, pool_bwd, n, H, W, k, argmax, dy, dx);
    return 0;
}

void repro_cuda_maxpool2d_forward(void *ctx, int B, int C, int H, int W, int k, const float *x,
                                  float *y, int32_t *argmax)
{
    pool_forward(repro_cuda(ctx), B, C, H, W, k, x, y, argmax);
}

void repro_cuda_maxpool2d_backward(void *ctx, int B, int C, int H, int W, int k,
                                   const int32_t *argmax, const float *dy, float *dx)
{
    pool_backward(repro_cuda(ctx), B, C, H, W, k, argmax, dy, dx);
}

/* ---- dropout ------------------------------------------------------------------ */

__global__ void drop_fwd(const float *x, float *y, uint8_t *mask, long n, float p, float scale,
                         uint64_t key)
{
    REPRO_CUDA_FOR(i, n)
    {
        int keep = repro_hd_dropout_keep(key, (uint64_t)i, p);
        mask[i] = (uint8_t)keep;
        y[i] = repro_hd_dropout_apply(x[i], keep, scale);
    }
}

__global__ void drop_bwd(const float *dy, const uint8_t *mask, float *dx, long n, float scale)
{
    REPRO_CUDA_FOR(i, n) { dx[i] = repro_hd_dropout_apply(dy[i], mask[i], scale); }
}

static int dropout_forward(repro_cuda_ctx *c, const float *x, float *y, uint8_t *mask, long n,
                           float p, uint64_t key)
{
    if (n <= 0)
        return 0;
    if (p == 0.0f) { /* a copy, bit for bit (NaN payloads too), mask all 1 */
        if (y != x)
            cudaCheck(c, cudaMemcpyAsync(y, x, (size_t)n * sizeof *y, cudaMemcpyDeviceToDevice,
                                         c->stream));
        cudaCheck(c, cudaMemsetAsync(mask, 1, (size_t)n, c->stream));
        return 0;
    }
    LAUNCH(c, n, drop_fwd, x, y, mask, n, p, repro_hd_dropout_scale(p), key);
    return 0;
}

static int dropout_backward(repro_cuda_ctx *c, const float *dy, const uint8_t *mask, float *dx,
                            long n, float p)
{
    if (n <= 0)
        return 0;
    if (p == 0.0f) {
        if (dx != dy)
            cudaCheck(c, cudaMemcpyAsync(dx, dy, (size_t)n * sizeof *dx, cudaMemcpyDeviceToDevice,
                                         c->stream));
        return 0;
    }
    LAUNCH(c, n, drop_bwd, dy, mask, dx, n, repro_hd_dropout_scale(p));
    return 0;
}

void repro_cuda_dropout_forward(void *ctx, const float *x, float *y, uint8_t *mask, long n,
                                float p, uint64_t key)
{
    dropout_forward(repro_cuda(ctx), x, y, mask, n, p, key);
}

void repro_cuda_dropout_backward(void *ctx, const float *dy, const uint8_t *mask, float *dx,
                                 long n, float p)
{
    dropout_backward(repro_cuda(ctx), dy, mask, dx, n, p);
}

/* ---- softmax cross-entropy ------------------------------------------------------ */

__global__ void softmax_rows(const float *logits, const int32_t *labels, float *probs, int B,
                             int C, double *rowloss)
{
    REPRO_CUDA_FOR(b, B)
    {
        rowloss[b] = repro_hd_softmax_row(logits + b * C, probs + b * C, C, labels[b]);
    }
}

/* One thread: the row terms summed in ascending b, in double (the CPU's). */
__global__ void sum_rows(const double *rowloss, int B, double *total)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double t = 0.0;
        for (int b = 0; b < B; b++)
            t += rowloss[b];
        *total = t;
    }
}

static int softmax_forward(repro_cuda_ctx *c, const float *logits, const int32_t *labels,
                           float *probs, int B, int C, double *out)
{
    *out = 0.0;
    if (B <= 0)
        return 0;
    if (B > c->rowloss_cap) {
        if (c->d_rowloss) {
            cudaCheck(c, cudaStreamSynchronize(c->stream));
            cudaCheck(c, cudaFree(c->d_rowloss));
            c->d_rowloss = NULL;
            c->rowloss_cap = 0;
        }
        cudaCheck(c, cudaMalloc((void **)&c->d_rowloss, (size_t)B * sizeof(double)));
        c->rowloss_cap = B;
    }
    LAUNCH(c, B, softmax_rows, logits, labels, probs, B, C, c->d_rowloss);
    sum_rows<<<1, 1, 0, c->stream>>>(c->d_rowloss, B, c->d_scalar);
    launchCheck(c);
    /* the contract: the loss comes back to the host now */
    cudaCheck(c, cudaMemcpyAsync(c->h_scalar, c->d_scalar, sizeof(double), cudaMemcpyDeviceToHost,
                                 c->stream));
    cudaCheck(c, cudaStreamSynchronize(c->stream));
    *out = *c->h_scalar / B;
    return 0;
}

double repro_cuda_softmax_xent_forward(void *ctx, const float *logits, const int32_t *labels,
                                       float *probs, int B, int C)
{
    double loss;
    if (softmax_forward(repro_cuda(ctx), logits, labels, probs, B, C, &loss))
        return NAN; /* last_error says why; the step's synchronize fails */
    return loss;
}

__global__ void xent_grad(const float *probs, const int32_t *labels, float *dlogits, int B, int C)
{
    float fb = (float)B;
    REPRO_CUDA_FOR(i, (long)B * C)
    {
        long b = i / C;
        int j = (int)(i % C);
        dlogits[i] = repro_hd_xent_grad(probs[i], j == labels[b], fb);
    }
}

static int softmax_backward(repro_cuda_ctx *c, const float *probs, const int32_t *labels,
                            float *dlogits, int B, int C)
{
    if ((long)B * C > 0)
        LAUNCH(c, (long)B * C, xent_grad, probs, labels, dlogits, B, C);
    return 0;
}

void repro_cuda_softmax_xent_backward(void *ctx, const float *probs, const int32_t *labels,
                                      float *dlogits, int B, int C)
{
    softmax_backward(repro_cuda(ctx), probs, labels, dlogits, B, C);
}

/* ---- optimizers --------------------------------------------------------------- */

__global__ void sgd(float *p, const float *g, float *buf, long n, float lr, float momentum,
                    float wd, int first_step)
{
    REPRO_CUDA_FOR(i, n) { repro_hd_sgd(&p[i], g[i], &buf[i], lr, momentum, wd, first_step); }
}

__global__ void adamw(repro_adamw_consts k, float *p, const float *g, float *m, float *v, long n)
{
    REPRO_CUDA_FOR(i, n) { repro_hd_adamw(&k, g[i], &p[i], &m[i], &v[i]); }
}

static int sgd_step(repro_cuda_ctx *c, float *p, const float *g, float *buf, long n, float lr,
                    float momentum, float wd, int first_step)
{
    if (n > 0)
        LAUNCH(c, n, sgd, p, g, buf, n, lr, momentum, wd, first_step);
    return 0;
}

static int adamw_step(repro_cuda_ctx *c, float *p, const float *g, float *m, float *v, long n,
                      const repro_adamw_consts *k)
{
    if (n > 0)
        LAUNCH(c, n, adamw, *k, p, g, m, v, n);
    return 0;
}

void repro_cuda_sgd_step(void *ctx, float *p, const float *g, float *buf, long n, float lr,
                         float momentum, float wd, int first_step)
{
    sgd_step(repro_cuda(ctx), p, g, buf, n, lr, momentum, wd, first_step);
}

void repro_cuda_adamw_step(void *ctx, float *p, const float *g, float *m, float *v, long n,
                           double lr, double beta1, double beta2, float eps, double wd, double bc1,
                           double bc2)
{
    repro_adamw_consts k; /* the CPU's host code makes the constants for both */
    repro_adamw_constants(&k, lr, beta1, beta2, eps, wd, bc1, bc2);
    adamw_step(repro_cuda(ctx), p, g, m, v, n, &k);
}

/* ---- index_add -------------------------------------------------------------------- */

__global__ void index_add_ordered(float *out, int nrows, const int32_t *index, const float *src,
                                  long n, int width)
{
    REPRO_CUDA_FOR(t, (long)nrows * width)
    {
        long r = t / width, j = t % width;
        float acc = out[t];
        for (long i = 0; i < n; i++)
            if (index[i] == r)
                acc = acc + src[i * width + j];
        out[t] = acc;
    }
}

__global__ void index_add_atomic(float *out, int nrows, const int32_t *index, const float *src,
                                 long n, int width)
{
    REPRO_CUDA_FOR(t, n * width)
    {
        long i = t / width, j = t % width;
        int r = index[i];
        if (r >= 0 && r < nrows) /* the caller guarantees it; never write outside */
            atomicAdd(&out[(long)r * width + j], src[t]);
    }
}

static int index_add(repro_cuda_ctx *c, int variant, float *out, int nrows,
                     const int32_t *index, const float *src, long n, int width)
{
    if (n <= 0 || width <= 0 || nrows <= 0)
        return 0;
    if (variant == REPRO_VARIANT_ORDERED)
        LAUNCH(c, (long)nrows * width, index_add_ordered, out, nrows, index, src, n, width);
    else
        LAUNCH(c, n * width, index_add_atomic, out, nrows, index, src, n, width);
    return 0;
}

void repro_cuda_index_add(void *ctx, int variant, float *out, int nrows, const int32_t *index,
                          const float *src, long n, int width)
{
    index_add(repro_cuda(ctx), variant, out, nrows, index, src, n, width);
}

/* ---- mixed precision ------------------------------------------------------------------ */

__global__ void round_k(float *x, long n, int format)
{
    REPRO_CUDA_FOR(i, n) { x[i] = repro_hd_round_to(x[i], format); }
}

__global__ void div_k(float *x, long n, float d)
{
    REPRO_CUDA_FOR(i, n) { x[i] = x[i] / d; }
}

__global__ void mul_k(float *x, long n, float s)
{
    REPRO_CUDA_FOR(i, n) { x[i] = x[i] * s; }
}

__global__ void add_k(float *y, const float *x, long n)
{
    REPRO_CUDA_FOR(i, n) { y[i] = y[i] + x[i]; }
}

/* Every non-finite result stores 1: the same value from any number of
 * threads, so the flag is deterministic. */
__global__ void unscale_k(float *g, long n, float inv, int *found)
{
    REPRO_CUDA_FOR(i, n)
    {
        int f = 0;
        g[i] = repro_hd_unscale(g[i], inv, &f);
        if (f)
            *found = 1;
    }
}

static int round_to(repro_cuda_ctx *c, float *x, long n, int format)
{
    if (n > 0 && (format == REPRO_ROUND_BF16 || format == REPRO_ROUND_FP16))
        LAUNCH(c, n, round_k, x, n, format);
    return 0;
}

static int div_scalar(repro_cuda_ctx *c, float *x, long n, float d)
{
    if (n > 0)
        LAUNCH(c, n, div_k, x, n, d);
    return 0;
}

static int mul_scalar(repro_cuda_ctx *c, float *x, long n, float s)
{
    if (n > 0)
        LAUNCH(c, n, mul_k, x, n, s);
    return 0;
}

static int add(repro_cuda_ctx *c, float *y, const float *x, long n)
{
    if (n > 0)
        LAUNCH(c, n, add_k, y, x, n);
    return 0;
}

static int unscale_check(repro_cuda_ctx *c, float *g, long n, float inv, int *found)
{
    *found = 0;
    if (n <= 0)
        return 0;
    cudaCheck(c, cudaMemsetAsync(c->d_flag, 0, sizeof(int), c->stream));
    LAUNCH(c, n, unscale_k, g, n, inv, c->d_flag);
    /* the contract: found-inf comes back to the host now */
    cudaCheck(c, cudaMemcpyAsync(c->h_flag, c->d_flag, sizeof(int), cudaMemcpyDeviceToHost,
                                 c->stream));
    cudaCheck(c, cudaStreamSynchronize(c->stream));
    *found = *c->h_flag != 0;
    return 0;
}

void repro_cuda_round_to(void *ctx, float *x, long n, int format)
{
    round_to(repro_cuda(ctx), x, n, format);
}

void repro_cuda_div_scalar(void *ctx, float *x, long n, float d)
{
    div_scalar(repro_cuda(ctx), x, n, d);
}

void repro_cuda_mul_scalar(void *ctx, float *x, long n, float s)
{
    mul_scalar(repro_cuda(ctx), x, n, s);
}

void repro_cuda_add(void *ctx, float *y, const float *x, long n)
{
    add(repro_cuda(ctx), y, x, n);
}

int repro_cuda_unscale_check(void *ctx, float *g, long n, float inv)
{
    int found = 1; /* a failed check skips the step rather than apply garbage */
    if (unscale_check(repro_cuda(ctx), g, n, inv, &found))
        return 1;
    return found;
}
