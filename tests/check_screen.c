/* `repro screen`: a healthy machine passes (every rank matches the golden
 * and the others); the negative controls: a bit flipped on rank 3 only
 * names rank 3 and its core, the intermittent form is counted per rank
 * over --repeat, a rank that cannot run is "could not test" (exit 3),
 * never a match; and the fault selector's parsing. Runs oversubscribed on
 * this machine (4 ranks on its cores); skipped, saying so, where mpirun
 * cannot start. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden/screen.h"
#include "testutil.h"
#include "util/fault.h"

static char out[1 << 18], err[1 << 16];

#define MLP "experiments/mlp.ini"

/* 1 when a 2-rank screen can start here; else says why not. */
static int have_mpi(void)
{
    static int known = -1;
    if (known < 0) {
        int rc = tu_run_repro("screen " MLP " --ranks 2 --steps 1", out, sizeof out, err,
                              sizeof err);
        known = rc == 0;
        if (!known)
            tu_skip("screen", "mpirun could not run a 2-rank screen (exit %d): %.300s", rc, err);
    }
    return known;
}

/* The line of the report about `rank`. */
static const char *rank_line(const char *text, int rank, char *buf, size_t len)
{
    char key[32];
    snprintf(key, sizeof key, "rank %-3d host ", rank);
    const char *p = strstr(text, key);
    ck_assert_msg(p != NULL, "no line for rank %d in: %.2000s", rank, text);
    snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

START_TEST(test_healthy_machine_passes)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("screen " MLP " --ranks 4 --steps 60", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.2000s %.2000s", rc, out, err);
    ck_assert_msg(strstr(out, "4 of 4 ranks match the golden"), "%.2000s", out);
    char line[512];
    for (int r = 0; r < 4; r++)
        ck_assert_msg(strstr(rank_line(out, r, line, sizeof line), " match "), "%s", line);
}
END_TEST

/* The negative control: a bit flip on rank 3 only is found, named with
 * its host and core, located to the step, tensor, elements and ULP; the
 * others match.
 * The JUnit file has one case per rank, rank 3's failed. */
START_TEST(test_rank_fault_is_named)
{
    if (!have_mpi())
        return;
    char dir[256], junit[300];
    tu_tmp_template(dir, sizeof dir, "screen");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(junit, sizeof junit, "%s/screen.xml", dir);
    char args[512];
    snprintf(args, sizeof args, "screen " MLP " --ranks 4 --steps 20 --junit %s", junit);
    setenv("REPRO_FAULT", "flip:step=9:tensor=param.fc1.weight:rank=3:element=5:bit=3", 1);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 1, "exit %d: %.2000s %.2000s", rc, out, err);
    char line[512];
    rank_line(out, 3, line, sizeof line);
    /* bit 3 of one element's mantissa: 8 ULP, from both ranks' re-run dumps */
    ck_assert_msg(strstr(line, "diverged at step 9, tensor param.fc1.weight, 1 element, max 8 ULP"),
                  "%s", line);
    ck_assert_msg(strstr(line, "core 1 "), "rank 3 is the 4th slot: core 1 of 2: %s", line);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(strstr(rank_line(out, r, line, sizeof line), " match "), "%s", line);
    ck_assert_msg(strstr(out, "3 of 4 ranks match the golden; rank 3 on host "), "%.2000s", out);
    ck_assert_msg(!strstr(out, "; rank 0 ") && !strstr(out, "; rank 1 ") &&
                      !strstr(out, "; rank 2 "),
                  "only rank 3 is named: %.2000s", out);
    static char xml[1 << 14];
    tu_slurp(junit, xml, sizeof xml);
    ck_assert_msg(strstr(xml, "tests=\"4\" failures=\"1\" errors=\"0\""), "%s", xml);
    ck_assert_msg(strstr(xml, "rank 3 (host "), "%s", xml);
}
END_TEST

/* The intermittent form fires on repeats 1 and 3 of 5: rank 3 is counted
 * 2 of 5, the others 0 (JSON). */
START_TEST(test_intermittent_fault_is_counted)
{
    if (!have_mpi())
        return;
    setenv("REPRO_FAULT", "flip:step=4:tensor=grad.fc2.weight:rank=3:repeat=1,3", 1);
    int rc = tu_run_repro("screen " MLP " --ranks 4 --steps 6 --repeat 5 --json", out, sizeof out,
                          err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 1, "exit %d: %.2000s %.2000s", rc, out, err);
    for (int r = 0; r < 4; r++) {
        char key[64];
        snprintf(key, sizeof key, "\"rank\": %d,", r);
        const char *p = strstr(out, key);
        ck_assert_msg(p != NULL, "%.3000s", out);
        const char *f = strstr(p, "\"failures\": ");
        ck_assert_ptr_nonnull(f);
        int failures = atoi(f + 12);
        if (r == 3)
            ck_assert_msg(failures >= 1 && failures <= 4 && failures == 2, "rank 3: %d", failures);
        else
            ck_assert_msg(failures == 0, "rank %d: %d failures", r, failures);
    }
    ck_assert_msg(strstr(out, "\"verdict\": \"intermittent\""), "%.3000s", out);
}
END_TEST

/* A rank that cannot run (here: runs/ is a file, so no trace can be
 * written) is "could not test", exit 3, never a match. */
START_TEST(test_untestable_rank_is_not_a_match)
{
    char dir[256], cwd[1024], args[1400];
    tu_tmp_template(dir, sizeof dir, "screen-cwd");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    char runs[300];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    FILE *f = fopen(runs, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(args, sizeof args, "screen %s/" MLP " --steps 2", cwd);
    char shell[3200], *bin = realpath(getenv("REPRO_BIN"), NULL);
    ck_assert_ptr_nonnull(bin);
    snprintf(shell, sizeof shell, "cd %s && %s %s 2>&1", dir, bin, args);
    free(bin);
    FILE *p = popen(shell, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    ck_assert_msg(WEXITSTATUS(status) == 3, "exit %d: %.2000s", WEXITSTATUS(status), out);
    ck_assert_msg(strstr(out, "could not test"), "%.2000s", out);
    ck_assert_msg(strstr(out, "0 of 1 ranks"), "%.2000s", out);
}
END_TEST

START_TEST(test_usage_errors)
{
    static const struct {
        const char *args, *says;
    } cases[] = {
        {"screen", "one experiment file"},
        {"screen " MLP " --repeat 0", "--repeat"},
        {"screen " MLP " --ranks x", "--ranks"},
        {"screen " MLP " --set train.ranks=2", "set ranks = 1"},
        {"screen " MLP " --runs 2", "runs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tu_run_repro(cases[i].args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d: %s", cases[i].args, rc, err);
        ck_assert_msg(strstr(err, cases[i].says), "%s: %s", cases[i].args, err);
    }
}
END_TEST

/* rank= selects the rank of a screen, repeat= the repeats it fires on. */
START_TEST(test_fault_selector)
{
    repro_fault f;
    unsetenv("REPRO_CHECK_RUN");
    setenv("REPRO_FAULT", "flip:step=5:tensor=param.w:rank=3:repeat=1,3", 1);
    ck_assert_int_eq(repro_fault_from_env(&f), 0);
    float w[4] = {0};
    for (int rank = 0; rank < 5; rank++)
        for (int rep = 0; rep < 5; rep++) {
            repro_fault g = f;
            repro_fault_select_screen(&g, rank, rep);
            int fires = rank == 3 && (rep == 1 || rep == 3);
            ck_assert_int_eq(repro_fault_apply(&g, 5, "param.w", w, sizeof w), fires);
        }
    static const char *const bad[] = {"flip:step=5:tensor=t:repeat=",
                                      "flip:step=5:tensor=t:repeat=64",
                                      "flip:step=5:tensor=t:repeat=1,",
                                      "flip:step=5:tensor=t:repeat=a"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("REPRO_FAULT", bad[i], 1);
        ck_assert_msg(repro_fault_from_env(&f) == -1, "%s accepted", bad[i]);
    }
    unsetenv("REPRO_FAULT");
}
END_TEST

/* The chain digest on the "chain HEX" line of `repro run`'s output. */
static void chain_of(const char *text, char hex[65])
{
    const char *p = strstr(text, "\nchain ");
    ck_assert_msg(p != NULL, "no chain line in: %.1500s", text);
    snprintf(hex, 65, "%.64s", p + 7);
}

/* replay.every = K recomputes every K-th step before the update: the bits
 * of a healthy run are unchanged; a gradient flipped in the replayed
 * computation (the negative control) stops the run before step 10's
 * update with exit 1, naming step, rank and tensor; a flip on a step that
 * is not replayed is not caught by it. */
START_TEST(test_replay_catches_fault_before_update)
{
    char plain[65], replayed[65], dir[256], args[600];
    tu_tmp_template(dir, sizeof dir, "replay");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int rc = tu_run_repro("run " MLP " --steps 12 --no-trace -q", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    chain_of(out, plain);
    rc = tu_run_repro("run " MLP " --steps 12 --no-trace -q --set replay.every=5", out, sizeof out,
                      err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    chain_of(out, replayed);
    ck_assert_str_eq(plain, replayed);

    snprintf(args, sizeof args, "run " MLP " --steps 12 -q --set replay.every=5 -o %s/t.jsonl",
             dir);
    setenv("REPRO_FAULT", "flip:step=10:tensor=grad.fc2.weight:element=7", 1);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "replay: step 10, rank 0: grad.fc2.weight differs") &&
                      strstr(err, "1 of 32768 elements") &&
                      strstr(err, "hardware or nondeterminism") &&
                      strstr(err, "before the update"),
                  "%s", err);
    static char trace[1 << 20];
    char path[300];
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    tu_slurp(path, trace, sizeof trace);
    ck_assert_msg(strstr(trace, "\"step\":9,") && !strstr(trace, "\"step\":10,"),
                  "the trace ends at step 9: step 10's update never happened");

    setenv("REPRO_FAULT", "flip:step=9:tensor=grad.fc2.weight:element=7", 1);
    rc = tu_run_repro("run " MLP " --steps 12 --no-trace -q --set replay.every=5", out, sizeof out,
                      err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 0, "step 9 is not replayed: exit %d: %s", rc, err);

    rc = tu_run_repro("run " MLP " --steps 2 --set replay.every=1 --set accumulation_steps=2", out,
                      sizeof out, err, sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "replay.every needs accumulation_steps = 1"), "%d %s",
                  rc, err);
}
END_TEST

/* Under screen, a replay that differs is that rank's divergence (exit 1),
 * not a rank that could not be tested. */
START_TEST(test_replay_under_screen)
{
    if (!have_mpi())
        return;
    setenv("REPRO_FAULT", "flip:step=5:tensor=grad.fc1.bias:rank=1", 1);
    int rc = tu_run_repro("screen " MLP " --ranks 2 --steps 6 --set replay.every=5", out,
                          sizeof out, err, sizeof err);
    unsetenv("REPRO_FAULT");
    ck_assert_msg(rc == 1, "exit %d: %.2000s %.2000s", rc, out, err);
    char line[512];
    rank_line(out, 1, line, sizeof line);
    ck_assert_msg(strstr(line, "diverged at step 5, tensor grad.fc1.bias") &&
                      strstr(line, "replay"),
                  "%s", line);
    ck_assert_msg(strstr(rank_line(out, 0, line, sizeof line), " match "), "%s", line);
}
END_TEST

static repro_screen_rank judged_rank(int rank, const char *cls, int golden, unsigned char chain)
{
    repro_screen_rank r;
    memset(&r, 0, sizeof r);
    r.rank = rank;
    r.tested = 1;
    snprintf(r.env_class, sizeof r.env_class, "%s", cls);
    r.golden = golden;
    memset(&r.chain, chain, sizeof r.chain);
    r.nsteps = 3;
    r.ntensors = 2;
    return r;
}

/* The verdict rules without MPI: ranks are held to their own class only;
 * within it the golden's matches, else the majority, are the reference,
 * and the digest tables locate a divergence to its step and tensor; two
 * ranks that disagree with no majority both fail; a rank that could not
 * run is neither a match nor a divergence. */
START_TEST(test_judge_rules)
{
    enum { N = 5, STRIDE = 3 * 3 };
    repro_screen_rank r[N] = {
        judged_rank(0, "A", REPRO_SCREEN_GOLDEN_NONE, 1),
        judged_rank(1, "A", REPRO_SCREEN_GOLDEN_NONE, 1),
        judged_rank(2, "B", REPRO_SCREEN_GOLDEN_MATCH, 7), /* other bits, its own golden */
        judged_rank(3, "A", REPRO_SCREEN_GOLDEN_NONE, 9),
        judged_rank(4, "", REPRO_SCREEN_GOLDEN_NONE, 0),
    };
    r[4].tested = 0;
    repro_digest tables[N * STRIDE];
    memset(tables, 0, sizeof tables);
    tables[3 * STRIDE + 1 * 3 + 0].b[0] = 1; /* rank 3, step 2: its digest and tensor 1 */
    tables[3 * STRIDE + 1 * 3 + 2].b[0] = 1;
    char names[2][64] = {"param.a", "grad.b"};
    repro_screen_verdict v[N];
    int tie = -1;
    repro_screen_judge(r, N, tables, STRIDE, 2, names, v, &tie);
    ck_assert_int_eq(tie, 0);
    ck_assert(!v[0].diverged && !v[1].diverged && !v[2].diverged);
    ck_assert(v[3].diverged);
    ck_assert_int_eq(v[3].ref_rank, 0);
    ck_assert_int_eq(v[3].step, 2);
    ck_assert_str_eq(v[3].tensor, "grad.b");
    ck_assert_int_eq(v[3].ntensors, 1);
    ck_assert(!v[4].tested && !v[4].diverged);

    repro_screen_rank two[2] = {judged_rank(0, "A", REPRO_SCREEN_GOLDEN_NONE, 1),
                                judged_rank(1, "A", REPRO_SCREEN_GOLDEN_NONE, 2)};
    repro_screen_judge(two, 2, tables, STRIDE, 2, names, v, &tie);
    ck_assert_int_eq(tie, 1);
    ck_assert(v[0].diverged && v[1].diverged);

    /* a golden match outvotes a majority of its class */
    two[1].golden = REPRO_SCREEN_GOLDEN_MATCH;
    two[0].golden = REPRO_SCREEN_GOLDEN_DIFFERS;
    two[0].golden_step = 3;
    repro_screen_judge(two, 2, tables, STRIDE, 2, names, v, &tie);
    ck_assert_int_eq(tie, 0);
    ck_assert(v[0].diverged && !v[1].diverged);
    ck_assert_int_eq(v[0].ref_rank, 1);
}
END_TEST

/* Started by mpirun itself (as with a hostfile), the ranks join the job. */
START_TEST(test_joins_an_mpi_job)
{
    if (!have_mpi())
        return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 %s screen " MLP
             " --steps 3 2>&1",
             getenv("REPRO_BIN"));
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_msg(pclose(p) == 0, "%s: %.2000s", cmd, out);
    ck_assert_msg(strstr(out, "2 of 2 ranks match the golden"), "%.2000s", out);
}
END_TEST

Suite *screen_suite(void)
{
    Suite *s = suite_create("screen");
    TCase *tc = tcase_create("screen");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fault_selector);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_judge_rules);
    tcase_add_test(tc, test_joins_an_mpi_job);
    tcase_add_test(tc, test_untestable_rank_is_not_a_match);
    tcase_add_test(tc, test_healthy_machine_passes);
    tcase_add_test(tc, test_rank_fault_is_named);
    tcase_add_test(tc, test_intermittent_fault_is_counted);
    tcase_add_test(tc, test_replay_catches_fault_before_update);
    tcase_add_test(tc, test_replay_under_screen);
    suite_add_tcase(s, tc);
    return s;
}
