/* Filling a batch (loader_impl.h): which samples its rows hold, their
 * augmentation, and the worker streams' seeds. The loader's two ways of
 * filling batches, worker threads (loader.c) and cooperative filling
 * (loader_coop.c), both fill through these, so a batch's bits do not
 * depend on which way or which thread filled it. Calls neither. */
#include "core/loader_impl.h"

#include "util/seeds.h"

void repro_augment_sample(const repro_loader_config *cfg, repro_rng *rng, const uint8_t *pixels,
                          float *out)
{
    enum { R = REPRO_IMG_ROWS, C = REPRO_IMG_COLS };
    /* Division, not a multiply by 1/255: x/255.0f is the correctly rounded
     * quotient, what torchvision's ToTensor gives. */
    float src[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        src[i] = (float)pixels[i] / 255.0f;
    int dy = 0, dx = 0, flip = 0;
    if (cfg->shift > 0) {
        uint32_t span = 2u * (uint32_t)cfg->shift + 1u;
        dy = (int)repro_rng_below(rng, span) - cfg->shift;
        dx = (int)repro_rng_below(rng, span) - cfg->shift;
    }
    /* Flip rule: one u32 drawn; flip when repro_rng_unit of it < 0.5
     * (i.e. its top bit is clear). */
    if (cfg->flip)
        flip = repro_rng_unit(rng) < 0.5f;
    /* out[y][x] = src[y - dy][x' - dx] with x' = x, or 27 - x when flipped:
     * translate (zero fill) then mirror. Row by row, without a test per
     * pixel: the source column x' - dx is inside the image for x in
     * [x0, x1), with e = dx (or -dx when flipped). */
    int e = flip ? -dx : dx;
    int x0 = e > 0 ? e : 0, x1 = e < 0 ? C + e : C;
    for (int y = 0; y < R; y++) {
        float *row = out + y * C;
        int sy = y - dy;
        for (int x = 0; x < C; x++)
            row[x] = 0.0f;
        if (sy < 0 || sy >= R)
            continue;
        const float *srow = src + sy * C;
        if (flip)
            for (int x = x0; x < x1; x++)
                row[x] = srow[C - 1 - x - dx];
        else
            for (int x = x0; x < x1; x++)
                row[x] = srow[x - dx];
    }
    if (cfg->noise > 0.0f) {
        float z[REPRO_IMG_PIXELS]; /* the same draws as one repro_rng_normal per pixel */
        repro_rng_normals(rng, z, REPRO_IMG_PIXELS);
        float noise = cfg->noise; /* a local: out cannot change it, so the loop vectorizes */
        for (int i = 0; i < REPRO_IMG_PIXELS; i++)
            out[i] += noise * z[i];
    }
}

/* The permutation index of row i of this rank's part of global batch k
 * (loader.h): local shard q = i / S is global shard q*world + rank, and its
 * row j = i % S is position shard + j*nS of the global batch. world = 1,
 * S = B gives k*B + i. */
static size_t row_position(const repro_loader *l, int k, int i)
{
    int q = i / l->shard, j = i % l->shard;
    int g = q * l->world + l->rank + j * l->nshards;
    return (size_t)k * (size_t)l->cfg.batch_size + (size_t)g;
}

uint64_t repro_loader_worker_seed(uint64_t base_seed, int epoch, int rank, int world, int worker)
{
    if (world <= 1)
        return repro_worker_seed(base_seed, worker);
    return repro_seed_derive(base_seed, REPRO_PURPOSE_WORKER, (uint32_t)epoch, (uint32_t)rank,
                             (uint32_t)worker, 0);
}

/* Row b of batch k of the current epoch into slot s. `wrng` is the
 * worker's RNG (worker mode); sample mode derives one stream per sample. */
void repro_loader_fill_row(repro_loader *l, slot *s, int k, int b, repro_rng *wrng)
{
    const repro_loader_config *cfg = &l->cfg;
    int augment = cfg->shift > 0 || cfg->flip || cfg->noise > 0.0f;
    uint32_t id = l->perm[row_position(l, k, b)];
    const uint8_t *px = l->ds->images + (size_t)id * REPRO_IMG_PIXELS;
    float *out = s->x + (size_t)b * REPRO_IMG_PIXELS;
    s->ids[b] = id;
    s->y[b] = l->ds->labels[id];
    if (cfg->augment_seed == REPRO_AUGMENT_SEED_SAMPLE && augment) {
        repro_rng r;
        repro_rng_init(&r, repro_seed_derive(l->base_seed, REPRO_PURPOSE_AUGMENT, 0, 0, 0, id));
        repro_augment_sample(cfg, &r, px, out);
    } else {
        repro_augment_sample(cfg, wrng, px, out);
    }
}

void repro_loader_finish_batch(repro_loader *l, slot *s, int k)
{
    repro_batch *o = &s->batch;
    o->size = l->rows;
    o->global_size = l->cfg.batch_size;
    o->shard_size = l->shard;
    o->nshards = l->nshards;
    o->nshards_local = l->nshards / l->world;
    o->first_shard = l->rank;
    o->shard_stride = l->world;
    o->epoch = l->epoch;
    o->index_in_epoch = k;
    o->base_seed = l->base_seed;
    o->ids = s->ids;
    o->x = s->x;
    o->y = s->y;
}

void repro_loader_count_start(repro_loader *l)
{
    l->started++;
    if (l->started - l->released > l->max_in_flight)
        l->max_in_flight = l->started - l->released;
}

/* Advances a worker's RNG past batch k as if it had filled it: the same
 * draws on a scratch image (the draw count never depends on pixel values).
 * Only worker-mode augmentation draws from the worker RNG. */
void repro_loader_replay_batch(const repro_loader *l, int k, repro_rng *wrng)
{
    const repro_loader_config *cfg = &l->cfg;
    int augment = cfg->shift > 0 || cfg->flip || cfg->noise > 0.0f;
    if (cfg->augment_seed != REPRO_AUGMENT_SEED_WORKER || !augment)
        return;
    float scratch[REPRO_IMG_PIXELS];
    for (int b = 0; b < l->rows; b++) {
        uint32_t id = l->perm[row_position(l, k, b)];
        repro_augment_sample(cfg, wrng, l->ds->images + (size_t)id * REPRO_IMG_PIXELS, scratch);
    }
}
