/* The data loader's data-parallel side (loader.h, rank/world/shard_size):
 * PyTorch's DistributedSampler contract per global batch, the shard-major
 * row order, per-(rank, worker) seed streams, refusal of shard layouts that
 * do not divide, the unchanged single-process bits, and restore with ranks. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/dataset.h"
#include "core/loader.h"
#include "util/error.h"
#include "util/seeds.h"

enum { N = 200, B = 64, PIX = REPRO_IMG_PIXELS, MAXK = 8 };

static repro_dataset ds;

static void setup(void)
{
    ck_assert_int_eq(repro_dataset_synthetic(&ds, 11, REPRO_SPLIT_TRAIN, N), 0);
}

static void teardown(void)
{
    repro_dataset_release(&ds);
}

static repro_loader_config cfg_of(int rank, int world, int shard, repro_augment_seed mode,
                                  int workers)
{
    repro_loader_config c;
    memset(&c, 0, sizeof c);
    c.seed = 4321;
    c.batch_size = B;
    c.num_workers = workers;
    c.prefetch = 2;
    c.shuffle = 1;
    c.augment_seed = mode;
    c.shift = 2;
    c.flip = 1;
    c.noise = 0.1f;
    c.rank = rank;
    c.world = world;
    c.shard_size = shard;
    return c;
}

/* What a loader handed out over its first `nb` batches. */
typedef struct {
    int bpe;
    repro_batch meta[MAXK]; /* pointers in it are dangling: fields only */
    uint32_t ids[MAXK][B];
    int32_t y[MAXK][B];
    float x[MAXK][B * PIX];
} run_out;

static run_out *collect(const repro_loader_config *cfg, int nb)
{
    run_out *o = calloc(1, sizeof *o);
    ck_assert_ptr_nonnull(o);
    repro_loader *l;
    ck_assert_int_eq(repro_loader_new(&l, &ds, cfg), 0);
    o->bpe = repro_loader_batches_per_epoch(l);
    for (int k = 0; k < nb; k++) {
        const repro_batch *b;
        ck_assert_int_eq(repro_loader_next(l, &b), 0);
        o->meta[k] = *b;
        memcpy(o->ids[k], b->ids, sizeof(uint32_t) * (size_t)b->size);
        memcpy(o->y[k], b->y, sizeof(int32_t) * (size_t)b->size);
        memcpy(o->x[k], b->x, sizeof(float) * (size_t)b->size * PIX);
    }
    repro_loader_free(l);
    return o;
}

/* The epoch rule recomputed (as in check_loader.c): generator keyed
 * derive(seed, SHUFFLE), per epoch base_seed = u64 then Fisher-Yates. */
static uint64_t epoch_perm(repro_rng *gen, uint32_t *perm)
{
    uint64_t base = repro_rng_u64(gen);
    for (int i = 0; i < N; i++)
        perm[i] = (uint32_t)i;
    for (int i = N - 1; i > 0; i--) {
        uint32_t j = repro_rng_below(gen, (uint32_t)i + 1u);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return base;
}

/* One (world, S) layout against the single-process run `ref` and the
 * recomputed permutation `pos_of` (sample id -> position). */
static void check_layout(int world, int S, const run_out *ref, const int *pos_of)
{
    int nS = B / S, b = B / world;
    int covered[3][B] = {{0}};
    int seen[N] = {0};
    for (int r = 0; r < world; r++) {
        repro_loader_config c = cfg_of(r, world, S, REPRO_AUGMENT_SEED_SAMPLE, r % 3);
        run_out *o = collect(&c, 3);
        ck_assert_int_eq(o->bpe, N / B); /* floor(n / B) whatever the world */
        for (int k = 0; k < 3; k++) {
            const repro_batch *m = &o->meta[k];
            ck_assert_int_eq(m->size, b);
            ck_assert_int_eq(m->global_size, B);
            ck_assert_int_eq(m->shard_size, S);
            ck_assert_int_eq(m->nshards, nS);
            ck_assert_int_eq(m->nshards_local, nS / world);
            ck_assert_int_eq(m->first_shard, r);
            ck_assert_int_eq(m->shard_stride, world);
            ck_assert_int_eq(m->index_in_epoch, k);
            ck_assert_uint_eq(m->base_seed, ref->meta[k].base_seed);
            for (int i = 0; i < b; i++) {
                uint32_t id = o->ids[k][i];
                /* DistributedSampler: rank r holds positions = r mod world. */
                int g = pos_of[id] - k * B;
                ck_assert_msg(g >= 0 && g < B && g % world == r,
                              "world %d S %d rank %d batch %d row %d: position %d", world, S, r, k,
                              i, g);
                /* Shard-major: row q*S + j is position (q*world + r) + j*nS. */
                ck_assert_int_eq(g, (i / S) * world + r + (i % S) * nS);
                covered[k][g]++;
                seen[id]++;
                /* augment_seed = sample: the pixels do not depend on the rank. */
                ck_assert_int_eq(o->y[k][i], ref->y[k][g]);
                ck_assert_mem_eq(o->x[k] + (size_t)i * PIX, ref->x[k] + (size_t)g * PIX,
                                 sizeof(float) * PIX);
            }
        }
        free(o);
    }
    /* The ranks' parts of batch k are the single-process batch k, once. */
    for (int k = 0; k < 3; k++)
        for (int g = 0; g < B; g++)
            ck_assert_int_eq(covered[k][g], 1);
    for (int i = 0; i < N; i++)
        ck_assert_int_le(seen[i], 1);
}

START_TEST(test_distributed_sampler_contract)
{
    repro_loader_config c0 = cfg_of(0, 0, 0, REPRO_AUGMENT_SEED_SAMPLE, 2);
    run_out *ref = collect(&c0, 3);
    ck_assert_int_eq(ref->bpe, 3);
    repro_rng gen;
    repro_rng_init(&gen, repro_seed_derive(c0.seed, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
    uint32_t perm[N];
    ck_assert_uint_eq(epoch_perm(&gen, perm), ref->meta[0].base_seed);
    int pos_of[N];
    for (int i = 0; i < N; i++)
        pos_of[perm[i]] = i;
    for (int k = 0; k < 3; k++)
        ck_assert_mem_eq(ref->ids[k], perm + k * B, sizeof ref->ids[k]);
    static const int worlds[] = {1, 2, 4}, shards[] = {1, 2, 4, 16};
    for (int w = 0; w < 3; w++)
        for (int s = 0; s < 4; s++)
            if ((B / shards[s]) % worlds[w] == 0)
                check_layout(worlds[w], shards[s], ref, pos_of);
    free(ref);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every (epoch, rank, worker) seed of one run is distinct. Distinctness from
 * world = 1's base_seed + i seeds is not required (another run's layout),
 * and the same (epoch, rank, worker) gives the same seed whatever the world
 * (the rule does not take world as an input once it is > 1). */
START_TEST(test_worker_seed_streams_distinct)
{
    enum { EPOCHS = 4, WORKERS = 8 };
    repro_rng gen;
    repro_rng_init(&gen, repro_seed_derive(99, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
    uint64_t base[EPOCHS];
    uint32_t perm[N];
    for (int e = 0; e < EPOCHS; e++)
        base[e] = epoch_perm(&gen, perm);
    for (int i = 0; i < WORKERS; i++)
        ck_assert_uint_eq(repro_loader_worker_seed(base[0], 0, 0, 1, i), base[0] + (uint64_t)i);
    static const int worlds[] = {2, 4, 8};
    uint64_t seeds[EPOCHS * 8 * WORKERS];
    for (int w = 0; w < 3; w++) {
        int n = 0;
        for (int e = 0; e < EPOCHS; e++)
            for (int r = 0; r < worlds[w]; r++)
                for (int i = 0; i < WORKERS; i++)
                    seeds[n++] = repro_loader_worker_seed(base[e], e, r, worlds[w], i);
        qsort(seeds, (size_t)n, sizeof seeds[0], cmp_u64);
        for (int i = 1; i < n; i++)
            ck_assert_msg(seeds[i] != seeds[i - 1], "world %d: two worker streams share a seed",
                          worlds[w]);
    }
    ck_assert_str_eq(repro_purpose_name(REPRO_PURPOSE_WORKER), "worker");
    /* The old rule would collide: every rank's worker i had base_seed + i. */
    ck_assert_uint_ne(repro_loader_worker_seed(base[0], 0, 0, 2, 1),
                      repro_loader_worker_seed(base[0], 0, 1, 2, 1));
}
END_TEST

/* The loader uses that rule: worker w of rank r draws, over its batches in
 * order, from derive(base_seed, WORKER, epoch, r, w); num_workers = 0 draws
 * as worker 0 of its rank. */
static void check_worker_draws(int workers)
{
    enum { K = 4 };
    repro_loader_config c = cfg_of(1, 2, 8, REPRO_AUGMENT_SEED_WORKER, workers);
    run_out *o = collect(&c, K);
    int W = workers ? workers : 1, b = B / 2;
    float want[PIX];
    for (int w = 0; w < W; w++) {
        repro_rng rng;
        repro_rng_init(&rng, repro_loader_worker_seed(o->meta[0].base_seed, 0, 1, 2, w));
        for (int k = w; k < o->bpe && k < K; k += W)
            for (int i = 0; i < b; i++) {
                repro_augment_sample(&c, &rng, ds.images + (size_t)o->ids[k][i] * PIX, want);
                ck_assert_mem_eq(want, o->x[k] + (size_t)i * PIX, sizeof want);
            }
    }
    /* Epoch 1 restarts worker 0 at its new seed. */
    repro_rng rng;
    repro_rng_init(&rng, repro_loader_worker_seed(o->meta[3].base_seed, 1, 1, 2, 0));
    repro_augment_sample(&c, &rng, ds.images + (size_t)o->ids[3][0] * PIX, want);
    ck_assert_mem_eq(want, o->x[3], sizeof want);
    free(o);
}

START_TEST(test_loader_uses_rank_worker_seeds)
{
    check_worker_draws(2);
    check_worker_draws(0);
}
END_TEST

static void expect_bad(int rank, int world, int shard, const char *phrase)
{
    repro_loader_config c = cfg_of(rank, world, shard, REPRO_AUGMENT_SEED_SAMPLE, 0);
    repro_loader *l = (repro_loader *)&ds; /* must be reset to NULL */
    repro_error_clear();
    ck_assert_int_eq(repro_loader_new(&l, &ds, &c), -1);
    ck_assert_ptr_null(l);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_msg(strstr(repro_error_message(), phrase) != NULL, "%s", repro_error_message());
}

START_TEST(test_bad_layouts_refused)
{
    expect_bad(0, 1, 3, "shard_size 3 does not divide batch_size 64");
    expect_bad(0, 1, 128, "shard_size 128 does not divide batch_size 64");
    expect_bad(0, 1, -1, "shard_size -1");
    expect_bad(0, 8, 16, "world 8 does not divide the 4 shards");
    expect_bad(0, 3, 0, "world 3 does not divide the 1 shards");
    expect_bad(0, 2, 0, "world 2 does not divide the 1 shards"); /* S = B: one shard */
    expect_bad(2, 2, 1, "rank 2 out of range");
    expect_bad(-1, 2, 1, "rank -1 out of range");
    expect_bad(1, 0, 1, "rank 1 out of range"); /* world 0 is one process */
    expect_bad(0, -1, 1, "world -1 out of range");
    expect_bad(0, 70000, 1, "world 70000 out of range");
}
END_TEST

/* world <= 1 with one shard is the single-process loader, bit for bit: the
 * same ids and pixels as a config that never set the new fields, which in
 * turn follow the recomputed permutation and base_seed + worker rule. */
START_TEST(test_single_process_unchanged)
{
    enum { K = 7 }; /* two epochs and a bit */
    for (int workers = 0; workers <= 3; workers += 3) {
        repro_loader_config plain = cfg_of(0, 0, 0, REPRO_AUGMENT_SEED_WORKER, workers);
        run_out *want = collect(&plain, K);
        static const int layouts[][2] = {{1, 0}, {1, B}, {0, B}};
        for (int t = 0; t < 3; t++) {
            repro_loader_config c = plain;
            c.world = layouts[t][0];
            c.shard_size = layouts[t][1];
            run_out *got = collect(&c, K);
            ck_assert_mem_eq(got->ids, want->ids, sizeof got->ids);
            ck_assert_mem_eq(got->y, want->y, sizeof got->y);
            ck_assert_mem_eq(got->x, want->x, sizeof got->x);
            free(got);
        }
        repro_rng gen;
        repro_rng_init(&gen, repro_seed_derive(plain.seed, REPRO_PURPOSE_SHUFFLE, 0, 0, 0, 0));
        uint32_t perm[N];
        for (int k = 0; k < K; k++) {
            if (k % 3 == 0)
                ck_assert_uint_eq(epoch_perm(&gen, perm), want->meta[k].base_seed);
            ck_assert_int_eq(want->meta[k].size, B);
            ck_assert_mem_eq(want->ids[k], perm + (k % 3) * B, sizeof want->ids[k]);
        }
        repro_rng rng;
        repro_rng_init(&rng, want->meta[0].base_seed + 0); /* batch 0: worker 0 */
        float px[PIX];
        for (int i = 0; i < B; i++) {
            repro_augment_sample(&plain, &rng, ds.images + (size_t)want->ids[0][i] * PIX, px);
            ck_assert_mem_eq(px, want->x[0] + (size_t)i * PIX, sizeof px);
        }
        free(want);
    }
}
END_TEST

static void expect_same_batch(const run_out *a, int ka, const run_out *b, int kb)
{
    ck_assert_int_eq(a->meta[ka].epoch, b->meta[kb].epoch);
    ck_assert_int_eq(a->meta[ka].index, b->meta[kb].index);
    ck_assert_int_eq(a->meta[ka].index_in_epoch, b->meta[kb].index_in_epoch);
    ck_assert_mem_eq(a->ids[ka], b->ids[kb], sizeof a->ids[ka]);
    ck_assert_mem_eq(a->x[ka], b->x[kb], sizeof a->x[ka]);
}

/* Restore at global batch m, on each of 2 ranks, continues as uninterrupted;
 * the saved position is the same on both ranks. */
START_TEST(test_restore_with_ranks)
{
    static const int stops[] = {1, 4};
    for (int s = 0; s < 2; s++) {
        int m = stops[s];
        repro_loader_position pos[2];
        for (int r = 0; r < 2; r++) {
            repro_loader_config c = cfg_of(r, 2, 8, REPRO_AUGMENT_SEED_WORKER, 2);
            run_out *full = collect(&c, m + 2);
            repro_loader *l;
            ck_assert_int_eq(repro_loader_new(&l, &ds, &c), 0);
            const repro_batch *b;
            for (int k = 0; k < m; k++)
                ck_assert_int_eq(repro_loader_next(l, &b), 0);
            repro_loader_get_position(l, &pos[r]);
            uint32_t perm[N];
            memcpy(perm, repro_loader_permutation(l), sizeof perm);
            repro_loader_free(l);

            ck_assert_int_eq(repro_loader_new(&l, &ds, &c), 0);
            ck_assert_int_eq(repro_loader_restore(l, &pos[r], perm), 0);
            run_out *rest = calloc(1, sizeof *rest);
            ck_assert_ptr_nonnull(rest);
            for (int k = 0; k < 2; k++) {
                ck_assert_int_eq(repro_loader_next(l, &b), 0);
                rest->meta[k] = *b;
                memcpy(rest->ids[k], b->ids, sizeof(uint32_t) * (size_t)b->size);
                memcpy(rest->x[k], b->x, sizeof(float) * (size_t)b->size * PIX);
                expect_same_batch(full, m + k, rest, k);
            }
            repro_loader_free(l);
            free(rest);
            free(full);
        }
        ck_assert_uint_eq(pos[0].gen_block, pos[1].gen_block);
        ck_assert_int_eq(pos[0].gen_used, pos[1].gen_used);
        ck_assert_int_eq(pos[0].epoch, pos[1].epoch);
        ck_assert_uint_eq(pos[0].base_seed, pos[1].base_seed);
        ck_assert_int_eq(pos[0].index, pos[1].index);
        ck_assert_int_eq(pos[0].next_in_epoch, pos[1].next_in_epoch);
    }
}
END_TEST

Suite *sampler_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("sampler");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_distributed_sampler_contract);
    tcase_add_test(tc, test_worker_seed_streams_distinct);
    tcase_add_test(tc, test_loader_uses_rank_worker_seeds);
    tcase_add_test(tc, test_bad_layouts_refused);
    tcase_add_test(tc, test_single_process_unchanged);
    tcase_add_test(tc, test_restore_with_ranks);
    suite_add_tcase(s, tc);
    return s;
}
