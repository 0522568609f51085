/* The recorder and trace writer, in process: what a trace holds, in which
 * order; that trace levels and trace_every change only the detail, never
 * the chain; that hashing never changes training; and dumps. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "util/npy.h"
#include "core/train_record.h"
#include "record/trace.h"
#include "core/train.h"
#include "record/hash.h"
#include "record/leaf_hasher.h"
#include "record/stats.h"

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
    char dir[] = "/tmp/repro-rec-XXXXXX";
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


START_TEST(test_leaf_hasher_equals_tree_hash)
{
    /* Two threads' leaves are the one-thread tree hash's, for empty, one
     * leaf, an odd count and a short last leaf; reused across calls. */
    const size_t sizes[] = {0, 100, 4096, 3 * 4096, 5 * 4096 + 7, (1 << 20) + 3};
    repro_leaf_hasher *h;
    ck_assert_int_eq(repro_leaf_hasher_new(&h), 0);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k], nl = repro_leaf_count(n);
        unsigned char *d = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            d[i] = (unsigned char)(i * 7 + k);
        repro_digest *a = calloc(nl + 1, sizeof *a), *b = calloc(nl + 1, sizeof *b), ra;
        long shape[1] = {(long)n};
        repro_tensor_view v = {"t", "u8", 1, shape, d, n};
        ck_assert_int_eq(repro_tensor_digest(&v, &ra, a), 0);
        ck_assert_int_eq(repro_leaf_hasher_run(h, d, n, b), 0);
        ck_assert_msg(!memcmp(a, b, nl * sizeof *a), "leaves of %zu bytes differ", n);
        free(d), free(a), free(b);
    }
    repro_leaf_hasher_free(h);
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
    tcase_add_test(tc, test_stats_f32_order);
    tcase_add_test(tc, test_leaf_hasher_equals_tree_hash);
    suite_add_tcase(s, tc);
    return s;
}
