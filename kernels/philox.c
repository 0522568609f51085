/* Sequential streams over the Philox block function (see philox.h). */
#include "philox.h"

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
