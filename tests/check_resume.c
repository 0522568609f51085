/* Checkpoint/resume and eval, end to end: a run resumed from a checkpoint
 * equals the uninterrupted run bitwise from the resume step on (both shipped
 * experiments; mid-epoch with 3 workers and worker-keyed augmentation, at an
 * epoch boundary, and with num_workers = 0); `repro check --resume-at` passes
 * and catches a divergence in its scope; corrupted and mismatched
 * checkpoints exit 2 naming the problem; eval never changes training bits
 * and its outputs do not depend on the training RNG state. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "core/config.h"
#include "record/trace.h"
#include "core/train.h"
#include "testutil.h"

static char out[1 << 20], err[1 << 16];

/* Short epochs (256 / 64 = 4 batches), 3 workers, augmentation drawn from
 * the worker RNGs: a resume mid-epoch must replay each worker's stream. */
#define SMALL                                                                              \
    "--steps 12 -q --set data.train_size=256 --set data.test_size=128 "                    \
    "--set data.augment_seed=worker --set data.shift=1 --set data.noise=0.05"

static void tmpdir(char *buf, size_t len)
{
    char d[TU_TMP_LEN];
    tu_tmp_template(d, sizeof d, "resume");
    ck_assert_ptr_nonnull(mkdtemp(d));
    snprintf(buf, len, "%s", d);
}

/* Steps k+1..N of the resumed trace equal the full trace's line for line
 * (step and chain digests), and the resumed trace starts at k+1. */
static void expect_same_tail(const char *full, const char *resumed, long k, long n)
{
    repro_trace a, b;
    ck_assert_int_eq(repro_trace_read(&a, full), 0);
    ck_assert_int_eq(repro_trace_read(&b, resumed), 0);
    ck_assert_int_eq(b.first_step, k + 1);
    ck_assert_int_eq(b.nsteps, n - k);
    ck_assert(b.has_trailer);
    for (long s = k + 1; s <= n; s++) {
        const repro_trace_step *sa = repro_trace_find_step(&a, s);
        const repro_trace_step *sb = repro_trace_find_step(&b, s);
        ck_assert_ptr_nonnull(sa);
        ck_assert_ptr_nonnull(sb);
        ck_assert_msg(repro_digest_eq(&sa->step_digest, &sb->step_digest),
                      "%s: step %ld differs after resuming at %ld", resumed, s, k);
        ck_assert(repro_digest_eq(&sa->chain, &sb->chain));
    }
    ck_assert(repro_digest_eq(&a.trailer_chain, &b.trailer_chain));
    repro_trace_release(&a);
    repro_trace_release(&b);
}

/* One full run checkpointing every step, then resumes from each of `ks`. */
static void resume_matches(const char *exp, const char *extra, const long *ks, int nk)
{
    char dir[TU_TMP_LEN + 32], cmd[1024], full[TU_TMP_LEN + 64], res[TU_TMP_LEN + 64];
    tmpdir(dir, sizeof dir);
    snprintf(full, sizeof full, "%s/full/trace.jsonl", dir);
    snprintf(cmd, sizeof cmd, "run %s " SMALL " %s -o %s --checkpoint-every 1", exp, extra, full);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    for (int i = 0; i < nk; i++) {
        snprintf(res, sizeof res, "%s/res%ld/trace.jsonl", dir, ks[i]);
        snprintf(cmd, sizeof cmd, "run %s " SMALL " %s -o %s --resume %s/full/ckpt-%ld.bin", exp,
                 extra, res, dir, ks[i]);
        ck_assert_msg(tu_run_repro(cmd, out, sizeof out, err, sizeof err) == 0, "%s: %s", cmd,
                      err);
        ck_assert_ptr_nonnull(strstr(out, "resumed from"));
        expect_same_tail(full, res, ks[i], 12);
        /* `repro diff` agrees: identical on the common steps, same final chain. */
        snprintf(cmd, sizeof cmd, "diff %s %s", full, res);
        ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
        ck_assert_ptr_nonnull(strstr(out, "identical"));
    }
}

/* Step 5 = epoch 1 batch 1, 7 = epoch 1 batch 3 (every worker replays),
 * 8 = the end of epoch 1 (the next batch starts epoch 2), 10 = epoch 2. */
static const long ks[] = {5, 7, 8, 10};

START_TEST(test_resume_mlp_mid_epoch_workers)
{
    resume_matches("experiments/mlp.ini", "--workers 3", ks, 4);
}
END_TEST

START_TEST(test_resume_mlp_no_workers)
{
    resume_matches("experiments/mlp.ini", "--workers 0", (const long[]){6, 11}, 2);
}
END_TEST

START_TEST(test_resume_cnn_mid_epoch_workers)
{
    resume_matches("experiments/cnn.ini", "--workers 3", ks, 4);
}
END_TEST

START_TEST(test_check_resume_at)
{
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --steps 12 --resume-at 5 --no-golden",
                                  out, sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 3 runs identical over 12 steps"));
    ck_assert_int_eq(tu_run_repro("check experiments/mlp.ini --steps 12 --resume-at 12", out,
                                  sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "nothing"));
    /* Negative control: a bit flipped after the resume, in the resumed run
     * only (run index 1): caught, located, and put in its scope. */
    setenv("REPRO_FAULT", "flip:step=8:tensor=param.fc2.weight:element=3", 1);
    int rc = tu_run_repro("check experiments/mlp.ini --steps 12 --runs 1 --resume-at 5 --no-golden",
                          out, sizeof out, err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_int_eq(rc, 1);
    ck_assert_ptr_nonnull(strstr(out, "DIVERGED at step 8"));
    ck_assert_ptr_nonnull(strstr(out, "checkpoint/resume"));
}
END_TEST

/* A short checkpointed mlp run; returns the checkpoint of step 3. */
static void make_checkpoint(char *ckpt, size_t len)
{
    char dir[TU_TMP_LEN + 32], cmd[512];
    tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "run experiments/mlp.ini --steps 4 -q --set data.train_size=256 -o %s/t.jsonl "
             "--checkpoint-every 3",
             dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(ckpt, len, "%s/ckpt-3.bin", dir);
    ck_assert_int_eq(access(ckpt, R_OK), 0);
}

/* A run killed while writing a checkpoint (kill -9) leaves its temporary;
 * the next run that checkpoints into that directory removes it — only the
 * abandoned ones: a temporary whose writer still runs, the checkpoints
 * themselves and other files stay. (They used to pile up: ckpt-N.bin.tmp,
 * one per kill, each the size of a checkpoint.) */
static void touch(const char *dir, const char *name, long age_s)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("partial checkpoint", f);
    ck_assert_int_eq(fclose(f), 0);
    if (age_s) {
        struct utimbuf t = {time(NULL) - age_s, time(NULL) - age_s};
        ck_assert_int_eq(utime(p, &t), 0);
    }
}

static int exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

START_TEST(test_abandoned_checkpoint_temporaries_are_removed)
{
    char dir[TU_TMP_LEN + 32], cmd[512], dead[TU_TMP_LEN + 32], live[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    pid_t pid = fork(); /* a pid that is certainly gone: a child, reaped */
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    snprintf(dead, sizeof dead, "ckpt-3.bin.%ld.tmp", (long)pid);
    snprintf(live, sizeof live, "ckpt-6.bin.%ld.tmp", (long)getpid()); /* alive: this test */
    touch(dir, dead, 0);
    touch(dir, live, 0);
    touch(dir, "ckpt-9.bin.tmp", 7200);   /* an older repro's, untouched for 2 hours */
    touch(dir, "ckpt-12.bin.tmp", 0);     /* an older repro's, fresh: maybe being written */
    touch(dir, "ckpt-x.bin.1.tmp", 0);    /* not a checkpoint's name */
    touch(dir, "notes.tmp", 0);
    touch(dir, "ckpt-15.bin", 0);
    snprintf(cmd, sizeof cmd,
             "run experiments/mlp.ini --steps 2 --set data.train_size=256 -o %s/t.jsonl "
             "--checkpoint-every 2",
             dir);
    ck_assert_msg(tu_run_repro(cmd, out, sizeof out, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(strstr(err, "removed 2 abandoned checkpoint temporaries from") != NULL, "%s",
                  err);
    ck_assert(!exists(dir, dead));
    ck_assert(!exists(dir, "ckpt-9.bin.tmp"));
    ck_assert(exists(dir, live));
    ck_assert(exists(dir, "ckpt-12.bin.tmp"));
    ck_assert(exists(dir, "ckpt-x.bin.1.tmp"));
    ck_assert(exists(dir, "notes.tmp"));
    ck_assert(exists(dir, "ckpt-15.bin"));
    ck_assert(exists(dir, "ckpt-2.bin"));
    /* The run's own temporary was renamed into place: nothing of it left. */
    char own[TU_TMP_LEN + 32];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c 'ckpt-2.bin.*tmp' || true", dir);
    FILE *ls = popen(cmd, "r");
    ck_assert_ptr_nonnull(ls);
    ck_assert_ptr_nonnull(fgets(own, sizeof own, ls));
    pclose(ls);
    ck_assert_str_eq(own, "0\n");
}
END_TEST

START_TEST(test_corrupted_checkpoint)
{
    char ckpt[TU_TMP_LEN + 64], cmd[512];
    make_checkpoint(ckpt, sizeof ckpt);
    FILE *f = fopen(ckpt, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 100000, SEEK_SET), 0); /* inside fc1.weight */
    int c = fgetc(f);
    ck_assert_int_eq(fseek(f, 100000, SEEK_SET), 0);
    fputc(c ^ 0x10, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "run experiments/mlp.ini --steps 6 -q --set data.train_size=256 --no-trace "
             "--resume %s",
             ckpt);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "corrupted checkpoint"));
    /* Truncated, and not a checkpoint at all. */
    ck_assert_int_eq(truncate(ckpt, 5000), 0);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "corrupted checkpoint"));
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini -q --no-trace --resume experiments/mlp.ini");
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "not a repro checkpoint"));
}
END_TEST

START_TEST(test_mismatched_checkpoint)
{
    char ckpt[TU_TMP_LEN + 64], cmd[512];
    make_checkpoint(ckpt, sizeof ckpt);
    /* Another config: the message names the key and both values. */
    snprintf(cmd, sizeof cmd,
             "run experiments/mlp.ini --steps 6 -q --set data.train_size=256 --set lr=0.1 "
             "--no-trace --resume %s",
             ckpt);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "another config"));
    ck_assert_ptr_nonnull(strstr(err, ": train.lr 0.05"));
    ck_assert_ptr_nonnull(strstr(err, "(checkpoint) vs 0.1"));
    ck_assert_ptr_null(strstr(err, "train.steps")); /* bits-neutral: may differ */
    /* Another experiment. */
    snprintf(cmd, sizeof cmd, "run experiments/cnn.ini --steps 6 -q --no-trace --resume %s", ckpt);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "experiment 'mlp', not 'cnn'"));
    /* Nothing left to run. */
    snprintf(cmd, sizeof cmd,
             "run experiments/mlp.ini --steps 3 -q --set data.train_size=256 --no-trace "
             "--resume %s",
             ckpt);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "only 3 steps"));
    /* Worker-keyed augmentation mid-epoch needs the same worker count. */
    char dir[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " --workers 3 -o %s/t.jsonl "
             "--checkpoint-every 5", dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " --workers 2 --no-trace "
             "--resume %s/ckpt-5.bin", dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "num_workers = 3"));
}
END_TEST

START_TEST(test_resumed_trace_needs_its_header)
{
    /* Without "resumed_from" a trace starting at step 6 is a broken trace. */
    char dir[TU_TMP_LEN + 32], cmd[1024];
    tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " -o %s/f.jsonl --checkpoint-every 5",
             dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " -o %s/r.jsonl --resume %s/ckpt-5.bin",
             dir, dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "sed 's/\"resumed_from\"/\"x_resumed\"/' %s/r.jsonl > %s/bad.jsonl",
             dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/bad.jsonl", dir);
    repro_trace t;
    ck_assert_int_ne(repro_trace_read(&t, cmd), 0);
}
END_TEST

/* eval_every changes no training bit: same chain with and without it, and
 * the eval keys appear on every N-th step line only. */
START_TEST(test_eval_every_keeps_the_chain)
{
    char dir[TU_TMP_LEN + 32], cmd[1024], path[TU_TMP_LEN + 64];
    tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " -o %s/a.jsonl", dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "run experiments/mlp.ini " SMALL " --set eval_every=4 -o %s/b.jsonl",
             dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "diff %s/a.jsonl %s/b.jsonl", dir, dir);
    ck_assert_int_eq(tu_run_repro(cmd, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "identical"));
    snprintf(path, sizeof path, "%s/b.jsonl", dir);
    repro_trace t;
    ck_assert_int_eq(repro_trace_read(&t, path), 0);
    ck_assert_int_eq(t.nsteps, 12);
    repro_trace_release(&t);
    /* Which lines carry eval: steps 4, 8, 12 (grep the step numbers). */
    snprintf(cmd, sizeof cmd,
             "grep -o '\"step\":[0-9]*,[^{]*\"eval_loss_bits\"' %s/b.jsonl | cut -d, -f1 | "
             "tr '\\n' ' '",
             dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, 200, p);
    out[n] = '\0';
    pclose(p);
    ck_assert_str_eq(out, "\"step\":4 \"step\":8 \"step\":12 ");
}
END_TEST

/* Eval outputs are a function of the parameters and the held-out split
 * only: the same parameters evaluated with other loader, dropout and worker
 * streams behind them give the same bits. */
START_TEST(test_eval_ignores_training_rng)
{
    static repro_config cfg;
    ck_assert_int_eq(repro_config_load(&cfg, "experiments/mlp.ini"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "data.train_size=256"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "data.test_size=200"), 0);
    repro_trainer a, b;
    ck_assert_int_eq(repro_trainer_init(&a, &cfg), 0);
    double l0, a0, l1, a1, l2, a2;
    repro_trainer_evaluate(&a, &l0, &a0);
    /* Move every training stream: loader batches (shuffle generator, worker
     * RNGs), train-mode forwards with dropout at other steps. */
    for (int i = 0; i < 7; i++) {
        const repro_batch *bt;
        ck_assert_int_eq(repro_loader_next(a.loader, &bt), 0);
        ck_assert_ptr_nonnull(repro_model_forward(&a.model, bt->x, bt->size, 1, 99, i));
    }
    repro_trainer_evaluate(&a, &l1, &a1);
    ck_assert(memcmp(&l0, &l1, sizeof l0) == 0);
    ck_assert(memcmp(&a0, &a1, sizeof a0) == 0);
    /* Another loader setup and threads entirely, same parameters (they
     * depend on the seed only). */
    ck_assert_int_eq(repro_config_set(&cfg, "data.num_workers=3"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "data.augment_seed=worker"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "data.noise=0.1"), 0);
    ck_assert_int_eq(repro_config_set(&cfg, "train.threads=3"), 0);
    ck_assert_int_eq(repro_trainer_init(&b, &cfg), 0);
    for (int i = 0; i < 3; i++) {
        const repro_batch *bt;
        ck_assert_int_eq(repro_loader_next(b.loader, &bt), 0);
    }
    repro_trainer_evaluate(&b, &l2, &a2);
    ck_assert(memcmp(&l0, &l2, sizeof l0) == 0);
    ck_assert(memcmp(&a0, &a2, sizeof a0) == 0);
    /* And eval left the parameters alone: a step after it trains as usual. */
    ck_assert_int_eq(repro_trainer_step(&a), 0);
    repro_trainer_release(&a);
    repro_trainer_release(&b);
}
END_TEST

Suite *resume_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_resume_mlp_mid_epoch_workers);
    tcase_add_test(tc, test_resume_mlp_no_workers);
    tcase_add_test(tc, test_resume_cnn_mid_epoch_workers);
    tcase_add_test(tc, test_check_resume_at);
    tcase_add_test(tc, test_corrupted_checkpoint);
    tcase_add_test(tc, test_abandoned_checkpoint_temporaries_are_removed);
    tcase_add_test(tc, test_mismatched_checkpoint);
    tcase_add_test(tc, test_resumed_trace_needs_its_header);
    tcase_add_test(tc, test_eval_every_keeps_the_chain);
    tcase_add_test(tc, test_eval_ignores_training_rng);
    suite_add_tcase(s, tc);
    return s;
}
