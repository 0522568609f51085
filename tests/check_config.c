/* The strict experiment config: shipped files load, defaults round-trip
 * through the dump, and every error path names file:line (exit code 2). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "util/error.h"
#include "testutil.h"

static repro_config cfg; /* large; tests run in forked processes */

/* Loads `text` as an experiment; expects failure with a message containing
 * "<path>:<line>: " and `phrase`. line 0: no line expected, just the path. */
static void expect_error(const char *text, int line, const char *phrase)
{
    char path[256], want[300];
    tu_write_temp(path, sizeof path, "bad.ini", text);
    int rc = repro_config_load(&cfg, path);
    if (rc == 0)
        rc = repro_config_validate(&cfg);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    const char *msg = repro_error_message();
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    else
        snprintf(want, sizeof want, "%s", path);
    ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
    ck_assert_msg(strstr(msg, phrase) != NULL, "message '%s' lacks '%s'", msg, phrase);
}

START_TEST(test_shipped_experiments_load)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_validate(&cfg), 0);
    ck_assert_str_eq(cfg.name, "mlp");
    ck_assert_int_eq(cfg.model_type, REPRO_MODEL_MLP);
    ck_assert_int_eq(cfg.model_hidden_n, 2);
    ck_assert_int_eq(cfg.model_hidden[0], 256);
    ck_assert_int_eq(cfg.model_hidden[1], 128);
    ck_assert_int_eq(cfg.train_batch_size, 64);
    ck_assert_int_gt(cfg.line[REPRO_KEY_model_type], 0);

    ck_assert_int_eq(repro_config_load(&cfg, "experiments/cnn.ini"), 0);
    ck_assert_int_eq(repro_config_validate(&cfg), 0);
    ck_assert_int_eq(cfg.model_type, REPRO_MODEL_CNN);
    ck_assert_int_eq(cfg.model_conv_channels_n, 2);
    ck_assert_int_eq(cfg.model_conv_channels[0], 8);
    ck_assert_int_eq(cfg.model_conv_channels[1], 16);
}
END_TEST

START_TEST(test_dump_round_trips)
{
    /* Effective config -> INI -> load gives the same values, key by key. */
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/cnn.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "lr=0.1234567890123"), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    repro_config_dump(&cfg, f);
    fclose(f);
    char path[256];
    tu_write_temp(path, sizeof path, "dump.ini", text);
    static repro_config back;
    ck_assert_int_eq(repro_config_load(&back, path), 0);
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        char a[2048], b[2048];
        repro_config_value_str(&cfg, k, a, sizeof a);
        repro_config_value_str(&back, k, b, sizeof b);
        ck_assert_str_eq(a, b);
    }
    ck_assert_double_eq(back.train_lr, 0.1234567890123);
    free(text);
}
END_TEST

START_TEST(test_defaults_are_valid)
{
    repro_config_defaults(&cfg);
    ck_assert_int_eq(repro_config_validate(&cfg), 0);
    ck_assert_int_eq(cfg.train_deterministic, REPRO_DETERMINISTIC_ON);
    ck_assert_int_eq(cfg.train_benchmark, 0);
    ck_assert_int_eq(cfg.data_augment_seed, 0); /* sample */
}
END_TEST

START_TEST(test_error_paths)
{
    expect_error("[model]\ntype = mlp\n[bogus]\nx = 1\n", 3, "unknown section [bogus]");
    expect_error("[model]\n[empty_unknown]\n", 2, "unknown section [empty_unknown]");
    expect_error("[model]\ntype = mlp\nwidth = 3\n", 3, "unknown key 'width' in section [model]");
    expect_error("[train]\nlr = 0.1\n\nlr = 0.2\n", 4, "duplicate key 'lr' (first set on line 2)");
    expect_error("[train]\nsteps = ten\n", 2, "'ten' is not an integer");
    expect_error("[train]\nsteps = 0\n", 2, "out of range");
    expect_error("[train]\nsteps = 12x\n", 2, "not an integer");
    expect_error("[train]\nthreads = 99999999999999999999\n", 2, "not an integer");
    expect_error("[train]\nlr = fast\n", 2, "'fast' is not a number");
    expect_error("[train]\nlr = nan\n", 2, "not a finite number");
    expect_error("[train]\nlr = inf\n", 2, "not a finite number");
    expect_error("[train]\nlr = 0\n", 2, "out of range (0, 10]");
    expect_error("[train]\nlr = -1\n", 2, "out of range");
    expect_error("[model]\ndropout = 1.5\n", 2, "out of range [0, 0.95]");
    expect_error("[train]\noptimizer = rmsprop\n", 2, "'rmsprop' is not one of sgd|adamw");
    expect_error("[train]\ndeterministic = maybe\n", 2, "'maybe' is not one of on|off|warn");
    expect_error("[train]\nbenchmark = maybe\n", 2, "'maybe' is not on/off");
    expect_error("[variant]\nlinear.bwd_weight = fast\n", 2, "'fast' is not one of ordered|atomic");
    expect_error("[variant]\nlinear.bwd_weight = atomic\n", 2, "deterministic = on refuses it");
    expect_error("[train]\nseed = -5\n", 2, "not an unsigned integer");
    expect_error("[model]\nhidden = 256,,128\n", 2, "comma-separated list");
    expect_error("[model]\nhidden = 256,0\n", 2, "0 is out of range");
    expect_error("[model]\nhidden = 1,2,3,4,5,6,7,8,9\n", 2, "more than 8 entries");
    expect_error("steps = 3\n[train]\n", 1, "key 'steps' outside a section");
    expect_error("[train]\nthis line has no equals sign\n", 2, "syntax error");
    expect_error("[train\nsteps = 3\n", 1, "syntax error");
    expect_error("[data]\ndataset = idx\n", 2, "dataset = idx needs train_images and train_labels");
    expect_error("[data]\ndataset = idx\ntrain_images = a\ntrain_labels = b\ntest_images = c\n", 5,
                 "test_images and test_labels go together");
    expect_error("[model]\ntype = cnn\nconv_channels = 4,4,4,4\n", 3, "shrink 28x28 to nothing");
    /* A line longer than inih's buffer is refused, not silently split. */
    char longline[400];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "[train]\n; ", 10);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = '\0';
    expect_error(longline, 2, "line longer than");
}
END_TEST

START_TEST(test_missing_file)
{
    ck_assert_int_eq(repro_config_load(&cfg, "/nonexistent/x.ini"), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "/nonexistent/x.ini: cannot open"));
}
END_TEST

START_TEST(test_overrides)
{
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "train.steps=7"), 0);
    ck_assert_int_eq(cfg.train_steps, 7);
    ck_assert_int_eq(cfg.line[REPRO_KEY_train_steps], -1);
    ck_assert_int_eq(repro_config_set(&cfg, "num_workers=3"), 0); /* unambiguous short form */
    ck_assert_int_eq(cfg.data_num_workers, 3);
    ck_assert_int_eq(repro_config_set(&cfg, "hidden=32"), 0);
    ck_assert_int_eq(cfg.model_hidden_n, 1);

    ck_assert_int_eq(repro_config_set(&cfg, "train.steps=abc"), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "--set train.steps=abc: steps: 'abc'"));
    ck_assert_int_eq(repro_config_set(&cfg, "nosuch=1"), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "unknown key 'nosuch'"));
    ck_assert_int_eq(repro_config_set(&cfg, "model.seed=1"), -1); /* wrong section */
    ck_assert_int_eq(repro_config_set(&cfg, "steps"), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "expected KEY=VALUE"));
    ck_assert_int_eq(repro_config_find_key("train.seed"), REPRO_KEY_train_seed);
    ck_assert_int_eq(repro_config_find_key("seed"), REPRO_KEY_train_seed);
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_shipped_experiments_load);
    tcase_add_test(tc, test_dump_round_trips);
    tcase_add_test(tc, test_defaults_are_valid);
    tcase_add_test(tc, test_error_paths);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_overrides);
    suite_add_tcase(s, tc);
    return s;
}
