/* Thread pools pinned in every run and recorded in the header, the
 * thread-count verdict judged by them, a program's step-level report
 * pointing at op level, and the scope bisect (`repro bisect --threads
 * A,B`, --workers, --ranks).
 *
 * A small C program built against the staged install plays a program
 * whose "BLAS" follows OPENBLAS_NUM_THREADS, as OpenBLAS does: it records
 * that count as its pool "blas.test", its own thread count as always 1,
 * and an op whose bits depend on the pool (a sum split in as many chunks
 * as the pool has threads). A PyTorch MLP with Linears that OpenBLAS
 * splits (tests/python/blas_threads.py) is the real thing, skipped with
 * the reason when PyTorch or OpenBLAS is absent. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256];
static char out[65536], err[65536];

/* fwd.mix sums 64 floats in `pool` chunks, partials added in chunk order:
 * other bits at another chunk count. --set noise=1 adds a draw from
 * /dev/urandom (run to run, whatever the pool). Tensors are recorded
 * "late" first, then "early": their digest order is not the order the
 * program computed them. */
static const char prog_c[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <repro/repro.h>\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    repro_recorder_options o;\n"
    "    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    repro_recorder_options_init(&o);\n"
    "    repro_recorder_options_from_env(&o, &env);\n"
    "    const char *blas = getenv(\"OPENBLAS_NUM_THREADS\"), *noise = repro_run_env_setting(\"noise\");\n"
    "    int pool = blas ? atoi(blas) : 4;\n"
    "    repro_run_info info = {\"poolprog\", env.seed, NULL};\n"
    "    repro_recorder *r;\n"
    "    if (repro_recorder_open_ex(&r, NULL, &info, &o) || repro_recorder_set_threads(r, 1, -1) ||\n"
    "        repro_recorder_set_pool(r, \"blas.test\", pool < 1 ? 1 : pool))\n        return 3;\n"
    "    float x[64], early[1], late[1];\n    int64_t one[1] = {1}, n64[1] = {64};\n"
    "    for (int i = 0; i < 64; i++)\n        x[i] = 1.0f / (float)(i + 3);\n"
    "    for (int step = 1; step <= 3; step++) {\n"
    "        float sum = 0;\n"
    "        int chunks = pool < 1 ? 1 : pool, per = (64 + chunks - 1) / chunks;\n"
    "        for (int c = 0; c < chunks; c++) {\n"
    "            float part = 0;\n"
    "            for (int i = c * per; i < (c + 1) * per && i < 64; i++)\n"
    "                part += x[i] * (float)step;\n"
    "            sum += part;\n        }\n"
    "        if (noise && noise[0] == '1') {\n"
    "            FILE *u = fopen(\"/dev/urandom\", \"rb\");\n            unsigned b = 0;\n"
    "            if (u && fread(&b, sizeof b, 1, u) == 1)\n"
    "                sum += (float)(b % 1000003u + 1) * 1e-6f;\n"
    "            if (u)\n                fclose(u);\n        }\n"
    "        early[0] = sum;\n        late[0] = sum * 0.5f;\n"
    "        if (repro_recorder_tensor(r, \"batch.x\", REPRO_F32, 1, n64, x) ||\n"
    "            repro_recorder_op(r, \"fwd.load\", REPRO_F32, 1, n64, x) ||\n"
    "            repro_recorder_op(r, \"fwd.mix\", REPRO_F32, 1, one, early) ||\n"
    "            repro_recorder_op(r, \"fwd.half\", REPRO_F32, 1, one, late) ||\n"
    "            repro_recorder_tensor(r, \"late\", REPRO_F32, 1, one, late) ||\n"
    "            repro_recorder_tensor(r, \"early\", REPRO_F32, 1, one, early) ||\n"
    "            repro_recorder_step(r, step, 0.0))\n            return 3;\n    }\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

static void setup(void)
{
    tu_tmp_template(dir, sizeof dir, "pools");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512], cmd[8192];
    snprintf(path, sizeof path, "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(prog_c, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -O1 -o '%s/prog' '%s' %s", dir, path,
             tu_stage_flags());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
    /* What the user's shell may have exported must not decide a run. */
    unsetenv("OPENBLAS_NUM_THREADS");
    unsetenv("OMP_NUM_THREADS");
    unsetenv("MKL_NUM_THREADS");
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int repro_prog(const char *opts)
{
    char args[2048];
    snprintf(args, sizeof args, "%s -- '%s/prog'", opts, dir);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

/* The command a report printed after "    repro " (its own line), into buf. */
static void printed_command(const char *report, char *buf, size_t len)
{
    const char *p = strstr(report, "\n    repro bisect ");
    ck_assert_msg(p, "no command in:\n%s", report);
    p += strlen("\n    repro ");
    snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
}

START_TEST(test_baseline_is_pinned)
{
    /* Run 1 gets no --threads: OPENBLAS_NUM_THREADS=1 all the same, so it
     * equals the threads=1 run (the program's pool would be 4 unpinned). */
    int rc = repro_prog("check --no-golden --threads 1");
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    /* --set threads=3 declares another baseline: every run at 3. */
    rc = repro_prog("check --no-golden --json --keep --set threads=3");
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(doc, "%s", out);
    char trace[2048], line[65536];
    snprintf(trace, sizeof trace, "%s/run-1/trace.jsonl",
             json_string_value(json_object_get(doc, "directory")));
    tu_slurp(trace, line, sizeof line);
    ck_assert_msg(strstr(line, "\"thread_pools\":{\"blas.test\":3}"), "%.600s", line);
    json_decref(doc);
}
END_TEST

START_TEST(test_pool_that_differed_is_named)
{
    /* Detail on every step: the 3-step program's steps are not detail
     * steps at the default (every 10th). */
    int rc = repro_prog("check --no-golden --threads 1,2 --set trace.every=1");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "== run 1 vs threads=2 (scope: thread count) ==") &&
                      !strstr(out, "vs threads=1") && !strstr(out, "vs run 2"),
                  "%s", out);
    ck_assert_msg(strstr(out, "(the program's own count was 1 in both runs, but blas.test was "
                              "1 vs 2)"),
                  "%s", out);
    /* A program's digest order is its own: never "likely origin" there. */
    ck_assert_msg(strstr(out, "late  f32[1]   <- first in digest order") &&
                      !strstr(out, "likely origin"),
                  "%s", out);
    /* The printed command, run verbatim, names the op in execution order. */
    char cmd[4096];
    printed_command(out, cmd, sizeof cmd);
    /* ... with the check's own settings (detail on every step, as asked). */
    ck_assert_msg(!strncmp(cmd, "bisect --threads 1,2 --set trace.every=1 -- ", 44), "%s", cmd);
    rc = tu_run_repro(cmd, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "repro %s: exit %d\n%s%s", cmd, rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: fwd.mix (op 2 of 3 recorded at step 1)") &&
                      strstr(out, "fwd.mix gives different bits at thread count 1 and 2 from "
                                  "identical inputs: a thread-count-dependent kernel (here the "
                                  "BLAS pool: blas.test 1 vs 2)"),
                  "%s", out);
    /* --level op: the check itself names it, and prints no command. */
    rc = repro_prog("check --no-golden --level op --threads 1,2");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "fwd.mix  f32[1]   <- first in execution order: the likely "
                              "origin") &&
                      !strstr(out, "repro bisect"),
                  "%s", out);
}
END_TEST

START_TEST(test_equal_pools_are_not_the_thread_count)
{
    /* Negative control of the verdict: the runs differ (noise), but their
     * pools and counts were equal: run to run, not the thread count. */
    int rc = repro_prog("check --no-golden --runs 1 --threads 1 --set noise=1");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "== run 1 vs threads=1 (scope: fresh-process run to run) ==") &&
                      !strstr(out, "scope: thread count"),
                  "%s", out);
    ck_assert_msg(strstr(out, "both runs recorded the same thread counts (1 thread (blas.test "
                              "1))"),
                  "%s", out);
    /* ...and its command is the repeat bisect, which says so. */
    char cmd[4096];
    printed_command(out, cmd, sizeof cmd);
    ck_assert_msg(!strncmp(cmd, "bisect --set noise=1 -- ", 24), "%s", cmd);
    /* The scope bisect sees the two runs at A differ first. */
    rc = repro_prog("bisect --threads 1,2 --set noise=1");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "runs 1 and 2 of 3 differ") &&
                      strstr(out, "both runs were at thread count 1"),
                  "%s", out);
}
END_TEST

START_TEST(test_bisect_scope_usage)
{
    int rc = repro_prog("bisect --threads 1,2,3");
    ck_assert_msg(rc == 2 && strstr(err, "give one count (every run's) or two, A,B"), "%d %s",
                  rc, err);
    rc = repro_prog("bisect --threads 1,2 --workers 0,2");
    ck_assert_msg(rc == 2 && strstr(err, "bisect one scope at a time"), "%d %s", rc, err);
    rc = repro_prog("bisect --threads 1,2 --commits HEAD~1..HEAD");
    ck_assert_msg(rc == 2 && strstr(err, "does not combine with --commits"), "%d %s", rc, err);
    rc = repro_prog("bisect --threads 1,2 --repeat 4");
    ck_assert_msg(rc == 2 && strstr(err, "--repeat does not apply to the scope bisect"), "%d %s",
                  rc, err);
    /* One count is every run's, as before: identical at one count. */
    rc = repro_prog("bisect --threads 2");
    ck_assert_msg(rc == 0 && strstr(out, "all 3 runs identical at level op"), "%d %s%s", rc, out,
                  err);
}
END_TEST

/* ---- the built-in workload ---------------------------------------------------- */

#define MLP "experiments/mlp.ini --steps 3"

START_TEST(test_bisect_workers_names_the_data)
{
    int rc = tu_run_repro("bisect " MLP " --workers 0,2 --set augment_seed=worker --set shift=2",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "differs at worker count 0 and 2 because its inputs do") &&
                      strstr(out, "(data.augment_seed = worker:"),
                  "%s", out);
    /* Negative control: augment_seed = sample makes the worker count
     * irrelevant, and the same bisect finds nothing. */
    rc = tu_run_repro("bisect " MLP " --workers 0,2 --set augment_seed=sample --set shift=2",
                      out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "no divergence: workers=0 (twice) and workers=2 agree"), "%s", out);
}
END_TEST

START_TEST(test_bisect_ranks_names_the_ring)
{
    if (tu_run_repro("run experiments/mlp.ini --ranks 2 --steps 1 --no-trace -q", out,
                     sizeof out, err, sizeof err) != 0) {
        fprintf(stderr, "pools: SKIPPED bisect --ranks (no MPI run possible): %.300s\n", err);
        return;
    }
    int rc = tu_run_repro("bisect " MLP " --ranks 1,2 --set allreduce=ring", out, sizeof out,
                          err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "(allreduce, variant ring) gives different bits at world size 1 "
                              "and 2 from identical inputs: a world-size-dependent kernel "
                              "(variant allreduce = ring: ring reduce-scatter"),
                  "%s", out);
    /* Negative control: the ordered all-reduce is the same at any size. */
    rc = tu_run_repro("bisect " MLP " --ranks 1,2 --set allreduce=ordered", out, sizeof out, err,
                      sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "no divergence"), "exit %d\n%s%s", rc, out, err);
}
END_TEST

/* ---- PyTorch -------------------------------------------------------------------- */

/* Why the PyTorch test cannot run here, or "". */
static const char *no_torch(void)
{
    const char *lib = getenv("REPRO_LIB");
    if (access("/usr/bin/python3", X_OK) != 0)
        return "no /usr/bin/python3";
    if (lib && !*lib)
        return "a sanitizer build (no librepro.so for Python)";
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        return "no PyTorch for /usr/bin/python3";
    if (system("/usr/bin/python3 -c \"import torch, sys; torch.ones(2) @ torch.ones(2); "
               "sys.exit(0 if 'openblas' in open('/proc/self/maps').read() else 1)\" "
               ">/dev/null 2>&1") != 0)
        return "PyTorch does not use OpenBLAS here";
    return "";
}

START_TEST(test_pytorch_blas_pool)
{
    const char *why = no_torch();
    if (*why) {
        tu_skip("pools", "PyTorch test: %s", why);
        return;
    }
    char cwd[1024], py[1200], cmd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(py, sizeof py, "%s/python", cwd);
    ck_assert_int_eq(setenv("PYTHONPATH", py, 1), 0);
    const char *prog = "-- /usr/bin/python3 tests/python/blas_threads.py";
    /* OpenBLAS's default pool (2+ threads on most machines) never reaches
     * a run: --threads 1 passes with nothing exported. */
    snprintf(cmd, sizeof cmd, "check --no-golden --json --keep --threads 1 %s", prog);
    int rc = tu_run_repro(cmd, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    json_t *doc = json_loads(out, 0, NULL);
    ck_assert_msg(doc, "%s", out);
    char trace[2048], line[65536];
    snprintf(trace, sizeof trace, "%s/run-1/trace.jsonl",
             json_string_value(json_object_get(doc, "directory")));
    json_decref(doc);
    tu_slurp(trace, line, sizeof line);
    ck_assert_msg(strstr(line, "\"blas.openblas\":1") && strstr(line, "\"torch.intra_op\":1"),
                  "%.2000s", line);
    /* threads=2 alone differs, and the printed command names the module. */
    snprintf(cmd, sizeof cmd, "check --no-golden --threads 1,2 %s", prog);
    rc = tu_run_repro(cmd, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "== run 1 vs threads=2 (scope: thread count) ==") &&
                      !strstr(out, "vs threads=1") && !strstr(out, "vs run 2") &&
                      strstr(out, "blas.openblas was 1 vs 2") && !strstr(out, "likely origin"),
                  "%s", out);
    printed_command(out, cmd, sizeof cmd);
    rc = tu_run_repro(cmd, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "repro %s: exit %d\n%s%s", cmd, rc, out, err);
    /* Which Linear OpenBLAS splits depends on the kernels it picks for the
     * CPU (on AMD Zen the 512-to-10 one, and the 32-to-512 one too; on an
     * AVX-512 Xeon the wide one on a single sample): the op named must be
     * one of the three Linears (fwd.mlp.0, fwd.mlp.2, fwd.wide; fwd.mlp.1
     * is the Tanh), and the cause must name the BLAS pool for that op. */
    const char *first = strstr(out, "first divergent op: fwd.");
    ck_assert_msg(first, "%s", out);
    first += strlen("first divergent op: ");
    char op[32], want[256];
    size_t n = strcspn(first, ",");
    ck_assert_msg(n < sizeof op, "%s", out);
    memcpy(op, first, n);
    op[n] = 0;
    ck_assert_msg(!strcmp(op, "fwd.mlp.0") || !strcmp(op, "fwd.mlp.2") || !strcmp(op, "fwd.wide"),
                  "%s", out);
    snprintf(want, sizeof want, "first divergent op: %s, a Linear", op);
    ck_assert_msg(strstr(out, want), "%s", out);
    snprintf(want, sizeof want,
             "%s (Linear) gives different bits at thread count 1 and 2 from identical "
             "inputs: a thread-count-dependent kernel (here the BLAS pool: blas.openblas 1 vs 2",
             op);
    ck_assert_msg(strstr(out, want), "%s", out);
    /* A script that saves its whole model (torch.save pickles the hooks
     * with it; word_language_model does) runs at level op, and the model
     * it saved loads and runs. */
    snprintf(cmd, sizeof cmd,
             "REPRO_TRACE_LEVEL=op /usr/bin/python3 -c \"import io, torch, repro, repro.torch\n"
             "m = torch.nn.Sequential(torch.nn.Linear(2, 2))\nr = repro.Recorder('p', 1)\n"
             "assert repro.torch.record_modules(m, r).modules == ['0']\nb = io.BytesIO()\n"
             "torch.save(m, b)\nb.seek(0)\ntorch.load(b)(torch.ones(2)).sum().backward()\n"
             "r.abort()\"");
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("PYTHONPATH");
}
END_TEST

Suite *pools_suite(void)
{
    Suite *s = suite_create("pools");
    TCase *tc = tcase_create("pools");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_baseline_is_pinned);
    tcase_add_test(tc, test_pool_that_differed_is_named);
    tcase_add_test(tc, test_equal_pools_are_not_the_thread_count);
    tcase_add_test(tc, test_bisect_scope_usage);
    tcase_add_test(tc, test_bisect_workers_names_the_data);
    tcase_add_test(tc, test_bisect_ranks_names_the_ring);
    tcase_add_test(tc, test_pytorch_blas_pool);
    suite_add_tcase(s, tc);
    return s;
}
