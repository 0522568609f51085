/* The CUDA backend's caching allocator (PyTorch's idea, simply): a freed
 * block goes onto a free list by its rounded size instead of back to
 * cudaFree, and the next alloc of that size takes it, so a training step
 * allocates nothing from the driver after the first one. Sizes round up to
 * 512 bytes (up to 1 MiB) or to 2 MiB (above), which is also what makes
 * equal requests land in equal buckets. All work runs on one stream, so a
 * block freed and handed out again is reused in stream order: no event is
 * needed. empty_cache returns the free lists to the driver
 * (torch.cuda.empty_cache); memory_stats reports in-use, peak, cached and
 * pinned bytes. An alloc that the driver refuses empties the cache and
 * tries once more before it returns NULL. */
#include "ctx.cuh"

#include <stdlib.h>
#include <string.h>

typedef struct {
    void *p;
    size_t size;
} block;

typedef struct {
    block *v;
    int n, cap;
} block_list;

struct repro_cuda_alloc {
    block_list live, freed;
    size_t in_use, peak, cached;
};

static int push(block_list *l, block b)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        block *v = (block *)realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = b;
    return 0;
}

static block take(block_list *l, int i)
{
    block b = l->v[i];
    l->v[i] = l->v[--l->n];
    return b;
}

static size_t rounded(size_t bytes)
{
    const size_t small = 512, large = (size_t)2 << 20;
    if (bytes <= ((size_t)1 << 20))
        return (bytes + small - 1) / small * small;
    return (bytes + large - 1) / large * large;
}

int repro_cuda_alloc_new(repro_cuda_ctx *c)
{
    c->alloc = (struct repro_cuda_alloc *)calloc(1, sizeof *c->alloc);
    return c->alloc ? 0 : -1;
}

static void free_cached(repro_cuda_ctx *c)
{
    struct repro_cuda_alloc *a = c->alloc;
    cudaStreamSynchronize(c->stream); /* nothing queued may still use them */
    for (int i = 0; i < a->freed.n; i++)
        cudaFree(a->freed.v[i].p);
    a->freed.n = 0;
    a->cached = 0;
}

void repro_cuda_alloc_release(repro_cuda_ctx *c)
{
    struct repro_cuda_alloc *a = c->alloc;
    if (!a)
        return;
    free_cached(c);
    for (int i = 0; i < a->live.n; i++) /* leaked by the caller: still ours to free */
        cudaFree(a->live.v[i].p);
    free(a->live.v);
    free(a->freed.v);
    free(a);
    c->alloc = NULL;
}

void *repro_cuda_alloc(void *ctx, size_t bytes)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    struct repro_cuda_alloc *a = c->alloc;
    size_t size = rounded(bytes ? bytes : 1);
    block b = {NULL, size};
    for (int i = 0; i < a->freed.n; i++)
        if (a->freed.v[i].size == size) {
            b = take(&a->freed, i);
            a->cached -= size;
            break;
        }
    if (!b.p && cudaMalloc(&b.p, size) != cudaSuccess) {
        cudaGetLastError(); /* an out-of-memory is not a sticky error: clear it */
        free_cached(c);
        b.p = NULL;
        if (cudaMalloc(&b.p, size) != cudaSuccess) {
            cudaGetLastError();
            return NULL;
        }
    }
    if (push(&a->live, b)) {
        cudaFree(b.p);
        return NULL;
    }
    a->in_use += size;
    if (a->in_use > a->peak)
        a->peak = a->in_use;
    return b.p;
}

void repro_cuda_free(void *ctx, void *p)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    struct repro_cuda_alloc *a = c->alloc;
    if (!p)
        return;
    for (int i = 0; i < a->live.n; i++)
        if (a->live.v[i].p == p) {
            block b = take(&a->live, i);
            a->in_use -= b.size;
            if (push(&a->freed, b)) /* no room to cache it: give it back */
                cudaFree(b.p);
            else
                a->cached += b.size;
            return;
        }
}

void repro_cuda_memory_stats(void *ctx, repro_memory_stats *out)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    memset(out, 0, sizeof *out);
    out->in_use = c->alloc->in_use;
    out->peak = c->alloc->peak;
    out->cached = c->alloc->cached;
    for (int i = 0; i < REPRO_CUDA_PINNED_SLOTS; i++)
        out->pinned += c->pinned[i].bytes;
    /* The whole device's view beside our cache's (other processes, the
     * context, cuDNN's and cuBLAS's own memory included). */
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        out->device_free = free_b;
        out->device_total = total_b;
    } else {
        cudaGetLastError(); /* not sticky: the figure is only missing */
    }
}

void repro_cuda_empty_cache(void *ctx)
{
    free_cached(repro_cuda(ctx));
}
