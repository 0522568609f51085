/* End-to-end training properties the determinism contract promises:
 * the loss falls on both shipped experiments; final parameters are
 * bit-identical for any kernel thread count; in augment_seed = sample mode
 * for any loader worker count; and in augment_seed = worker mode the bits do
 * change with the worker count (the PyTorch pitfall is real). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/train.h"
#include "testutil.h"

static repro_config cfg;
static int last_helped; /* the last train_params run's loader was cooperative */

static void load(const char *path)
{
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
}

static void set(const char *assignment)
{
    ck_assert_int_eq(repro_config_set(&cfg, assignment), 0);
}

/* Trains cfg and returns all parameters concatenated (caller frees);
 * *losses (optional) gets the per-step losses. */
static float *train_params(long *nparams, double **losses)
{
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    double *l = calloc((size_t)cfg.train_steps, sizeof *l);
    for (long s = 0; s < cfg.train_steps; s++) {
        ck_assert_int_eq(repro_trainer_step(&t), 0);
        l[s] = t.loss;
    }
    long n = repro_model_param_count(&t.model);
    float *all = malloc((size_t)n * sizeof(float)), *p = all;
    for (int i = 0; i < t.model.nparams; i++) {
        memcpy(p, t.model.params[i].data, (size_t)t.model.params[i].numel * sizeof(float));
        p += t.model.params[i].numel;
    }
    *nparams = n;
    last_helped = t.loader_helped;
    if (losses)
        *losses = l;
    else
        free(l);
    repro_trainer_release(&t);
    return all;
}

static void expect_loss_falls(const char *path)
{
    load(path);
    long n;
    double *l;
    free(train_params(&n, &l));
    long steps = cfg.train_steps;
    double tail = 0;
    for (long s = steps - 10; s < steps; s++)
        tail += l[s] / 10;
    ck_assert_msg(tail < 0.5 * l[0], "%s: loss %.4f -> %.4f (mean of last 10) did not halve", path,
                  l[0], tail);
    free(l);
}

START_TEST(test_mlp_loss_falls) { expect_loss_falls("experiments/mlp.ini"); }
END_TEST

START_TEST(test_cnn_loss_falls) { expect_loss_falls("experiments/cnn.ini"); }
END_TEST

START_TEST(test_heldout_accuracy_beats_chance)
{
    load("experiments/mlp.ini");
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    double loss0, acc0, loss1, acc1;
    repro_trainer_evaluate(&t, &loss0, &acc0);
    for (long s = 0; s < cfg.train_steps; s++)
        ck_assert_int_eq(repro_trainer_step(&t), 0);
    repro_trainer_evaluate(&t, &loss1, &acc1);
    ck_assert_double_lt(loss1, loss0);
    ck_assert_double_gt(acc1, 0.6); /* chance is 0.1 */
    repro_trainer_release(&t);
}
END_TEST

/* Trains the current cfg once per value of `key` and asserts memcmp-equal
 * final parameters and identical loss sequences. */
static void expect_invariant(const char *key, const char *const *values, int nvalues)
{
    float *ref = NULL;
    double *ref_l = NULL;
    long ref_n = 0;
    char a[64];
    for (int i = 0; i < nvalues; i++) {
        snprintf(a, sizeof a, "%s=%s", key, values[i]);
        set(a);
        long n;
        double *l;
        float *p = train_params(&n, &l);
        if (!ref) {
            ref = p, ref_l = l, ref_n = n;
            continue;
        }
        ck_assert_int_eq(n, ref_n);
        ck_assert_msg(memcmp(p, ref, (size_t)n * sizeof(float)) == 0,
                      "%s=%s changed the final parameters (vs %s)", key, values[i], values[0]);
        ck_assert_msg(memcmp(l, ref_l, (size_t)cfg.train_steps * sizeof(double)) == 0,
                      "%s=%s changed the losses", key, values[i]);
        free(p);
        free(l);
    }
    free(ref);
    free(ref_l);
}

static const char *const threads[] = {"1", "2", "3"};
static const char *const workers[] = {"0", "1", "3"};

START_TEST(test_mlp_thread_invariance)
{
    load("experiments/mlp.ini");
    set("steps=25");
    expect_invariant("threads", threads, 3);
}
END_TEST

START_TEST(test_cnn_thread_invariance)
{
    load("experiments/cnn.ini");
    set("steps=25");
    expect_invariant("threads", threads, 3);
}
END_TEST

/* Small epochs so that the runs cross epoch boundaries (new permutation,
 * new base_seed, new workers); every augmentation on. */
static void small_augmented(void)
{
    set("train_size=640");
    set("steps=25");
    set("shift=2");
    set("flip=on");
    set("noise=0.1");
}

START_TEST(test_worker_invariance_sample_mode)
{
    load("experiments/cnn.ini");
    small_augmented();
    set("augment_seed=sample");
    expect_invariant("num_workers", workers, 3);
    load("experiments/mlp.ini");
    small_augmented();
    set("augment_seed=sample");
    set("threads=2");
    expect_invariant("num_workers", workers, 3);
}
END_TEST

START_TEST(test_worker_mode_pitfall)
{
    /* PyTorch's behaviour: reproducible for a fixed num_workers ... */
    load("experiments/cnn.ini");
    small_augmented();
    set("augment_seed=worker");
    static const char *const three[] = {"3", "3"};
    expect_invariant("num_workers", three, 2);
    /* ... but the bits change with num_workers. Fails, never skips, if not. */
    long n1, n3;
    set("num_workers=1");
    float *p1 = train_params(&n1, NULL);
    set("num_workers=3");
    float *p3 = train_params(&n3, NULL);
    ck_assert_int_eq(n1, n3);
    ck_assert_msg(memcmp(p1, p3, (size_t)n1 * sizeof(float)) != 0,
                  "augment_seed=worker gave identical bits for 1 and 3 workers");
    free(p1);
    free(p3);
}
END_TEST

/* Kernel threads on every CPU the process may use: the loader's workers
 * become cooperative streams filled in the kernel threads' waits
 * (train.c, lends_idle_threads). The bits stay those of worker threads,
 * in worker mode too, where each stream's RNG order matters. The process
 * is held to two CPUs so that 2 threads fill them on any machine. */
START_TEST(test_cooperative_loader_same_bits)
{
    tu_cpu_mask all;
    tu_hold_to_cpus(2, &all);
    load("experiments/cnn.ini");
    small_augmented();
    set("augment_seed=worker");
    set("num_workers=3");
    long n1, n2;
    set("threads=1");
    float *p1 = train_params(&n1, NULL);
    ck_assert_int_eq(last_helped, 0);
    set("threads=2");
    float *p2 = train_params(&n2, NULL);
    ck_assert_int_eq(last_helped, 1);
    set("threads=3");
    float *p3 = train_params(&n2, NULL);
    ck_assert_int_eq(last_helped, 1);
    tu_restore_cpus(&all);
    ck_assert_int_eq(n1, n2);
    ck_assert_msg(memcmp(p1, p2, (size_t)n1 * sizeof(float)) == 0,
                  "the cooperative loader (threads=2) changed the bits");
    ck_assert_msg(memcmp(p1, p3, (size_t)n1 * sizeof(float)) == 0,
                  "the cooperative loader (threads=3) changed the bits");
    free(p1);
    free(p2);
    free(p3);
}
END_TEST

START_TEST(test_seed_changes_everything)
{
    /* Negative control for the invariance tests: they can fail. */
    load("experiments/mlp.ini");
    set("steps=5");
    long n;
    float *a = train_params(&n, NULL);
    set("seed=1235");
    float *b = train_params(&n, NULL);
    ck_assert(memcmp(a, b, (size_t)n * sizeof(float)) != 0);
    free(a);
    free(b);
}
END_TEST

/* The trainer's observer (train.h): per step, with accumulation_steps 2,
 * the hooks come in the order the recorder's waits rely on (before the
 * first backward, after each micro-batch, after the last backward, before
 * and after the update, with t->step counting the step only then); a
 * failing hook fails the step; release detaches it. */
typedef struct {
    char log[256];
    int fail_after_update, released;
    const repro_trainer *t;
} watch;

static void note(watch *w, const char *what)
{
    strncat(w->log, what, sizeof w->log - strlen(w->log) - 1);
}

static int w_before_backward(void *c) { note(c, "B"); return 0; }
static int w_micro_batch(void *c, int j) { note(c, j ? "m1" : "m0"); return 0; }
static int w_after_backward(void *c) { note(c, "b"); return 0; }
static int w_before_update(void *c) { note(c, "U"); return 0; }

static int w_after_update(void *c)
{
    watch *w = c;
    char step[16];
    snprintf(step, sizeof step, "u%ld ", w->t->step);
    note(w, step);
    return w->fail_after_update ? -1 : 0;
}

static long w_chain(void *c, repro_digest *chain)
{
    (void)c;
    memset(chain, 0, sizeof *chain);
    return 0;
}

static void w_release(void *c)
{
    ((watch *)c)->released++;
}

START_TEST(test_observer_hooks_in_step_order)
{
    static const repro_train_observer_ops ops = {w_before_backward, w_micro_batch,
                                                 w_after_backward,  w_before_update,
                                                 w_after_update,    w_chain,
                                                 w_release};
    load("experiments/mlp.ini");
    set("data.train_size=256");
    set("train.accumulation_steps=2");
    repro_trainer t;
    ck_assert_int_eq(repro_trainer_init(&t, &cfg), 0);
    watch w = {.t = &t};
    t.observer = (repro_train_observer){&ops, &w};
    ck_assert_int_eq(repro_trainer_step(&t), 0);
    ck_assert_int_eq(repro_trainer_step(&t), 0);
    ck_assert_str_eq(w.log, "Bm0m1bUu1 Bm0m1bUu2 ");
    w.fail_after_update = 1;
    ck_assert_int_eq(repro_trainer_step(&t), -1);
    repro_trainer_release(&t);
    ck_assert_int_eq(w.released, 1);
}
END_TEST

Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_mlp_loss_falls);
    tcase_add_test(tc, test_cnn_loss_falls);
    tcase_add_test(tc, test_heldout_accuracy_beats_chance);
    tcase_add_test(tc, test_mlp_thread_invariance);
    tcase_add_test(tc, test_cnn_thread_invariance);
    tcase_add_test(tc, test_worker_invariance_sample_mode);
    tcase_add_test(tc, test_worker_mode_pitfall);
    tcase_add_test(tc, test_cooperative_loader_same_bits);
    tcase_add_test(tc, test_seed_changes_everything);
    tcase_add_test(tc, test_observer_hooks_in_step_order);
    suite_add_tcase(s, tc);
    return s;
}
