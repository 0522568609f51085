/* The strict experiment config: shipped files load, defaults round-trip
 * through the dump, and every error path names file:line (exit code 2). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The keys every experiment must set, for cases about something else
 * (appended, so the line numbers of the cases stay). */
#define REQ "[model]\ntype = mlp\n[train]\nsteps = 1\n"

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
    /* Numbers a double cannot hold: each says which way (both said "is
     * not a number"); the file:line comes with them. */
    expect_error("[train]\nlr = 1e-320\n", 2,
                 "lr: '1e-320' underflows floating point (not zero, but closer to it");
    expect_error("[train]\nlr = 1e400\n", 2, "lr: '1e400' overflows floating point");
    expect_error("[train]\nlr = -1e400\n", 2, "lr: '-1e400' overflows floating point");
    expect_error("[train]\n\nweight_decay = 1e-400\n", 3, "'1e-400' underflows floating point");
    expect_error("[train]\nlr = nan\n", 2, "not a finite number");
    expect_error("[train]\nlr = inf\n", 2, "not a finite number");
    expect_error("[train]\nlr = 0\n", 2, "out of range (0, 10]");
    expect_error("[train]\nlr = -1\n", 2, "out of range");
    expect_error("[model]\ndropout = 1.5\n", 2, "out of range [0, 0.95]");
    expect_error("[train]\noptimizer = rmsprop\n", 2, "'rmsprop' is not one of sgd|adamw");
    expect_error("[train]\ndeterministic = maybe\n", 2, "'maybe' is not one of on|off|warn");
    expect_error("[train]\nbenchmark = maybe\n", 2, "'maybe' is not on/off");
    expect_error("[variant]\nlinear.bwd_weight = fast\n", 2, "'fast' is not one of ordered|atomic");
    expect_error("[variant]\nlinear.bwd_weight = atomic\n" REQ, 2, "deterministic = on refuses it");
    expect_error("[train]\nseed = -5\n", 2, "not an unsigned integer");
    expect_error("[model]\nhidden = 256,,128\n", 2, "comma-separated list");
    expect_error("[model]\nhidden = 256,0\n", 2, "0 is out of range");
    expect_error("[model]\nhidden = 1,2,3,4,5,6,7,8,9\n", 2, "more than 8 entries");
    expect_error("steps = 3\n[train]\n", 1, "key 'steps' outside a section");
    expect_error("[train]\nthis line has no equals sign\n", 2, "syntax error");
    expect_error("[train\nsteps = 3\n", 1, "syntax error");
    expect_error("[data]\ndataset = idx\n" REQ, 2, "dataset = idx needs train_images and train_labels");
    expect_error("[data]\ndataset = idx\ntrain_images = a\ntrain_labels = b\ntest_images = c\n" REQ,
                 5, "test_images and test_labels go together");
    expect_error("[model]\ntype = cnn\nconv_channels = 4,4,4,4\n[train]\nsteps = 1\n", 3,
                 "shrink 28x28 to nothing");
    /* A line longer than inih's buffer is refused, not silently split. */
    char longline[400];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "[train]\n; ", 10);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = '\0';
    expect_error(longline, 2, "line longer than");
}
END_TEST

/* Loads `len` bytes (which may hold NULs) as an experiment; expects the
 * error at `line` (0: the file, no line) with `phrase`. */
static void expect_error_bytes(const char *bytes, size_t len, int line, const char *phrase)
{
    char path[256], want[300];
    tu_write_temp(path, sizeof path, "bad.ini", "");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(repro_config_load(&cfg, path), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    const char *msg = repro_error_message();
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    else
        snprintf(want, sizeof want, "%s: ", path);
    ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
    ck_assert_msg(strstr(msg, phrase) != NULL, "message '%s' lacks '%s'", msg, phrase);
}

/* An experiment names its model and its steps: an empty or comment-only
 * file used to train the defaults and exit 0. */
START_TEST(test_required_keys)
{
    expect_error("", 0, "missing [model] type and [train] steps");
    expect_error("; nothing but a comment\n# and another\n\n", 0,
                 "missing [model] type and [train] steps");
    expect_error("[model]\ntype = mlp\n", 0, "missing [train] steps");
    expect_error("[train]\nsteps = 5\n", 0, "missing [model] type");
    expect_error("[model]\nhidden = 8\n[train]\nseed = 1\n", 0,
                 "an experiment must name its model ([model] type) and its length");
    /* set at their default values is enough */
    char path[256];
    tu_write_temp(path, sizeof path, "ok.ini", "[model]\ntype = mlp\n[train]\nsteps = 200\n");
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
}
END_TEST

/* A NUL byte anywhere is an error naming its line: fgets ended the line
 * there, so "steps = 10<NUL>00" read as 10, and a key after a NUL in a
 * comment line was applied. */
START_TEST(test_nul_bytes)
{
    static const char value[] = "[model]\ntype = mlp\n[train]\nsteps = 10\0" "00\n";
    expect_error_bytes(value, sizeof value - 1, 4, "NUL byte");
    static const char comment[] = "[model]\ntype = mlp\n[train]\nsteps = 3\n; note\0\nseed = 7\n";
    expect_error_bytes(comment, sizeof comment - 1, 5, "NUL byte");
    static const char first[] = "\0[model]\ntype = mlp\n[train]\nsteps = 3\n";
    expect_error_bytes(first, sizeof first - 1, 1, "NUL byte");
}
END_TEST

/* Text after a section header is an error (inih dropped it, key and all);
 * a blank or a comment after the ']' is fine. */
START_TEST(test_section_header_trailing_text)
{
    expect_error("[model]\ntype = mlp\n[train] steps = 9\n", 3,
                 "text after the section header [train]: 'steps = 9'");
    expect_error("[model]\ntype = mlp\n[train]junk\nsteps = 9\n", 3,
                 "text after the section header [train]: 'junk'");
    expect_error("[model]]\ntype = mlp\n", 1, "text after the section header [model]");
    char path[256];
    tu_write_temp(path, sizeof path, "ok.ini",
                  "[model]  ; the network\ntype = mlp\n[train]\t# length\nsteps = 9\n");
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
    ck_assert_int_eq(cfg.train_steps, 9);
}
END_TEST

/* Line ends: LF and CRLF load the same config; a bare CR (which made the
 * whole file one line, so it ran on defaults) is an error naming the line. */
START_TEST(test_line_endings)
{
    expect_error("[model]\rtype = mlp\r[train]\rsteps = 3\r", 1,
                 "carriage return without a line feed");
    expect_error("[model]\ntype = mlp\n[train]\nsteps = 3\rseed = 4\n", 4,
                 "carriage return without a line feed");
    char lf[256], crlf[256];
    tu_write_temp(lf, sizeof lf, "lf.ini", "[model]\ntype = cnn\n[train]\nsteps = 3\nseed = 4\n");
    tu_write_temp(crlf, sizeof crlf, "crlf.ini",
                  "[model]\r\ntype = cnn\r\n[train]\r\nsteps = 3\r\nseed = 4\r\n");
    static repro_config a, b;
    ck_assert_int_eq(repro_config_load(&a, lf), 0);
    ck_assert_int_eq(repro_config_load(&b, crlf), 0);
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        char va[2048], vb[2048];
        repro_config_value_str(&a, k, va, sizeof va);
        repro_config_value_str(&b, k, vb, sizeof vb);
        ck_assert_str_eq(va, vb);
    }
    ck_assert_int_eq(b.model_type, REPRO_MODEL_CNN);
    ck_assert_int_eq(b.train_steps, 3);
    ck_assert_int_eq(b.line[REPRO_KEY_train_seed], 5);
}
END_TEST

/* Seeds and counts are decimal: "seed = 010" was 8 and "0x1F" 31 (strtoull
 * base 0). Leading zeros read as decimal; hex, signs and inner blanks are
 * errors naming the line. */
START_TEST(test_decimal_only)
{
    char path[256];
    tu_write_temp(path, sizeof path, "ok.ini",
                  "[model]\ntype = mlp\nhidden = 016, 8\n[train]\nsteps = 010\nseed = 010\n");
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
    ck_assert_uint_eq(cfg.train_seed, 10);
    ck_assert_int_eq(cfg.train_steps, 10);
    ck_assert_int_eq(cfg.model_hidden[0], 16);
    tu_write_temp(path, sizeof path, "max.ini",
                  "[model]\ntype = mlp\n[train]\nsteps = 1\nseed = 18446744073709551615\n");
    ck_assert_int_eq(repro_config_load(&cfg, path), 0);
    ck_assert_uint_eq(cfg.train_seed, UINT64_MAX);

    expect_error("[train]\nseed = 0x1F\n", 2, "not an unsigned 64-bit decimal integer");
    expect_error("[train]\nseed = 1 2\n", 2, "not an unsigned 64-bit decimal integer");
    expect_error("[train]\nseed = 18446744073709551616\n", 2, "not an unsigned 64-bit decimal");
    expect_error("[train]\nseed = +5\n", 2, "not an unsigned integer");
    expect_error("[train]\nsteps = 0x10\n", 2, "not an integer");
    expect_error("[train]\nsteps = +10\n", 2, "not an integer");
    expect_error("[train]\nsteps = 1 0\n", 2, "not an integer");
    expect_error("[train]\nsteps = -1\n", 2, "out of range");
    expect_error("[model]\nhidden = 0x10\n", 2, "comma-separated list");
    expect_error("[model]\nhidden = +16\n", 2, "comma-separated list");
    /* overrides go through the same parser */
    ck_assert_int_eq(repro_config_set(&cfg, "seed=0x1F"), -1);
    ck_assert_int_eq(repro_config_set(&cfg, "seed=031"), 0);
    ck_assert_uint_eq(cfg.train_seed, 31);
}
END_TEST

/* Only regular files are read: a FIFO used to block the open forever. */
START_TEST(test_fifo_refused)
{
    char path[256];
    tu_write_temp(path, sizeof path, "fifo.ini", "");
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    alarm(10); /* a hang fails the test instead of waiting for the suite's timeout */
    ck_assert_int_eq(repro_config_load(&cfg, path), -1);
    alarm(0);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "not a regular file (a FIFO)"));
    unlink(path);
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
    tcase_add_test(tc, test_required_keys);
    tcase_add_test(tc, test_nul_bytes);
    tcase_add_test(tc, test_section_header_trailing_text);
    tcase_add_test(tc, test_line_endings);
    tcase_add_test(tc, test_decimal_only);
    tcase_add_test(tc, test_fifo_refused);
    tcase_add_test(tc, test_overrides);
    suite_add_tcase(s, tc);
    return s;
}
