/* The versioned seed-derivation function (see seeds.h). */
#include "util/seeds.h"

#include "kernels/philox.h"

/* Indices at or above 2^32 put their high bits above the purpose (< 2^16),
 * so every index below 2^32 keeps the v1 numbers. */
uint64_t repro_seed_derive(uint64_t seed, uint32_t purpose, uint32_t epoch, uint32_t rank,
                           uint32_t worker, uint64_t index)
{
    uint32_t word0 = (purpose & 0xFFFFu) | (uint32_t)(index >> 32) << 16;
    repro_philox_ctr c = {{word0, epoch, (rank << 16) | (worker & 0xFFFFu), (uint32_t)index}};
    repro_philox_ctr r = repro_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    return (uint64_t)r.v[0] | ((uint64_t)r.v[1] << 32);
}

const char *repro_purpose_name(repro_purpose p)
{
    switch (p) {
    case REPRO_PURPOSE_INIT: return "init";
    case REPRO_PURPOSE_SHUFFLE: return "shuffle";
    case REPRO_PURPOSE_DROPOUT: return "dropout";
    case REPRO_PURPOSE_AUGMENT: return "augment";
    case REPRO_PURPOSE_DATA_PROTO: return "data-prototype";
    case REPRO_PURPOSE_DATA_SAMPLE: return "data-sample";
    case REPRO_PURPOSE_BATCH_COMPOSITION: return "batch-composition";
    case REPRO_PURPOSE_WORKER: return "worker";
    }
    return "unknown";
}

uint64_t repro_worker_seed(uint64_t base_seed, int worker_id)
{
    return base_seed + (uint64_t)(int64_t)worker_id;
}

void repro_philox4x32_10_block(const uint32_t ctr[4], uint32_t k0, uint32_t k1, uint32_t out[4])
{
    repro_philox_ctr c = {{ctr[0], ctr[1], ctr[2], ctr[3]}};
    c = repro_philox4x32_10(c, k0, k1);
    for (int i = 0; i < 4; i++)
        out[i] = c.v[i];
}

/* The public generator is the kernels' sequential stream itself (one
 * struct, defined in repro/random.h; kernels/philox.h calls it repro_rng):
 * these are its public names. */
void repro_generator_init(repro_generator *g, uint64_t seed)
{
    repro_rng_init(g, seed);
}

uint32_t repro_generator_u32(repro_generator *g)
{
    return repro_rng_u32(g);
}

uint64_t repro_generator_u64(repro_generator *g)
{
    return repro_rng_u64(g);
}

uint32_t repro_generator_below(repro_generator *g, uint32_t n)
{
    return repro_rng_below(g, n);
}

float repro_generator_unit(repro_generator *g)
{
    return repro_rng_unit(g);
}

void repro_generator_randperm(repro_generator *g, uint32_t n, uint32_t *out)
{
    repro_rng_permute(g, out, n);
}
