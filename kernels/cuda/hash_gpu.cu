/* Device-side hashing: each 4 KiB leaf of a device buffer is digested on
 * the GPU with the shared XXH3-128 (kernels/shared/xxh3.h; the default
 * digest function) or SHA-256 (kernels/shared/sha256.h), one thread per
 * leaf, and only the leaf digests come back (32-byte slots, 1/128 of the
 * bytes); the recorder turns them into the tensor digest
 * (repro_recorder_tensor_leaves / repro_tensor_digest_from_leaves_fn),
 * which equals the digest of the same bytes hashed on the host. The statistics
 * are computed on the device in the recorder's fixed order
 * (kernels/shared/stats.h: four lanes, one thread each, each lane in
 * ascending element order in double), so they too have the host's bits. */
#include "ctx.cuh"

#include <math.h>
#include <stdlib.h>

#include "kernels/shared/sha256.h"
#include "kernels/shared/xxh3.h"
#include "kernels/shared/stats.h"

enum { LEAF = 4096 };

__global__ void sha_leaves(const uint8_t *p, size_t nbytes, size_t nleaves, uint8_t *out)
{
    REPRO_CUDA_FOR(i, (long)nleaves)
    {
        size_t off = (size_t)i * LEAF, len = nbytes - off < LEAF ? nbytes - off : LEAF;
        repro_hd_sha256(p + off, len, out + 32 * (size_t)i);
    }
}

/* XXH3-128 leaves: 16 bytes of digest, then 16 zero bytes (the host's
 * repro_digest layout, leaf_xxh3.h). */
__global__ void xxh3_leaves(const uint8_t *p, size_t nbytes, size_t nleaves, uint8_t *out)
{
    REPRO_CUDA_FOR(i, (long)nleaves)
    {
        size_t off = (size_t)i * LEAF, len = nbytes - off < LEAF ? nbytes - off : LEAF;
        uint8_t *o = out + 32 * (size_t)i;
        repro_hd_xxh3_128(p + off, len, o);
        for (int k = 16; k < 32; k++)
            o[k] = 0;
    }
}

__global__ void stat_lanes(const float *x, size_t n, repro_hd_lane *lanes)
{
    int j = threadIdx.x;
    if (blockIdx.x == 0 && j < 4)
        lanes[j] = repro_hd_lane_of(x, n, j);
}

/* Scratch for the digests and lanes: device, and pinned for the copy back. */
static int leaves_on_device(repro_cuda_ctx *c, int fn, const void *p, size_t nbytes,
                            uint8_t *leaves, repro_buffer_stats *stats)
{
    if (fn != 0 && fn != 1)
        return repro_cuda_fail(c, __FILE__, __LINE__, "tensor_leaves", "unknown digest function");
    size_t nleaves = (nbytes + LEAF - 1) / LEAF, dbytes = 32 * nleaves;
    size_t scratch = dbytes + 4 * sizeof(repro_hd_lane);
    uint8_t *d = (uint8_t *)repro_cuda_alloc(c, scratch);
    if (!d)
        return repro_cuda_fail(c, __FILE__, __LINE__, "tensor_leaves", "out of device memory");
    repro_hd_lane *dl = (repro_hd_lane *)(void *)(d + (dbytes + 7) / 8 * 8);
    int rc = 0;
    if (nleaves) {
        if (fn == 1)
            sha_leaves<<<repro_cuda_blocks((long)nleaves), REPRO_CUDA_THREADS, 0, c->stream>>>(
                (const uint8_t *)p, nbytes, nleaves, d);
        else
            xxh3_leaves<<<repro_cuda_blocks((long)nleaves), REPRO_CUDA_THREADS, 0, c->stream>>>(
                (const uint8_t *)p, nbytes, nleaves, d);
        if (cudaGetLastError() != cudaSuccess)
            rc = repro_cuda_fail(c, __FILE__, __LINE__, "leaves<<<>>>", "launch failed");
    }
    repro_hd_lane lanes[4];
    if (!rc && stats) {
        stat_lanes<<<1, 4, 0, c->stream>>>((const float *)p, nbytes / 4, dl);
        if (cudaGetLastError() != cudaSuccess)
            rc = repro_cuda_fail(c, __FILE__, __LINE__, "stat_lanes<<<>>>", "launch failed");
    }
    if (!rc && nleaves)
        repro_cuda_copy_d2h(c, leaves, d, dbytes);
    if (!rc && stats) {
        repro_cuda_copy_d2h(c, lanes, dl, sizeof lanes);
        double l2sq;
        repro_hd_lanes_combine(lanes, &l2sq, &stats->sum, &stats->max_abs, &stats->nonfinite);
        stats->l2 = sqrt(l2sq);
    }
    repro_cuda_free(c, d);
    return rc || c->err[0] ? -1 : 0;
}

int repro_cuda_tensor_leaves(void *ctx, int fn, const void *p, size_t nbytes, uint8_t *leaves,
                             repro_buffer_stats *stats)
{
    return leaves_on_device(repro_cuda(ctx), fn, p, nbytes, leaves, stats);
}
