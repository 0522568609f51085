/* The data loader against its documented contract: sampler order and the
 * per-epoch generator rule (recomputed here independently), worker-count
 * invariance in augment_seed = sample mode, PyTorch's worker-count
 * dependence in worker mode, the prefetch bound, stopping mid-epoch, and the
 * augmentation itself. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dataset.h"
#include "util/error.h"
#include "core/loader.h"
#include "kernels/isa.h"
#include "util/seeds.h"

/* Test hook exported by loader.c (deliberately not in loader.h). */
int repro_loader_max_in_flight(repro_loader *l);

static repro_dataset ds;

static void setup(void)
{
    ck_assert_int_eq(repro_dataset_synthetic(&ds, 9, REPRO_SPLIT_TRAIN, 64), 0);
}

static void teardown(void)
{
    repro_dataset_release(&ds);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static repro_loader_config base_cfg(void)
{
    repro_loader_config c;
    memset(&c, 0, sizeof c);
    c.seed = 1234;
    c.batch_size = 8;
    c.num_workers = 2;
    c.prefetch = 2;
    c.shuffle = 1;
    c.augment_seed = REPRO_AUGMENT_SEED_SAMPLE;
    return c;
}

/* The documented rule, recomputed: one generator keyed
 * derive(seed, SHUFFLE, 0,0,0,0); per epoch base_seed = u64, then
 * Fisher-Yates from the last index down over the identity. */
typedef struct {
    repro_rng gen;
    int n;
    uint32_t perm[64];
    uint64_t base_seed;
} sampler;

static void sampler_init(sampler *s, uint64_t seed, int n)
{
    repro_rng_init(&s->gen, repro_seed_derive(seed, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
    s->n = n;
}

static void sampler_epoch(sampler *s, int shuffle)
{
    s->base_seed = repro_rng_u64(&s->gen);
    for (int i = 0; i < s->n; i++)
        s->perm[i] = (uint32_t)i;
    if (!shuffle)
        return;
    for (int i = s->n - 1; i > 0; i--) {
        uint32_t j = repro_rng_below(&s->gen, (uint32_t)i + 1u);
        uint32_t t = s->perm[i];
        s->perm[i] = s->perm[j];
        s->perm[j] = t;
    }
}

static void check_order(int n, int bs, int workers, int shuffle)
{
    repro_dataset sub = ds;
    sub.n = n;
    repro_loader_config cfg = base_cfg();
    cfg.batch_size = bs;
    cfg.num_workers = workers;
    cfg.shuffle = shuffle;
    repro_loader *l;
    ck_assert_int_eq(repro_loader_new(&l, &sub, &cfg), 0);
    int bpe = n / bs;
    ck_assert_int_eq(repro_loader_batches_per_epoch(l), bpe);
    sampler s;
    sampler_init(&s, cfg.seed, n);
    uint32_t prev[64];
    long index = 0;
    for (int e = 0; e < 3; e++) {
        sampler_epoch(&s, shuffle);
        if (e > 0 && shuffle)
            ck_assert_msg(memcmp(prev, s.perm, sizeof(uint32_t) * (size_t)n) != 0,
                          "epoch %d repeats the permutation", e);
        memcpy(prev, s.perm, sizeof(uint32_t) * (size_t)n);
        int seen[64] = {0};
        for (int k = 0; k < bpe; k++) {
            const repro_batch *b;
            ck_assert_int_eq(repro_loader_next(l, &b), 0);
            ck_assert_int_eq(b->size, bs);
            ck_assert_int_eq(b->epoch, e);
            ck_assert_int_eq(b->index_in_epoch, k);
            ck_assert_int_eq(b->index, index++);
            ck_assert_uint_eq(b->base_seed, s.base_seed);
            for (int i = 0; i < bs; i++) {
                uint32_t id = b->ids[i];
                ck_assert_uint_eq(id, s.perm[k * bs + i]);
                ck_assert_int_eq(b->y[i], ds.labels[id]);
                seen[id]++;
                /* no augmentation configured: x is exactly pixel / 255 */
                ck_assert(b->x[(size_t)i * REPRO_IMG_PIXELS + 300] ==
                          (float)ds.images[(size_t)id * REPRO_IMG_PIXELS + 300] / 255.0f);
            }
        }
        if (n % bs == 0)
            for (int i = 0; i < n; i++)
                ck_assert_msg(seen[i] == 1, "epoch %d: id %d seen %d times", e, i, seen[i]);
    }
    repro_loader_free(l);
}

START_TEST(test_sampler_order_and_complete_pass)
{
    check_order(64, 8, 2, 1); /* every id exactly once per epoch */
    check_order(64, 8, 0, 1);
    check_order(50, 8, 3, 1); /* drop_last: 6 batches, 2 samples dropped */
    check_order(40, 5, 1, 0); /* no shuffle: identity, base_seed still drawn */
}
END_TEST

/* Runs `nb` batches and copies ids, x, y out. */
typedef struct {
    uint32_t ids[20][8];
    float x[20][8 * REPRO_IMG_PIXELS];
    int32_t y[20][8];
    uint64_t base[20];
} run_out;

static run_out *run(const repro_loader_config *cfg, int nb)
{
    run_out *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_le(nb, 20);
    ck_assert_int_le(cfg->batch_size, 8);
    repro_loader *l;
    ck_assert_int_eq(repro_loader_new(&l, &ds, cfg), 0);
    for (int k = 0; k < nb; k++) {
        const repro_batch *b;
        ck_assert_int_eq(repro_loader_next(l, &b), 0);
        memcpy(r->ids[k], b->ids, sizeof(uint32_t) * (size_t)b->size);
        memcpy(r->x[k], b->x, sizeof(float) * (size_t)b->size * REPRO_IMG_PIXELS);
        memcpy(r->y[k], b->y, sizeof(int32_t) * (size_t)b->size);
        r->base[k] = b->base_seed;
    }
    repro_loader_free(l);
    return r;
}

static repro_loader_config augment_cfg(repro_augment_seed mode, int workers)
{
    repro_loader_config c = base_cfg();
    c.batch_size = 6; /* 10 batches per epoch of 64 */
    c.num_workers = workers;
    c.prefetch = 2;
    c.augment_seed = mode;
    c.shift = 2;
    c.flip = 1;
    c.noise = 0.1f;
    return c;
}

START_TEST(test_sample_mode_worker_count_invariant)
{
    /* 14 batches: across the epoch boundary after batch 10. */
    repro_loader_config c0 = augment_cfg(REPRO_AUGMENT_SEED_SAMPLE, 0);
    repro_loader_config c1 = augment_cfg(REPRO_AUGMENT_SEED_SAMPLE, 1);
    repro_loader_config c3 = augment_cfg(REPRO_AUGMENT_SEED_SAMPLE, 3);
    run_out *a = run(&c0, 14), *b = run(&c1, 14), *c = run(&c3, 14);
    ck_assert_mem_eq(a, b, sizeof *a);
    ck_assert_mem_eq(a, c, sizeof *a);
    ck_assert_uint_ne(a->base[9], a->base[10]); /* a new epoch, a new base_seed */

    /* The documented key: derive(base_seed, AUGMENT, 0,0,0, sample id). */
    for (int k = 0; k < 14; k += 13) {
        for (int i = 0; i < 6; i++) {
            repro_rng r;
            repro_rng_init(&r, repro_seed_derive(a->base[k], REPRO_PURPOSE_AUGMENT, 0, 0, 0,
                                                 a->ids[k][i]));
            float want[REPRO_IMG_PIXELS];
            repro_augment_sample(&c0, &r, ds.images + (size_t)a->ids[k][i] * REPRO_IMG_PIXELS, want);
            ck_assert_mem_eq(want, a->x[k] + (size_t)i * REPRO_IMG_PIXELS, sizeof want);
        }
    }
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(test_worker_mode_depends_on_worker_count)
{
    repro_loader_config c1 = augment_cfg(REPRO_AUGMENT_SEED_WORKER, 1);
    repro_loader_config c3 = augment_cfg(REPRO_AUGMENT_SEED_WORKER, 3);
    repro_loader_config c0 = augment_cfg(REPRO_AUGMENT_SEED_WORKER, 0);
    run_out *a1 = run(&c1, 12), *b1 = run(&c1, 12);
    run_out *a3 = run(&c3, 12), *b3 = run(&c3, 12);
    run_out *a0 = run(&c0, 12);
    /* Each worker count is reproducible on its own... */
    ck_assert_mem_eq(a1, b1, sizeof *a1);
    ck_assert_mem_eq(a3, b3, sizeof *a3);
    /* ...the caller loading as worker 0 equals one worker thread... */
    ck_assert_mem_eq(a0, a1, sizeof *a0);
    /* ...the order is the same, but the augmented pixels are not: the
     * PyTorch pitfall augment_seed = sample exists to avoid. */
    ck_assert_mem_eq(a1->ids, a3->ids, sizeof a1->ids);
    ck_assert_mem_eq(a1->y, a3->y, sizeof a1->y);
    ck_assert_msg(memcmp(a1->x, a3->x, sizeof a1->x) != 0,
                  "worker mode: num_workers 1 and 3 gave identical pixels");
    /* Batch 0 is worker 0's in both, so it matches; batch 1 is worker 1's
     * with 3 workers and worker 0's second batch with 1. */
    ck_assert_mem_eq(a1->x[0], a3->x[0], sizeof a1->x[0]);
    ck_assert(memcmp(a1->x[1], a3->x[1], sizeof a1->x[1]) != 0);

    /* The documented rule: worker i's RNG keyed base_seed + i, drawn over its
     * samples in batch order. With 3 workers, batch 4 is worker 1's 2nd. */
    repro_rng r;
    repro_rng_init(&r, a3->base[0] + 1);
    float want[REPRO_IMG_PIXELS];
    for (int k = 1; k <= 4; k += 3)
        for (int i = 0; i < 6; i++) {
            repro_augment_sample(&c3, &r, ds.images + (size_t)a3->ids[k][i] * REPRO_IMG_PIXELS, want);
            ck_assert_mem_eq(want, a3->x[k] + (size_t)i * REPRO_IMG_PIXELS, sizeof want);
        }
    /* Epoch 1 (batch 10) restarts worker 0 at the new base_seed + 0. */
    repro_rng_init(&r, a3->base[10]);
    repro_augment_sample(&c3, &r, ds.images + (size_t)a3->ids[10][0] * REPRO_IMG_PIXELS, want);
    ck_assert_mem_eq(want, a3->x[10], sizeof want);
    free(a1);
    free(b1);
    free(a3);
    free(b3);
    free(a0);
}
END_TEST

static void check_prefetch_bound(int workers, int prefetch)
{
    repro_loader_config cfg = base_cfg();
    cfg.batch_size = 1;
    cfg.num_workers = workers;
    cfg.prefetch = prefetch;
    int bound = workers * prefetch;
    repro_loader *l;
    ck_assert_int_eq(repro_loader_new(&l, &ds, &cfg), 0);
    const repro_batch *b;
    ck_assert_int_eq(repro_loader_next(l, &b), 0);
    /* The workers run ahead until the ring is full, and no further. */
    for (int t = 0; t < 200 && repro_loader_max_in_flight(l) < bound; t++)
        sleep_ms(5);
    sleep_ms(30);
    ck_assert_int_eq(repro_loader_max_in_flight(l), bound);
    for (int k = 0; k < 20; k++) {
        ck_assert_int_eq(repro_loader_next(l, &b), 0);
        ck_assert_int_eq(b->index, k + 1);
        if (k % 5 == 0)
            sleep_ms(5);
    }
    ck_assert_int_eq(repro_loader_max_in_flight(l), bound);
    repro_loader_free(l);
}

START_TEST(test_prefetch_bound)
{
    check_prefetch_bound(2, 2);
    check_prefetch_bound(3, 1);
}
END_TEST

START_TEST(test_free_mid_epoch)
{
    /* Workers are blocked on full slots when the loader is freed; a hang
     * fails the test by Check's timeout. */
    repro_loader_config cfg = base_cfg();
    cfg.batch_size = 2;
    cfg.num_workers = 3;
    cfg.prefetch = 1;
    cfg.noise = 0.5f;
    for (int rep = 0; rep < 5; rep++) {
        repro_loader *l;
        ck_assert_int_eq(repro_loader_new(&l, &ds, &cfg), 0);
        const repro_batch *b;
        for (int k = 0; k < rep; k++)
            ck_assert_int_eq(repro_loader_next(l, &b), 0);
        if (rep == 2)
            sleep_ms(20); /* let them block */
        repro_loader_free(l);
    }
    repro_loader_free(NULL);
}
END_TEST

START_TEST(test_augment_identity)
{
    repro_loader_config cfg = base_cfg();
    uint8_t px[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        px[i] = (uint8_t)(i * 13);
    float out[REPRO_IMG_PIXELS];
    repro_rng r, before;
    repro_rng_init(&r, 5);
    before = r;
    repro_augment_sample(&cfg, &r, px, out);
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        ck_assert(out[i] == (float)px[i] / 255.0f);
    ck_assert_mem_eq(&r, &before, sizeof r); /* nothing drawn */
}
END_TEST

START_TEST(test_augment_shift_moves_pixels)
{
    repro_loader_config cfg = base_cfg();
    cfg.shift = 3;
    uint8_t px[REPRO_IMG_PIXELS] = {0};
    px[10 * 28 + 12] = 255;
    px[0] = 51; /* corner: shifted out or moved, never wrapped */
    int moved = 0;
    for (uint64_t key = 0; key < 20; key++) {
        repro_rng r, c;
        repro_rng_init(&r, key);
        c = r;
        int dy = (int)repro_rng_below(&c, 7) - 3; /* y first, then x */
        int dx = (int)repro_rng_below(&c, 7) - 3;
        float out[REPRO_IMG_PIXELS];
        repro_augment_sample(&cfg, &r, px, out);
        ck_assert_mem_eq(&r, &c, sizeof r); /* exactly two draws */
        for (int y = 0; y < 28; y++)
            for (int x = 0; x < 28; x++) {
                float want = 0.0f;
                if (y == 10 + dy && x == 12 + dx)
                    want = 1.0f;
                if (y == dy && x == dx)
                    want = 51.0f / 255.0f;
                ck_assert_msg(out[y * 28 + x] == want, "key %d (%d,%d) at %d,%d", (int)key, dy, dx,
                              y, x);
            }
        moved += dy != 0 || dx != 0;
    }
    ck_assert_int_gt(moved, 10);
}
END_TEST

START_TEST(test_augment_flip_mirrors)
{
    repro_loader_config cfg = base_cfg();
    cfg.flip = 1;
    uint8_t px[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        px[i] = (uint8_t)(i * 31 + 7);
    int flipped = 0, kept = 0;
    for (uint64_t key = 0; key < 40; key++) {
        repro_rng r, c;
        repro_rng_init(&r, key);
        c = r;
        int flip = repro_rng_unit(&c) < 0.5f; /* the documented rule */
        float out[REPRO_IMG_PIXELS];
        repro_augment_sample(&cfg, &r, px, out);
        ck_assert_mem_eq(&r, &c, sizeof r); /* exactly one draw */
        for (int y = 0; y < 28; y++)
            for (int x = 0; x < 28; x++)
                ck_assert(out[y * 28 + x] == (float)px[y * 28 + (flip ? 27 - x : x)] / 255.0f);
        flipped += flip;
        kept += !flip;
    }
    ck_assert_int_gt(flipped, 5);
    ck_assert_int_gt(kept, 5);
}
END_TEST

/* repro_augment_sample as its rules read, pixel by pixel: the draws (dy,
 * dx, flip, then one repro_rng_normal per pixel), out[y][x] = src[y - dy]
 * [x' - dx] with x' = x or 27 - x, zero outside, plus noise * z. */
static void augment_ref(const repro_loader_config *cfg, repro_rng *rng, const uint8_t *px,
                        float *out)
{
    int dy = 0, dx = 0, flip = 0;
    if (cfg->shift > 0) {
        uint32_t span = 2u * (uint32_t)cfg->shift + 1u;
        dy = (int)repro_rng_below(rng, span) - cfg->shift;
        dx = (int)repro_rng_below(rng, span) - cfg->shift;
    }
    if (cfg->flip)
        flip = repro_rng_unit(rng) < 0.5f;
    for (int y = 0; y < 28; y++)
        for (int x = 0; x < 28; x++) {
            int sy = y - dy, sx = (flip ? 27 - x : x) - dx;
            int inside = sy >= 0 && sy < 28 && sx >= 0 && sx < 28;
            out[y * 28 + x] = inside ? (float)px[sy * 28 + sx] / 255.0f : 0.0f;
        }
    if (cfg->noise > 0.0f)
        for (int i = 0; i < REPRO_IMG_PIXELS; i++) {
            float z = repro_rng_normal(rng);
            out[i] = out[i] + cfg->noise * z;
        }
}

START_TEST(test_augment_matches_rules_every_path)
{
    /* Every shift up to 3 and the largest (27: most rows and columns out),
     * flip on and off, noise on and off; worker-mode streams (one RNG
     * across samples, so every position in a Philox block) and fresh ones;
     * on every vector path. Bits, not values: -0 and NaN-free floats. */
    uint8_t px[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        px[i] = (uint8_t)(i * 37 + 11);
    const int shifts[] = {0, 1, 2, 3, 27};
    for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
        if (!repro_isa_supported((repro_isa)isa))
            continue;
        ck_assert_int_eq(repro_isa_select((repro_isa)isa), 0);
        for (size_t si = 0; si < sizeof shifts / sizeof *shifts; si++)
            for (int mode = 0; mode < 4; mode++) {
                repro_loader_config cfg = base_cfg();
                cfg.shift = shifts[si];
                cfg.flip = mode & 1;
                cfg.noise = mode & 2 ? 0.1f : 0.0f;
                repro_rng r, c;
                repro_rng_init(&r, 1000 + (uint64_t)mode);
                c = r;
                for (int k = 0; k < 60; k++) {
                    float got[REPRO_IMG_PIXELS], want[REPRO_IMG_PIXELS];
                    repro_augment_sample(&cfg, &r, px, got);
                    augment_ref(&cfg, &c, px, want);
                    ck_assert_msg(!memcmp(got, want, sizeof got),
                                  "%s shift %d flip %d noise %d sample %d",
                                  repro_isa_name((repro_isa)isa), cfg.shift, cfg.flip, mode >> 1,
                                  k);
                    ck_assert_uint_eq(repro_rng_u32(&r), repro_rng_u32(&c)); /* the same draws */
                }
            }
    }
    repro_isa_select(repro_isa_best());
}
END_TEST

START_TEST(test_augment_noise)
{
    repro_loader_config cfg = base_cfg();
    cfg.noise = 0.25f;
    uint8_t px[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        px[i] = (uint8_t)i;
    repro_rng r, c;
    repro_rng_init(&r, 77);
    c = r;
    float out[REPRO_IMG_PIXELS];
    repro_augment_sample(&cfg, &r, px, out);
    double ss = 0;
    for (int i = 0; i < REPRO_IMG_PIXELS; i++) {
        float want = (float)px[i] / 255.0f;
        want += 0.25f * repro_rng_normal(&c); /* one normal per pixel, row-major */
        ck_assert(out[i] == want);
        double d = out[i] - (double)px[i] / 255.0;
        ss += d * d;
    }
    ss /= REPRO_IMG_PIXELS;
    ck_assert(ss > 0.25 * 0.25 * 0.7 && ss < 0.25 * 0.25 * 1.3);
}
END_TEST

static void expect_bad(repro_loader_config cfg, const char *phrase)
{
    repro_loader *l = (repro_loader *)&ds; /* must be reset to NULL */
    repro_error_clear();
    ck_assert_int_eq(repro_loader_new(&l, &ds, &cfg), -1);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_msg(strstr(repro_error_message(), phrase) != NULL, "%s", repro_error_message());
}

START_TEST(test_bad_config)
{
    repro_loader_config c = base_cfg();
    c.batch_size = 0;
    expect_bad(c, "batch_size 0");
    c.batch_size = 65;
    expect_bad(c, "batch_size 65");
    c = base_cfg();
    c.num_workers = -1;
    expect_bad(c, "num_workers -1");
    c.num_workers = 65;
    expect_bad(c, "num_workers 65");
    c = base_cfg();
    c.prefetch = 0;
    expect_bad(c, "prefetch 0");
    c = base_cfg();
    c.shift = -1;
    expect_bad(c, "shift -1");
    c = base_cfg();
    c.noise = -0.5f;
    expect_bad(c, "noise");
    c.noise = __builtin_nanf("");
    expect_bad(c, "noise");
    c = base_cfg();
    c.augment_seed = (repro_augment_seed)7;
    expect_bad(c, "augment_seed");
}
END_TEST

Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = tcase_create("loader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_sampler_order_and_complete_pass);
    tcase_add_test(tc, test_sample_mode_worker_count_invariant);
    tcase_add_test(tc, test_worker_mode_depends_on_worker_count);
    tcase_add_test(tc, test_prefetch_bound);
    tcase_add_test(tc, test_free_mid_epoch);
    tcase_add_test(tc, test_augment_identity);
    tcase_add_test(tc, test_augment_shift_moves_pixels);
    tcase_add_test(tc, test_augment_flip_mirrors);
    tcase_add_test(tc, test_augment_matches_rules_every_path);
    tcase_add_test(tc, test_augment_noise);
    tcase_add_test(tc, test_bad_config);
    suite_add_tcase(s, tc);
    return s;
}
