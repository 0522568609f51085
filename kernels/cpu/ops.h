/* The CPU kernels: every op of the workload, float32, NCHW, row-major.
 *
 * Determinism by construction (docs/DESIGN.md, determinism contract):
 *  - each output element is produced by exactly one chunk (pool.h), with its
 *    reduction written out in a fixed order (stated per kernel below), so the
 *    thread count never changes a bit;
 *  - products are rounded before they are added (built with
 *    -ffp-contract=off): no FMA unless a kernel says so;
 *  - exp/log are our own (mathx.c), not libm's, whose last bits differ
 *    between libc versions;
 *  - vectorization is only ever across independent output elements, never
 *    across the terms of one reduction, so SSE2 vs AVX2 code paths agree.
 * Each kernel has a test against finite differences or a plain-loop
 * reference in tests/check_kernels.c. */
#ifndef REPRO_OPS_H
#define REPRO_OPS_H

#include <stdint.h>

#include "kernels/backend.h"
#include "pool.h"

/* ---- math (mathx.c) ---------------------------------------------------- */
/* exp and log in double, by argument reduction and fixed polynomials using
 * only + - * / and exact scaling: the same bits on every IEEE-754 machine.
 * Relative error below 1e-14 on the whole finite range. */
double repro_exp(double x);
double repro_log(double x);

/* ---- GEMM, the workhorse of linear and conv (gemm.c) ------------------- */
/* C[m*ldc + n] = init + sum over k = 0, 1, ..., K-1 (in that order) of
 *                A[m*a_rs + k*a_cs] * B[k*ldb + n]
 * init is C's current value when `accumulate`, else bias[n] when bias is not
 * NULL, else 0. A may be strided (so A^T costs nothing); B rows must be
 * contiguous. Chunks are fixed blocks of C. The vector path (kernels/isa.h)
 * changes only the speed. */
void repro_gemm(repro_pool *pool, int M, int N, int K,
                const float *A, long a_rs, long a_cs,
                const float *B, long ldb,
                float *C, long ldc, const float *bias, int accumulate);
/* The same with B(k, n) = B[k*b_rs + n*b_cs] (b_rs = 1: B transposed). */
/* The shard rule's GEMM: K is cut into shards of S (S divides K); each
 * element's shard partials start from +0 and add their products in
 * ascending k, the partials are added in shard order (total = P0, then
 * total + P1, ...), and C = total, or C + total with accumulate. Bitwise
 * what computing each shard's GEMM into its own buffer and adding the
 * buffers in order gives, without the buffers. */
void repro_gemm_sharded(repro_pool *pool, int M, int N, int K, int S, const float *A, long a_rs,
                        long a_cs, const float *B, long ldb, float *C, long ldc, int accumulate);
void repro_gemm_ex(repro_pool *pool, int M, int N, int K, const float *A, long a_rs, long a_cs,
                   const float *B, long b_rs, long b_cs, float *C, long ldc, const float *bias,
                   int accumulate);
/* repro_gemm on the calling thread alone (for use inside a pool chunk). */
void repro_gemm_serial(int M, int N, int K, const float *A, long a_rs, long a_cs,
                       const float *B, long ldb, float *C, long ldc, const float *bias,
                       int accumulate);

/* ---- linear (linear.c): x [B][in], w [out][in] (PyTorch layout), b [out],
 *      y [B][out] ---------------------------------------------------------- */
/* y = x w^T + b; each y[b][o] sums b[o] + x[b][0]*w[o][0] + x[b][1]*w[o][1] ...
 * in ascending input index. wt_scratch (in*out floats) is no longer used:
 * the GEMM packs w's rows directly. */
void repro_linear_forward(repro_pool *pool, const float *x, const float *w, const float *b,
                          float *y, int B, int in, int out, float *wt_scratch);
/* dx = dy w; dx[b][i] sums over o ascending. */
void repro_linear_backward_data(repro_pool *pool, const float *dy, const float *w, float *dx,
                                int B, int in, int out);
/* dw (+)= dy^T x; dw[o][i] sums over the batch in ascending sample order. */
/* dw (+)= the shard rule's sum: shards of S samples (S divides B), each
 * summed over its samples ascending from +0, the shard sums added in
 * order (repro_gemm_sharded). */
void repro_linear_backward_weight_sharded(repro_pool *pool, const float *dy, const float *x,
                                          float *dw, int B, int in, int out, int S,
                                          int accumulate);
void repro_linear_backward_weight(repro_pool *pool, const float *dy, const float *x, float *dw,
                                  int B, int in, int out, int accumulate);
/* db (+)= sum over the batch, ascending. */
void repro_linear_backward_bias(repro_pool *pool, const float *dy, float *db, int B, int out,
                                int accumulate);

/* ---- conv2d, stride 1, zero padding (conv2d.c; filter and bias gradients: conv_filter.c) */
/* repro_conv_shape and repro_conv_oh/ow are every backend's: backend.h. */

/* y[b][k][oy][ox] = bias[k] + sum over (c, ry, rx) in lexicographic order of
 * w[k][c][ry][rx] * x[b][c][oy+ry-pad][ox+rx-pad]. b may be NULL. */
void repro_conv2d_forward(repro_pool *pool, const repro_conv_shape *s, const float *x,
                          const float *w, const float *b, float *y);
/* dx[b][c][iy][ix] = sum over (k, ry, rx) in lexicographic order of
 * w[k][c][ry][rx] * dy[b][k][iy-ry+pad][ix-rx+pad] (terms out of range skipped). */
void repro_conv2d_backward_data(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                const float *w, float *dx);
/* dw[k][c][ry][rx] (+)= sum over (b, oy, ox) of dy[b][k][oy][ox] * x[...]:
 * summed per output column ox in ascending (b, oy), then the column sums
 * added in ascending ox. db (may be NULL) (+)= the same order over dy. */
void repro_conv2d_backward_filter(repro_pool *pool, const repro_conv_shape *s, const float *dy,
                                  const float *x, float *dw, float *db, int accumulate);
/* The shard rule's filter and bias gradients in one pass: the batch is nq
 * shards of s->B samples (dy and x hold all of them, shard after shard);
 * shard q's partial is repro_conv2d_backward_filter's sum over its samples
 * from +0, and dw = P_0, then dw + P_1, ... in shard order (with
 * accumulate: the old dw + that sum); db likewise. Bitwise what per-shard
 * buffers and adds give. 0, or -1 (nothing written) where the shape or
 * the scratch memory does not allow it: the caller takes that way. */
int repro_conv2d_backward_filter_sharded(repro_pool *pool, const repro_conv_shape *s, int nq,
                                         const float *dy, const float *x, float *dw, float *db,
                                         int accumulate);

/* ---- ReLU (relu.c) ----------------------------------------------------- */
void repro_relu_forward(repro_pool *pool, const float *x, float *y, long n);
/* dx = dy where y > 0, else 0 (y is the forward output). */
void repro_relu_backward(repro_pool *pool, const float *y, const float *dy, float *dx, long n);

/* ---- max pooling, window k x k, stride k, floor (maxpool.c) ------------ */
/* y is B x C x (H/k) x (W/k). argmax[i] is the input offset (within the
 * b,c plane) of the first maximum in row-major window order; a NaN wins. */
void repro_maxpool2d_forward(repro_pool *pool, int B, int C, int H, int W, int k,
                             const float *x, float *y, int32_t *argmax);
/* dx is fully overwritten: zero except at each window's argmax. Windows do
 * not overlap (stride = k), so no two terms meet and no order is involved. */
void repro_maxpool2d_backward(repro_pool *pool, int B, int C, int H, int W, int k,
                              const int32_t *argmax, const float *dy, float *dx);
/* A ReLU and the pool after it in one pass: y = relu(the window's maximum
 * of x), which is the window's maximum of relu(x) (ReLU is monotone, keeps
 * NaN, maps -0 to +0), without relu(x) stored. argmax is x's (the first
 * maximum, a NaN first of all); where that maximum is <= 0 it may name
 * another element than relu(x)'s would, where the gradient is 0 anyway. */
void repro_maxpool2d_relu_forward(repro_pool *pool, int B, int C, int H, int W, int k,
                                  const float *x, float *y, int32_t *argmax);
/* The pool's backward and then the backward of the ReLU before it in one
 * pass (pool_y: the pool's output, B x C x H/k x W/k, which is the ReLU's
 * output at each argmax): dx = 0 except, at each argmax, relu_grad(pool_y,
 * dy) (kernels/shared/pointwise.h). Bitwise repro_maxpool2d_backward
 * followed by repro_relu_backward, after either forward. */
void repro_maxpool2d_relu_backward(repro_pool *pool, int B, int C, int H, int W, int k,
                                   const int32_t *argmax, const float *dy, const float *pool_y,
                                   float *dx);

/* ---- dropout (dropout.c) ----------------------------------------------- */
/* Element i is kept iff repro_u32_to_unit(philox_at(key, i, 0).v[0]) >= p;
 * kept elements are scaled by 1/(1-p) (computed in float). The mask depends
 * only on (key, i), never on tiling or threads. p = 0 copies x. */
void repro_dropout_forward(repro_pool *pool, const float *x, float *y, uint8_t *mask, long n,
                           float p, uint64_t key);
void repro_dropout_backward(repro_pool *pool, const float *dy, const uint8_t *mask, float *dx,
                            long n, float p);

/* ---- softmax cross-entropy (softmax_xent.c) ----------------------------- */
/* probs[b][j] = softmax(logits[b]) (computed in double, max-subtracted);
 * returns the mean over the batch of -log p[label], summed in ascending b
 * in double. Labels must be in [0, C). */
double repro_softmax_xent_forward(const float *logits, const int32_t *labels, float *probs,
                                  int B, int C);
/* dlogits = (probs - onehot(label)) / B */
void repro_softmax_xent_backward(const float *probs, const int32_t *labels, float *dlogits,
                                 int B, int C);

/* ---- optimizers (sgd.c, adamw.c): PyTorch's update rules, elementwise ---- */
/* g' = g + wd*p; buf = first_step ? g' : momentum*buf + g'; p -= lr*buf.
 * (torch.optim.SGD, dampening 0, no Nesterov.) */
void repro_sgd_step(repro_pool *pool, float *p, const float *g, float *buf, long n,
                    float lr, float momentum, float wd, int first_step);
/* torch.optim.AdamW, single-tensor path, step t >= 1:
 *   p *= 1 - lr*wd
 *   m += (g - m) * (1 - beta1)            (lerp)
 *   v = v*beta2 + (1 - beta2)*g*g
 *   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
 * bc1 = 1 - beta1^t and bc2 = 1 - beta2^t are passed in by the caller, who
 * keeps beta^t by repeated multiplication (libm pow differs between libcs). */
void repro_adamw_step(repro_pool *pool, float *p, const float *g, float *m, float *v, long n,
                      double lr, double beta1, double beta2, float eps, double wd,
                      double bc1, double bc2);

#endif
