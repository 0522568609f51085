/* The training session API (core/session.h), in process: a session's
 * trace equals `repro run`'s line for line; a session resumed from its own
 * checkpoint ends on the uninterrupted chain; checkpoints land at the
 * configured steps, beside the trace unless told otherwise; the progress
 * callback sees every step; a session without a recorder or without a
 * trace file; and every refusal (a missing, corrupted, chainless or too
 * late checkpoint) comes back as -1 with the error slot set, the test
 * process still running. Negative control: a fault injected through the
 * options changes the chain, so the equalities are not vacuous. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/session.h"
#include "record/trace.h"
#include "util/error.h"
#include "testutil.h"

static char out[1 << 16], err[1 << 16];

/* What both the session and the `repro run` command line get. */
#define STEPS 6
#define SMALL_SETS "--steps 6 -q --set data.train_size=256 --set data.test_size=128"

static void small_config(repro_config *cfg, long steps)
{
    char set[64];
    snprintf(set, sizeof set, "train.steps=%ld", steps);
    ck_assert_int_eq(repro_config_load(cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(cfg, set), 0);
    ck_assert_int_eq(repro_config_set(cfg, "data.train_size=256"), 0);
    ck_assert_int_eq(repro_config_set(cfg, "data.test_size=128"), 0);
    ck_assert_int_eq(repro_config_validate(cfg), 0);
}

static void tmpdir(char *buf, size_t len)
{
    char d[TU_TMP_LEN];
    tu_tmp_template(d, sizeof d, "session");
    ck_assert_ptr_nonnull(mkdtemp(d));
    snprintf(buf, len, "%s", d);
}

static int exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* open, run, finish: the final chain into *chain. */
static repro_session *train(const repro_config *cfg, const repro_session_opts *o,
                            repro_digest *chain)
{
    repro_session *s;
    ck_assert_msg(repro_session_open(&s, cfg, o) == 0, "%s", repro_error_message());
    ck_assert_msg(repro_session_run(s) == 0, "%s", repro_error_message());
    ck_assert_msg(repro_session_finish(s) == 0, "%s", repro_error_message());
    if (chain)
        *chain = s->chain;
    return s;
}

/* Steps from..to of two traces carry the same step and chain digests. */
static void expect_same_steps(const char *a_path, const char *b_path, long from, long to)
{
    repro_trace a, b;
    ck_assert_int_eq(repro_trace_read(&a, a_path), 0);
    ck_assert_int_eq(repro_trace_read(&b, b_path), 0);
    ck_assert(a.has_trailer && b.has_trailer);
    for (long n = from; n <= to; n++) {
        const repro_trace_step *sa = repro_trace_find_step(&a, n);
        const repro_trace_step *sb = repro_trace_find_step(&b, n);
        ck_assert_ptr_nonnull(sa);
        ck_assert_ptr_nonnull(sb);
        ck_assert_msg(repro_digest_eq(&sa->step_digest, &sb->step_digest), "step %ld", n);
        ck_assert(repro_digest_eq(&sa->chain, &sb->chain));
    }
    ck_assert(repro_digest_eq(&a.trailer_chain, &b.trailer_chain));
    repro_trace_release(&a);
    repro_trace_release(&b);
}

START_TEST(test_session_equals_repro_run)
{
    static repro_config cfg;
    small_config(&cfg, STEPS);
    char dir[TU_TMP_LEN + 8], path[TU_TMP_LEN + 32], run_path[TU_TMP_LEN + 32], cmd[512];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/session.jsonl", dir);
    repro_digest chain;
    repro_session_opts o = {.output = path};
    repro_session *s = train(&cfg, &o, &chain);
    ck_assert_int_eq(s->t.step, STEPS);
    ck_assert(s->evaluated);
    ck_assert(s->eval_accuracy >= 0.0 && s->eval_accuracy <= 1.0);
    ck_assert_str_eq(s->trace_path, path);
    repro_session_close(s);

    snprintf(run_path, sizeof run_path, "%s/run.jsonl", dir);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL_SETS " -o %s", run_path);
    ck_assert_msg(tu_run_repro(cmd, out, sizeof out, err, sizeof err) == 0, "%s", err);
    char hex[65], line[80];
    repro_digest_hex(&chain, hex);
    snprintf(line, sizeof line, "chain %s\n", hex);
    ck_assert_msg(strstr(out, line) != NULL, "session %s, repro run:\n%s", hex, out);
    expect_same_steps(path, run_path, 1, STEPS);
}
END_TEST

/* The negative control: the same session with one bit flipped at step 3
 * (the fault the options carry, as REPRO_FAULT would) ends elsewhere, and
 * its trace header says a fault was injected. */
START_TEST(test_session_fault_changes_the_chain)
{
    static repro_config cfg;
    small_config(&cfg, STEPS);
    repro_digest clean, faulty;
    repro_session_opts o = {.no_trace = 1, .no_eval = 1};
    repro_session_close(train(&cfg, &o, &clean));
    o.fault = (repro_fault){.active = 1, .step = 3, .tensor = "param.fc1.weight"};
    o.fault_spec = "flip:step=3:tensor=param.fc1.weight";
    repro_session_close(train(&cfg, &o, &faulty));
    ck_assert(!repro_digest_eq(&clean, &faulty));
}
END_TEST

/* Checkpoint at step 4 of 8, resume from it: the resumed session starts
 * after step 4, takes 4 steps, and ends on the uninterrupted chain; its
 * trace holds steps 5..8, equal to the uninterrupted trace's. */
START_TEST(test_session_resume_equals_uninterrupted)
{
    static repro_config cfg;
    small_config(&cfg, 8);
    char dir[TU_TMP_LEN + 8], full[TU_TMP_LEN + 32], res[TU_TMP_LEN + 32],
        ckpt[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    snprintf(full, sizeof full, "%s/full/trace.jsonl", dir);
    snprintf(res, sizeof res, "%s/res/trace.jsonl", dir);
    snprintf(ckpt, sizeof ckpt, "%s/full/ckpt-4.bin", dir);
    repro_digest a, b;
    repro_session_opts o = {.output = full, .checkpoint_every = 4};
    repro_session_close(train(&cfg, &o, &a));
    repro_session_opts r = {.output = res, .resume = ckpt};
    repro_session *s = train(&cfg, &r, &b);
    ck_assert_int_eq(s->ck.step, 4);
    ck_assert_int_eq(s->t.step, 8);
    repro_session_close(s);
    ck_assert(repro_digest_eq(&a, &b));
    expect_same_steps(full, res, 5, 8);
}
END_TEST

/* A pid that is certainly gone: a child, reaped. */
static long dead_pid(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    return (long)pid;
}

/* Every 3rd of 7 steps: ckpt-3 and ckpt-6, beside the trace, nothing at
 * the other steps; with checkpoint_dir, there instead. An abandoned
 * temporary in that directory is removed and counted for the caller. */
START_TEST(test_session_checkpoints_at_configured_steps)
{
    static repro_config cfg;
    small_config(&cfg, 7);
    char dir[TU_TMP_LEN + 8], path[TU_TMP_LEN + 32], other[TU_TMP_LEN + 32],
        tmp[TU_TMP_LEN + 48];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    snprintf(tmp, sizeof tmp, "%s/ckpt-1.bin.%ld.tmp", dir, dead_pid());
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    repro_session_opts o = {.output = path, .checkpoint_every = 3, .no_eval = 1};
    repro_session *s = train(&cfg, &o, NULL);
    ck_assert_int_eq(s->temps_removed, 1);
    ck_assert_str_eq(s->ckpt_dir, dir);
    repro_session_close(s);
    for (int n = 1; n <= 7; n++) {
        char name[32];
        snprintf(name, sizeof name, "ckpt-%d.bin", n);
        ck_assert_msg(exists(dir, name) == (n % 3 == 0), "%s", name);
    }
    ck_assert_int_eq(access(tmp, F_OK), -1);

    snprintf(other, sizeof other, "%s/elsewhere", dir);
    o.checkpoint_dir = other;
    o.checkpoint_every = 7;
    repro_session_close(train(&cfg, &o, NULL));
    ck_assert(exists(other, "ckpt-7.bin"));
    ck_assert(!exists(dir, "ckpt-7.bin"));
}
END_TEST

typedef struct {
    long calls, last_step;
    double last_loss;
} seen_steps;

static void on_step(void *ctx, long step, double loss)
{
    seen_steps *seen = ctx;
    ck_assert_int_eq(step, seen->last_step + 1); /* every step, in order */
    seen->calls++;
    seen->last_step = step;
    seen->last_loss = loss;
}

/* The progress callback sees steps 1..N and the last loss; a session with
 * no recorder hashes nothing (no file, no chain), one with no_trace hashes
 * every step into the same chain without writing a file. */
START_TEST(test_session_callback_and_recording_modes)
{
    static repro_config cfg;
    small_config(&cfg, STEPS);
    char dir[TU_TMP_LEN + 8], path[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    seen_steps seen = {0, 0, 0};
    repro_digest traced, untraced, none, zero;
    memset(&zero, 0, sizeof zero);
    repro_session_opts o = {.output = path, .on_step = on_step, .on_step_ctx = &seen};
    repro_session *s = train(&cfg, &o, &traced);
    ck_assert_int_eq(seen.calls, STEPS);
    ck_assert(seen.last_loss == s->t.loss);
    ck_assert(s->first_loss > 0);
    repro_session_close(s);
    ck_assert(!repro_digest_eq(&traced, &zero));

    snprintf(path, sizeof path, "%s/none.jsonl", dir);
    repro_session_opts n = {.output = path, .no_trace = 1};
    repro_session_close(train(&cfg, &n, &untraced));
    ck_assert(repro_digest_eq(&traced, &untraced));
    n.no_recorder = 1;
    s = train(&cfg, &n, &none);
    ck_assert_ptr_null(s->rec);
    repro_session_close(s);
    ck_assert(repro_digest_eq(&none, &zero));
    ck_assert(!exists(dir, "none.jsonl"));
}
END_TEST

/* open refuses: -1, *out NULL, a message naming the problem, REPRO_EINVAL
 * (the CLI exits 2 on it), and this process still here. */
static void expect_refused(const repro_config *cfg, const repro_session_opts *o,
                           const char *needle)
{
    repro_session *s = (repro_session *)1;
    ck_assert_int_eq(repro_session_open(&s, cfg, o), -1);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(repro_error_message(), needle) != NULL, "%s", repro_error_message());
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL); /* exit 2 in the CLI */
}

START_TEST(test_session_bad_resume_is_an_error)
{
    static repro_config cfg;
    small_config(&cfg, 4);
    char dir[TU_TMP_LEN + 8], bad[TU_TMP_LEN + 32], ckpt[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    snprintf(bad, sizeof bad, "%s/garbage.bin", dir);
    FILE *f = fopen(bad, "w");
    ck_assert_ptr_nonnull(f);
    fputs("REPROCKP not really a checkpoint", f);
    fclose(f);
    repro_session_opts o = {.no_trace = 1, .resume = bad};
    expect_refused(&cfg, &o, "garbage.bin");

    /* A checkpoint of a session without a recorder has no chain to continue. */
    repro_session_opts plain = {.no_recorder = 1, .no_eval = 1, .checkpoint_every = 2,
                                .checkpoint_dir = dir};
    repro_session_close(train(&cfg, &plain, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-2.bin", dir);
    o.resume = ckpt;
    expect_refused(&cfg, &o, "carries no hash chain");

    /* A checkpoint at the session's last step leaves nothing to run. */
    repro_session_opts rec = {.no_trace = 1, .no_eval = 1, .checkpoint_every = 4,
                              .checkpoint_dir = dir};
    repro_session_close(train(&cfg, &rec, NULL));
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-4.bin", dir);
    expect_refused(&cfg, &o, "raise --steps");
}
END_TEST

START_TEST(test_session_missing_resume_file)
{
    static repro_config cfg;
    small_config(&cfg, 4);
    repro_session_opts o = {.no_trace = 1, .resume = "/nonexistent/ckpt-3.bin"};
    repro_session *s = (repro_session *)1;
    ck_assert_int_eq(repro_session_open(&s, &cfg, &o), -1);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "/nonexistent/ckpt-3.bin"));
}
END_TEST

/* The dump and tap option texts, as `repro run` spells them. */
START_TEST(test_session_parse_options)
{
    repro_session_opts o;
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(repro_session_parse_dump(&o, "run: --dump", "0,3-5,10-20/5"), 0);
    static const long want[] = {0, 3, 4, 5, 10, 15, 20};
    ck_assert_int_eq(o.ndump, 7);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(o.dump[i], want[i]);
    ck_assert_int_eq(repro_session_parse_dump(&o, "run: --dump", "5-3"), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "run: --dump 5-3: expected"));
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(repro_session_parse_dump(&o, "run: --dump", "0-1000"), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "at most 64 steps"));
    ck_assert_int_eq(repro_session_parse_tap(&o, "run: --tap-write", REPRO_TAP_WRITE,
                                             "bwd.fc1.dw=/tmp/x"),
                     0);
    ck_assert_str_eq(o.tap_op, "bwd.fc1.dw");
    ck_assert_str_eq(o.tap_path, "/tmp/x");
    ck_assert_int_eq(o.tap_mode, REPRO_TAP_WRITE);
    ck_assert_int_eq(repro_session_parse_tap(&o, "run: --tap-read", REPRO_TAP_READ, "=x"), -1);
    ck_assert_int_eq(repro_session_parse_tap(&o, "run: --tap-read", REPRO_TAP_READ, "op="), -1);
}
END_TEST

Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("session");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_session_equals_repro_run);
    tcase_add_test(tc, test_session_fault_changes_the_chain);
    tcase_add_test(tc, test_session_resume_equals_uninterrupted);
    tcase_add_test(tc, test_session_checkpoints_at_configured_steps);
    tcase_add_test(tc, test_session_callback_and_recording_modes);
    tcase_add_test(tc, test_session_bad_resume_is_an_error);
    tcase_add_test(tc, test_session_missing_resume_file);
    tcase_add_test(tc, test_session_parse_options);
    suite_add_tcase(s, tc);
    return s;
}
