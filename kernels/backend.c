/* The backend registry (repro_backend_get) and the names every backend
 * shares (convolution algorithms). A new backend adds one line to `all`:
 * the CUDA one under REPRO_HAVE_CUDA, which the Makefile defines when it
 * finds nvcc and compiles kernels/cuda/. */
#include "backend.h"

#include <string.h>

#ifdef REPRO_HAVE_CUDA
extern const repro_backend repro_backend_cuda;
#endif

static const repro_backend *const all[] = {
    &repro_backend_cpu,
#ifdef REPRO_HAVE_CUDA
    &repro_backend_cuda,
#endif
    NULL,
};

const repro_backend *const *repro_backend_list(void)
{
    return all;
}

const repro_backend *repro_backend_get(const char *name)
{
    for (int i = 0; name && all[i]; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

int repro_backend_have_cuda(void)
{
#ifdef REPRO_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

const char *repro_backend_missing(const char *name)
{
    if (repro_backend_get(name))
        return NULL;
    if (name && !strcmp(name, "cuda"))
        return "this build has no CUDA backend (built without nvcc: install the CUDA toolkit "
               "and cuDNN, then rebuild)";
    return "no such backend in this build (backends: cpu, cuda)";
}

const char *repro_backend_cuda_status(void)
{
#ifdef REPRO_HAVE_CUDA
    /* Say so until a GPU run of tests/gpu/run.sh has passed on this code. */
    return "compiled (sm_80, sm_90 + PTX; --fmad=false); NOT verified on hardware (no GPU was "
           "available when it was written: run tests/gpu/run.sh)";
#else
    return "not compiled (no nvcc when this was built)";
#endif
}

static const char *const algo_names[REPRO_CONV_ALGO_LIMIT] = {
    [REPRO_CONV_DIRECT] = "direct",
    [REPRO_CONV_IM2COL] = "im2col",
    [REPRO_CONV_WINOGRAD] = "winograd",
    [REPRO_CONV_CUDNN_IMPLICIT_GEMM] = "cudnn_implicit_gemm",
    [REPRO_CONV_CUDNN_IMPLICIT_PRECOMP_GEMM] = "cudnn_implicit_precomp_gemm",
    [REPRO_CONV_CUDNN_GEMM] = "cudnn_gemm",
    [REPRO_CONV_CUDNN_DIRECT] = "cudnn_direct",
    [REPRO_CONV_CUDNN_FFT] = "cudnn_fft",
    [REPRO_CONV_CUDNN_FFT_TILING] = "cudnn_fft_tiling",
    [REPRO_CONV_CUDNN_WINOGRAD] = "cudnn_winograd",
    [REPRO_CONV_CUDNN_WINOGRAD_NONFUSED] = "cudnn_winograd_nonfused",
};

const char *repro_conv_algo_name(repro_conv_algo a)
{
    return (int)a >= 0 && a < REPRO_CONV_ALGO_LIMIT && algo_names[a] ? algo_names[a] : "?";
}

int repro_conv_algo_from_name(const char *name)
{
    for (int a = 0; name && a < REPRO_CONV_ALGO_LIMIT; a++)
        if (algo_names[a] && strcmp(name, algo_names[a]) == 0)
            return a;
    return -1;
}
