/* Sequential streams over the Philox block function (see philox.h), and
 * the many-block entry points, which run on the vector path in use
 * (philox_vec.h) and finish the tails here with the scalar block function. */
#include "philox.h"

#include <string.h>

#include "isa.h"
#include "philox_vec.h"
#include "kernels/shared/pointwise.h"

const repro_philox_vec *repro_philox_vec_for(repro_isa isa)
{
    static const repro_philox_vec *const tables[REPRO_ISA_COUNT] = {
        &repro_philox_vec_sse2, &repro_philox_vec_avx2, &repro_philox_vec_avx512};
    if ((int)isa < 0 || isa >= REPRO_ISA_COUNT || !tables[isa]->lanes)
        return NULL;
    return tables[isa];
}

/* How many of n blocks the vector path v (NULL: none) takes: whole steps. */
static long vec_count(const repro_philox_vec *v, long n)
{
    return v && n > 0 ? n - n % v->lanes : 0;
}

void repro_rng_init(repro_rng *rng, uint64_t key)
{
    rng->key = key;
    rng->block = 0;
    rng->used = 4;
}

uint32_t repro_rng_u32(repro_rng *rng)
{
    if (rng->used == 4) {
        repro_philox_ctr c = repro_philox_at(rng->key, rng->block++, 0);
        for (int i = 0; i < 4; i++)
            rng->buf[i] = c.v[i];
        rng->used = 0;
    }
    return rng->buf[rng->used++];
}

uint64_t repro_rng_u64(repro_rng *rng)
{
    uint64_t lo = repro_rng_u32(rng);
    uint64_t hi = repro_rng_u32(rng);
    return lo | (hi << 32);
}

uint32_t repro_rng_below(repro_rng *rng, uint32_t n)
{
    return (uint32_t)(((unsigned __int128)repro_rng_u64(rng) * n) >> 64);
}

float repro_rng_unit(repro_rng *rng)
{
    return repro_u32_to_unit(repro_rng_u32(rng));
}

float repro_philox_normal(repro_philox_ctr b)
{
    /* Sum in a fixed order, in float: every operation is exact or correctly
     * rounded, so the result is the same on every IEEE-754 machine. */
    float s = repro_u32_to_unit(b.v[0]) + repro_u32_to_unit(b.v[1]);
    s += repro_u32_to_unit(b.v[2]);
    s += repro_u32_to_unit(b.v[3]);
    return (s - 2.0f) * 1.7320508f; /* variance 4/12 -> 1 */
}

float repro_rng_normal(repro_rng *rng)
{
    repro_philox_ctr b;
    for (int i = 0; i < 4; i++)
        b.v[i] = repro_rng_u32(rng);
    return repro_philox_normal(b);
}

void repro_rng_permute(repro_rng *rng, uint32_t *perm, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n; i-- > 1;) {
        uint32_t j = repro_rng_below(rng, i + 1u);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Four consecutive blocks of the block function, interleaved so that their
 * multiply chains overlap (the same rounds as repro_philox4x32_10). */
void repro_philox_blocks4(uint64_t key, uint64_t block, uint32_t out[16])
{
    uint32_t c0[4], c1[4], c2[4] = {0, 0, 0, 0}, c3[4] = {0, 0, 0, 0};
    for (int l = 0; l < 4; l++) {
        c0[l] = (uint32_t)(block + (uint64_t)l);
        c1[l] = (uint32_t)((block + (uint64_t)l) >> 32);
    }
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int round = 0; round < 10; round++) {
#pragma GCC unroll 4
        for (int l = 0; l < 4; l++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c0[l], p1 = (uint64_t)0xCD9E8D57u * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < 4; l++) {
        out[4 * l] = c0[l];
        out[4 * l + 1] = c1[l];
        out[4 * l + 2] = c2[l];
        out[4 * l + 3] = c3[l];
    }
}

void repro_philox_blocks(uint64_t key, uint64_t block, long n, uint32_t *out)
{
    const repro_philox_vec *v = repro_philox_vec_for(repro_isa_current());
    long i = vec_count(v, n);
    if (i > 0)
        v->blocks(key, block, i, out);
    for (; i + 4 <= n; i += 4)
        repro_philox_blocks4(key, block + (uint64_t)i, out + 4 * i);
    for (; i < n; i++) {
        repro_philox_ctr c = repro_philox_at(key, block + (uint64_t)i, 0);
        memcpy(out + 4 * i, c.v, sizeof c.v);
    }
}

void repro_philox_keep(uint64_t key, uint64_t index, long n, float p, uint8_t *mask)
{
    const repro_philox_vec *v = repro_philox_vec_for(repro_isa_current());
    long i = vec_count(v, n);
    if (i > 0)
        v->keep(key, index, i, p, mask);
    for (; i < n; i++)
        mask[i] = (uint8_t)repro_hd_dropout_keep(key, index + (uint64_t)i, p);
}

void repro_rng_normals(repro_rng *rng, float *out, long n)
{
    /* On the vector path: one fresh block per normal; the words left over
     * before (4 - used) are as many as are left after, now the tail of the
     * last fresh block, which becomes the buffer. */
    const repro_philox_vec *v = repro_philox_vec_for(repro_isa_current());
    long i = vec_count(v, n);
    if (i > 0) {
        v->normals(rng->key, rng->block, i, 4 - rng->used, rng->buf, out, rng->buf);
        rng->block += (uint64_t)i;
    }
    /* The rest (or all, without a vector path), four at a time: q holds
     * the stream's next numbers, what is left of the current block, then
     * four fresh blocks; four normals take 16, leaving as many as were
     * left before, now the tail of the last fresh block. */
    uint32_t q[20];
    int r = 4 - rng->used;
    for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < r; j++)
            q[j] = rng->buf[rng->used + j];
        repro_philox_blocks4(rng->key, rng->block, q + r);
        rng->block += 4;
        for (int k = 0; k < 4; k++) {
            repro_philox_ctr b = {{q[4 * k], q[4 * k + 1], q[4 * k + 2], q[4 * k + 3]}};
            out[i + k] = repro_philox_normal(b);
        }
        for (int j = 0; j < 4; j++) /* the last fresh block is the current one */
            rng->buf[j] = q[r + 12 + j];
        rng->used = 4 - r;
    }
    for (; i < n; i++)
        out[i] = repro_rng_normal(rng);
}
