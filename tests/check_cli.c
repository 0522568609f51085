/* The command line as a user (or CI, or git bisect run) sees it: exit codes,
 * messages naming file:line, help that exists, and a run that is bitwise the
 * same in a fresh process. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char out[65536], err[65536];

START_TEST(test_version_and_help)
{
    ck_assert_int_eq(tu_run_repro("--version", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "repro 0."));
    ck_assert_int_eq(tu_run_repro("help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "run "));
    ck_assert_int_eq(tu_run_repro("help run", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--workers W"));
    ck_assert_int_eq(tu_run_repro("run --help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: repro run"));
    ck_assert_int_eq(tu_run_repro("help config", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "augment_seed"));
}
END_TEST

START_TEST(test_usage_errors_exit_2)
{
    ck_assert_int_eq(tu_run_repro("", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "usage: repro"));
    ck_assert_int_eq(tu_run_repro("frobnicate", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "'frobnicate' is not a repro command"));
    ck_assert_int_eq(tu_run_repro("help frobnicate", out, sizeof out, err, sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "missing experiment"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --bogus", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "unknown option '--bogus'"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --steps x", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "run: --steps x: expected a decimal count"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --set nosuch=1", out, sizeof out, err,
                                  sizeof err), 2);
    ck_assert_int_eq(tu_run_repro("run /nonexistent.ini", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.ini: cannot open"));
}
END_TEST

START_TEST(test_bad_experiment_names_file_line)
{
    char path[256], args[400], want[300];
    tu_write_temp(path, sizeof path, "x.ini", "[train]\nsteps = 5\nlearning_rate = 1\n");
    snprintf(args, sizeof args, "run %s", path);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    snprintf(want, sizeof want, "repro: %s:3: unknown key 'learning_rate'", path);
    ck_assert_msg(strstr(err, want) != NULL, "stderr: %s", err);
}
END_TEST

START_TEST(test_bad_idx_exits_2)
{
    char img[256], args[1200];
    tu_write_temp(img, sizeof img, "img.idx", "not an idx file at all");
    snprintf(args, sizeof args,
             "run experiments/mlp.ini --set dataset=idx --set train_images=%s "
             "--set train_labels=%s",
             img, img);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, img) != NULL, "stderr: %s", err);
}
END_TEST

START_TEST(test_run_prints_summary_and_is_reproducible)
{
    static char out2[65536];
    const char *args = "run experiments/cnn.ini --steps 6 --set log_every=3";
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "seed scheme repro-seed/v1"));
    ck_assert_ptr_nonnull(strstr(out, "held-out: loss"));
    ck_assert_ptr_nonnull(strstr(out, "steps/s"));
    ck_assert_ptr_nonnull(strstr(err, "step 3/6")); /* not a TTY: a line every log_every */
    ck_assert_ptr_nonnull(strstr(err, "step 6/6"));
    const char *bits = strstr(out, "float bits 0x");
    ck_assert_ptr_nonnull(bits);
    /* A fresh process, other thread and worker counts: the same loss bits. */
    ck_assert_int_eq(tu_run_repro("run experiments/cnn.ini --steps 6 --threads 2 --workers 3 -q",
                                  out2, sizeof out2, err, sizeof err),
                     0);
    const char *bits2 = strstr(out2, "float bits 0x");
    ck_assert_ptr_nonnull(bits2);
    ck_assert(strncmp(bits, bits2, 23) == 0);
    ck_assert_str_eq(err, ""); /* -q: no progress */
}
END_TEST

START_TEST(test_print_config)
{
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --print-config --seed 99", out,
                                  sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "[train]\nseed = 99\n"));
    ck_assert_ptr_nonnull(strstr(out, "hidden = 256,128\n"));
}
END_TEST

/* Every count option of every command is read one way (util/numparse.h):
 * decimal digits in range, or exit 2 naming the flag and the value. Before,
 * `--runs 4294967298` was taken as 2 ((int) of a long) and `--seed 0x1F` as
 * 31, `--seed 010` as 8 (strtoull base 0). */
START_TEST(test_counts_and_seeds_are_strict)
{
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"check experiments/mlp.ini --runs 4294967298",
         "check: --runs 4294967298: expected a decimal count in 1..32"},
        {"check experiments/mlp.ini --runs 0x2", "check: --runs 0x2: expected a decimal count"},
        {"check experiments/mlp.ini --resume-at -3", "check: --resume-at -3: expected"},
        {"check experiments/mlp.ini --steps +5", "check: --steps +5: expected a decimal count"},
        {"check experiments/mlp.ini --seed 0x1F", "check: --seed 0x1F: expected a decimal seed"},
        {"check experiments/mlp.ini --threads 1,4294967298", "'4294967298' is not a count"},
        {"check experiments/mlp.ini --workers 0x1", "'0x1' is not a count"},
        {"compare experiments/mlp.ini --vary lr=0.1,0.2 --runs 4294967298",
         "compare: --runs 4294967298: expected a decimal count in 1..16"},
        {"compare experiments/mlp.ini --vary lr=0.1 --seed 010x", "compare: --seed 010x"},
        {"bless experiments/mlp.ini --every 0x10", "bless: --every 0x10: expected"},
        {"bless experiments/mlp.ini --runs 4294967297", "bless: --runs 4294967297: expected"},
        {"bisect experiments/mlp.ini --repeat 4294967298",
         "bisect: --repeat 4294967298: expected a decimal count in 2..32"},
        {"bisect experiments/mlp.ini --steps 1e3", "bisect: --steps 1e3: expected"},
        {"bisect --commits HEAD~1..HEAD experiments/mlp.ini --repeat 4294967297",
         "bisect: --repeat 4294967297: expected a decimal count in 1..64"},
        {"log experiments/mlp.ini -n 4294967296x", "log: -n 4294967296x: expected"},
        {"submit experiments/mlp.ini -o /nonexistent/b --seed 0x1F", "submit: --seed 0x1F"},
        {"submit experiments/mlp.ini -o /nonexistent/b --threads -1", "submit: --threads -1"},
        {"run experiments/mlp.ini --seed 0x1F", "run: --seed 0x1F: expected a decimal seed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = tu_run_repro(bad[i].args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d\n%s", bad[i].args, rc, err);
        ck_assert_msg(strstr(err, bad[i].msg) != NULL, "%s: %s", bad[i].args, err);
    }
    /* Leading zeros are decimal: 010 is ten, in a command and in a child run. */
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --print-config --seed 010", out,
                                  sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "[train]\nseed = 10\n"));
}
END_TEST

/* `repro check --git-bisect`: git's exit codes. A typo must make git
 * abort (> 127), not blame a commit; a tree that cannot be tested is 125. */
START_TEST(test_check_git_bisect_codes)
{
    char out[8192], err[8192];
    ck_assert_int_gt(tu_run_repro("check --git-bisect --bogus-flag experiments/mlp.ini", out,
                                  sizeof out, err, sizeof err),
                     127);
    ck_assert_int_gt(tu_run_repro("check --git-bisect experiments/no-such.ini", out, sizeof out,
                                  err, sizeof err),
                     127);
    ck_assert_int_eq(tu_run_repro("check --git-bisect --no-golden -- false", out, sizeof out, err,
                                  sizeof err),
                     125);
    ck_assert_int_eq(tu_run_repro("check --git-bisect --steps 3 --no-golden experiments/mlp.ini",
                                  out, sizeof out, err, sizeof err),
                     0);
    /* Without the flag the codes are repro's own. */
    ck_assert_int_eq(tu_run_repro("check --bogus-flag experiments/mlp.ini", out, sizeof out, err,
                                  sizeof err),
                     2);
    /* It is found by the option table, not by spelling: after the usage
     * error it still counts; as the value of --name it is a name, not the
     * flag; after "--" it is the program's argument. */
    ck_assert_int_gt(tu_run_repro("check experiments/mlp.ini --bogus-flag --git-bisect", out,
                                  sizeof out, err, sizeof err),
                     127);
    ck_assert_int_eq(tu_run_repro("check --name --git-bisect experiments/mlp.ini", out,
                                  sizeof out, err, sizeof err),
                     2);
    ck_assert_int_eq(tu_run_repro("check --no-golden -- false --git-bisect", out, sizeof out,
                                  err, sizeof err),
                     3);
}
END_TEST

/* runs/ retention: `repro gc` keeps the newest K per name (--dry-run
 * removes nothing); a passing check removes its own traces unless --keep. */
START_TEST(test_gc_and_passing_check_tidy)
{
    char out[1 << 16], err[8192];
    ck_assert_int_eq(system("rm -rf runs/gc-test && mkdir -p runs/gc-test/a runs/gc-test/b "
                            "runs/gc-test/c && echo x > runs/gc-test/a/t && "
                            "touch -d '3 days ago' runs/gc-test/a && "
                            "touch -d '2 days ago' runs/gc-test/b"),
                     0);
    ck_assert_int_eq(tu_run_repro("gc --keep 1 --dry-run gc-test", out, sizeof out, err,
                                  sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "would remove runs/gc-test/a"));
    ck_assert_int_eq(access("runs/gc-test/a", F_OK), 0);
    ck_assert_int_eq(tu_run_repro("gc --keep 1 gc-test", out, sizeof out, err, sizeof err), 0);
    ck_assert_int_ne(access("runs/gc-test/a", F_OK), 0);
    ck_assert_int_ne(access("runs/gc-test/b", F_OK), 0);
    ck_assert_int_eq(access("runs/gc-test/c", F_OK), 0);
    ck_assert_int_eq(tu_run_repro("gc ../etc", out, sizeof out, err, sizeof err), 2);
    ck_assert_int_eq(system("rm -rf runs/gc-test"), 0);
    /* a passing check tidies up after itself; --keep keeps */
    static const char *const modes[] = {"", "--keep "};
    for (int k = 0; k < 2; k++) {
        char args[256];
        snprintf(args, sizeof args, "check %s--json --steps 2 --no-golden experiments/mlp.ini",
                 modes[k]);
        ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
        char *d = strstr(out, "\"directory\": \"");
        ck_assert_ptr_nonnull(d);
        d += strlen("\"directory\": \"");
        *strchr(d, '"') = '\0';
        ck_assert_msg((access(d, F_OK) == 0) == (k == 1), "%s %s", modes[k], d);
    }
}
END_TEST

/* Mistyped commands, options and keys get a "did you mean". */
START_TEST(test_did_you_mean)
{
    char out[1 << 16], err[8192], ini[300];
    ck_assert_int_eq(tu_run_repro("chekc experiments/mlp.ini", out, sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "did you mean 'check'?"));
    ck_assert_int_eq(tu_run_repro("check --stpes 3 experiments/mlp.ini", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "did you mean '--steps'?"));
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --set lrr=0.1", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "did you mean 'lr'?"));
    tu_write_temp(ini, sizeof ini, "k.ini", "[model]\ntype = mlp\nhiden = 8\n[train]\nsteps = 2\n");
    char args[400];
    snprintf(args, sizeof args, "run %s", ini);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, ":3: unknown key 'hiden' in section [model] (did you mean "
                                      "'hidden'?)"));
    /* nothing close: no guess */
    ck_assert_int_eq(tu_run_repro("frobnicate", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_null(strstr(err, "did you mean"));
    /* help is current */
    ck_assert_int_eq(tu_run_repro("help bisect", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--quarantine"));
    ck_assert_ptr_nonnull(strstr(out, "--steps"));
    ck_assert_int_eq(tu_run_repro("help config", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_null(strstr(out, "later version"));
}
END_TEST

/* Item 3 of issue 13: the options common to the commands that run the
 * workload come from one table (harness/cli/common_opts.c). Each workload
 * command, with the smallest command line that gets past its own checks
 * and an experiment that does not exist, must parse every common option
 * and fail only on the file: an option it did not accept would be an
 * "unknown option" first. (Before the table, bless took none of --steps,
 * --seed, --set, --threads, --workers, -q, --json; compare no --threads,
 * --workers, -q; check no -q; run no --json; bisect's op level no
 * --threads, --workers, -q.) */
static const struct {
    const char *cmd, *own; /* own: what the command needs besides EXP */
    int multi;             /* takes --runs */
    const char *fails_with;
} workload_cmds[] = {
    {"run", "", 0, "/nonexistent.ini: cannot open"},
    {"check", "--no-golden", 1, "/nonexistent.ini: cannot open"},
    {"bless", "--allow-dirty", 1, "/nonexistent.ini: cannot open"},
    {"compare", "--vary lr=0.1,0.2", 1, "/nonexistent.ini: cannot open"},
    {"bisect", "", 0, "/nonexistent.ini: cannot open"},
    {"bisect", "--commits HEAD~1..HEAD", 0, "/nonexistent.ini"},
    {"submit", "-o /nonexistent/bundle", 0, "submit: cannot create /nonexistent/bundle"},
};
#define NWORKLOAD (sizeof workload_cmds / sizeof workload_cmds[0])

START_TEST(test_common_options_accepted_by_every_workload_command)
{
    for (size_t i = 0; i < NWORKLOAD; i++) {
        char args[600];
        snprintf(args, sizeof args,
                 "%s /nonexistent.ini %s -q --quiet --json --steps 2 --seed 7 --set train.lr=0.1 "
                 "--threads 1 --workers 0 %s",
                 workload_cmds[i].cmd, workload_cmds[i].own,
                 workload_cmds[i].multi ? "--runs 2" : "");
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d\n%s", args, rc, err);
        ck_assert_msg(strstr(err, "unknown option") == NULL &&
                          strstr(err, "does not apply") == NULL,
                      "%s: %s", args, err);
        ck_assert_msg(strstr(err, workload_cmds[i].fails_with) != NULL, "%s: %s", args, err);
    }
    /* --runs is for the commands that compare runs: run takes one run. */
    ck_assert_int_eq(tu_run_repro("run experiments/mlp.ini --runs 2", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "unknown option '--runs'"));
}
END_TEST

/* The common options do what the table says where they were missing
 * before: run --json, and compare with --threads/--workers/-q for every
 * run (2 steps, so this is quick). */
START_TEST(test_common_options_take_effect)
{
    char trace[300], args[600];
    tu_write_temp(trace, sizeof trace, "common.jsonl", "");
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 2 --threads 2 --json -q -o %s",
             trace);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(out[0] == '{' && strstr(out, "\"steps\": 2,") && strstr(out, "\"chain\": \""),
                  "%s", out);
    ck_assert_msg(err[0] == '\0', "-q: %s", err);
    ck_assert_int_eq(tu_run_repro("compare experiments/mlp.ini --vary lr=0.1,0.2 --runs 1 "
                                  "--steps 2 --threads 2 --workers 1 -q --json",
                                  out, sizeof out, err, sizeof err),
                     0);
    ck_assert_msg(out[0] == '{' && strstr(out, "\"runs_per_value\": 1"), "%s", out);
    ck_assert_msg(strstr(err, "compare:") == NULL, "-q: %s", err);
}
END_TEST

/* Help is generated from the table and the command's own options: every
 * common option a command accepts is in `help CMD`, the same text as
 * `CMD --help`; the list commands say LIST. */
START_TEST(test_help_lists_every_common_option)
{
    static const char *const common[] = {"-q, --quiet", "--json", "--steps N", "--seed S",
                                         "--set KEY=VALUE", "--threads", "--workers", "-h, --help"};
    static char other[65536];
    for (size_t i = 0; i < NWORKLOAD; i++) {
        char args[200];
        snprintf(args, sizeof args, "help %s", workload_cmds[i].cmd);
        ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
        for (size_t k = 0; k < sizeof common / sizeof common[0]; k++)
            ck_assert_msg(strstr(out, common[k]) != NULL, "help %s lacks %s", workload_cmds[i].cmd,
                          common[k]);
        ck_assert_msg((strstr(out, "--runs N") != NULL) == workload_cmds[i].multi,
                      "help %s: --runs", workload_cmds[i].cmd);
        snprintf(args, sizeof args, "%s --help", workload_cmds[i].cmd);
        ck_assert_int_eq(tu_run_repro(args, other, sizeof other, err, sizeof err), 0);
        ck_assert_str_eq(out, other);
    }
    ck_assert_int_eq(tu_run_repro("help check", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--threads LIST"));
    ck_assert_ptr_nonnull(strstr(out, "--resume-at K"));
    ck_assert_ptr_nonnull(strstr(out, "--jobs N"));
    ck_assert_int_eq(tu_run_repro("help run", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--threads T"));
    ck_assert_ptr_nonnull(strstr(out, "--dump-only GLOB"));
    ck_assert_int_eq(tu_run_repro("help bisect", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "--quarantine OP"));
    ck_assert_ptr_nonnull(strstr(out, "--steps N"));
}
END_TEST

/* A mistyped option gets a suggestion from the command's whole table,
 * common options included, on every workload command. */
START_TEST(test_unknown_option_suggests_from_the_table)
{
    for (size_t i = 0; i < NWORKLOAD; i++) {
        char args[300];
        snprintf(args, sizeof args, "%s --jsno /nonexistent.ini", workload_cmds[i].cmd);
        ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, "unknown option '--jsno' (did you mean '--json'?)") != NULL,
                      "%s: %s", args, err);
    }
    ck_assert_int_eq(tu_run_repro("bless --alow-dirty x.ini", out, sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "did you mean '--allow-dirty'?"));
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_did_you_mean);
    tcase_add_test(tc, test_common_options_accepted_by_every_workload_command);
    tcase_add_test(tc, test_common_options_take_effect);
    tcase_add_test(tc, test_help_lists_every_common_option);
    tcase_add_test(tc, test_unknown_option_suggests_from_the_table);
    tcase_add_test(tc, test_gc_and_passing_check_tidy);
    tcase_add_test(tc, test_check_git_bisect_codes);
    tcase_add_test(tc, test_version_and_help);
    tcase_add_test(tc, test_usage_errors_exit_2);
    tcase_add_test(tc, test_bad_experiment_names_file_line);
    tcase_add_test(tc, test_bad_idx_exits_2);
    tcase_add_test(tc, test_run_prints_summary_and_is_reproducible);
    tcase_add_test(tc, test_print_config);
    tcase_add_test(tc, test_counts_and_seeds_are_strict);
    suite_add_tcase(s, tc);
    return s;
}
