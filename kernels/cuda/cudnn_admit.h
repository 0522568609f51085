/* Which of cuDNN's forward-algorithm results the CUDA backend admits, and
 * why each other one is dropped: plain C with no cuDNN header, so that the
 * rule is tested on any machine (tests/check_gpu_compare.c) and
 * conv_cudnn.cu applies it to cuDNN's perf results.
 *
 * cuDNN returns one result per (algorithm, math type) it considered, up to
 * cudnnGetConvolutionForwardAlgorithmMaxCount of them: the same algorithm
 * may come once with tensor-core math (TF32) and once with FMA math. Only
 * FP32 FMA math is admitted (float's precision, never TF32), so the query
 * must ask for every result: with a shorter list, TF32 entries can take
 * every slot and leave nothing admissible. */
#ifndef REPRO_CUDA_CUDNN_ADMIT_H
#define REPRO_CUDA_CUDNN_ADMIT_H

#include <stddef.h>

/* One result, in the terms the rule needs. */
typedef struct {
    int algo;       /* cudnnConvolutionFwdAlgo_t */
    int status_ok;  /* status == CUDNN_STATUS_SUCCESS */
    int fma_math;   /* mathType == CUDNN_FMA_MATH */
    int ws_known;   /* cudnnGetConvolutionForwardWorkspaceSize answered */
} repro_cudnn_result;

/* NULL when results[i] is admitted; else why it is dropped. The first
 * admitted result of an algorithm is its verdict (results are best first);
 * later ones of the same algorithm are dropped as repeats. */
static inline const char *repro_cudnn_drop_reason(const repro_cudnn_result *results, int i)
{
    const repro_cudnn_result *r = &results[i];
    if (!r->status_ok)
        return "not supported for this shape (status)";
    if (!r->fma_math)
        return "not FMA math (tensor-core math such as TF32 rounds below float's precision)";
    if (!r->ws_known)
        return "cuDNN gave no workspace size for it";
    for (int j = 0; j < i; j++)
        if (results[j].algo == r->algo && !repro_cudnn_drop_reason(results, j))
            return "a repeat of an admitted result of the same algorithm";
    return NULL;
}

/* How many of the n results are admitted. */
static inline int repro_cudnn_admitted(const repro_cudnn_result *results, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += repro_cudnn_drop_reason(results, i) == NULL;
    return k;
}

#endif
