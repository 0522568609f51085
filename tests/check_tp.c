/* Tensor parallel, end to end: the mlp at tp 1, 2 and 4 (and tp 2 x ranks
 * 2) bitwise the single-process golden; the negative control (the ring
 * all-reduce, linear.tp_reduce = ring) fails under the scope
 * "tensor-parallel size" in the report and the JUnit file, and the scope
 * bisect names its variant; bad sizes refused with exit 2 naming the layer
 * and the sizes that work. Processes are oversubscribed on this machine
 * (repro starts mpirun with --oversubscribe). Skipped, saying so, where
 * this build has no MPI or mpirun is absent. */
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

#include "kernels/backend.h"
#include "record/trace.h"
#include "repro/repro.h"
#include "repro/tp.h"
#include "testutil.h"

static char out[1 << 20], err[1 << 16];

#define MLP "experiments/mlp.ini"

/* 1 when `repro run --tp 2` can run here; else prints why not. */
static int have_mpi(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    int rc = tu_run_repro("run " MLP " --tp 2 --steps 1 --no-trace -q", out, sizeof out, err,
                          sizeof err);
    known = rc == 0;
    if (!known)
        tu_skip("tp", "the tensor-parallel runs: %.300s", err);
    return known;
}

static void run_chain(const char *args, char hex[65])
{
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "repro %s: exit %d: %.1500s", args, rc, err);
    const char *p = strstr(out, "\nchain ");
    ck_assert_msg(p != NULL, "no chain line in: %.1500s", out);
    snprintf(hex, 65, "%.64s", p + 7);
}

/* The claim the chain rests on, without MPI: the running sums continued
 * over K in pieces (what rank 0, 1, ... of any size do) are bitwise the
 * CPU kernel's linear forward, whatever the cut; and the ring's
 * association (slices summed from +0, then added) is not. */
START_TEST(test_continue_is_the_kernel_order)
{
    enum { Bn = 13, Kn = 96, On = 37 };
    static float x[Bn * Kn], w[On * Kn], b[On], ref[Bn * On], acc[Bn * On], ring[Bn * On];
    uint32_t s = 12345;
    for (int i = 0; i < Bn * Kn; i++)
        x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < On * Kn; i++)
        w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int o = 0; o < On; o++)
        b[o] = (float)o * 0.01f - 0.2f;
    const repro_backend *be = &repro_backend_cpu;
    repro_backend_options opt = {2, 0};
    char why[256] = "";
    void *ctx = NULL;
    ck_assert_msg(be->create(&ctx, &opt, why, sizeof why) == 0, "%s", why);
    void *ws = malloc(be->linear_workspace_bytes(ctx, Bn, Kn, On));
    be->linear_forward(ctx, 0, x, w, b, ref, Bn, Kn, On, ws);
    be->synchronize(ctx);
    int differ_ring = 0;
    for (int N = 1; N <= 8; N *= 2) {
        int kw = Kn / N;
        for (int i = 0; i < Bn; i++)
            for (int o = 0; o < On; o++)
                acc[i * On + o] = b[o], ring[i * On + o] = 0.0f;
        for (int r = 0; r < N; r++)
            repro_tp_continue(acc, On, x + r * kw, Kn, w + r * kw, Kn, Bn, kw, On);
        ck_assert_msg(!memcmp(acc, ref, sizeof ref), "tp %d: the chain left the kernel's bits", N);
        /* the ring's association at this N: rank 0 from the bias, the rest from +0 */
        static float part[Bn * On];
        for (int r = 0; r < N; r++) {
            for (int i = 0; i < Bn; i++)
                for (int o = 0; o < On; o++)
                    part[i * On + o] = r == 0 ? b[o] : 0.0f;
            repro_tp_continue(part, On, x + r * kw, Kn, w + r * kw, Kn, Bn, kw, On);
            for (int i = 0; i < Bn * On; i++)
                ring[i] = r == 0 ? part[i] : ring[i] + part[i];
        }
        differ_ring |= N > 1 && memcmp(ring, ref, sizeof ref) != 0;
    }
    ck_assert_msg(differ_ring, "the ring's association never changed a bit: the control is "
                               "vacuous");
    free(ws);
    be->destroy(ctx);
}
END_TEST

START_TEST(test_bad_sizes_are_refused)
{
    static const struct {
        const char *args, *says[3];
    } bad[] = {
        {"--tp 3", {"tp = 3 does not divide layer fc1's 256 output features",
                    "tp = 1, 2, 4, 8, 16, 32, 64 would work", "command line: "}},
        {"--tp 5 --set hidden=96,64", {"fc1's 96", "1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48", NULL}},
        {"--tp 2 --set type=cnn", {"has none to split", NULL, NULL}},
        {"--tp 2 --set precision=bf16", {"precision = fp32", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[256];
        snprintf(args, sizeof args, "run " MLP " --steps 1 --no-trace %s", bad[i].args);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "%s: exit %d, expected 2: %.1500s", args, rc, err);
        for (int k = 0; k < 3 && bad[i].says[k]; k++)
            ck_assert_msg(strstr(err, bad[i].says[k]), "%s: expected '%s' in: %.1500s", args,
                          bad[i].says[k], err);
    }
    /* the check refuses the planned run before any run starts */
    int rc = tu_run_repro("check " MLP " --tp 1,3 --steps 1 --no-golden", out, sizeof out, err,
                          sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "--tp 3") && strstr(err, "fc1"), "exit %d: %.1500s",
                  rc, err);
}
END_TEST

START_TEST(test_kernels_lists_the_control)
{
    int rc = tu_run_repro("kernels", out, sizeof out, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    const char *ring = strstr(out, "linear.tp_reduce   ring");
    ck_assert_msg(ring != NULL, "%.3000s", out);
    ck_assert_msg(strstr(ring, "NOT TP-invariant"), "%.600s", ring);
    ck_assert_msg(strstr(out, "TP-invariant, the one-process sum"), "%.3000s", out);
}
END_TEST

/* The golden is the single-process one: tp 1, 2 and 4 must all equal it. */
START_TEST(test_tp_sizes_match_the_golden)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("check " MLP " --tp 1,2,4 --steps 10 --require-golden", out,
                          sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "golden: matches") && strstr(out, "5 runs identical"), "%.1500s",
                  out);
}
END_TEST

START_TEST(test_tp_with_ranks)
{
    if (!have_mpi())
        return;
    char one[65], four[65];
    run_chain("run " MLP " --steps 10 --no-trace -q", one);
    run_chain("run " MLP " --steps 10 --no-trace -q --tp 2 --ranks 2", four);
    ck_assert_str_eq(one, four);
    /* both report: the job's four processes, each rank's time line */
    ck_assert_msg(strstr(out, "rank 1:"), "%.1500s", out);
    /* The check form: runs at tp 2, then 2 replicas of tp 2, against the
     * single-process golden. */
    int rc = tu_run_repro("check " MLP " --set parallel.tp=2 --ranks 2 --steps 10 --require-golden",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "golden: matches") && strstr(out, "3 runs identical"), "%.1500s",
                  out);
}
END_TEST

START_TEST(test_ring_fails_under_tp_size)
{
    if (!have_mpi())
        return;
    char junit[256] = "/tmp/repro-tp-junit-XXXXXX";
    int fd = mkstemp(junit);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char args[512];
    snprintf(args, sizeof args,
             "check " MLP " --tp 1,2 --steps 4 --no-golden --set linear.tp_reduce=ring --set "
             "trace.every=1 --junit %s",
             junit);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %.1500s", rc, err);
    ck_assert_msg(strstr(out, "tp=2 (scope: tensor-parallel size)"), "%.3000s", out);
    ck_assert_msg(strstr(out, "scope: tensor-parallel size") &&
                      strstr(out, "DIVERGED at step 1"),
                  "%.3000s", out);
    /* the tensor and its elements at the divergent step */
    ck_assert_msg(strstr(out, "logits: elements") && strstr(out, " elements, max |a-b|"),
                  "%.3000s", out);
    ck_assert_msg(strstr(out, "cause: linear.tp_reduce = ring"), "%.3000s", out);
    static char xml[1 << 16];
    tu_slurp(junit, xml, sizeof xml);
    unlink(junit);
    ck_assert_msg(strstr(xml, "name=\"mlp: run 1 vs tp=2 (tensor-parallel size)\"") &&
                      strstr(xml, "<failure message=\"diverged at step 1 (tensor-parallel "
                                  "size)\""),
                  "%.2000s", xml);
    /* the ring is deterministic at one size: tp 2 twice agree */
    rc = tu_run_repro("check " MLP " --steps 4 --no-golden --set linear.tp_reduce=ring --set parallel.tp=2",
                      out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "ring at a fixed size: exit %d: %.1500s", rc, out);
}
END_TEST

START_TEST(test_bisect_names_the_variant)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("bisect --tp 1,2 " MLP " --set linear.tp_reduce=ring --steps 2", out,
                          sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "layer fc2, fwd.fc2 (op linear.tp_reduce, variant ring"),
                  "%.2000s", out);
    ck_assert_msg(strstr(out, "variant linear.tp_reduce = ring") &&
                      strstr(out, "tensor-parallel-size-dependent"),
                  "%.2000s", out);
    /* the invariant default: nothing to bisect */
    rc = tu_run_repro("bisect --tp 1,2 " MLP " --steps 2", out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "tp=1 (twice) and tp=2 agree bit for bit"),
                  "exit %d: %.2000s %.1500s", rc, out, err);
}
END_TEST

START_TEST(test_compare_varies_tp)
{
    if (!have_mpi())
        return;
    int rc = tu_run_repro("compare " MLP " --vary parallel.tp=1,2 --steps 4 --runs 1", out,
                          sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "scope: tensor-parallel size") && strstr(out, "same bits"),
                  "%.2000s", out);
}
END_TEST

/* The pid of the rank `rank` of the job tagged `tag` (its environment), 0. */
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

/* A tensor-parallel rank killed mid-run: the same clear exit 3 naming it
 * as data parallel's, and nothing of the job left behind. */
START_TEST(test_rank_death_is_reported)
{
    if (!have_mpi())
        return;
    char tag[64], errp[] = "/tmp/repro-tp-err-XXXXXX";
    snprintf(tag, sizeof tag, "tp-%ld", (long)getpid());
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
        execl(bin, bin, "run", MLP, "--tp", "2", "--steps", "1000000", "--no-trace", "-q",
              (char *)NULL);
        _exit(127);
    }
    close(efd);
    for (int i = 0; i < 1200 && !(find_rank(tag, 0) && find_rank(tag, 1)); i++)
        nap_ms(50);
    pid_t victim = find_rank(tag, 1);
    ck_assert_msg(victim > 0 && find_rank(tag, 0), "the ranks did not start");
    nap_ms(1000);
    ck_assert_int_eq(kill(victim, SIGKILL), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    for (int i = 0; i < 100 && (find_rank(tag, 0) || find_rank(tag, 1)); i++)
        nap_ms(50);
    ck_assert_msg(!find_rank(tag, 0) && !find_rank(tag, 1), "a rank outlived the job");
    tu_slurp(errp, err, sizeof err);
    unlink(errp);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d: %.1500s", st, err);
    ck_assert_msg(strstr(err, "repro: run: rank 1 of 2 (pid ") &&
                      strstr(err, "killed by signal 9 (Killed), and the MPI job stopped"),
                  "%.1500s", err);
}
END_TEST

/* "tp_used" (repro_recorder_set_tp) is written to the header and read
 * strictly; a size below 1 is refused by the recorder. */
START_TEST(test_tp_used_is_recorded_and_read)
{
    char path[256];
    tu_write_temp(path, sizeof path, "tp.jsonl", "");
    repro_run_info info = {"tp", 1, NULL};
    repro_recorder *r;
    float w[2] = {1, 2};
    int64_t shape[1] = {2};
    ck_assert_int_eq(repro_recorder_open(&r, path, &info), 0);
    ck_assert_int_ne(repro_recorder_set_tp(r, 0), 0);
    repro_recorder_close(r, NULL);
    ck_assert_int_eq(repro_recorder_open(&r, path, &info), 0);
    ck_assert_int_eq(repro_recorder_set_tp(r, 4), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "param.w", REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    repro_trace t;
    ck_assert_int_eq(repro_trace_read(&t, path), 0);
    ck_assert_int_eq(t.tp_used, 4);
    repro_trace_release(&t);
}
END_TEST

/* A program that ignores REPRO_TP (charlm) passes --tp 1,2 only with the
 * "scope not exercised" warning, and exit 3 under --strict-scopes. */
START_TEST(test_unexercised_tp_scope_warns)
{
    const char *dir = getenv("REPRO_EXAMPLES");
    char args[1200];
    if (!have_mpi())
        return;
    snprintf(args, sizeof args, "check --tp 1,2 --no-golden --steps 2 --strict-scopes -- %s/charlm",
             dir ? dir : "build/examples");
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 3, "exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(err, "--tp scope not exercised: run 1 does not record how many "
                              "tensor-parallel ranks it used (\"tp_used\" in its trace: "
                              "repro_recorder_set_tp)"),
                  "%.1500s", err);
}
END_TEST

/* A program of its own: the example over <repro/tp.h> at tp 1 and 2, and
 * its ring control failing under the scope. */
START_TEST(test_example_program)
{
    const char *dir = getenv("REPRO_EXAMPLES");
    char prog[1024];
    snprintf(prog, sizeof prog, "%s/tp_linear", dir ? dir : "build/examples");
    if (access(prog, X_OK) != 0) {
        tu_skip("tp", "the tp_linear example was not built (no Open MPI, or a sanitizer build)");
        return;
    }
    if (!have_mpi())
        return;
    char args[1200];
    snprintf(args, sizeof args, "check --tp 1,2 --no-golden --steps 6 -- %s", prog);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "4 runs identical"), "exit %d: %.1500s %.1500s", rc,
                  out, err);
    snprintf(args, sizeof args,
             "check --tp 1,2 --no-golden --steps 6 --set tp_reduce=ring -- %s", prog);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "ring: exit %d: %.1500s %.1500s", rc, out, err);
    ck_assert_msg(strstr(out, "tp=2 (scope: tensor-parallel size)") && strstr(out, "fwd.y"),
                  "%.2000s", out);
}
END_TEST

Suite *tp_suite(void)
{
    Suite *s = suite_create("tp");
    TCase *tc = tcase_create("tp");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_continue_is_the_kernel_order);
    tcase_add_test(tc, test_bad_sizes_are_refused);
    tcase_add_test(tc, test_kernels_lists_the_control);
    tcase_add_test(tc, test_tp_sizes_match_the_golden);
    tcase_add_test(tc, test_tp_with_ranks);
    tcase_add_test(tc, test_ring_fails_under_tp_size);
    tcase_add_test(tc, test_bisect_names_the_variant);
    tcase_add_test(tc, test_compare_varies_tp);
    tcase_add_test(tc, test_rank_death_is_reported);
    tcase_add_test(tc, test_example_program);
    tcase_add_test(tc, test_tp_used_is_recorded_and_read);
    tcase_add_test(tc, test_unexercised_tp_scope_warns);
    suite_add_tcase(s, tc);
    return s;
}
