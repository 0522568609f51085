/* Gradient accumulation and zeroing modes: zero_grad = zero and none give
 * bitwise identical runs (with and without accumulation, fp32 and bf16, mlp
 * and cnn); a step consumes accumulation_steps batches; the kernels'
 * "accumulate onto +0" equals "overwrite"; and k micro-batches of b agree
 * with one batch of k*b within a stated tolerance, bitwise only where the
 * summation order happens to coincide (README, "Accumulation"). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "kernels/cpu/ops.h"
#include "core/train.h"

static repro_config cfg;

static void load(const char *path)
{
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
}

static void set(const char *assignment)
{
    ck_assert_int_eq(repro_config_set(&cfg, assignment), 0);
}

typedef struct {
    float *params, *grads; /* all parameters / last gradients, concatenated */
    long n;
    double *losses;
} run_result;

static void run(run_result *r)
{
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    r->losses = calloc((size_t)cfg.train_steps, sizeof(double));
    for (long s = 0; s < cfg.train_steps; s++) {
        ck_assert_int_eq(repro_trainer_step(&t), 0);
        r->losses[s] = t.loss;
    }
    r->n = repro_model_param_count(&t.model);
    r->params = malloc((size_t)r->n * sizeof(float));
    r->grads = malloc((size_t)r->n * sizeof(float));
    long off = 0;
    for (int i = 0; i < t.model.nparams; i++) {
        const repro_param *p = &t.model.params[i];
        memcpy(r->params + off, p->data, (size_t)p->numel * sizeof(float));
        memcpy(r->grads + off, p->grad, (size_t)p->numel * sizeof(float));
        off += p->numel;
    }
    repro_trainer_release(&t);
}

static void release(run_result *r)
{
    free(r->params);
    free(r->grads);
    free(r->losses);
}

static int bitwise_equal(const run_result *a, const run_result *b, long steps)
{
    return a->n == b->n && !memcmp(a->params, b->params, (size_t)a->n * sizeof(float)) &&
           !memcmp(a->grads, b->grads, (size_t)a->n * sizeof(float)) &&
           !memcmp(a->losses, b->losses, (size_t)steps * sizeof(double));
}

/* zero vs none under the current cfg (plus `extra` settings). */
static void expect_modes_identical(const char *exp, const char *const *extra, int nextra)
{
    run_result a, b;
    load(exp);
    for (int i = 0; i < nextra; i++)
        set(extra[i]);
    set("zero_grad=zero");
    run(&a);
    set("zero_grad=none");
    run(&b);
    ck_assert_msg(bitwise_equal(&a, &b, cfg.train_steps), "%s: zero_grad zero != none", exp);
    release(&a);
    release(&b);
}

START_TEST(test_modes_identical_mlp_k1)
{
    const char *x[] = {"steps=20"};
    expect_modes_identical("experiments/mlp.ini", x, 1);
}
END_TEST

START_TEST(test_modes_identical_mlp_k3)
{
    const char *x[] = {"steps=15", "accumulation_steps=3"};
    expect_modes_identical("experiments/mlp.ini", x, 2);
}
END_TEST

START_TEST(test_modes_identical_mlp_bf16_k2)
{
    /* bf16 adds each micro-batch's rounded gradient in float: the path where
     * a "+0 then add" would turn a -0 into +0 (see train.c, zero_grad). */
    const char *x[] = {"steps=15", "accumulation_steps=2", "precision=bf16"};
    expect_modes_identical("experiments/mlp.ini", x, 3);
}
END_TEST

START_TEST(test_modes_identical_cnn_fp16_k2)
{
    const char *x[] = {"steps=6", "accumulation_steps=2", "precision=fp16"};
    expect_modes_identical("experiments/cnn.ini", x, 3);
}
END_TEST

START_TEST(test_modes_identical_cnn_k2)
{
    const char *x[] = {"steps=8", "accumulation_steps=2"};
    expect_modes_identical("experiments/cnn.ini", x, 2);
}
END_TEST

/* The kernels' contract behind the identity: a sum that starts from the
 * buffer's +0 (accumulate onto a memset buffer) equals one that starts from
 * the literal +0 (overwrite), even when every term is -0. */
START_TEST(test_kernel_accumulate_onto_zero_is_overwrite)
{
    enum { B = 5, IN = 13, OUT = 11 };
    float dy[B * OUT], x[B * IN], w1[OUT * IN], w2[OUT * IN], b1[OUT], b2[OUT];
    for (int i = 0; i < B * OUT; i++)
        dy[i] = (i % 3 == 0) ? -0.0f : (float)((i * 37) % 17 - 8) / 7.0f;
    for (int i = 0; i < B * IN; i++)
        x[i] = (i % 4 == 0) ? -0.0f : (float)((i * 29) % 13 - 6) / 5.0f;
    repro_pool *pool;
    ck_assert_int_eq(repro_pool_new(&pool, 2), 0);
    memset(w1, 0, sizeof w1);
    memset(b1, 0, sizeof b1);
    memset(w2, 0xff, sizeof w2); /* garbage: overwrite must not read it */
    memset(b2, 0xff, sizeof b2);
    repro_linear_backward_weight(pool, dy, x, w1, B, IN, OUT, 1);
    repro_linear_backward_bias(pool, dy, b1, B, OUT, 1);
    repro_linear_backward_weight(pool, dy, x, w2, B, IN, OUT, 0);
    repro_linear_backward_bias(pool, dy, b2, B, OUT, 0);
    ck_assert(!memcmp(w1, w2, sizeof w1));
    ck_assert(!memcmp(b1, b2, sizeof b1));
    repro_pool_free(pool);
}
END_TEST

START_TEST(test_step_consumes_k_batches)
{
    load("experiments/mlp.ini");
    set("accumulation_steps=3");
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    ck_assert_int_eq(repro_trainer_step(&t), 0);
    ck_assert_int_eq(repro_trainer_step(&t), 0);
    repro_loader_position pos;
    repro_loader_get_position(t.loader, &pos);
    ck_assert_int_eq(pos.index, 6);
    ck_assert_int_eq(t.step, 2);
    ck_assert_int_eq(t.updates, 2);
    repro_trainer_release(&t);
}
END_TEST

/* Largest |a - b| / max|b| over all parameters (a relative L-inf distance). */
static double rel_diff(const float *a, const float *b, long n)
{
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num)
            num = d;
        if (fabs((double)b[i]) > den)
            den = fabs((double)b[i]);
    }
    return num / den;
}

/* k micro-batches of b vs one batch of k*b: the same samples (the loader
 * hands out consecutive slices of one permutation), dropout off so no
 * stream differs. Tolerance: relative 1e-4 of the largest parameter after
 * 30 steps (observed well below; float rounding differences grow slowly). */
static void compare_big_batch(const char *exp, int b, int k, int steps, int expect_bitwise)
{
    run_result micro, big;
    char buf[64];
    load(exp);
    set("dropout=0");
    /* whole-batch sums (one shard): the running sum of the micro-batches
     * is then the big batch's sum term for term (the shard rule cuts a
     * batch of b and one of k*b into different shards) */
    set("shard_size=0");
    snprintf(buf, sizeof buf, "steps=%d", steps);
    set(buf);
    snprintf(buf, sizeof buf, "batch_size=%d", b);
    set(buf);
    snprintf(buf, sizeof buf, "accumulation_steps=%d", k);
    set(buf);
    run(&micro);
    snprintf(buf, sizeof buf, "batch_size=%d", b * k);
    set(buf);
    set("accumulation_steps=1");
    run(&big);
    int same = !memcmp(micro.params, big.params, (size_t)micro.n * sizeof(float));
    double rd = rel_diff(micro.params, big.params, micro.n);
    double dl = fabs(micro.losses[steps - 1] - big.losses[steps - 1]);
    ck_assert_msg(same == expect_bitwise, "%s: %d x %d vs %d: bitwise %s (rel diff %.3g)", exp, k,
                  b, k * b, same ? "equal" : "different", rd);
    ck_assert_msg(rd < 1e-4, "%s: %d x %d vs %d: params rel diff %.3g", exp, k, b, k * b, rd);
    ck_assert_msg(dl < 1e-4, "%s: final losses differ by %.3g", exp, dl);
    release(&micro);
    release(&big);
}

/* b = 12, k = 3: the loss gradient is divided by 12, rounded, then by 3,
 * which does not round like one division by 36 (when b or k is a power of
 * two one of the two divisions is exact and the results coincide): bits
 * differ, values agree. */
START_TEST(test_micro_vs_big_batch_mlp_k3)
{
    compare_big_batch("experiments/mlp.ini", 12, 3, 30, 0);
}
END_TEST

/* conv's filter gradient sums per output column, then adds the columns: a
 * second micro-batch continues from the first one's total, a different
 * order than one batch's column sums. */
START_TEST(test_micro_vs_big_batch_cnn_k2)
{
    compare_big_batch("experiments/cnn.ini", 32, 2, 20, 0);
}
END_TEST

/* The exception worth knowing: linear layers when b or k is a power of
 * two. (x / b) / k then rounds exactly like x / (k b), and every linear
 * gradient is one sum over the batch in ascending sample order that the
 * accumulate flag simply continues, so 2 x 32 and 3 x 16 reproduce 64 and
 * 48 bit for bit — the parameters; the logged loss is a mean of means and
 * may differ in its last bits. */
START_TEST(test_micro_vs_big_batch_mlp_bitwise)
{
    compare_big_batch("experiments/mlp.ini", 32, 2, 30, 1);
    compare_big_batch("experiments/mlp.ini", 16, 3, 30, 1);
}
END_TEST

Suite *accumulation_suite(void)
{
    Suite *s = suite_create("accumulation");
    TCase *tc = tcase_create("accumulation");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_modes_identical_mlp_k1);
    tcase_add_test(tc, test_modes_identical_mlp_k3);
    tcase_add_test(tc, test_modes_identical_mlp_bf16_k2);
    tcase_add_test(tc, test_modes_identical_cnn_fp16_k2);
    tcase_add_test(tc, test_modes_identical_cnn_k2);
    tcase_add_test(tc, test_kernel_accumulate_onto_zero_is_overwrite);
    tcase_add_test(tc, test_step_consumes_k_batches);
    tcase_add_test(tc, test_micro_vs_big_batch_mlp_k3);
    tcase_add_test(tc, test_micro_vs_big_batch_cnn_k2);
    tcase_add_test(tc, test_micro_vs_big_batch_mlp_bitwise);
    suite_add_tcase(s, tc);
    return s;
}
