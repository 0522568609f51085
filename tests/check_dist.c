/* Data parallel, end to end: the shard rule's config checks; the shipped
 * experiments bitwise identical on 1, 2 and 4 MPI ranks (oversubscribed
 * on this machine); the negative controls (ring fails under scope "world
 * size", arrival fails run to run, bisect names it); a planted replica
 * drift reported with its rank, step and tensor; resume under another
 * world size exact (refused under ring); joining a job started by mpirun.
 * Skipped, saying so, where this build has no MPI or mpirun is absent. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/dist.h"
#include "testutil.h"
#include "util/fault.h"

static char out[1 << 20], err[1 << 16];

#define MLP "experiments/mlp.ini"
#define CNN "experiments/cnn.ini"

/* 1 when `repro run --ranks 2` can run here; else prints why not. */
static int have_mpi(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    int rc = tu_run_repro("run " MLP " --ranks 2 --steps 1 --no-trace -q", out, sizeof out, err,
                          sizeof err);
    known = rc == 0;
    if (!known)
        tu_skip("dist", "the data-parallel runs: %.300s", err);
    return known;
}

/* The final chain digest of a run's output ("chain HEX" line). */
static void chain_of(const char *text, char hex[65])
{
    const char *p = strstr(text, "\nchain ");
    ck_assert_msg(p != NULL, "no chain line in: %.1500s", text);
    snprintf(hex, 65, "%.64s", p + 7);
}

static void run_chain(const char *args, char hex[65])
{
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "repro %s: exit %d: %.1500s", args, rc, err);
    chain_of(out, hex);
}

START_TEST(test_shard_rule_config_checks)
{
    static const struct {
        const char *args, *says;
    } bad[] = {
        {"--ranks 2 --set shard_size=0", "needs [train] shard_size"},
        {"--set shard_size=24", "does not divide batch_size 64"},
        {"--ranks 8", "does not divide the 4 shards"},
        {"--ranks 2 --set trace.level=op", "trace level op"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[256];
        snprintf(args, sizeof args, "run " MLP " --steps 1 --no-trace %s", bad[i].args);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d, expected 2: %.1500s", args, rc, err);
        /* the keys come from the command line here: the message says so */
        ck_assert_msg(strstr(err, bad[i].says) && strstr(err, "command line: "),
                      "%s: expected '%s' naming where in: %.1500s", args, bad[i].says, err);
    }
}
END_TEST

START_TEST(test_world_size_invariant)
{
    if (!have_mpi())
        return;
    const char *exps[] = {MLP, CNN};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "check %s --ranks 1,2,4 --steps 20 --no-golden", exps[i]);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 0, "%s: exit %d: %.1500s %.1500s", args, rc, out, err);
        ck_assert_msg(strstr(out, "5 runs identical"), "%.1500s", out);
    }
}
END_TEST

START_TEST(test_ring_fails_under_world_size)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("check " MLP " --ranks 1,2,4 --steps 20 --no-golden --set "
                          "allreduce=ring",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(out, "ranks=2 (scope: world size)") &&
                      strstr(out, "ranks=4 (scope: world size)"),
                  "%.1500s", out);
    ck_assert_msg(strstr(out, "cause: allreduce = ring"), "%.1500s", out);
    /* ring is deterministic for one world size: ranks = 2 twice agree */
    rc = tu_run_repro("check " MLP " --steps 20 --no-golden --set allreduce=ring --set ranks=2",
                      out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "ring at a fixed world size: exit %d: %.1500s", rc, out);
}
END_TEST

/* arrival's order is the network's: a check of three runs must fail. It
 * is timing, so up to three checks are given; one failure proves it. */
START_TEST(test_arrival_fails_run_to_run)
{
    if (!have_mpi())
        return;
    int rc = 0;
    for (int attempt = 0; attempt < 3 && rc != 1; attempt++)
        rc = tu_run_repro("check " MLP " --runs 3 --steps 40 --no-golden --set ranks=4 --set "
                          "allreduce=arrival --set deterministic=warn",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "arrival reproduced in 3 checks (exit %d): %.1500s", rc, out);
    ck_assert_msg(strstr(out, "scope: fresh-process run to run"), "%.1500s", out);
}
END_TEST

START_TEST(test_bisect_names_arrival)
{
    if (!have_mpi())
        return;
    int rc = 0;
    for (int attempt = 0; attempt < 3 && rc != 1; attempt++)
        rc = tu_run_repro("bisect " MLP " --steps 40 --set ranks=4 --set allreduce=arrival "
                          "--set deterministic=warn",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "variant.allreduce = arrival"), "%.1500s", out);
}
END_TEST

START_TEST(test_replica_drift_is_reported)
{
    if (!have_mpi())
        return;
    setenv("REPRO_FAULT", "flip:step=5:tensor=param.fc2.weight:rank=1:element=77", 1);
    int rc = tu_run_repro("run " MLP " --ranks 2 --steps 12 -q --no-trace", out, sizeof out,
                          err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 1, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(err, "replica drift: after step 5's update, rank 1's param.fc2.weight "
                              "left rank 0's: 1 of 32768 elements differ, the first [77]"),
                  "%.1500s", err);
    /* the negative control of the control: without the fault, no drift;
     * the summary has each rank's step time and peak memory */
    rc = tu_run_repro("run " MLP " --ranks 2 --steps 12 -q --no-trace --json", out, sizeof out,
                      err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.1500s", rc, err);
    const char *r1 = strstr(out, "\"rank\": 1");
    ck_assert_msg(strstr(out, "\"rank\": 0") && r1 && strstr(r1, "\"ms_per_step\"") &&
                      strstr(r1, "\"peak_rss_mib\""),
                  "%.1500s", out);
}
END_TEST

/* The pid of the process whose environment has REPRO_TEST_TAG=tag and
 * OMPI_COMM_WORLD_RANK=rank, or 0. */
static pid_t find_rank(const char *tag, int rank)
{
    char want_tag[96], want_rank[48];
    snprintf(want_tag, sizeof want_tag, "REPRO_TEST_TAG=%s", tag);
    snprintf(want_rank, sizeof want_rank, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    static char buf[1 << 16];
    while (d && !found && (e = readdir(d))) {
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "rb") : NULL;
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        int tagged = 0, ranked = 0;
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
            tagged |= !strcmp(buf + i, want_tag);
            ranked |= !strcmp(buf + i, want_rank);
        }
        if (tagged && ranked)
            found = (pid_t)atol(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Starts `repro run --ranks 2` for many steps, and once both ranks train,
 * sends sig to rank `target` (-1: to repro itself). Its exit status, and
 * its stderr in err. */
static int signal_during_run(int target, int sig)
{
    static int serial;
    char tag[64], errp[TU_TMP_LEN + 16];
    snprintf(tag, sizeof tag, "dist-%ld-%d", (long)getpid(), serial++);
    tu_tmp_template(errp, sizeof errp, "err");
    int efd = mkstemp(errp);
    ck_assert_int_ge(efd, 0);
    const char *bin = getenv("REPRO_BIN") ? getenv("REPRO_BIN") : "build/repro";
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("REPRO_TEST_TAG", tag, 1);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(efd, 2);
        execl(bin, bin, "run", MLP, "--ranks", "2", "--steps", "1000000", "--no-trace", "-q",
              (char *)NULL);
        _exit(127);
    }
    close(efd);
    pid_t victim = 0;
    for (int i = 0; i < 1200 && !(find_rank(tag, 0) && find_rank(tag, 1)); i++)
        nap_ms(50);
    ck_assert_msg(find_rank(tag, 0) && find_rank(tag, 1), "the ranks did not start");
    nap_ms(1000); /* training under way; the launcher has seen both ranks */
    victim = target < 0 ? pid : find_rank(tag, target);
    ck_assert_int_gt(victim, 0);
    ck_assert_int_eq(kill(victim, sig), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    /* Nothing of the job outlives it. */
    for (int i = 0; i < 100 && (find_rank(tag, 0) || find_rank(tag, 1)); i++)
        nap_ms(50);
    ck_assert_msg(!find_rank(tag, 0) && !find_rank(tag, 1), "a rank outlived the job");
    FILE *f = fopen(errp, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(err, 1, sizeof err - 1, f);
    err[n] = '\0';
    fclose(f);
    unlink(errp);
    ck_assert_msg(WIFEXITED(st), "repro itself died of signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* A rank's death says which rank and how, and exits 3 (the run could not
 * complete): it exited 137 with only Open MPI's "Read -1, expected ...",
 * or 143 in silence. A signal to repro itself stops the job and exits
 * 128 + the signal (SIGTERM was a silent exit 1, "mismatch"). */
START_TEST(test_rank_death_is_reported)
{
    if (!have_mpi())
        return;
    int rc = signal_during_run(1, SIGKILL);
    ck_assert_msg(rc == 3, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(err, "repro: run: rank 1 of 2 (pid ") &&
                      strstr(err, "killed by signal 9 (Killed), and the MPI job stopped"),
                  "%.1500s", err);
    rc = signal_during_run(0, SIGTERM);
    ck_assert_msg(rc == 3, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(err, "repro: run: rank 0 of 2 (pid ") &&
                      strstr(err, "killed by signal 15 (Terminated)"),
                  "%.1500s", err);
    rc = signal_during_run(-1, SIGTERM);
    ck_assert_msg(rc == 143, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(err, "repro: run: terminated (SIGTERM): the MPI job of 2 ranks was "
                              "stopped"),
                  "%.1500s", err);
    ck_assert_msg(!strstr(err, "rank 0 of 2") && !strstr(err, "rank 1 of 2"), "%.1500s", err);
    rc = signal_during_run(-1, SIGINT);
    ck_assert_msg(rc == 130, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(err, "repro: run: interrupted (SIGINT)"), "%.1500s", err);
}
END_TEST

START_TEST(test_resume_across_world_sizes)
{
    if (!have_mpi())
        return;
    char dir[TU_TMP_LEN], args[512], full[65], resumed[65];
    tu_tmp_template(dir, sizeof dir, "dist");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof args,
             "run " CNN " --steps 16 --ranks 2 --checkpoint-every 8 --checkpoint-dir %s -q -o "
             "%s/a.jsonl",
             dir, dir);
    run_chain(args, full);
    for (int n = 1; n <= 4; n *= 2) {
        snprintf(args, sizeof args,
                 "run " CNN " --steps 16 --ranks %d --resume %s/ckpt-8.bin -q -o %s/r%d.jsonl", n,
                 dir, dir, n);
        run_chain(args, resumed);
        ck_assert_msg(!strcmp(full, resumed), "resumed under %d ranks: chain %s, not %s", n,
                      resumed, full);
    }
    /* ring: its sums depend on the world size, so another one is refused */
    snprintf(args, sizeof args,
             "run " CNN " --steps 16 --ranks 2 --set allreduce=ring --checkpoint-every 8 "
             "--checkpoint-dir %s/ring -q -o %s/ring.jsonl",
             dir, dir);
    run_chain(args, full);
    snprintf(args, sizeof args,
             "run " CNN " --steps 16 --ranks 4 --set allreduce=ring --resume %s/ring/ckpt-8.bin "
             "-q -o %s/ring4.jsonl",
             dir, dir);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "saved with ranks = 2 under allreduce = ring"),
                  "exit %d: %.1500s", rc, err);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
}
END_TEST

/* Started by mpirun (as on a cluster: mpirun -np N repro run EXP), each
 * process joins as its rank, and the run equals the one-process run. */
START_TEST(test_joins_an_mpi_job)
{
    if (!have_mpi())
        return;
    char one[65], joined[65], cmd[1024];
    run_chain("run " MLP " --steps 10 -q --no-trace", one);
    const char *bin = getenv("REPRO_BIN");
    ck_assert_ptr_nonnull(bin);
    snprintf(cmd, sizeof cmd,
             "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 %s run " MLP
             " --steps 10 -q --no-trace 2>&1",
             bin);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_msg(pclose(p) == 0, "%s: %.1500s", cmd, out);
    chain_of(out, joined);
    ck_assert_str_eq(one, joined);
    ck_assert_msg(strstr(out, "ranks 2 (MPI)"), "%.1500s", out);
    /* a ranks value that is not the job's size is refused */
    snprintf(cmd, sizeof cmd,
             "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 %s run " MLP
             " --ranks 4 --steps 2 -q --no-trace 2>&1",
             bin);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_int_ne(pclose(p), 0);
    ck_assert_msg(strstr(out, "this MPI job has 2 processes"), "%.1500s", out);
}
END_TEST

/* compare --vary ranks: one row per world size, every one the same bits. */
START_TEST(test_compare_varies_ranks)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("compare " CNN " --vary ranks=1,2,4 --runs 1 --steps 8", out,
                          sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.1500s", rc, err);
    const char *r2 = strstr(out, "\n2 "), *r4 = strstr(out, "\n4 ");
    ck_assert_msg(r2 && r4 && strstr(r2, "same bits") && strstr(r4, "same bits"), "%.1500s",
                  out);
}
END_TEST

/* The replica fault's rank= is checked like its other fields, and only
 * the replica path applies it, on that rank only. */
START_TEST(test_replica_fault_parsing)
{
    static const char *const bad[] = {"flip:step=5:tensor=param.fc1.weight:rank=x",
                                       "flip:step=5:tensor=param.fc1.weight:rank=-1",
                                       "flip:step=5:tensor=param.fc1.weight:rank=65536",
                                       "flip:step=5:tensor=param.fc1.weight:rank="};
    repro_fault f;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("REPRO_FAULT", bad[i], 1);
        ck_assert_msg(repro_fault_from_env(&f) == -1, "%s was accepted", bad[i]);
    }
    setenv("REPRO_FAULT", "flip:step=5:tensor=param.w:rank=1:element=2:bit=3", 1);
    unsetenv("REPRO_CHECK_RUN");
    ck_assert_int_eq(repro_fault_from_env(&f), 0);
    unsetenv("REPRO_FAULT");
    ck_assert_int_eq(f.replica, 2);
    float w[4] = {1, 1, 1, 1}, ref[4] = {1, 1, 1, 1};
    ck_assert_int_eq(repro_fault_apply(&f, 5, "param.w", w, sizeof w), 0); /* not the recorder's */
    ck_assert_int_eq(repro_fault_apply_replica(&f, 0, 5, "param.w", w, sizeof w), 0);
    ck_assert_int_eq(repro_fault_apply_replica(&f, 1, 4, "param.w", w, sizeof w), 0);
    ck_assert(!memcmp(w, ref, sizeof w));
    ck_assert_int_eq(repro_fault_apply_replica(&f, 1, 5, "param.w", w, sizeof w), 1);
    ck_assert(memcmp(w + 2, ref + 2, 4) != 0 && !memcmp(w, ref, 8));
}
END_TEST

/* The launcher's world size comes from its environment; anything but a
 * decimal count in range means "not launched". */
START_TEST(test_launcher_environment)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    ck_assert_int_eq(repro_dist_launched_size(), 0);
    static const char *const junk[] = {"", "abc", "0", "-2", "4x", "99999999"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        setenv("OMPI_COMM_WORLD_SIZE", junk[i], 1);
        ck_assert_msg(repro_dist_launched_size() == 0, "'%s' read as a world size", junk[i]);
    }
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    ck_assert_int_eq(repro_dist_launched_size(), 4);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("PMI_SIZE", "3", 1);
    ck_assert_int_eq(repro_dist_launched_size(), 3);
    unsetenv("PMI_SIZE");
}
END_TEST

Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("dist");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_shard_rule_config_checks);
    tcase_add_test(tc, test_replica_fault_parsing);
    tcase_add_test(tc, test_launcher_environment);
    tcase_add_test(tc, test_world_size_invariant);
    tcase_add_test(tc, test_ring_fails_under_world_size);
    tcase_add_test(tc, test_arrival_fails_run_to_run);
    tcase_add_test(tc, test_bisect_names_arrival);
    tcase_add_test(tc, test_replica_drift_is_reported);
    tcase_add_test(tc, test_rank_death_is_reported);
    tcase_add_test(tc, test_resume_across_world_sizes);
    tcase_add_test(tc, test_joins_an_mpi_job);
    tcase_add_test(tc, test_compare_varies_ranks);
    suite_add_tcase(s, tc);
    return s;
}
