/* The digest function named in a trace header (repro/digest.h): traces of
 * the format before XXH3 (repro-tensor/v1, SHA-256 leaves; the fixture
 * tests/data/mlp-v1-3steps.jsonl was written by repro before the change)
 * still read and diff against each other; a comparison across functions
 * says "different digest function", never a mismatch; trace.digest =
 * sha256 still computes v1's digests bit for bit; and a golden blessed
 * before the change is found under its old class id and reported as one to
 * re-bless. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/env.h"
#include "record/trace.h"
#include "testutil.h"
#include "util/error.h"

#define OLD "tests/data/mlp-v1-3steps.jsonl"

static char out[65536], err[65536];

/* A fresh 3-step MLP trace at `path`, with `set` (may be "") added. */
static void run3(const char *path, const char *set)
{
    char args[1024];
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 3 %s -o %s", set, path);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
}

static void temp_dir(char *dir, size_t len)
{
    tu_tmp_template(dir, len, "digestfn");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

START_TEST(test_old_trace_reads_and_diffs_itself)
{
    repro_trace t;
    ck_assert_int_eq(repro_trace_read(&t, OLD), 0);
    ck_assert_str_eq(t.tensor_hash, "repro-tensor/v1");
    ck_assert_int_eq(t.digest_fn, REPRO_DIGEST_SHA256);
    ck_assert_int_eq(t.nsteps, 3);
    repro_trace_release(&t);
    ck_assert_int_eq(tu_run_repro("diff " OLD " " OLD, out, sizeof out, err, sizeof err), 0);
}
END_TEST

START_TEST(test_old_vs_new_is_a_different_digest_function)
{
    char dir[TU_TMP_LEN], xxh[TU_TMP_LEN + 16], sha[TU_TMP_LEN + 16], args[512];
    temp_dir(dir, sizeof dir);
    snprintf(xxh, sizeof xxh, "%s/x.jsonl", dir);
    snprintf(sha, sizeof sha, "%s/s.jsonl", dir);
    run3(xxh, "");
    run3(sha, "--set trace.digest=sha256");
    repro_trace t;
    ck_assert_int_eq(repro_trace_read(&t, xxh), 0);
    ck_assert_str_eq(t.tensor_hash, "repro-tensor/v2-xxh3-128");
    repro_trace_release(&t);
    /* old (v1) against the default: refused, named, not a divergence */
    snprintf(args, sizeof args, "diff %s %s", OLD, xxh);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "different digest function") != NULL, "stderr: %s", err);
    ck_assert_ptr_nonnull(strstr(err, "repro-tensor/v1 vs repro-tensor/v2-xxh3-128"));
    ck_assert_ptr_null(strstr(out, "DIVERGED"));
    /* control: trace.digest = sha256 computes v1's digests, bit for bit,
     * so the old trace and a new sha256 one are identical */
    snprintf(args, sizeof args, "diff %s %s", OLD, sha);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s%s", out, err);
    /* and the two new ones differ only in their function */
    snprintf(args, sizeof args, "diff %s %s", sha, xxh);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "different digest function"));
}
END_TEST

/* The env block of a trace names the run's digest function (it showed the
 * library default, xxh3, under trace.digest = sha256); the class is the
 * same for both, as the function is not a class field. */
START_TEST(test_env_block_names_the_runs_function)
{
    char dir[TU_TMP_LEN], xxh[TU_TMP_LEN + 16], sha[TU_TMP_LEN + 16];
    temp_dir(dir, sizeof dir);
    snprintf(xxh, sizeof xxh, "%s/x.jsonl", dir);
    snprintf(sha, sizeof sha, "%s/s.jsonl", dir);
    run3(xxh, "");
    run3(sha, "--set trace.digest=sha256");
    repro_trace tx, ts;
    ck_assert_int_eq(repro_trace_read(&tx, xxh), 0);
    ck_assert_int_eq(repro_trace_read(&ts, sha), 0);
    const char *ex = json_string_value(
        json_object_get(json_object_get(tx.header_json, "env"), "tensor_hash"));
    const char *es = json_string_value(
        json_object_get(json_object_get(ts.header_json, "env"), "tensor_hash"));
    ck_assert_str_eq(tx.tensor_hash, REPRO_TENSOR_HASH_XXH3);
    ck_assert_str_eq(ts.tensor_hash, REPRO_TENSOR_HASH_SHA256);
    ck_assert_msg(ex && !strcmp(ex, tx.tensor_hash), "env says %s, the run %s", ex,
                  tx.tensor_hash);
    ck_assert_msg(es && !strcmp(es, ts.tensor_hash), "env says %s, the run %s", es,
                  ts.tensor_hash);
    ck_assert_str_eq(tx.env_class, ts.env_class);
    repro_trace_release(&tx);
    repro_trace_release(&ts);
}
END_TEST

/* The trailer binds the final parameters with SHA-256 whatever the
 * per-step function: the same bits give the same final_params_sha256
 * under XXH3 and SHA-256 step digests, other bits (another seed) another. */
START_TEST(test_trailer_binds_final_params_with_sha256)
{
    char dir[TU_TMP_LEN], a[TU_TMP_LEN + 16], b[TU_TMP_LEN + 16], c[TU_TMP_LEN + 16];
    temp_dir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.jsonl", dir);
    snprintf(b, sizeof b, "%s/b.jsonl", dir);
    snprintf(c, sizeof c, "%s/c.jsonl", dir);
    run3(a, "");
    run3(b, "--set trace.digest=sha256");
    run3(c, "--seed 5");
    repro_trace ta, tb, tc;
    ck_assert_int_eq(repro_trace_read(&ta, a), 0);
    ck_assert_int_eq(repro_trace_read(&tb, b), 0);
    ck_assert_int_eq(repro_trace_read(&tc, c), 0);
    ck_assert(ta.has_final_params && tb.has_final_params && tc.has_final_params);
    ck_assert(repro_digest_eq(&ta.final_params, &tb.final_params));
    ck_assert(!repro_digest_eq(&ta.final_params, &tc.final_params));
    ck_assert(!repro_digest_eq(&ta.trailer_chain, &tb.trailer_chain));
    repro_trace_release(&ta);
    repro_trace_release(&tb);
    repro_trace_release(&tc);
    /* a trace without it (written before) still reads */
    ck_assert_int_eq(repro_trace_read(&ta, OLD), 0);
    ck_assert_int_eq(ta.has_final_params, 0);
    repro_trace_release(&ta);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *o = fopen(to, "wb");
    ck_assert(in && o);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, o), n);
    fclose(in);
    ck_assert_int_eq(fclose(o), 0);
}

/* A golden blessed before the change, where it was filed (its v1 class
 * id), outside any repository (goldens then live under the current
 * directory): check finds it and says to re-bless, not "none" and not
 * "MISMATCH"; with trace.digest = sha256 the same golden matches. */
START_TEST(test_old_golden_is_reported_for_re_bless)
{
    char dir[TU_TMP_LEN], path[512], cwd[1024], ini[1200], v1[REPRO_ENV_CLASS_MAX];
    repro_env e;
    ck_assert_int_eq(repro_env_get(&e), 0);
    ck_assert_int_eq(repro_env_class_id_v1(&e, v1, sizeof v1), 0);
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/golden", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/golden/mlp", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/golden/mlp/%s.jsonl", dir, v1);
    copy_file(OLD, path);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(ini, sizeof ini, "%s/experiments/mlp.ini", cwd);
    snprintf(path, sizeof path, "%s/mlp.ini", dir);
    copy_file(ini, path);
    int rc = tu_run_repro_fsize(dir, 1UL << 30, "check mlp.ini --steps 3", out, sizeof out);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "golden: different digest function") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "re-bless"));
    ck_assert_ptr_nonnull(strstr(out, v1));
    ck_assert_ptr_null(strstr(out, "MISMATCH"));
    ck_assert_ptr_null(strstr(out, "golden: none"));
    rc = tu_run_repro_fsize(dir, 1UL << 30, "check mlp.ini --steps 3 --set trace.digest=sha256",
                            out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "golden: matches") != NULL, "%s", out);
}
END_TEST

Suite *digest_fn_suite(void)
{
    Suite *s = suite_create("digest_fn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_old_trace_reads_and_diffs_itself);
    tcase_add_test(tc, test_old_vs_new_is_a_different_digest_function);
    tcase_add_test(tc, test_old_golden_is_reported_for_re_bless);
    tcase_add_test(tc, test_trailer_binds_final_params_with_sha256);
    tcase_add_test(tc, test_env_block_names_the_runs_function);
    suite_add_tcase(s, tc);
    return s;
}
