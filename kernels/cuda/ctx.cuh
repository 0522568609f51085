/* The CUDA backend's context and the helpers every .cu file of kernels/cuda
 * shares: the error slot with cudaCheck / cudnnCheck / launchCheck, the
 * launch geometry, and the internals the files share (the table's entries
 * are entries.h).
 *
 * Error handling: every CUDA and cuDNN call is checked; a failure records
 * "file:line: call: message" in the context (the first failure sticks, as
 * a CUDA error on a stream does) and the function returns -1. Nothing here
 * prints or exits: the harness reads last_error() and decides. Every kernel
 * launch is followed by launchCheck (cudaGetLastError).
 *
 * Ordering: all work runs on ctx->stream, in call order (backend.h);
 * host-to-device copies run on ctx->copy_stream, fenced by events on both
 * sides, so they are ordered exactly as if they were on ctx->stream. */
#ifndef REPRO_CUDA_CTX_CUH
#define REPRO_CUDA_CTX_CUH

#include <cuda_runtime.h>
#include <cudnn.h>

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/cuda/cudnn_admit.h"

/* CUDNN_RESULTS: room for cuDNN's forward-algorithm results per shape, one
 * per (algorithm, math type) it tried (8 algorithms x 4 math types). */
enum { REPRO_CUDA_PINNED_SLOTS = 4, REPRO_CUDA_SHAPE_CACHE = 16, REPRO_CUDA_CUDNN_RESULTS = 32 };

/* One pinned host staging buffer of the copy ring. */
typedef struct {
    void *host;
    size_t bytes;
    cudaEvent_t done; /* recorded after the copy that read it */
    int used;
} repro_cuda_pinned;

/* cuDNN's forward-algorithm verdicts for one convolution shape: every
 * result cuDNN has (cudnnGetConvolutionForwardAlgorithmMaxCount of them, at
 * most REPRO_CUDA_CUDNN_RESULTS), each with the admission rule's view of
 * it (cudnn_admit.h). The workspace of each result is
 * cudnnGetConvolutionForwardWorkspaceSize's answer for that algorithm and
 * math type (the perf result's `memory` is the heuristic's estimate, not a
 * size cuDNN promises to stay within). */
typedef struct {
    repro_conv_shape s;
    int valid;
    int nperf, max_count; /* results returned; results cuDNN said it has */
    cudnnConvolutionFwdAlgoPerf_t perf[REPRO_CUDA_CUDNN_RESULTS];
    size_t ws[REPRO_CUDA_CUDNN_RESULTS];
    repro_cudnn_result res[REPRO_CUDA_CUDNN_RESULTS];
} repro_cuda_shape_info;

struct repro_cuda_alloc; /* the caching allocator (alloc.cu) */

typedef struct repro_cuda_ctx {
    int device;
    cudaStream_t stream;      /* compute: every op, in call order */
    cudaStream_t copy_stream; /* host -> device copies */
    cudaEvent_t fence;        /* compute -> copy ordering */
    cudnnHandle_t cudnn;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t convd;
    repro_cuda_pinned pinned[REPRO_CUDA_PINNED_SLOTS];
    int next_pinned;
    struct repro_cuda_alloc *alloc;
    /* small device and pinned scratch for values that go back to the host */
    double *d_rowloss;        /* softmax: one loss term per row */
    int rowloss_cap;
    double *d_scalar, *h_scalar; /* one double; h_scalar is pinned */
    int *d_flag, *h_flag;     /* unscale_check's found-inf */
    repro_cuda_shape_info shapes[REPRO_CUDA_SHAPE_CACHE];
    int next_shape;
    char err[512];
} repro_cuda_ctx;

static inline repro_cuda_ctx *repro_cuda(void *ctx)
{
    return (repro_cuda_ctx *)ctx;
}

/* Records the failure (the first one sticks) and returns -1. */
int repro_cuda_fail(repro_cuda_ctx *c, const char *file, int line, const char *what,
                    const char *msg);

#define cudaCheck(c, call)                                                              \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            return repro_cuda_fail((c), __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)

#define cudnnCheck(c, call)                                                             \
    do {                                                                                \
        cudnnStatus_t s_ = (call);                                                      \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                 \
            return repro_cuda_fail((c), __FILE__, __LINE__, #call, cudnnGetErrorString(s_)); \
    } while (0)

/* After every <<<...>>>: a bad configuration or an earlier asynchronous
 * fault surfaces here. */
#define launchCheck(c) cudaCheck((c), cudaGetLastError())

enum { REPRO_CUDA_THREADS = 256 };

/* Blocks of REPRO_CUDA_THREADS covering n items (at least 1). */
static inline unsigned repro_cuda_blocks(long n)
{
    long b = (n + REPRO_CUDA_THREADS - 1) / REPRO_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b);
}

/* A grid-stride loop over [0, n): the same elements whatever the grid. */
#define REPRO_CUDA_FOR(i, n)                                                       \
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (long)gridDim.x * blockDim.x)

/* The table's entries (entries.h), and the files' shared internals. */
#include "entries.h"

#ifdef __cplusplus
extern "C" {
#endif
int repro_cuda_alloc_new(repro_cuda_ctx *c);      /* alloc.cu */
void repro_cuda_alloc_release(repro_cuda_ctx *c);
/* conv.cu: our own forward kernels, for any id (ineligible ones: direct) */
int repro_cuda_conv_own_forward(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                                const float *x, const float *w, const float *b, float *y,
                                void *workspace);
/* conv_cudnn.cu: cuDNN's verdict on (a, s) and its forward */
int repro_cuda_cudnn_eligible(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                              int *deterministic, size_t *workspace);
int repro_cuda_cudnn_forward(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                             const float *x, const float *w, const float *b, float *y,
                             void *workspace);
#ifdef __cplusplus
}
#endif

#endif
