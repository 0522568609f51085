/* The CUDA backend's table (backend.h): the entries of kernels/cuda's .cu
 * files (entries.h declares them), registered as "cuda" by kernels/backend.c
 * when the build defines REPRO_HAVE_CUDA. A C file so the table can use
 * designated initializers; the .cu files export their entries with C
 * linkage. Compiled only when the Makefile finds nvcc (and cuDNN). */
#include "kernels/backend.h"

#include "entries.h"

const repro_backend repro_backend_cuda = {
    .name = "cuda",
    .host_memory = 0,
    .create = repro_cuda_create,
    .destroy = repro_cuda_destroy,
    .synchronize = repro_cuda_synchronize,
    .last_error = repro_cuda_last_error,
    .alloc = repro_cuda_alloc,
    .free = repro_cuda_free,
    .copy_h2d = repro_cuda_copy_h2d,
    .copy_d2h = repro_cuda_copy_d2h,
    .copy_d2d = repro_cuda_copy_d2d,
    .zero = repro_cuda_zero,
    .linear_workspace_bytes = repro_cuda_linear_workspace_bytes,
    .linear_forward = repro_cuda_linear_forward,
    .linear_backward_data = repro_cuda_linear_backward_data,
    .linear_backward_weight = repro_cuda_linear_backward_weight,
    .linear_backward_bias = repro_cuda_linear_backward_bias,
    .conv_algo_eligible = repro_cuda_conv_algo_eligible,
    .conv_algo_deterministic = repro_cuda_conv_algo_deterministic,
    .conv_algo_choose = repro_cuda_conv_algo_choose,
    .conv_workspace_bytes = repro_cuda_conv_workspace_bytes,
    .conv2d_forward = repro_cuda_conv2d_forward,
    .conv2d_backward_data = repro_cuda_conv2d_backward_data,
    .conv2d_backward_filter = repro_cuda_conv2d_backward_filter,
    .relu_forward = repro_cuda_relu_forward,
    .relu_backward = repro_cuda_relu_backward,
    .maxpool2d_forward = repro_cuda_maxpool2d_forward,
    .maxpool2d_backward = repro_cuda_maxpool2d_backward,
    .dropout_forward = repro_cuda_dropout_forward,
    .dropout_backward = repro_cuda_dropout_backward,
    .softmax_xent_forward = repro_cuda_softmax_xent_forward,
    .softmax_xent_backward = repro_cuda_softmax_xent_backward,
    .sgd_step = repro_cuda_sgd_step,
    .adamw_step = repro_cuda_adamw_step,
    .index_add = repro_cuda_index_add,
    .round_to = repro_cuda_round_to,
    .div_scalar = repro_cuda_div_scalar,
    .mul_scalar = repro_cuda_mul_scalar,
    .add = repro_cuda_add,
    .unscale_check = repro_cuda_unscale_check,
    .tensor_leaves = repro_cuda_tensor_leaves,
    .memory_stats = repro_cuda_memory_stats,
    .empty_cache = repro_cuda_empty_cache,
    .describe_device = repro_cuda_describe_device,
};
