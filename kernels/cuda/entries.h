/* The CUDA backend's entries, one per table slot (backend.h states each
 * contract), with C linkage: the .cu files define them, table.c puts them
 * into the table. Plain C, no CUDA header: table.c is compiled by cc. */
#ifndef REPRO_CUDA_ENTRIES_H
#define REPRO_CUDA_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

int repro_cuda_create(void **ctx, const repro_backend_options *o, char *why, size_t why_len);
void repro_cuda_destroy(void *ctx);
int repro_cuda_synchronize(void *ctx);
const char *repro_cuda_last_error(void *ctx);
void *repro_cuda_alloc(void *ctx, size_t bytes);
void repro_cuda_free(void *ctx, void *p);
void repro_cuda_copy_h2d(void *ctx, void *dst, const void *src, size_t bytes);
void repro_cuda_copy_d2h(void *ctx, void *dst, const void *src, size_t bytes);
void repro_cuda_copy_d2d(void *ctx, void *dst, const void *src, size_t bytes);
void repro_cuda_zero(void *ctx, void *p, size_t bytes);
size_t repro_cuda_linear_workspace_bytes(void *ctx, int B, int in, int out);
void repro_cuda_linear_forward(void *ctx, int variant, const float *x, const float *w,
                               const float *b, float *y, int B, int in, int out, void *workspace);
void repro_cuda_linear_backward_data(void *ctx, const float *dy, const float *w, float *dx,
                                     int B, int in, int out);
void repro_cuda_linear_backward_weight(void *ctx, int variant, const float *dy, const float *x,
                                       float *dw, int B, int in, int out, int accumulate);
void repro_cuda_linear_backward_bias(void *ctx, int variant, const float *dy, float *db, int B,
                                     int out, int accumulate);
int repro_cuda_conv_algo_eligible(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
int repro_cuda_conv_algo_deterministic(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
int repro_cuda_conv_algo_choose(void *ctx, const repro_conv_shape *s, int benchmark,
                                int deterministic_only, const float *x, const float *w,
                                const float *b, float *y, void *workspace,
                                size_t workspace_bytes, double *time_us);
size_t repro_cuda_conv_workspace_bytes(void *ctx, repro_conv_algo a, const repro_conv_shape *s);
void repro_cuda_conv2d_forward(void *ctx, repro_conv_algo a, const repro_conv_shape *s,
                               const float *x, const float *w, const float *b, float *y,
                               void *workspace);
void repro_cuda_conv2d_backward_data(void *ctx, const repro_conv_shape *s, const float *dy,
                                     const float *w, float *dx);
void repro_cuda_conv2d_backward_filter(void *ctx, int variant, const repro_conv_shape *s,
                                       const float *dy, const float *x, float *dw, float *db,
                                       int accumulate);
void repro_cuda_relu_forward(void *ctx, const float *x, float *y, long n);
void repro_cuda_relu_backward(void *ctx, const float *y, const float *dy, float *dx, long n);
void repro_cuda_maxpool2d_forward(void *ctx, int B, int C, int H, int W, int k, const float *x,
                                  float *y, int32_t *argmax);
void repro_cuda_maxpool2d_backward(void *ctx, int B, int C, int H, int W, int k,
                                   const int32_t *argmax, const float *dy, float *dx);
void repro_cuda_dropout_forward(void *ctx, const float *x, float *y, uint8_t *mask, long n,
                                float p, uint64_t key);
void repro_cuda_dropout_backward(void *ctx, const float *dy, const uint8_t *mask, float *dx,
                                 long n, float p);
double repro_cuda_softmax_xent_forward(void *ctx, const float *logits, const int32_t *labels,
                                       float *probs, int B, int C);
void repro_cuda_softmax_xent_backward(void *ctx, const float *probs, const int32_t *labels,
                                      float *dlogits, int B, int C);
void repro_cuda_sgd_step(void *ctx, float *p, const float *g, float *buf, long n, float lr,
                         float momentum, float wd, int first_step);
void repro_cuda_adamw_step(void *ctx, float *p, const float *g, float *m, float *v, long n,
                           double lr, double beta1, double beta2, float eps, double wd, double bc1,
                           double bc2);
void repro_cuda_index_add(void *ctx, int variant, float *out, int nrows, const int32_t *index,
                          const float *src, long n, int width);
void repro_cuda_round_to(void *ctx, float *x, long n, int format);
void repro_cuda_div_scalar(void *ctx, float *x, long n, float d);
void repro_cuda_mul_scalar(void *ctx, float *x, long n, float s);
void repro_cuda_add(void *ctx, float *y, const float *x, long n);
int repro_cuda_unscale_check(void *ctx, float *g, long n, float inv);
int repro_cuda_tensor_leaves(void *ctx, int fn, const void *p, size_t nbytes, uint8_t *leaves,
                             repro_buffer_stats *stats);
void repro_cuda_memory_stats(void *ctx, repro_memory_stats *out);
void repro_cuda_empty_cache(void *ctx);
int repro_cuda_describe_device(int device, repro_device_info *out, char *why, size_t why_len);

/* Not a table entry: every result cuDNN's heuristic gave for s, one line
 * each (algorithm, math type, determinism, workspace), admitted or dropped
 * and why (cudnn_admit.h), into buf (at most len bytes). Returns how many
 * were admitted. tests/gpu/check_cuda_ops prints it. */
int repro_cuda_cudnn_report(void *ctx, const repro_conv_shape *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
