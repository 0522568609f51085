/* The versioned seed-derivation function (see seeds.h). */
#include "seeds.h"

#include "philox.h"

uint64_t repro_seed_derive(uint64_t seed, repro_purpose purpose, uint32_t epoch, uint32_t rank,
                           uint32_t worker, uint32_t index)
{
    repro_philox_ctr c = {{(uint32_t)purpose, epoch, (rank << 16) | (worker & 0xFFFFu), index}};
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
    }
    return "unknown";
}
