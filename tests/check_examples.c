/* The example programs in examples/, built by `make check` against the
 * installed library (pkg-config) as a user builds them: their traces are
 * read by `repro diff`, two runs compare identical, the thread count does
 * not change a bit, and charlm's unordered reduction (its negative
 * control) does. REPRO_EXAMPLES names the directory of the built examples
 * (the Makefile sets it). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "repro/repro.h"
#include "testutil.h"

static const char *examples_dir(void)
{
    const char *d = getenv("REPRO_EXAMPLES");
    ck_assert_msg(d && *d, "REPRO_EXAMPLES is not set: run the suite through `make check`");
    return d;
}

/* Runs charlm with a fresh trace; env is extra "K=V " assignments. */
static void charlm(const char *env, char *trace, size_t len)
{
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "ex");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, len, "%s/trace.jsonl", dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env %s REPRO_TRACE='%s' '%s/charlm' --steps 40 >/dev/null 2>&1",
             env, trace, examples_dir());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
}

static int diff(const char *a, const char *b)
{
    char args[1200], out[8192], err[4096];
    snprintf(args, sizeof args, "diff '%s' '%s'", a, b);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

START_TEST(test_charlm_reproduces_at_any_thread_count)
{
    char a[256], b[256], c[256];
    charlm("REPRO_THREADS=1", a, sizeof a);
    charlm("REPRO_THREADS=1", b, sizeof b);
    charlm("REPRO_THREADS=3", c, sizeof c);
    ck_assert_int_eq(diff(a, b), 0);
    ck_assert_int_eq(diff(a, c), 0);
}
END_TEST

START_TEST(test_charlm_negative_control_diverges)
{
    /* Shards added in the order threads finish: with 2 threads some run
     * pair must differ (a few tries: two fast shards can finish in order). */
    char first[256], next[256];
    charlm("REPRO_THREADS=2 CHARLM_UNORDERED=1", first, sizeof first);
    int differed = 0;
    for (int i = 0; i < 4 && !differed; i++) {
        charlm("REPRO_THREADS=2 CHARLM_UNORDERED=1", next, sizeof next);
        differed = diff(first, next) == 1;
    }
    ck_assert_msg(differed, "the unordered reduction never changed a bit in 5 runs");
}
END_TEST

/* `repro check ARGS -- charlm ...`: the exit code, and the output. */
static int check_charlm(const char *args, char *out, size_t outlen)
{
    char cmd[1200], err[8192];
    snprintf(cmd, sizeof cmd, "check %s -- '%s/charlm' --steps 25", args, examples_dir());
    return tu_run_repro(cmd, out, outlen, err, sizeof err);
}

START_TEST(test_check_program_threads_and_workers)
{
    static char out[65536];
    int rc = check_charlm("--no-golden --threads 1,2 --workers 0,2", out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 6 runs identical"));
    /* Augmentation from the per-worker RNG: the worker count shows. */
    rc = check_charlm("--no-golden --workers 0,2 --set augment=worker", out, sizeof out);
    ck_assert_msg(rc == 1, "exit %d:\n%s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "scope: worker count"));
    ck_assert_ptr_nonnull(strstr(out, "batch.windows"));
    /* The negative control: unordered shard sums with 2 threads. */
    rc = check_charlm("--no-golden --set threads=2 --set unordered=1 --runs 4", out, sizeof out);
    ck_assert_msg(rc == 1, "exit %d:\n%s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "NOT reproducible"));
}
END_TEST

/* A program's runs go one after another unless --jobs says otherwise (it
 * may share files between runs). Each run here marks that it started,
 * waits up to 2 s for a sibling's mark, and notes whether it saw one
 * before it trains: with --jobs 2 both runs see each other, by default
 * run 1 trains alone. */
START_TEST(test_program_runs_at_once_only_when_asked)
{
    for (int jobs = 1; jobs <= 2; jobs++) {
        char dir[TU_TMP_LEN], script[256], args[1024], out[16384], err[16384];
    tu_tmp_template(dir, sizeof dir, "jobs");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(script, sizeof script, "%s/prog.sh", dir);
        FILE *f = fopen(script, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "touch \"$D/started-$REPRO_RUN_INDEX\"\n"
                   "n=0\n"
                   "while [ \"$(ls \"$D\" | grep -c '^started-')\" -lt 2 ] && [ $n -lt 20 ]; do\n"
                   "  sleep 0.1; n=$((n + 1))\n"
                   "done\n"
                   "[ \"$(ls \"$D\" | grep -c '^started-')\" -ge 2 ] && "
                   "touch \"$D/together-$REPRO_RUN_INDEX\"\n"
                   "exec \"$CHARLM\" --steps 5\n");
        fclose(f);
        snprintf(args, sizeof args, "check --no-golden %s -- env D='%s' CHARLM='%s/charlm' sh '%s'",
                 jobs == 2 ? "--jobs 2" : "", dir, examples_dir(), script);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 0, "exit %d\n%.2000s%.2000s", rc, out, err);
        int together = 0;
        for (int run = 0; run <= 2; run++) {
            char mark[300];
            snprintf(mark, sizeof mark, "%s/together-%d", dir, run);
            together += access(mark, F_OK) == 0;
        }
        ck_assert_msg(together == jobs, "--jobs %d: %d runs saw a sibling running", jobs, together);
    }
}
END_TEST

/* Programs that cannot be tested get exit 3 and a message that says why,
 * never "reproducible". Each is a small shell script that plays a broken
 * program against the protocol. */
START_TEST(test_broken_programs_cannot_be_tested)
{
    char a[256], b[256], c[256];
    charlm("REPRO_THREADS=1", a, sizeof a); /* a good trace to mangle */
    static const struct {
        const char *script, *expect;
    } cases[] = {
        {"exit 4", "exited 4"},
        {"echo boom >&2; exit 1", "boom"},
        {"true", "wrote no trace"},
        {"echo 'not json' > \"$REPRO_TRACE\"", "not a valid repro trace"},
        {"head -n 3 \"$GOOD\" > \"$REPRO_TRACE\"", "cut short"},
        {"sleep 30", "timed out"},
        {"kill -SEGV $$", "it was killed by signal 11"},
        /* A traceback stays lines, each indented under repro's own line. */
        {"printf 'Traceback (most recent call last):\\n  File \"t.py\", line 1\\n"
         "ValueError: caf\\303\\251 \\033[2J\\n' >&2; exit 1",
         "its stderr ends:\n    Traceback (most recent call last):\n      File \"t.py\", "
         "line 1\n    ValueError: caf\xc3\xa9 \\x1b[2J\n    (the program's output: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[2048], out[16384], err[16384];
        /* the script in a file: no nested shell quoting */
        char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "bad");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(b, sizeof b, "%s/prog.sh", dir);
        FILE *f = fopen(b, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%s\n", cases[i].script);
        fclose(f);
        snprintf(args, sizeof args, "check --no-golden --timeout 2 --junit %s/r.xml -- env "
                                    "GOOD='%s' sh '%s'", dir, a, b);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 3, "'%s': exit %d\n%.1500s%.1500s", cases[i].script, rc, out, err);
        ck_assert_msg(strstr(err, cases[i].expect), "'%s': stderr lacks '%s':\n%.2500s",
                      cases[i].script, cases[i].expect, err);
        ck_assert_msg(!strstr(out, "reproducible:"), "%.2500s", out);
        snprintf(c, sizeof c, "%s/r.xml", dir);
        f = fopen(c, "r");
        ck_assert_ptr_nonnull(f);
        char xml[8192];
        size_t n = fread(xml, 1, sizeof xml - 1, f);
        xml[n] = '\0';
        fclose(f);
        ck_assert_msg(strstr(xml, "errors=\"1\"") && strstr(xml, "<error"), "%s", xml);
    }
    /* A program that ignores REPRO_SEED: its trace names another seed. */
    char args[1200], out[16384], err[16384];
    snprintf(args, sizeof args, "check --no-golden --seed 77 -- '%s/charlm' --steps 3",
             examples_dir());
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0); /* it reads it */
    snprintf(args, sizeof args,
             "check --no-golden --seed 77 -- env REPRO_SEED=5 '%s/charlm' --steps 3",
             examples_dir());
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 3);
    ck_assert_msg(strstr(err, "ignores REPRO_SEED"), "%s", err);
}
END_TEST

/* repro bisect -- charlm: the unordered reduction is named as the op
 * whose inputs were identical and outputs were not; a reproducible
 * program has nothing to bisect. */
START_TEST(test_bisect_program_names_the_op)
{
    char args[1200], out[16384], err[16384];
    snprintf(args, sizeof args,
             "bisect --set threads=2 --set unordered=1 --steps 20 --repeat 4 -- '%s/charlm'",
             examples_dir());
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: reduce.grad"), "%s", out);
    ck_assert_msg(strstr(out, "inputs were identical"), "%s", out);
    ck_assert_msg(strstr(out, "nondeterministic"), "%s", out);
    snprintf(args, sizeof args, "bisect --steps 5 -- '%s/charlm'", examples_dir());
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "nothing to bisect"), "exit %d\n%s%s", rc, out, err);
}
END_TEST

/* Runs `/usr/bin/python3 -c CODE` with the client on its path; its stdout
 * into out. -1 when python3 is not there, or when REPRO_LIB is empty: the
 * sanitizer build's library cannot be loaded into python3 (the ASan
 * runtime must come first), so `make asan` sets it empty. */
static int python(const char *code, char *out, size_t len)
{
    const char *lib = getenv("REPRO_LIB");
    if (access("/usr/bin/python3", X_OK) != 0 || (lib && !*lib)) {
        snprintf(out, len, "%s", lib && !*lib ? "a sanitizer build" : "no /usr/bin/python3");
        return -1;
    }
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "py");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char script[300], outp[300], cmd[1200];
    snprintf(script, sizeof script, "%s/t.py", dir);
    snprintf(outp, sizeof outp, "%s/out", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs(code, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "PYTHONPATH=python /usr/bin/python3 %s > %s 2>&1", script, outp);
    int st = system(cmd);
    f = fopen(outp, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The Python client's digest of an array equals the C library's for the
 * same bytes (NumPy float32 and int32; a torch bfloat16 tensor when
 * PyTorch is installed). */
START_TEST(test_python_client_digests_equal_c)
{
    char out[8192];
    const char *why = tu_no_python("numpy");
    if (*why) {
        tu_skip("examples", "%s", why);
        return;
    }
    int rc;
    enum { N = 3000 };
    static float x[N];
    int32_t y[5] = {3, -1, 7, 0, 2};
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.5f;
    int64_t sx[1] = {N}, sy[1] = {5};
    repro_digest dx, dy;
    char hx[65], hy[65], expect[200];
    ck_assert_int_eq(repro_tensor_digest_bytes(&dx, "x", "f32", 1, sx, x, sizeof x), 0);
    ck_assert_int_eq(repro_tensor_digest_bytes(&dy, "y", "i32", 1, sy, y, sizeof y), 0);
    repro_digest_hex(&dx, hx);
    repro_digest_hex(&dy, hy);
    rc = python("import numpy as np, repro\n"
                "print(repro.tensor_digest('x', np.arange(3000, dtype=np.float32) * "
                "np.float32(0.5)))\n"
                "print(repro.tensor_digest('y', np.array([3, -1, 7, 0, 2], dtype=np.int32)))\n",
                out, sizeof out);
    snprintf(expect, sizeof expect, "%s\n%s\n", hx, hy);
    ck_assert_msg(rc == 0 && !strcmp(out, expect), "python said (%d):\n%s\nexpected:\n%s", rc,
                  out, expect);
    why = tu_no_python("torch");
    if (*why) {
        tu_skip("examples", "%s", why);
        return;
    }
    uint16_t bf[4] = {0x3f80, 0xbf80, 0x0000, 0x8000}; /* 1, -1, +0, -0 in bfloat16 */
    int64_t sb[2] = {2, 2};
    repro_digest db;
    char hb[65];
    ck_assert_int_eq(repro_tensor_digest_bytes(&db, "w", "bf16", 2, sb, bf, sizeof bf), 0);
    repro_digest_hex(&db, hb);
    rc = python("import torch, repro\n"
                "t = torch.tensor([[1.0, -1.0], [0.0, -0.0]], dtype=torch.bfloat16)\n"
                "print(repro.tensor_digest('w', t))\n",
                out, sizeof out);
    snprintf(expect, sizeof expect, "%s\n", hb);
    ck_assert_msg(rc == 0 && !strcmp(out, expect), "python said (%d):\n%s\nexpected %s", rc, out,
                  expect);
}
END_TEST

/* The client converts nothing silently (issue 33, item 9): a name with a
 * NUL byte was recorded cut at it, step(2**64 + 1) as step 1 and seed -1 as
 * 2**64 - 1 (ctypes wraps), and a plain list became float64 although the
 * docstring refuses it. Each is now a ValueError or TypeError naming the
 * argument, raised before anything reaches C; the recorder is unharmed
 * (the good calls after them write a trace that reads, with step 1 and
 * the names as given). */
static const char refusals_py[] =
    "import json, os, tempfile, numpy as np, repro\n"
    "d = tempfile.mkdtemp()\n"
    "p = os.path.join(d, 't.jsonl')\n"
    "def expect(exc, word, f):\n"
    "    try:\n"
    "        f()\n"
    "    except exc as e:\n"
    "        assert str(e).startswith(word + ' '), (word, str(e))\n"
    "        print('refused', type(e).__name__, e)\n"
    "        return\n"
    "    raise SystemExit('not refused: ' + word)\n"
    "x = np.zeros(3, dtype=np.float32)\n"
    "rec = repro.Recorder('t', 7, trace_path=p, every=1)\n"
    "expect(ValueError, 'name', lambda: rec.tensor('a\\x00b', x))\n"
    "expect(ValueError, 'name', lambda: rec.op('a\\x00b', x))\n"
    "expect(ValueError, 'name', lambda: repro.tensor_digest('a\\x00b', x))\n"
    "expect(TypeError, 'name', lambda: rec.tensor(b'a', x))\n"
    "expect(TypeError, 'x', lambda: rec.tensor('a', [1.0, 2.0]))\n"
    "expect(TypeError, 'x', lambda: repro.tensor_digest('a', [1, 2]))\n"
    "expect(TypeError, 'x', lambda: rec.tensor('a', 1.5))\n"
    "expect(ValueError, 'step', lambda: rec.step(2**64 + 1, 0.5))\n"
    "expect(ValueError, 'step', lambda: rec.step(-1, 0.5))\n"
    "expect(TypeError, 'step', lambda: rec.step(1.0, 0.5))\n"
    "expect(TypeError, 'step', lambda: rec.step(True, 0.5))\n"
    "q = os.path.join(d, 'u.jsonl')\n"
    "expect(ValueError, 'seed', lambda: repro.Recorder('t', -1, trace_path=q))\n"
    "expect(ValueError, 'seed', lambda: repro.Recorder('t', 2**64, trace_path=q))\n"
    "expect(ValueError, 'experiment', lambda: repro.Recorder('t\\x00u', 1, trace_path=q))\n"
    "expect(ValueError, 'default_seed', lambda: repro.RunEnv.read(-1))\n"
    "expect(ValueError, 'base_seed', lambda: repro.worker_seed(-1, 0))\n"
    "assert not os.path.exists(q)\n"
    "rec.tensor('a', x)\n"
    "rec.tensor('b', np.arange(2, dtype=np.int64))\n"
    "rec.step(np.int64(1), 0.5)\n"
    "rec.close()\n"
    "lines = [json.loads(l) for l in open(p)]\n"
    "assert lines[0]['seed'] == '7', lines[0]['seed']\n"
    "assert lines[1]['step'] == 1 and lines[-1]['steps'] == 1\n"
    "assert repro.worker_seed(2**64 - 1, 1) == 0\n"
    "print('ok', [t['name'] for t in lines[1]['tensors']])\n";

START_TEST(test_python_client_refuses_conversions)
{
    char out[8192];
    const char *why = tu_no_python("numpy");
    if (*why) {
        tu_skip("examples", "%s", why);
        return;
    }
    int rc = python(refusals_py, out, sizeof out);
    ck_assert_msg(rc == 0, "python said (%d):\n%s", rc, out);
    ck_assert_msg(strstr(out, "ok ['a', 'b']\n") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "refused ValueError step is 18446744073709551617, outside") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "refused ValueError name 'a\\x00b' contains a NUL byte") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "refused TypeError x must be a NumPy array or a torch tensor, not "
                              "list") != NULL, "%s", out);
}
END_TEST

/* The PyTorch example through `repro check --`: recorded by the client,
 * two fresh runs identical. */
START_TEST(test_torch_example_reproduces)
{
    char out[65536], err[16384];
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("examples", "%s", why);
        return;
    }
    int rc = tu_run_repro("check --no-golden --set steps=4 -- /usr/bin/python3 "
                          "examples/torch/mlp.py",
                          out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "reproducible: 2 runs identical over 4 steps"));
}
END_TEST

Suite *examples_suite(void)
{
    Suite *s = suite_create("examples");
    TCase *tc = tcase_create("charlm");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_charlm_reproduces_at_any_thread_count);
    tcase_add_test(tc, test_charlm_negative_control_diverges);
    tcase_add_test(tc, test_check_program_threads_and_workers);
    tcase_add_test(tc, test_broken_programs_cannot_be_tested);
    tcase_add_test(tc, test_program_runs_at_once_only_when_asked);
    tcase_add_test(tc, test_bisect_program_names_the_op);
    tcase_add_test(tc, test_python_client_digests_equal_c);
    tcase_add_test(tc, test_python_client_refuses_conversions);
    tcase_add_test(tc, test_torch_example_reproduces);
    suite_add_tcase(s, tc);
    return s;
}
