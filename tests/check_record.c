/* The recorder and trace writer, in process: what a trace holds, in which
 * order; that trace levels and trace_every change only the detail, never
 * the chain; that hashing never changes training; and dumps. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "util/npy.h"
#include "core/train_record.h"
#include "record/trace.h"
#include "core/train.h"
#include "testutil.h"
#include "record/hash.h"
#include "record/leaf_queue.h"
#include "record/leaf_share.h"
#include "record/stats.h"
#include "kernels/isa.h"

#include <math.h>

static repro_config cfg;

/* Trains cfg with a recorder writing `path` (NULL: no recorder); returns
 * the chain and, if params != NULL, a copy of all parameters. */
static void train(const char *path, int level, int every, const long *dump, int ndump,
                  const char *dump_dir, repro_digest *chain, float **params)
{
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    repro_train_recorder *rec = NULL;
    repro_train_recorder_opts o = {.trace_path = path, .level = level, .every = every,
                             .total_steps = cfg.train_steps, .dump_steps = dump, .ndump = ndump,
                             .dump_dir = dump_dir};
    if (path)
        ck_assert_int_eq(repro_train_recorder_new(&rec, &t, &o, NULL), 0);
    for (long s = 0; s < cfg.train_steps; s++)
        ck_assert_int_eq(repro_trainer_step(&t), 0);
    if (rec)
        ck_assert_int_eq(repro_train_recorder_finish(rec, chain, NULL), 0);
    if (params) {
        long n = repro_model_param_count(&t.model);
        float *p = malloc((size_t)n * sizeof(float)), *q = p;
        for (int i = 0; i < t.model.nparams; i++) {
            memcpy(q, t.model.params[i].data, (size_t)t.model.params[i].numel * sizeof(float));
            q += t.model.params[i].numel;
        }
        *params = p;
    }
    repro_trainer_release(&t);
}

static void temp_path(char *buf, size_t len, const char *name)
{
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "rec");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(buf, len, "%s/%s", dir, name);
}

START_TEST(test_trace_round_trip_and_order)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "steps=4"), 0);
    char path[256];
    temp_path(path, sizeof path, "t.jsonl");
    repro_digest chain;
    train(path, REPRO_TRACE_TENSOR, 1, NULL, 0, NULL, &chain, NULL);
    repro_trace tr;
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    ck_assert_str_eq(tr.experiment, "mlp");
    ck_assert_int_eq(tr.nsteps, 4);
    ck_assert(tr.has_trailer);
    ck_assert_int_eq(tr.trailer_steps, 4);
    ck_assert(repro_digest_eq(&tr.trailer_chain, &chain));
    ck_assert_str_eq(tr.seed_scheme, "repro-seed/v1");
    const repro_trace_step *s = repro_trace_find_step(&tr, 2);
    ck_assert_ptr_nonnull(s);
    ck_assert(s->has_detail);
    /* The documented step-digest order (trace.h). */
    static const char *const want[] = {
        "batch.ids", "batch.x", "batch.y", "logits", "loss", "metrics.class_features", "grad.fc3.bias", "grad.fc3.weight",
        "grad.fc2.bias", "grad.fc2.weight", "grad.fc1.bias", "grad.fc1.weight",
        "param.fc1.weight", "param.fc1.bias", "param.fc2.weight", "param.fc2.bias",
        "param.fc3.weight", "param.fc3.bias", "sgd.momentum.fc1.weight", "sgd.momentum.fc1.bias",
        "sgd.momentum.fc2.weight", "sgd.momentum.fc2.bias", "sgd.momentum.fc3.weight",
        "sgd.momentum.fc3.bias", "rng.state"};
    ck_assert_int_eq(s->ntensors, (int)(sizeof want / sizeof *want));
    for (int i = 0; i < s->ntensors; i++)
        ck_assert_str_eq(s->tensors[i].name, want[i]);
    /* Step digest = SHA-256 over the tensor digests in that order. */
    repro_digest d[32], sd;
    for (int i = 0; i < s->ntensors; i++)
        d[i] = s->tensors[i].digest;
    ck_assert_int_eq(repro_sha256_digests(d, (size_t)s->ntensors, &sd), 0);
    ck_assert(repro_digest_eq(&sd, &s->step_digest));
    /* The loss bits agree with the decimal value. */
    float lf = (float)s->loss_value;
    uint32_t bits;
    memcpy(&bits, &lf, 4);
    ck_assert_uint_eq(bits, s->loss_bits);
    repro_trace_release(&tr);
}
END_TEST

START_TEST(test_levels_and_every_keep_the_chain)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/cnn.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "steps=7"), 0);
    char p1[256], p2[256], p3[256];
    temp_path(p1, sizeof p1, "tensor.jsonl");
    temp_path(p2, sizeof p2, "step.jsonl");
    temp_path(p3, sizeof p3, "op.jsonl");
    repro_digest c1, c2, c3;
    train(p1, REPRO_TRACE_TENSOR, 3, NULL, 0, NULL, &c1, NULL);
    train(p2, REPRO_TRACE_STEP, 1, NULL, 0, NULL, &c2, NULL);
    train(p3, REPRO_TRACE_OP, 1, NULL, 0, NULL, &c3, NULL);
    ck_assert(repro_digest_eq(&c1, &c2));
    ck_assert(repro_digest_eq(&c1, &c3));
    repro_trace a, b, c;
    ck_assert_int_eq(repro_trace_read(&a, p1), 0);
    ck_assert_int_eq(repro_trace_read(&b, p2), 0);
    ck_assert_int_eq(repro_trace_read(&c, p3), 0);
    for (long st = 1; st <= 7; st++) {
        /* every = 3: detail on 3, 6 and the last step only; every step chained */
        ck_assert_int_eq(repro_trace_find_step(&a, st)->has_detail, st % 3 == 0 || st == 7);
        ck_assert_int_eq(repro_trace_find_step(&b, st)->has_detail, 0);
        ck_assert(repro_digest_eq(&repro_trace_find_step(&a, st)->chain,
                                  &repro_trace_find_step(&b, st)->chain));
    }
    const repro_trace_step *s = repro_trace_find_step(&c, 1);
    ck_assert_int_gt(s->nops, 10);
    ck_assert_str_eq(s->ops[0].name, "fwd.conv1");
    ck_assert_str_eq(s->ops[s->nops - 1].name, "bwd.conv1.db");
    /* Level op reports the pools' dx, so the pool and ReLU backward run
     * apart there; fused at level tensor (model_pass.c): the chains above
     * are equal all the same. */
    int pool_dx = 0;
    for (int i = 0; i < s->nops; i++)
        pool_dx += !strcmp(s->ops[i].name, "bwd.pool1.dx") || !strcmp(s->ops[i].name, "bwd.pool2.dx");
    ck_assert_int_eq(pool_dx, 2);
    repro_trace_release(&a);
    repro_trace_release(&b);
    repro_trace_release(&c);
}
END_TEST

START_TEST(test_hashing_never_changes_training)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "steps=12"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "threads=2"), 0);
    char path[256];
    temp_path(path, sizeof path, "t.jsonl");
    repro_digest chain;
    float *with, *without;
    train(path, REPRO_TRACE_OP, 1, NULL, 0, NULL, &chain, &with);
    train(NULL, 0, 1, NULL, 0, NULL, NULL, &without);
    long n = 235146;
    ck_assert(memcmp(with, without, (size_t)n * sizeof(float)) == 0);
    free(with);
    free(without);
}
END_TEST

/* A trace file's text after its header line (malloc'd), or NULL. */
static char *trace_steps_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c, past_header = 0;
    while ((c = fgetc(f)) != EOF)
        if (past_header)
            fputc(c, m);
        else if (c == '\n')
            past_header = 1;
    fclose(f);
    fclose(m);
    return buf;
}

/* The overlapped hasher (G(n) beside the optimizer, P(n) beside step n+1)
 * with 2 compute threads gives the chain of a recorder that waits for
 * every job at once: a missing wait (hashing a buffer while it is being
 * overwritten) shows here, not only end to end. So do inline jobs (no
 * hasher thread; the kernel threads hash queued leaves in their idle
 * time and the job runs where its tensors are about to change). Both
 * precisions that add buffers (fp16's scaler) and the adamw state are
 * covered, and the step lines (stats on every 3rd step) are the same
 * text in all three. */
START_TEST(test_overlapped_hasher_equals_synchronous)
{
    static const char *const sets[][3] = {{"steps=12", "threads=2", "optimizer=sgd"},
                                          {"steps=12", "threads=2", "optimizer=adamw"},
                                          {"steps=12", "threads=2", "precision=fp16"}};
    static const char *const modes[] = {"synchronous", "overlapped", "inline"};
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++) {
        repro_digest chains[3];
        char *text[3];
        for (int mode = 0; mode < 3; mode++) {
            char path[256];
            temp_path(path, sizeof path, "t.jsonl");
            ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
            for (int i = 0; i < 3; i++)
                ck_assert_int_eq(repro_config_set(&cfg, sets[k][i]), 0);
            repro_trainer t;
            ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
            repro_train_recorder *rec = NULL;
            repro_train_recorder_opts o = {
                .trace_path = path, .level = 1, .every = 3, .total_steps = cfg.train_steps,
                .synchronous = mode == 0,
                .hasher = mode == 2 ? REPRO_HASHER_INLINE : REPRO_HASHER_THREAD};
            ck_assert_int_eq(repro_train_recorder_new(&rec, &t, &o, NULL), 0);
            ck_assert_int_eq(repro_train_recorder_inline(rec), mode == 2);
            for (long s = 0; s < cfg.train_steps; s++)
                ck_assert_int_eq(repro_trainer_step(&t), 0);
            ck_assert_int_eq(repro_train_recorder_finish(rec, &chains[mode], NULL), 0);
            repro_trainer_release(&t);
            ck_assert_ptr_nonnull(text[mode] = trace_steps_text(path));
            ck_assert_msg(strstr(text[mode], "\"l2\":"), "%s: no stats in the trace", path);
        }
        for (int mode = 1; mode < 3; mode++) {
            ck_assert_msg(repro_digest_eq(&chains[0], &chains[mode]), "%s %s %s: %s != %s",
                          sets[k][0], sets[k][1], sets[k][2], modes[mode], modes[0]);
            ck_assert_msg(!strcmp(text[0], text[mode]), "%s %s %s: %s's lines != %s's",
                          sets[k][0], sets[k][1], sets[k][2], modes[mode], modes[0]);
        }
        for (int mode = 0; mode < 3; mode++)
            free(text[mode]);
    }
}
END_TEST


/* With the hasher and the kernel threads filling every CPU (1 + 1 held
 * to 2 CPUs here), the recorder makes the loader's workers cooperative
 * streams the hasher fills when idle (train.h, repro_trainer_share_loader):
 * the training is the bits of the worker threads' unhashed run, in worker
 * mode (each stream's RNG order matters), across epochs. */
static float *params_of(repro_trainer *t, long *n)
{
    *n = repro_model_param_count(&t->model);
    float *p = malloc((size_t)*n * sizeof(float)), *q = p;
    for (int i = 0; i < t->model.nparams; i++) {
        memcpy(q, t->model.params[i].data, (size_t)t->model.params[i].numel * sizeof(float));
        q += t->model.params[i].numel;
    }
    return p;
}

/* Trains t to its config's steps, finishes rec (may be NULL), and returns
 * the parameters (params_of) with t released. */
static float *train_params(repro_trainer *t, repro_train_recorder *rec, long *n)
{
    for (long s = 0; s < t->cfg.train_steps; s++)
        ck_assert_int_eq(repro_trainer_step(t), 0);
    repro_digest chain;
    if (rec)
        ck_assert_int_eq(repro_train_recorder_finish(rec, &chain, NULL), 0);
    float *p = params_of(t, n);
    repro_trainer_release(t);
    return p;
}

/* p[0] and p[1] (n[0], n[1] floats) are the same bits; frees both. */
static void assert_same_params(float *p[2], const long n[2], const char *what)
{
    ck_assert_int_eq(n[0], n[1]);
    ck_assert_msg(memcmp(p[0], p[1], (size_t)n[0] * sizeof(float)) == 0, "%s", what);
    free(p[0]);
    free(p[1]);
}

START_TEST(test_hasher_shares_loader)
{
    tu_cpu_mask all;
    tu_hold_to_cpus(2, &all);
    static const char *const sets[] = {"train_size=640", "steps=25", "shift=2", "flip=on",
                                       "noise=0.1", "augment_seed=worker", "num_workers=3",
                                       "threads=1"};
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/cnn.ini"), 0);
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        ck_assert_int_eq(repro_config_set(&cfg, sets[i]), 0);
    float *p[2];
    long n[2];
    for (int hashed = 0; hashed < 2; hashed++) {
        repro_trainer t;
        ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
        ck_assert_int_eq(t.loader_shared, 0); /* 1 kernel thread: worker threads */
        repro_train_recorder *rec = NULL;
        repro_train_recorder_opts o = {.trace_path = NULL, .level = 1, .every = 1,
                                       .total_steps = cfg.train_steps};
        if (hashed) {
            ck_assert_int_eq(repro_train_recorder_new(&rec, &t, &o, NULL), 0);
            ck_assert_int_eq(repro_loader_help(t.loader), 0); /* no epoch yet */
            ck_assert_int_eq(t.loader_shared, 1); /* it is cooperative */
        }
        p[hashed] = train_params(&t, rec, &n[hashed]);
    }
    tu_restore_cpus(&all);
    assert_same_params(p, n, "the hasher-shared loader changed the training");
}
END_TEST

/* Who hashes is chosen by the CPUs: held to 2, a 1-thread run keeps its
 * hasher thread (it has a CPU of its own) and a 2-thread run hashes
 * inline; either way the training is the unhashed run's, bit for bit. */
START_TEST(test_inline_where_threads_fill_the_cpus)
{
    tu_cpu_mask all;
    tu_hold_to_cpus(2, &all);
    for (int threads = 1; threads <= 2; threads++) {
        float *p[2];
        long n[2];
        for (int hashed = 0; hashed < 2; hashed++) {
            ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
            char set[32];
            snprintf(set, sizeof set, "threads=%d", threads);
            ck_assert_int_eq(repro_config_set(&cfg, set), 0);
            ck_assert_int_eq(repro_config_set(&cfg, "steps=15"), 0);
            repro_trainer t;
            ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
            repro_train_recorder *rec = NULL;
            repro_train_recorder_opts o = {.trace_path = NULL, .level = 1, .every = 4,
                                           .total_steps = cfg.train_steps};
            if (hashed) {
                ck_assert_int_eq(repro_train_recorder_new(&rec, &t, &o, NULL), 0);
                ck_assert_int_eq(repro_train_recorder_inline(rec), threads == 2);
            }
            p[hashed] = train_params(&t, rec, &n[hashed]);
        }
        assert_same_params(p, n, threads == 1 ? "threads=1: hashing changed the training"
                                              : "threads=2: hashing changed the training");
    }
    tu_restore_cpus(&all);
}
END_TEST

/* Item 12 of issue 13: under accumulation_steps = K > 1 a step consumes K
 * micro-batches, and --dump wrote only the last one's inputs (batch.x is
 * overwritten by each). Each micro-batch's ids, x and y must be dumped as
 * batch.*.mbJ.npy, equal to what the loader hands out in sampler order
 * (step s's micro-batch j is the loader's batch (s-1)*K + j), and the last
 * must be the batch the trace hashes as batch.* at that step. */
START_TEST(test_dumps_every_micro_batch)
{
    enum { K = 2, STEPS = 2 };
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "steps=2"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "accumulation_steps=2"), 0);
    char path[256], dir[300], file[500];
    temp_path(path, sizeof path, "t.jsonl");
    snprintf(dir, sizeof dir, "%s.dump", path);
    long steps[2] = {1, 2};
    repro_digest chain;
    train(path, REPRO_TRACE_TENSOR, 1, steps, 2, dir, &chain, NULL);
    /* What the loader hands out, from a fresh trainer of the same config. */
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    long B = cfg.train_batch_size;
    size_t xbytes = (size_t)B * REPRO_IMG_PIXELS * sizeof(float);
    repro_trace tr;
    ck_assert_int_eq(repro_trace_read(&tr, path), 0);
    for (int s = 1; s <= STEPS; s++) {
        void *ids[K] = {0};
        for (int j = 0; j < K; j++) {
            const repro_batch *b;
            ck_assert_int_eq(repro_loader_next(t.loader, &b), 0);
            size_t n = 0;
            snprintf(file, sizeof file, "%s/step-%06d/batch.ids.mb%d.npy", dir, s, j);
            ids[j] = repro_npy_read(file, &n);
            ck_assert_msg(ids[j] != NULL, "%s missing", file);
            ck_assert_uint_eq(n, (size_t)B * 4);
            ck_assert_msg(memcmp(ids[j], b->ids, n) == 0, "step %d mb%d: ids not the loader's", s,
                          j);
            snprintf(file, sizeof file, "%s/step-%06d/batch.x.mb%d.npy", dir, s, j);
            void *x = repro_npy_read(file, &n);
            ck_assert_ptr_nonnull(x);
            ck_assert_uint_eq(n, xbytes);
            ck_assert_msg(memcmp(x, b->x, n) == 0, "step %d mb%d: x not the loader's", s, j);
            snprintf(file, sizeof file, "%s/step-%06d/batch.y.mb%d.npy", dir, s, j);
            void *y = repro_npy_read(file, &n);
            ck_assert_ptr_nonnull(y);
            ck_assert_int_eq(memcmp(y, b->y, n), 0);
            snprintf(file, sizeof file, "%s/step-%06d/mask.drop1.mb%d.npy", dir, s, j);
            ck_assert_int_eq(access(file, F_OK), 0);
            if (j == K - 1) { /* the trace's batch.x is the last micro-batch */
                const repro_trace_step *ts = repro_trace_find_step(&tr, s);
                ck_assert_ptr_nonnull(ts);
                int64_t shape[4] = {B, 1, REPRO_IMG_ROWS, REPRO_IMG_COLS};
                repro_digest d;
                ck_assert_int_eq(
                    repro_tensor_digest_bytes(&d, "batch.x", "f32", 4, shape, x, xbytes), 0);
                int found = 0;
                for (int i = 0; i < ts->ntensors; i++)
                    if (!strcmp(ts->tensors[i].name, "batch.x")) {
                        found = 1;
                        ck_assert_msg(repro_digest_eq(&ts->tensors[i].digest, &d),
                                      "step %d: batch.x.mb%d is not the batch the trace hashes",
                                      s, j);
                    }
                ck_assert(found);
            }
            free(x);
            free(y);
        }
        ck_assert_msg(memcmp(ids[0], ids[1], (size_t)B * 4) != 0, "step %d: mb0 == mb1", s);
        free(ids[0]);
        free(ids[1]);
    }
    repro_trace_release(&tr);
    repro_trainer_release(&t);
    /* Without accumulation the names are as before: no .mbJ files. */
    ck_assert_int_eq(repro_config_set(&cfg, "accumulation_steps=1"), 0);
    temp_path(path, sizeof path, "t1.jsonl");
    snprintf(dir, sizeof dir, "%s.dump", path);
    train(path, REPRO_TRACE_STEP, 1, steps, 1, dir, &chain, NULL);
    snprintf(file, sizeof file, "%s/step-000001/batch.x.npy", dir);
    ck_assert_int_eq(access(file, F_OK), 0);
    snprintf(file, sizeof file, "%s/step-000001/batch.x.mb0.npy", dir);
    ck_assert_int_ne(access(file, F_OK), 0);
}
END_TEST

START_TEST(test_dumps)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "steps=3"), 0);
    char path[256], dir[300], file[400];
    temp_path(path, sizeof path, "t.jsonl");
    snprintf(dir, sizeof dir, "%s.dump", path);
    long steps[1] = {2};
    repro_digest chain;
    train(path, REPRO_TRACE_STEP, 1, steps, 1, dir, &chain, NULL);
    snprintf(file, sizeof file, "%s/step-000002/param.fc1.weight.npy", dir);
    size_t nbytes = 0;
    void *data = repro_npy_read(file, &nbytes);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(nbytes, 256 * 784 * 4);
    free(data);
    snprintf(file, sizeof file, "%s/step-000001", dir);
    ck_assert_int_ne(access(file, F_OK), 0); /* only the steps asked for */
}
END_TEST

static int exists(const char *dir, const char *rel)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return access(p, F_OK) == 0;
}

/* Dumps a PyTorch user can load: step 0 (the initial state), ranges, the
 * dropout masks and optimizer scalars, a name filter, the model described
 * in the header, and at level op a gradient dumped once. */
START_TEST(test_dumps_for_a_reader)
{
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "dumps");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[700], out[1 << 15], err[1 << 14], d[600];
    snprintf(args, sizeof args,
             "run experiments/mlp.ini --steps 4 --dump 0-4/2 -q -o %s/a/t.jsonl --set "
             "trace.level=op",
             dir);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(d, sizeof d, "%s/a/dump", dir);
    ck_assert(exists(d, "step-000000/param.fc1.weight.npy"));     /* the initial state */
    ck_assert(exists(d, "step-000000/sgd.momentum.fc1.weight.npy"));
    ck_assert(!exists(d, "step-000001"));                          /* 0-4/2: 0, 2, 4 */
    ck_assert(exists(d, "step-000002/mask.drop1.npy"));
    ck_assert(exists(d, "step-000004/optim.step_updates.npy"));
    ck_assert(exists(d, "step-000002/grad.fc1.weight.npy"));
    ck_assert(!exists(d, "step-000002/bwd.fc1.dw.npy"));          /* once, not twice */
    ck_assert(exists(d, "step-000002/fwd.fc1.npy"));              /* op outputs at level op */
    snprintf(args, sizeof args,
             "run experiments/mlp.ini --steps 2 --dump 2 --dump-only 'param.*' -q -o %s/b/t.jsonl",
             dir);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    snprintf(d, sizeof d, "%s/b/dump", dir);
    ck_assert(exists(d, "step-000002/param.fc3.bias.npy"));
    ck_assert(!exists(d, "step-000002/grad.fc3.bias.npy"));
    ck_assert(!exists(d, "step-000002/mask.drop1.npy"));
    repro_trace t;
    snprintf(d, sizeof d, "%s/a/t.jsonl", dir);
    ck_assert_int_eq(repro_trace_read(&t, d), 0);
    json_t *model = json_object_get(t.header_json, "model");
    ck_assert_ptr_nonnull(model);
    json_t *p0 = json_array_get(json_object_get(model, "params"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(p0, "name")), "fc1.weight");
    ck_assert_str_eq(json_string_value(json_object_get(p0, "layout")), "[out,in]");
    ck_assert_int_eq(json_array_size(json_object_get(model, "layers")), 7); /* fc1 relu drop fc2 relu drop fc3 */
    repro_trace_release(&t);
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 2 --dump 3-1 -o %s/c.jsonl",
             dir);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
}
END_TEST

/* The stats' order, written out: element i into lane i % 4 (non-finite
 * elements counted and added as 0), lanes combined (0+1)+(2+3). The
 * vectorized stats must give these bits exactly. */
static void stats_ref(const float *x, size_t n, double *l2, double *sum, double *mx, long *nf)
{
    double q[4] = {0}, s[4] = {0}, m[4] = {0};
    *nf = 0;
    for (size_t i = 0; i < n; i++) {
        double v = isfinite(x[i]) ? (double)x[i] : 0.0;
        *nf += !isfinite(x[i]);
        q[i % 4] += v * v;
        s[i % 4] += v;
        m[i % 4] = fabs(v) > m[i % 4] ? fabs(v) : m[i % 4];
    }
    *l2 = sqrt((q[0] + q[1]) + (q[2] + q[3]));
    *sum = (s[0] + s[1]) + (s[2] + s[3]);
    double m01 = m[0] > m[1] ? m[0] : m[1], m23 = m[2] > m[3] ? m[2] : m[3];
    *mx = m01 > m23 ? m01 : m23;
}

START_TEST(test_stats_f32_order)
{
    for (size_t n = 0; n < 40; n += 3) {
        float x[40] = {0};
        for (size_t i = 0; i < n; i++)
            x[i] = (float)((i * 7919) % 1000) * 0.37f - 150.0f + (float)i * 1e-3f;
        if (n > 5) {
            x[1] = INFINITY;
            x[4] = NAN;
            x[5] = -0.0f;
            x[n - 1] = -INFINITY;
        }
        double a[3], b[3];
        long nfa, nfb;
        repro_tensor_stats_compute("f32", x, n * 4, &a[0], &a[1], &a[2], &nfa);
        stats_ref(x, n, &b[0], &b[1], &b[2], &nfb);
        ck_assert_msg(!memcmp(a, b, sizeof a) && nfa == nfb, "stats of %zu elements differ", n);
    }
}
END_TEST

/* Random float bits, a quarter of them special: NaN (quiet, signalling,
 * either sign), +-inf, +-0, denormals; the rest ordinary values spread
 * over many exponents. */
static float special_float(uint64_t *st)
{
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17; /* xorshift64 */
    uint32_t r = (uint32_t)(*st >> 32), sign = r & 0x80000000u, bits;
    static const uint32_t specials[] = {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0x7f800000u,
                                        0x00000000u, 0x00000001u, 0x007fffffu, 0x00400000u};
    if ((r & 3) == 0)
        bits = sign | specials[(r >> 2) % 8];
    else
        bits = sign | (((r >> 2) % 60 + 97) << 23) | ((uint32_t)*st & 0x7fffffu);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Every vector path the CPU has (the recorder follows kernels/isa.h's
 * selection) against stats_ref, bitwise on the doubles: every length
 * 0..67 (each tail, at two alignments) and one over a million elements. */
START_TEST(test_stats_f32_every_path)
{
    enum { BIG = (1 << 20) + 7 };
    float *x = malloc((BIG + 1) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    uint64_t st = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < BIG + 1; i++)
        x[i] = special_float(&st);
    for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
        if (!repro_isa_supported((repro_isa)isa))
            continue;
        ck_assert_int_eq(repro_isa_select((repro_isa)isa), 0);
        for (size_t n = 0; n <= 68; n++) {
            size_t len = n < 68 ? n : BIG, off = n % 2; /* odd n start one float in */
            double a[3], b[3];
            long nfa, nfb;
            repro_tensor_stats_compute("f32", x + off, len * 4, &a[0], &a[1], &a[2], &nfa);
            stats_ref(x + off, len, &b[0], &b[1], &b[2], &nfb);
            ck_assert_msg(!memcmp(a, b, sizeof a) && nfa == nfb,
                          "stats of %zu elements differ on %s: %a %a %a %ld vs %a %a %a %ld", len,
                          repro_isa_name((repro_isa)isa), a[0], a[1], a[2], nfa, b[0], b[1], b[2],
                          nfb);
        }
    }
    repro_isa_select(repro_isa_best());
    free(x);
}
END_TEST


/* Ordinary values with a special one (NaN, inf, -0, a denormal) every few
 * hundred elements and on both sides of the vector runs' edges (256
 * elements), so the unmasked runs that must be redone and those that must
 * not both occur. */
static void sparse_specials(float *x, size_t n, uint64_t seed)
{
    static const uint32_t specials[] = {0x7fc00000u, 0xff800000u, 0x7f800000u, 0x80000000u,
                                        0x00000001u};
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++) {
        float f = special_float(&st);
        x[i] = isfinite(f) ? f : 1.5f; /* finite only, for now */
    }
    size_t at[] = {255, 256, 511, 700, 1023, 1024, 4097};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++)
        if (at[k] < n) {
            uint32_t b = specials[k % 5];
            memcpy(&x[at[k]], &b, 4);
        }
    for (size_t i = 9000; i < n; i += 9001) {
        uint32_t b = specials[i % 5];
        memcpy(&x[i], &b, 4);
    }
}

/* The pair (two tensors' stats interleaved) against stats_ref of each,
 * bitwise, on every vector path: lengths from 0 to 70 against 0..6 more,
 * either tensor the longer, densely and sparsely special data, and two
 * long tensors of different lengths. The single-tensor stats are checked
 * on the sparse data too (the dense data makes every run masked). */
START_TEST(test_stats_f32_pair_equals_single)
{
    enum { BIG = 300007 };
    float *x = malloc(BIG * sizeof *x), *y = malloc(BIG * sizeof *y);
    ck_assert(x && y);
    for (int dense = 0; dense < 2; dense++) {
        uint64_t st = 0x2545f4914f6cdd1dULL;
        if (dense)
            for (size_t i = 0; i < BIG; i++)
                x[i] = special_float(&st), y[i] = special_float(&st);
        else
            sparse_specials(x, BIG, 1), sparse_specials(y, BIG, 2);
        for (int isa = 0; isa < REPRO_ISA_COUNT; isa++) {
            if (!repro_isa_supported((repro_isa)isa))
                continue;
            ck_assert_int_eq(repro_isa_select((repro_isa)isa), 0);
            for (size_t n = 0; n <= 71; n++)
                for (size_t d = 0; d <= 6; d++) {
                    size_t nx = n < 71 ? n : BIG, ny = n < 71 ? n + d : BIG - 5 * d - 1;
                    if (d & 1) { /* y the shorter */
                        size_t t = nx;
                        nx = ny, ny = t;
                    }
                    repro_tensor_stats a, b;
                    double rx[3], ry[3];
                    long nfx, nfy;
                    repro_tensor_stats_f32_pair(x, nx, &a, y, ny, &b);
                    stats_ref(x, nx, &rx[0], &rx[1], &rx[2], &nfx);
                    stats_ref(y, ny, &ry[0], &ry[1], &ry[2], &nfy);
                    double ax[3] = {a.l2, a.sum, a.max_abs}, bx[3] = {b.l2, b.sum, b.max_abs};
                    ck_assert_msg(!memcmp(ax, rx, sizeof ax) && a.nonfinite == nfx &&
                                      !memcmp(bx, ry, sizeof bx) && b.nonfinite == nfy,
                                  "pair of %zu and %zu elements differs on %s (%s data)", nx, ny,
                                  repro_isa_name((repro_isa)isa), dense ? "dense" : "sparse");
                    double one[3];
                    long nf1;
                    repro_tensor_stats_compute("f32", y, ny * 4, &one[0], &one[1], &one[2],
                                               &nf1);
                    ck_assert_msg(!memcmp(one, ry, sizeof one) && nf1 == nfy,
                                  "stats of %zu elements differ on %s (%s data)", ny,
                                  repro_isa_name((repro_isa)isa), dense ? "dense" : "sparse");
                }
        }
    }
    repro_isa_select(repro_isa_best());
    free(x), free(y);
}
END_TEST


/* A waiting thread's side of the leaf share: help whenever a tensor is
 * posted, until told to stop; counts the leaves it took part in. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    repro_leaf_share share;
    int stop;
    long helped;
    int units; /* the helper calls repro_leaf_share_unit (else _help) */
} share_rig;

static void *share_helper(void *arg)
{
    share_rig *g = arg;
    if (g->units) { /* a kernel thread's idle work: one chunk a call, no lock held */
        for (;;) {
            pthread_mutex_lock(&g->mu);
            int stop = g->stop;
            pthread_mutex_unlock(&g->mu);
            if (stop)
                return NULL;
            if (repro_leaf_share_unit(&g->share)) {
                pthread_mutex_lock(&g->mu);
                g->helped++;
                pthread_mutex_unlock(&g->mu);
            } else {
                sched_yield();
            }
        }
    }
    pthread_mutex_lock(&g->mu);
    while (!g->stop)
        if (repro_leaf_share_help(&g->share))
            g->helped++;
        else
            pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* The poster starts only once the helper has claimed leaves (up to 10 s),
 * so the helper's part is exercised on every machine. */
static void slow_start(void *arg)
{
    repro_leaf_share *s = arg;
    for (int i = 0; i < 10000 && atomic_load(&s->next) == 0; i++)
        usleep(1000);
}

/* Leaves hashed by the poster and a helper are the one-thread tree hash's,
 * for empty, one leaf, an odd count and a short last leaf, posted one after
 * another on the same share; and the helper really takes part (it is given
 * a head start on the large tensors). _i: the helper waits on the share
 * (repro_leaf_share_help) or calls repro_leaf_share_unit as idle work. */
START_TEST(test_leaf_share_equals_tree_hash)
{
    const size_t sizes[] = {0, 100, 4096, 3 * 4096, 5 * 4096 + 7, (1 << 20) + 3, (4 << 20) + 1};
    share_rig g = {.stop = 0, .helped = 0, .units = _i};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    repro_leaf_share_init(&g.share, &g.mu, &g.cv);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, share_helper, &g), 0);
    for (int round = 0; round < 2; round++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            size_t n = sizes[k], nl = repro_leaf_count(n);
            unsigned char *d = malloc(n + 1);
            for (size_t i = 0; i < n; i++)
                d[i] = (unsigned char)(i * 7 + k + round);
            repro_digest *a = calloc(nl + 1, sizeof *a), *b = calloc(nl + 1, sizeof *b), ra;
            long shape[1] = {(long)n};
            repro_tensor_view v = {"t", "u8", 1, shape, d, n, REPRO_DIGEST_XXH3};
            ck_assert_int_eq(repro_tensor_digest(&v, &ra, a), 0);
            ck_assert_int_eq(
                repro_leaf_share_run(&g.share, d, n, b, n > (1 << 20) ? slow_start : NULL, &g.share),
                0);
            ck_assert_msg(!memcmp(a, b, nl * sizeof *a), "leaves of %zu bytes differ", n);
            free(d), free(a), free(b);
        }
    pthread_mutex_lock(&g.mu);
    g.stop = 1;
    long helped = g.helped;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(th, NULL);
    ck_assert_msg(helped > 0, "the helper never took part");
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
}
END_TEST

/* The idle side of a leaf queue: a kernel thread's idle work, one unit a
 * call, until told to stop; counts the units it hashed. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    repro_leaf_queue q;
    atomic_int stop;
    atomic_long units;
} queue_rig;

static void *queue_helper(void *arg)
{
    queue_rig *g = arg;
    while (!atomic_load(&g->stop))
        if (repro_leaf_queue_unit(&g->q))
            atomic_fetch_add(&g->units, 1);
        else
            sched_yield();
    return NULL;
}

/* A batch's task: counts its runs of task k. */
static void count_task(void *arg, int k)
{
    atomic_fetch_add(&((atomic_int *)arg)[k], 1);
}

/* Two batches posted at once, of empty, one-leaf, odd-count, short-last-
 * leaf and multi-unit tensors, hashed by an idle thread and finished by
 * their owner: every leaf is the one-thread tree hash's, under XXH3-128
 * (_i 0) and SHA-256 (_i 1); the idle thread takes part (the owner waits
 * up to 10 s for its first unit before finishing); a batch refuses a
 * tensor past its room; the second batch, posted first, also carries
 * tasks, each run exactly once. */
START_TEST(test_leaf_queue_equals_tree_hash)
{
    static const size_t sizes[2][4] = {{0, 100, 4096, (1 << 20) + 3},
                                       {3 * 4096, 5 * 4096 + 7, (4 << 20) + 1, 64 * 1024}};
    repro_digest_fn fn = _i ? REPRO_DIGEST_SHA256 : REPRO_DIGEST_XXH3;
    queue_rig g;
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    repro_leaf_queue_init(&g.q, &g.mu, &g.cv, fn);
    atomic_init(&g.stop, 0);
    atomic_init(&g.units, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, queue_helper, &g), 0);
    for (int round = 0; round < 2; round++) {
        atomic_int runs[5];
        for (int k = 0; k < 5; k++)
            atomic_init(&runs[k], 0);
        repro_leaf_batch b[2];
        unsigned char *data[2][4];
        repro_digest *got[2][4];
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(repro_leaf_batch_init(&b[k], 4), 0);
            repro_leaf_batch_clear(&b[k]);
            for (int j = 0; j < 4; j++) {
                size_t n = sizes[k][j];
                data[k][j] = malloc(n + 1);
                for (size_t i = 0; i < n; i++)
                    data[k][j][i] = (unsigned char)(i * 7 + j + 5 * k + round);
                got[k][j] = calloc(repro_leaf_count(n) + 1, sizeof(repro_digest));
                ck_assert_int_eq(repro_leaf_batch_add(&b[k], data[k][j], n, got[k][j]), 0);
            }
            ck_assert_int_eq(repro_leaf_batch_add(&b[k], data[k][0], 0, got[k][0]), -1);
            if (k == 1)
                repro_leaf_batch_tasks(&b[k], count_task, runs, 5);
            ck_assert_int_eq(k ? repro_leaf_queue_post_first(&g.q, &b[k])
                               : repro_leaf_queue_post(&g.q, &b[k]),
                             0);
        }
        for (int i = 0; i < 10000 && atomic_load(&g.units) == 0; i++)
            usleep(1000);
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(repro_leaf_queue_finish(&g.q, &b[k]), 0);
            for (int j = 0; j < 4; j++) {
                size_t n = sizes[k][j], nl = repro_leaf_count(n);
                repro_digest *want = calloc(nl + 1, sizeof *want), root;
                long shape[1] = {(long)n};
                repro_tensor_view v = {"t", "u8", 1, shape, data[k][j], n, fn};
                ck_assert_int_eq(repro_tensor_digest(&v, &root, want), 0);
                ck_assert_msg(!memcmp(want, got[k][j], nl * sizeof *want),
                              "leaves of %zu bytes differ", n);
                free(want), free(data[k][j]), free(got[k][j]);
            }
            repro_leaf_batch_release(&b[k]);
        }
        for (int k = 0; k < 5; k++)
            ck_assert_int_eq(atomic_load(&runs[k]), 1);
    }
    ck_assert_int_eq(atomic_load(&g.q.posted), 0);
    atomic_store(&g.stop, 1);
    pthread_join(th, NULL);
    ck_assert_msg(atomic_load(&g.units) > 0, "the idle thread never took part");
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
}
END_TEST

Suite *record_suite(void)
{
    Suite *s = suite_create("record");
    TCase *tc = tcase_create("record");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_trace_round_trip_and_order);
    tcase_add_test(tc, test_levels_and_every_keep_the_chain);
    tcase_add_test(tc, test_hashing_never_changes_training);
    tcase_add_test(tc, test_dumps);
    tcase_add_test(tc, test_dumps_every_micro_batch);
    tcase_add_test(tc, test_overlapped_hasher_equals_synchronous);
    tcase_add_test(tc, test_inline_where_threads_fill_the_cpus);
    tcase_add_test(tc, test_hasher_shares_loader);
    tcase_add_test(tc, test_dumps_for_a_reader);
    tcase_add_test(tc, test_stats_f32_order);
    tcase_add_test(tc, test_stats_f32_every_path);
    tcase_add_test(tc, test_stats_f32_pair_equals_single);
    tcase_add_loop_test(tc, test_leaf_share_equals_tree_hash, 0, 2);
    tcase_add_loop_test(tc, test_leaf_queue_equals_tree_hash, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
