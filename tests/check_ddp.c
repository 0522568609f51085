/* A program's ranks (analysis/external_ranks.c) and the Python client's
 * data-parallel side (python/repro/ddp.py), with PyTorch and Gloo on the
 * CPU: plain DistributedDataParallel fails `--ranks 1,2` with the scope
 * "world size" at a gradient of step 1; repro.ddp.InvariantGradients
 * (examples/torch_ddp.py) passes `--ranks 1,2,4` with the chain of a
 * single process without a group; and the bad inputs end within seconds,
 * naming the rank: a rank killed, a rank that leaves the others waiting,
 * a replica that drifts, a batch that does not divide, a busy port, a
 * program that never forms a group. Skipped, saying why, without
 * /usr/bin/python3 with torch, without mpirun, and in sanitizer builds. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/trace.h"
#include "repro/repro.h"
#include "testutil.h"

#define PY "/usr/bin/python3"

/* Why these tests cannot run here ("" when they can). */
static const char *cannot_run(void)
{
    const char *lib = getenv("REPRO_LIB");
    if (lib && !*lib)
        return "a sanitizer build (python3 cannot load its librepro)";
    if (access(PY, X_OK) != 0)
        return "no " PY;
    if (system(PY " -c 'import torch.distributed as d; assert d.is_gloo_available()' "
                  ">/dev/null 2>&1") != 0)
        return "no torch with Gloo for " PY;
    if (system("mpirun --version >/dev/null 2>&1") != 0)
        return "no mpirun (Open MPI)";
    return "";
}

#define SKIP_UNLESS_READY()                                       \
    do {                                                          \
        const char *why_ = cannot_run();                          \
        if (*why_) {                                              \
            tu_skip("ddp", "%s", why_);                           \
            return;                                               \
        }                                                         \
    } while (0)

static char out[65536], err[65536];

/* The chain a passing check or `repro run -- PROGRAM` printed. */
static void chain_of(const char *text, char *hex)
{
    const char *c = strstr(text, "chain ");
    ck_assert_msg(c != NULL, "no chain in:\n%s", text);
    ck_assert_int_eq(sscanf(c, "chain %64[0-9a-f]", hex), 1);
}

/* `repro ARGS` must exit `want` with each of said (NULL-ended) on its
 * stderr; returns the seconds it took. */
static long expect_exit(int want, const char *args, const char *const said[])
{
    time_t t0 = time(NULL);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == want, "exit %d\n%s%s", rc, out, err);
    for (int i = 0; said[i]; i++)
        ck_assert_msg(strstr(err, said[i]), "no \"%s\" in:\n%s", said[i], err);
    return (long)(time(NULL) - t0);
}

/* Plain DDP averages per-rank means with an all-reduce: 1 and 2 ranks
 * differ at step 1, first at a gradient, in the scope "world size" (text
 * and JUnit), and the report says what DDP does. */
START_TEST(test_plain_ddp_fails_in_world_size)
{
    SKIP_UNLESS_READY();
    char junit[256];
    tu_tmp_template(junit, sizeof junit, "ddp-junit");
    ck_assert_ptr_nonnull(mkdtemp(junit));
    strcat(junit, "/j.xml");
    char args[600];
    /* No --set trace.every: a program's first step has detail by default,
     * so the gradient is named at step 1 of a 2-step run. */
    snprintf(args, sizeof args, "check --no-golden --runs 1 --ranks 1,2 "
             "--junit %s -- " PY " examples/torch_ddp.py --plain --steps 2", junit);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "== run 1 vs ranks=2 (scope: world size) =="), "%s", out);
    ck_assert_msg(strstr(out, "DIVERGED at step 1 "), "%s", out);
    /* A program's digest order is its own (never "likely origin"). */
    const char *origin = strstr(out, "<- first in digest order");
    ck_assert_msg(origin != NULL, "%s", out);
    const char *line = origin;
    while (line > out && line[-1] != '\n')
        line--;
    ck_assert_msg(!strncmp(line, "    grad.", 9), "the origin is not a gradient:\n%s", out);
    ck_assert_msg(strstr(out, "cause: grad.") && strstr(out, "DistributedDataParallel") &&
                      strstr(out, "repro.ddp.InvariantGradients"),
                  "%s", out);
    /* world size 1 against itself is no mismatch: only ranks=2 fails */
    ck_assert_msg(strstr(out, "1 of 2 runs differ"), "%s", out);
    char xml[16384];
    tu_slurp(junit, xml, sizeof xml);
    ck_assert_msg(strstr(xml, "run 1 vs ranks=2 (world size)") &&
                      strstr(xml, "diverged at step 1 (world size)"),
                  "%s", xml);
}
END_TEST

/* repro.ddp.InvariantGradients: world sizes 1, 2 and 4 give one chain,
 * and it is the chain of one process that forms no group at all. */
START_TEST(test_invariant_example_passes_ranks_1_2_4)
{
    SKIP_UNLESS_READY();
    int rc = tu_run_repro("check --no-golden --runs 1 --ranks 1,2,4 -- " PY
                          " examples/torch_ddp.py --steps 3",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "reproducible: 4 runs identical over 3 steps"), "%s", out);
    ck_assert_msg(!strstr(err, "not exercised"), "%s", err);
    char checked[65], single[65];
    chain_of(out, checked);
    rc = tu_run_repro("run -- " PY " examples/torch_ddp.py --steps 3 --no-group", out,
                      sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    chain_of(out, single);
    ck_assert_str_eq(checked, single);
}
END_TEST

/* A rank killed mid-run ends the run at once (mpirun stops the others):
 * exit 3, naming the rank, how it ended and its own stderr. */
START_TEST(test_killed_rank_ends_the_check)
{
    SKIP_UNLESS_READY();
    static const char *const said[] = {
        "ranks=2 of `" PY "` could not be tested: rank 1 of 2 was killed by signal 9",
        "rank 1 kills itself in step 2", NULL};
    long took = expect_exit(3, "check --no-golden --runs 1 --ranks 2 -- " PY
                               " tests/python/ddp_faults.py kill", said);
    ck_assert_msg(took < 60, "took %lds", took);
}
END_TEST

/* A rank that exits 0 without joining leaves rank 0 waiting to form the
 * group (torch's own timeout: 30 minutes): repro stops the job after
 * REPRO_RANK_WAIT seconds and says so. */
START_TEST(test_rank_that_never_joins_is_not_waited_for)
{
    SKIP_UNLESS_READY();
    static const char *const said[] = {
        "rank 1 of 2 ", "while the others ran on for 2 s (REPRO_RANK_WAIT)",
        "forming the process group", NULL};
    setenv("REPRO_RANK_WAIT", "2", 1);
    long took = expect_exit(3, "run --ranks 2 -- " PY " tests/python/ddp_faults.py early", said);
    unsetenv("REPRO_RANK_WAIT");
    ck_assert_msg(took < 60, "took %lds", took);
}
END_TEST

/* The client compares every rank's parameters with rank 0's after each
 * step: a replica nudged on rank 1 after step 2 is named. */
START_TEST(test_drifting_replica_is_named)
{
    SKIP_UNLESS_READY();
    static const char *const said[] = {
        "replica drift: after step 2's update, rank 1's param.weight left rank 0's", NULL};
    static const char *const nothing[] = {NULL};
    expect_exit(3, "run --ranks 2 -- " PY " tests/python/ddp_faults.py drift", said);
    /* the same program without the nudge: the check passes (the detector
     * fires on the fault, not on every run) */
    expect_exit(0, "run --ranks 2 -- " PY " tests/python/ddp_faults.py none", nothing);
}
END_TEST

/* A global batch that does not divide among the ranks: the program's own
 * error, and the example's is clear. */
START_TEST(test_indivisible_batch_shows_the_programs_error)
{
    SKIP_UNLESS_READY();
    static const char *const example[] = {
        "could not be tested: rank ",
        "torch_ddp.py: a global batch of 256 samples does not divide among 3 ranks", NULL};
    static const char *const client[] = {
        "3 shards of 4 samples (a global batch of 12) do not divide among 2 ranks", NULL};
    expect_exit(3, "run --ranks 3 -- " PY " examples/torch_ddp.py --steps 1", example);
    expect_exit(3, "run --ranks 2 -- " PY " tests/python/ddp_faults.py batch=12", client);
}
END_TEST

/* A port held by someone else, named as MASTER_PORT and REPRO_MASTER_PORT:
 * repro runs the program on a free one. Negative control: the program
 * started on that port by hand fails, so the port really is busy. */
START_TEST(test_busy_port_is_never_a_failure)
{
    SKIP_UNLESS_READY();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char port[16], cmd[512];
    snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
    snprintf(cmd, sizeof cmd, "RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=%s " PY
             " tests/python/ddp_faults.py none >/dev/null 2>&1", port);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "port %s was not busy", port);
    setenv("MASTER_PORT", port, 1);
    setenv("REPRO_MASTER_PORT", port, 1);
    int rc = tu_run_repro("run -- " PY " tests/python/ddp_faults.py none", out, sizeof out, err,
                          sizeof err);
    unsetenv("MASTER_PORT");
    unsetenv("REPRO_MASTER_PORT");
    close(fd);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
}
END_TEST

/* A program that never forms a group records world_size_used 1 in every
 * run: --ranks compared nothing, which --strict-scopes makes exit 3. */
START_TEST(test_program_without_group_does_not_exercise_ranks)
{
    SKIP_UNLESS_READY();
    static const char *const said[] = {
        "--ranks scope not exercised: every run formed a world of 1 rank", NULL};
    expect_exit(3, "check --no-golden --runs 1 --ranks 2 --strict-scopes -- " PY
                   " tests/python/ddp_faults.py nogroup", said);
}
END_TEST

/* "world_size_used" (the Python client writes it) is read strictly: a
 * world of 4 reads as 4, absent as -1, 0 is refused naming the field. */
static int read_with_header(const char *header_json, repro_trace *t)
{
    char path[256];
    tu_write_temp(path, sizeof path, "w.jsonl", "");
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    o.header_json = header_json;
    repro_run_info info = {"world", 1, NULL};
    repro_recorder *r;
    float w[2] = {1, 2};
    int64_t shape[1] = {2};
    ck_assert_int_eq(repro_recorder_open_ex(&r, path, &info, &o), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "param.w", REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    return repro_trace_read(t, path);
}

START_TEST(test_world_size_used_is_read_strictly)
{
    repro_trace t;
    ck_assert_int_eq(read_with_header("{\"world_size_used\": 4}", &t), 0);
    ck_assert_int_eq(t.world_size_used, 4);
    repro_trace_release(&t);
    ck_assert_int_eq(read_with_header(NULL, &t), 0);
    ck_assert_int_eq(t.world_size_used, -1);
    repro_trace_release(&t);
    ck_assert_int_ne(read_with_header("{\"world_size_used\": 0}", &t), 0);
    ck_assert_msg(strstr(repro_error_last(), "world_size_used"), "%s", repro_error_last());
}
END_TEST

/* `repro compare --vary ranks=1,2` starts a program's ranks too, and names
 * the scope: plain DDP's world size 2 departs from world size 1 at step 1. */
START_TEST(test_compare_varies_a_programs_world_size)
{
    SKIP_UNLESS_READY();
    int rc = tu_run_repro("compare --vary ranks=1,2 --runs 1 -- " PY
                          " examples/torch_ddp.py --plain --steps 1",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "\nscope: world size\n"), "%s", out);
    const char *row = strstr(out, "\n2 ");
    ck_assert_msg(row && strstr(row, "step 1"), "%s", out);
}
END_TEST

Suite *ddp_suite(void)
{
    Suite *s = suite_create("ddp");
    TCase *tc = tcase_create("ranks");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_world_size_used_is_read_strictly);
    tcase_add_test(tc, test_plain_ddp_fails_in_world_size);
    tcase_add_test(tc, test_invariant_example_passes_ranks_1_2_4);
    tcase_add_test(tc, test_compare_varies_a_programs_world_size);
    tcase_add_test(tc, test_killed_rank_ends_the_check);
    tcase_add_test(tc, test_rank_that_never_joins_is_not_waited_for);
    tcase_add_test(tc, test_drifting_replica_is_named);
    tcase_add_test(tc, test_indivisible_batch_shows_the_programs_error);
    tcase_add_test(tc, test_busy_port_is_never_a_failure);
    tcase_add_test(tc, test_program_without_group_does_not_exercise_ranks);
    suite_add_tcase(s, tc);
    return s;
}
