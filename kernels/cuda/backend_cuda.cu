/* The CUDA backend's context (streams, cuDNN handle and descriptors, the
 * pinned staging ring, the caching allocator), its copies, and the device
 * description for the environment fingerprint.
 *
 * The data path: host-to-device copies go through pinned (cudaHostAlloc)
 * staging buffers and cudaMemcpyAsync on a copy stream, fenced by events so
 * they keep the call order backend.h promises (the copy waits for the
 * compute work issued before it; the compute stream waits for the copy);
 * the host buffer is read before the call returns, as the contract says.
 * Device-to-host copies are the contract's blocking points, with the
 * softmax loss and the unscale check; nothing else in a step waits. */
#include "ctx.cuh"

#include <dlfcn.h>
#include <library_types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int repro_cuda_fail(repro_cuda_ctx *c, const char *file, int line, const char *what,
                    const char *msg)
{
    if (c && !c->err[0]) {
        const char *base = strrchr(file, '/');
        snprintf(c->err, sizeof c->err, "%s:%d: %s: %s", base ? base + 1 : file, line, what, msg);
    }
    return -1;
}

/* Why there is no usable device, in the words `repro` prints (exit 3). */
static int no_device(cudaError_t e, char *why, size_t len)
{
    if (e == cudaErrorNoDevice)
        snprintf(why, len, "no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
    else if (e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
             e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice)
        snprintf(why, len, "no usable CUDA driver (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(e));
    else
        snprintf(why, len, "no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
    return -1;
}

/* The parts of create that can fail after the device is known. */
static int setup(repro_cuda_ctx *c)
{
    cudaCheck(c, cudaSetDevice(c->device));
    cudaCheck(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    cudaCheck(c, cudaStreamCreateWithFlags(&c->copy_stream, cudaStreamNonBlocking));
    cudaCheck(c, cudaEventCreateWithFlags(&c->fence, cudaEventDisableTiming));
    for (int i = 0; i < REPRO_CUDA_PINNED_SLOTS; i++)
        cudaCheck(c, cudaEventCreateWithFlags(&c->pinned[i].done, cudaEventDisableTiming));
    cudnnCheck(c, cudnnCreate(&c->cudnn));
    cudnnCheck(c, cudnnSetStream(c->cudnn, c->stream));
    cudnnCheck(c, cudnnCreateTensorDescriptor(&c->xd));
    cudnnCheck(c, cudnnCreateTensorDescriptor(&c->yd));
    cudnnCheck(c, cudnnCreateFilterDescriptor(&c->wd));
    cudnnCheck(c, cudnnCreateConvolutionDescriptor(&c->convd));
    cudaCheck(c, cudaMalloc((void **)&c->d_scalar, sizeof(double)));
    cudaCheck(c, cudaMalloc((void **)&c->d_flag, sizeof(int)));
    cudaCheck(c, cudaHostAlloc((void **)&c->h_scalar, sizeof(double), cudaHostAllocDefault));
    cudaCheck(c, cudaHostAlloc((void **)&c->h_flag, sizeof(int), cudaHostAllocDefault));
    if (repro_cuda_alloc_new(c))
        return repro_cuda_fail(c, __FILE__, __LINE__, "repro_cuda_alloc_new", "out of memory");
    return 0;
}

int repro_cuda_create(void **ctx, const repro_backend_options *o, char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return no_device(e, why, why_len);
    int dev = o ? o->device : 0;
    if (n == 0)
        return no_device(cudaErrorNoDevice, why, why_len);
    if (dev < 0 || dev >= n) {
        snprintf(why, why_len, "CUDA device %d does not exist (%d device%s)", dev, n,
                 n == 1 ? "" : "s");
        return -1;
    }
    repro_cuda_ctx *c = (repro_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    c->device = dev;
    if (setup(c)) {
        snprintf(why, why_len, "%s", c->err);
        repro_cuda_destroy(c);
        return -1;
    }
    *ctx = c;
    return 0;
}

void repro_cuda_destroy(void *ctx)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->copy_stream)
        cudaStreamSynchronize(c->copy_stream);
    repro_cuda_alloc_release(c);
    for (int i = 0; i < REPRO_CUDA_PINNED_SLOTS; i++) {
        if (c->pinned[i].host)
            cudaFreeHost(c->pinned[i].host);
        if (c->pinned[i].done)
            cudaEventDestroy(c->pinned[i].done);
    }
    cudaFree(c->d_rowloss);
    cudaFree(c->d_scalar);
    cudaFree(c->d_flag);
    cudaFreeHost(c->h_scalar);
    cudaFreeHost(c->h_flag);
    if (c->convd)
        cudnnDestroyConvolutionDescriptor(c->convd);
    if (c->wd)
        cudnnDestroyFilterDescriptor(c->wd);
    if (c->xd)
        cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd)
        cudnnDestroyTensorDescriptor(c->yd);
    if (c->cudnn)
        cudnnDestroy(c->cudnn);
    if (c->fence)
        cudaEventDestroy(c->fence);
    if (c->copy_stream)
        cudaStreamDestroy(c->copy_stream);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

int repro_cuda_synchronize(void *ctx)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    cudaCheck(c, cudaStreamSynchronize(c->copy_stream));
    cudaCheck(c, cudaStreamSynchronize(c->stream));
    return c->err[0] ? -1 : 0;
}

const char *repro_cuda_last_error(void *ctx)
{
    return ctx ? repro_cuda(ctx)->err : "";
}

/* ---- copies -------------------------------------------------------------- */

/* A pinned slot of at least `bytes`, whose previous copy has finished. */
static int pinned_slot(repro_cuda_ctx *c, size_t bytes, repro_cuda_pinned **out)
{
    repro_cuda_pinned *s = &c->pinned[c->next_pinned];
    c->next_pinned = (c->next_pinned + 1) % REPRO_CUDA_PINNED_SLOTS;
    if (s->used)
        cudaCheck(c, cudaEventSynchronize(s->done)); /* a copy 4 transfers ago */
    if (s->bytes < bytes) {
        if (s->host)
            cudaCheck(c, cudaFreeHost(s->host));
        s->host = NULL;
        s->bytes = 0;
        size_t grow = bytes < 65536 ? 65536 : bytes;
        cudaCheck(c, cudaHostAlloc(&s->host, grow, cudaHostAllocDefault));
        s->bytes = grow;
    }
    *out = s;
    return 0;
}

static int h2d(repro_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    repro_cuda_pinned *s = NULL;
    if (pinned_slot(c, bytes, &s))
        return -1;
    memcpy(s->host, src, bytes); /* the caller may reuse src at once */
    /* the copy must not overtake the compute work issued before it (it may
     * overwrite a buffer that work still reads), nor the work after it */
    cudaCheck(c, cudaEventRecord(c->fence, c->stream));
    cudaCheck(c, cudaStreamWaitEvent(c->copy_stream, c->fence, 0));
    cudaCheck(c, cudaMemcpyAsync(dst, s->host, bytes, cudaMemcpyHostToDevice, c->copy_stream));
    cudaCheck(c, cudaEventRecord(s->done, c->copy_stream));
    s->used = 1;
    cudaCheck(c, cudaStreamWaitEvent(c->stream, s->done, 0));
    return 0;
}

void repro_cuda_copy_h2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        h2d(repro_cuda(ctx), dst, src, bytes);
}

static int d2h(repro_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    cudaCheck(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(c, cudaStreamSynchronize(c->stream)); /* the contract: bytes are home */
    return 0;
}

void repro_cuda_copy_d2h(void *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        d2h(repro_cuda(ctx), dst, src, bytes);
}

static int d2d(repro_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    cudaCheck(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
    return 0;
}

void repro_cuda_copy_d2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        d2d(repro_cuda(ctx), dst, src, bytes);
}

static int zero(repro_cuda_ctx *c, void *p, size_t bytes)
{
    cudaCheck(c, cudaMemsetAsync(p, 0, bytes, c->stream));
    return 0;
}

void repro_cuda_zero(void *ctx, void *p, size_t bytes)
{
    if (bytes)
        zero(repro_cuda(ctx), p, bytes);
}

/* ---- the device, for `repro env` -------------------------------------------- */

static void version_str(char *buf, size_t len, int v)
{
    /* CUDA encodes 1000 * major + 10 * minor */
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* cuBLAS's version for the fingerprint. We compute nothing with cuBLAS, and
 * linking it would load ~0.3 s of library into every repro process, so it
 * is opened here, only when asked (cublasGetProperty; 0 = success). */
static void cublas_version(char *buf, size_t len, int cuda_major)
{
    char name[32];
    snprintf(name, sizeof name, "libcublas.so.%d", cuda_major);
    void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        h = dlopen("libcublas.so", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        snprintf(buf, len, "not found");
        return;
    }
    typedef int (*get_property)(libraryPropertyType, int *);
    get_property get = (get_property)dlsym(h, "cublasGetProperty");
    int maj = 0, min = 0, pat = 0;
    if (get && !get(MAJOR_VERSION, &maj) && !get(MINOR_VERSION, &min) && !get(PATCH_LEVEL, &pat))
        snprintf(buf, len, "%d.%d.%d", maj, min, pat);
    else
        snprintf(buf, len, "unknown");
    dlclose(h);
}

int repro_cuda_describe_device(int device, repro_device_info *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return no_device(e, why, why_len);
    if (n == 0)
        return no_device(cudaErrorNoDevice, why, why_len);
    if (device < 0 || device >= n) {
        snprintf(why, why_len, "CUDA device %d does not exist (%d devices)", device, n);
        return -1;
    }
    cudaDeviceProp p;
    if ((e = cudaGetDeviceProperties(&p, device)) != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
        return -1;
    }
    size_t len = strnlen(p.name, sizeof p.name);
    if (len >= sizeof out->name)
        len = sizeof out->name - 1;
    memcpy(out->name, p.name, len);
    out->name[len] = '\0';
    out->sm_count = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->total_memory = p.totalGlobalMem;
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess)
        version_str(out->driver, sizeof out->driver, v);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        version_str(out->runtime, sizeof out->runtime, v);
    size_t dnn = cudnnGetVersion(); /* 9.x: major * 10000 + minor * 100 + patch */
    snprintf(out->cudnn, sizeof out->cudnn, "%zu.%zu.%zu", dnn / 10000, (dnn % 10000) / 100,
             dnn % 100);
    cublas_version(out->cublas, sizeof out->cublas, v / 1000);
    return 0;
}
