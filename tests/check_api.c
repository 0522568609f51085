/* The public API (include/repro/): what an external program sees. Only
 * <repro/...> headers and Check are used here, as a user would. The
 * recorder writes traces that the public reader (and `repro diff`) accept;
 * identical programs compare identical; a changed byte is found at its
 * step and tensor; errors are negative REPRO_E* codes with a message. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repro/repro.h"
#include "testutil.h"

static void temp_trace(char *buf, size_t len)
{
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "api");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(buf, len, "%s/sub/trace.jsonl", dir); /* parents are created */
}

/* Three steps of a small program: weights (f32), a bias (f64), labels
 * (i32), a mask (u8); `poke_step` > 0 flips one byte of the weights at that
 * step; detail every `every`-th step (0: the recorder's default). Returns
 * the final chain in hex. */
static void record_program_every(const char *path, int poke_step, char chain[65], int every)
{
    repro_recorder *r;
    repro_run_info info = {"tiny", 42, "{\"lr\": 0.1, \"hidden\": 8}"};
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    if (every)
        o.every = every;
    ck_assert_int_eq(repro_recorder_open_ex(&r, path, &info, &o), 0);
    float w[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.0f, 3.0f};
    double b[2] = {0.1, -0.2};
    int32_t y[3] = {1, 0, 2};
    uint8_t mask[5] = {1, 0, 1, 1, 0};
    int64_t sw[2] = {2, 3}, sb[1] = {2}, sy[1] = {3}, sm[1] = {5};
    for (int64_t step = 1; step <= 3; step++) {
        for (int i = 0; i < 6; i++)
            w[i] = w[i] * 0.5f + (float)step;
        if (step == poke_step)
            ((unsigned char *)w)[5] ^= 0x01;
        ck_assert_int_eq(repro_recorder_tensor(r, "fc.weight", REPRO_F32, 2, sw, w), 0);
        ck_assert_int_eq(repro_recorder_tensor(r, "fc.bias", REPRO_F64, 1, sb, b), 0);
        ck_assert_int_eq(repro_recorder_tensor(r, "batch.y", REPRO_I32, 1, sy, y), 0);
        ck_assert_int_eq(repro_recorder_tensor(r, "dropout.mask", REPRO_U8, 1, sm, mask), 0);
        ck_assert_int_eq(repro_recorder_step(r, step, 1.0 / (double)step), 0);
    }
    ck_assert_int_eq(repro_recorder_close(r, chain), 0);
}

/* Detail on each step: the tensor that differs is named wherever. */
static void record_program(const char *path, int poke_step, char chain[65])
{
    record_program_every(path, poke_step, chain, 1);
}

/* The counts a program says it used go into the header before step 1,
 * and only then; a program that says nothing leaves them absent. */
START_TEST(test_threads_used_in_the_header)
{
    char path[256], plain[256];
    temp_trace(path, sizeof path);
    temp_trace(plain, sizeof plain);
    repro_run_info info = {"tiny", 42, NULL};
    repro_recorder *r;
    float w[2] = {1, 2};
    int64_t shape[1] = {2};
    ck_assert_int_eq(repro_recorder_open(&r, path, &info), 0);
    ck_assert_int_eq(repro_recorder_set_threads(r, 8, -1), 0);
    ck_assert_int_eq(repro_recorder_set_threads(r, 2, 3), 0); /* the last call counts */
    for (int64_t step = 1; step <= 2; step++) {
        ck_assert_int_eq(repro_recorder_tensor(r, "w", REPRO_F32, 1, shape, w), 0);
        ck_assert_int_eq(repro_recorder_step(r, step, 0.0), 0);
    }
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    repro_trace *t;
    int threads, workers;
    ck_assert_int_eq(repro_trace_load(&t, path), 0);
    repro_trace_threads_used(t, &threads, &workers);
    ck_assert_int_eq(threads, 2);
    ck_assert_int_eq(workers, 3);
    ck_assert_int_eq(repro_trace_step_count(t), 2);
    repro_trace_free(t);
    /* After a step it is too late (the header is written), and a count
     * below 1 thread is refused: either fails the recorder. */
    ck_assert_int_eq(repro_recorder_open(&r, plain, &info), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "w", REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_set_threads(r, 2, 0), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_last(), "before the first step"));
    repro_recorder_abort(r);
    ck_assert_int_eq(repro_recorder_open(&r, plain, &info), 0);
    ck_assert_int_eq(repro_recorder_set_threads(r, 0, 0), REPRO_EINVAL);
    repro_recorder_abort(r);
    /* Said nothing: absent. */
    ck_assert_int_eq(repro_recorder_open(&r, plain, &info), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "w", REPRO_F32, 1, shape, w), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.0), 0);
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    ck_assert_int_eq(repro_trace_load(&t, plain), 0);
    repro_trace_threads_used(t, &threads, &workers);
    ck_assert_int_eq(threads, -1);
    ck_assert_int_eq(workers, -1);
    repro_trace_free(t);
    /* Digests only (no trace): accepted, nothing to write. */
    ck_assert_int_eq(repro_recorder_open(&r, "", &info), 0);
    ck_assert_int_eq(repro_recorder_set_threads(r, 2, 0), 0);
    repro_recorder_abort(r);
}
END_TEST

START_TEST(test_three_steps_compare_identical_then_changed)
{
    char a[256], b[256], c[256], ha[65], hb[65], hc[65];
    temp_trace(a, sizeof a);
    temp_trace(b, sizeof b);
    temp_trace(c, sizeof c);
    record_program(a, 0, ha);
    record_program(b, 0, hb);
    record_program(c, 2, hc);
    ck_assert_str_eq(ha, hb);
    ck_assert_str_ne(ha, hc);

    repro_trace *ta, *tb, *tc;
    ck_assert_int_eq(repro_trace_load(&ta, a), 0);
    ck_assert_int_eq(repro_trace_load(&tb, b), 0);
    ck_assert_int_eq(repro_trace_load(&tc, c), 0);
    ck_assert_str_eq(repro_trace_experiment(ta), "tiny");
    ck_assert_int_eq(repro_trace_step_count(ta), 3);
    ck_assert_int_eq(repro_trace_last_step(ta), 3);
    ck_assert(repro_trace_complete(ta));
    repro_digest last;
    char hex[65];
    ck_assert_int_eq(repro_trace_chain_at(ta, 3, &last), 0);
    repro_digest_hex(&last, hex);
    ck_assert_str_eq(hex, ha);
    ck_assert_int_eq(repro_trace_chain_at(ta, 4, &last), REPRO_ENOTFOUND);

    repro_trace_diff d;
    ck_assert_int_eq(repro_trace_compare(ta, tb, &d), 0);
    ck_assert(d.identical);
    ck_assert_int_eq(d.first_step, 0);
    ck_assert_int_eq(repro_trace_compare(ta, tc, &d), 0);
    ck_assert(!d.identical);
    ck_assert_int_eq(d.first_step, 2);
    ck_assert_str_eq(d.tensor, "fc.weight");
    repro_trace_free(ta);
    repro_trace_free(tb);
    repro_trace_free(tc);

    /* The CLI reads the same traces: identical, and the poke at step 2. */
    char args[700], out[8192], err[4096];
    snprintf(args, sizeof args, "diff '%s' '%s'", a, b);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "diff '%s' '%s'", a, c);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 1);
    ck_assert_msg(strstr(out, "step 2") && strstr(out, "fc.weight"), "diff said: %s", out);
}
END_TEST

/* With the default every (10), a program's first step has detail too: a
 * run that parts at step 1 (a seed, a thread count, a world size) names
 * the tensor there however short it is. Step 2, neither the first nor a
 * 10th nor known as the last, has none (the control: only step 1 was
 * added). */
START_TEST(test_first_step_has_detail_by_default)
{
    char a[256], c1[256], c2[256], h[65];
    temp_trace(a, sizeof a);
    temp_trace(c1, sizeof c1);
    temp_trace(c2, sizeof c2);
    record_program_every(a, 0, h, 0);
    record_program_every(c1, 1, h, 0);
    record_program_every(c2, 2, h, 0);
    const struct {
        const char *other;
        int step;
        const char *tensor;
    } want[] = {{c1, 1, "fc.weight"}, {c2, 2, ""}};
    for (int i = 0; i < 2; i++) {
        repro_trace *ta, *tb;
        ck_assert_int_eq(repro_trace_load(&ta, a), 0);
        ck_assert_int_eq(repro_trace_load(&tb, want[i].other), 0);
        repro_trace_diff d;
        ck_assert_int_eq(repro_trace_compare(ta, tb, &d), 0);
        ck_assert_int_eq(d.first_step, want[i].step);
        ck_assert_str_eq(d.tensor, want[i].tensor);
        repro_trace_free(ta);
        repro_trace_free(tb);
    }
    char args[700], out[8192], err[4096];
    snprintf(args, sizeof args, "diff '%s' '%s'", a, c1);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 1);
    ck_assert_msg(strstr(out, "DIVERGED at step 1") && strstr(out, "fc.weight") &&
                      !strstr(out, "no tensor detail at step 1"),
                  "diff said: %s", out);
}
END_TEST

/* Drops a trace's last line (its trailer), as a crash would. */
static void cut_trailer(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    ck_assert_uint_gt(n, 2);
    size_t end = n - 1; /* the final newline */
    while (end > 0 && buf[end - 1] != '\n')
        end--;
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, end, f), end);
    fclose(f);
}

/* A cut-short trace is never "identical", on either side: the steps it
 * has agree, but the run it certifies did not finish. */
START_TEST(test_truncated_side_is_never_identical)
{
    char a[256], b[256], ha[65], hb[65];
    temp_trace(a, sizeof a);
    temp_trace(b, sizeof b);
    record_program(a, 0, ha);
    record_program(b, 0, hb);
    for (int side = 0; side < 2; side++) {
        char *cut = side == 0 ? a : b;
        char copy[300];
        snprintf(copy, sizeof copy, "%s.full", cut);
        FILE *in = fopen(cut, "r"), *out = fopen(copy, "w");
        int ch;
        while ((ch = fgetc(in)) != EOF)
            fputc(ch, out);
        fclose(in);
        fclose(out);
        cut_trailer(cut);
        repro_trace *ta, *tb;
        ck_assert_int_eq(repro_trace_load(&ta, a), 0);
        ck_assert_int_eq(repro_trace_load(&tb, b), 0);
        repro_trace_diff d;
        ck_assert_int_eq(repro_trace_compare(ta, tb, &d), 0);
        ck_assert_msg(!d.identical, "side %d cut short, yet identical", side);
        ck_assert_int_eq(d.a_complete, side != 0);
        ck_assert_int_eq(d.b_complete, side != 1);
        repro_trace_free(ta);
        repro_trace_free(tb);
        ck_assert_int_eq(rename(copy, cut), 0);
    }
}
END_TEST

START_TEST(test_leaf_digests_equal_host_bytes)
{
    enum { N = 3000 }; /* three 4 KiB leaves, the last one short */
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.5f;
    int64_t shape[1] = {N};
    size_t nleaves = repro_leaf_count(sizeof x);
    ck_assert_int_eq(nleaves, 3);
    /* Under each digest function: leaves computed elsewhere (the public
     * repro_leaf_digests) give the digest the recorder computes itself. */
    repro_digest leaves[3];
    char first[2][65];
    for (int fn = 0; fn < 2; fn++) {
        repro_recorder_options o;
        repro_recorder_options_init(&o);
        o.digest = (repro_digest_fn)fn;
        ck_assert_int_eq(repro_leaf_digests(o.digest, x, sizeof x, leaves), 0);
        if (fn == REPRO_DIGEST_SHA256) /* and SHA-256's are OpenSSL's */
            for (size_t i = 0; i < nleaves; i++) {
                size_t off = i * REPRO_LEAF_BYTES;
                size_t n = sizeof x - off < REPRO_LEAF_BYTES ? sizeof x - off : REPRO_LEAF_BYTES;
                repro_digest d;
                ck_assert_int_eq(repro_sha256((const char *)x + off, n, &d), 0);
                ck_assert(repro_digest_eq(&d, &leaves[i]));
            }
        repro_recorder *r1, *r2;
        repro_run_info info = {"leaves", 1, NULL};
        ck_assert_int_eq(repro_recorder_open_ex(&r1, "", &info, &o), 0); /* "": digests only */
        ck_assert_int_eq(repro_recorder_open_ex(&r2, "", &info, &o), 0);
        ck_assert_int_eq(repro_recorder_tensor(r1, "x", REPRO_F32, 1, shape, x), 0);
        repro_tensor_stats st = {1.0, 2.0, 3.0, 0};
        ck_assert_int_eq(
            repro_recorder_tensor_leaves(r2, "x", REPRO_F32, 1, shape, sizeof x, leaves, &st), 0);
        ck_assert_int_eq(repro_recorder_step(r1, 1, 0.0), 0);
        ck_assert_int_eq(repro_recorder_step(r2, 1, 0.0), 0);
        char h2[65];
        ck_assert_int_eq(repro_recorder_close(r1, first[fn]), 0);
        ck_assert_int_eq(repro_recorder_close(r2, h2), 0);
        ck_assert_str_eq(first[fn], h2);
    }
    ck_assert_str_ne(first[0], first[1]); /* the function counts */
    repro_recorder *r1;
    repro_run_info info = {"leaves", 1, NULL};
    /* A wrong byte count is refused. */
    ck_assert_int_eq(repro_recorder_open(&r1, "", &info), 0);
    ck_assert_int_eq(repro_recorder_tensor_leaves(r1, "x", REPRO_F32, 1, shape, 12, leaves, NULL),
                     REPRO_EINVAL);
    repro_recorder_abort(r1);
}
END_TEST

/* The trace's last line (its trailer) into buf. */
static void last_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    buf[0] = '\0';
    while (fgets(line, sizeof line, f))
        snprintf(buf, len, "%s", line);
    fclose(f);
}

/* A program's run of `steps` steps of total_steps: grad.w, param.w (f32)
 * and param.b (f64) a step; at `leaves_step` param.w goes in as leaf
 * digests. The trailer into trailer. */
static void record_final(repro_digest_fn fn, int64_t total, int64_t steps, int64_t leaves_step,
                         char *trailer, size_t len)
{
    char path[TU_TMP_LEN + 32];
    temp_trace(path, sizeof path);
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    o.digest = fn;
    o.total_steps = total;
    repro_recorder *r;
    repro_run_info info = {"final", 3, NULL};
    ck_assert_int_eq(repro_recorder_open_ex(&r, path, &info, &o), 0);
    float w[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.1f, 0.2f, 0.3f};
    double b[2] = {0.25, -0.75};
    int64_t s3[1] = {3}, s2[1] = {2};
    for (int64_t step = 1; step <= steps; step++) {
        for (int i = 0; i < 3; i++)
            w[i] -= 0.5f * g[i];
        ck_assert_int_eq(repro_recorder_tensor(r, "grad.w", REPRO_F32, 1, s3, g), 0);
        if (step == leaves_step) {
            repro_digest leaves[1];
            ck_assert_int_eq(repro_leaf_digests(fn, w, sizeof w, leaves), 0);
            ck_assert_int_eq(
                repro_recorder_tensor_leaves(r, "param.w", REPRO_F32, 1, s3, sizeof w, leaves, NULL),
                0);
        } else {
            ck_assert_int_eq(repro_recorder_tensor(r, "param.w", REPRO_F32, 1, s3, w), 0);
        }
        ck_assert_int_eq(repro_recorder_tensor(r, "param.b", REPRO_F64, 1, s2, b), 0);
        ck_assert_int_eq(repro_recorder_step(r, step, 1.0), 0);
    }
    ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    last_line(path, trailer, len);
}

/* A program's trace binds its final parameters cryptographically, as the
 * built-in workload's does: with total_steps given and reached, the
 * trailer's final_params_sha256 is SHA-256 over the SHA-256 tree digests
 * of the last step's param.* tensors, the same under either leaf
 * function. Not written when it cannot be whole: no total_steps, a run
 * that stopped early, a param given as XXH3 leaf digests (no bytes). */
START_TEST(test_final_params_sha256_in_the_trailer)
{
    float w[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.1f, 0.2f, 0.3f};
    for (int step = 0; step < 2; step++)
        for (int i = 0; i < 3; i++)
            w[i] -= 0.5f * g[i];
    double b[2] = {0.25, -0.75};
    int64_t s3[1] = {3}, s2[1] = {2};
    repro_digest d[2], fin;
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, &d[0], "param.w", "f32", 1,
                                                  s3, w, sizeof w),
                     0);
    ck_assert_int_eq(repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, &d[1], "param.b", "f64", 1,
                                                  s2, b, sizeof b),
                     0);
    ck_assert_int_eq(repro_sha256_digests(d, 2, &fin), 0);
    char hex[65], want[128], trailer[4096];
    repro_digest_hex(&fin, hex);
    snprintf(want, sizeof want, "\"final_params_sha256\":\"%s\"", hex);
    for (int fn = 0; fn < 2; fn++) {
        record_final((repro_digest_fn)fn, 2, 2, 0, trailer, sizeof trailer);
        ck_assert_msg(strstr(trailer, want), "fn %d: %s", fn, trailer);
    }
    record_final(REPRO_DIGEST_SHA256, 2, 2, 2, trailer, sizeof trailer); /* sha256 leaves: whole */
    ck_assert_msg(strstr(trailer, want), "%s", trailer);
    record_final(REPRO_DIGEST_XXH3, 2, 2, 1, trailer, sizeof trailer); /* leaves before the end */
    ck_assert_msg(strstr(trailer, want), "%s", trailer);
    record_final(REPRO_DIGEST_XXH3, 2, 2, 2, trailer, sizeof trailer);
    ck_assert_msg(strstr(trailer, "\"trailer\"") && !strstr(trailer, "final_params"), "%s",
                  trailer);
    record_final(REPRO_DIGEST_XXH3, 0, 2, 0, trailer, sizeof trailer);
    ck_assert_msg(strstr(trailer, "\"trailer\"") && !strstr(trailer, "final_params"), "%s",
                  trailer);
    record_final(REPRO_DIGEST_XXH3, 3, 2, 0, trailer, sizeof trailer);
    ck_assert_msg(strstr(trailer, "\"trailer\"") && !strstr(trailer, "final_params"), "%s",
                  trailer);
}
END_TEST

START_TEST(test_errors_are_codes_with_messages)
{
    repro_recorder *r;
    repro_run_info info = {"errs", 7, NULL};
    ck_assert_int_eq(repro_recorder_open(&r, "", &info), 0);
    int64_t shape[1] = {2};
    float x[2] = {1, 2};
    ck_assert_int_eq(repro_recorder_tensor(r, "x", (repro_dtype)99, 1, shape, x), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_last(), "dtype"));
    ck_assert_int_eq(repro_error_last_code(), REPRO_EINVAL);
    /* A failed recorder stays failed, and close reports it. */
    ck_assert_int_eq(repro_recorder_tensor(r, "x", REPRO_F32, 1, shape, x), REPRO_EINVAL);
    ck_assert_int_eq(repro_recorder_close(r, NULL), REPRO_EINVAL);

    ck_assert_int_eq(repro_recorder_open(&r, "", &info), 0);
    ck_assert_int_eq(repro_recorder_step(r, 2, 0.0), REPRO_EINVAL); /* steps count from 1 */
    ck_assert_ptr_nonnull(strstr(repro_error_last(), "step 2"));
    repro_recorder_abort(r);

    ck_assert_int_eq(repro_recorder_open(&r, "/proc/no/such/dir/t.jsonl", &info), REPRO_EIO);
    ck_assert_ptr_null(r);
    repro_run_info bad = {"bad", 1, "[1, 2]"};
    ck_assert_int_eq(repro_recorder_open(&r, "/tmp/repro-api-bad.jsonl", &bad), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_last(), "config_json"));

    repro_trace *t;
    ck_assert_int_eq(repro_trace_load(&t, "/no/such/trace.jsonl"), REPRO_EINVAL);
    ck_assert_ptr_null(t);
    repro_dtype d;
    ck_assert_int_eq(repro_dtype_from_name(&d, "bf16"), 0);
    ck_assert_int_eq(d, REPRO_BF16);
    ck_assert_int_eq(repro_dtype_size(REPRO_BF16), 2);
    ck_assert_int_eq(repro_dtype_from_name(&d, "f8"), REPRO_EINVAL);
    ck_assert_int_eq(repro_api_version(), REPRO_API_VERSION);
}
END_TEST

START_TEST(test_trace_path_from_environment_and_levels)
{
    char path[256], hex[65];
    temp_trace(path, sizeof path);
    setenv("REPRO_TRACE", path, 1);
    repro_recorder *r;
    repro_run_info info = {"env", 3, NULL};
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    o.level = REPRO_LEVEL_OP;
    o.every = 1; /* step 1 in detail: its ops are written */
    ck_assert_int_eq(repro_recorder_open_ex(&r, NULL, &info, &o), 0);
    unsetenv("REPRO_TRACE");
    float x[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    ck_assert_int_eq(repro_recorder_op(r, "fwd.fc", REPRO_F32, 1, shape, x), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "x", REPRO_F32, 1, shape, x), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.5), 0);
    ck_assert_int_eq(repro_recorder_close(r, hex), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"ops\""));
    ck_assert_ptr_nonnull(strstr(buf, "fwd.fc"));
    ck_assert_ptr_nonnull(strstr(buf, "\"level\": \"op\"") ? buf : strstr(buf, "\"level\":\"op\""));

    /* Op outputs never enter the step digest: the same run at level step
     * has the same chain. */
    repro_recorder_options_init(&o);
    o.level = REPRO_LEVEL_STEP;
    char hex2[65];
    ck_assert_int_eq(repro_recorder_open_ex(&r, "", &info, &o), 0);
    ck_assert_int_eq(repro_recorder_op(r, "fwd.fc", REPRO_F32, 1, shape, x), 0);
    ck_assert_int_eq(repro_recorder_tensor(r, "x", REPRO_F32, 1, shape, x), 0);
    ck_assert_int_eq(repro_recorder_step(r, 1, 0.5), 0);
    ck_assert_int_eq(repro_recorder_close(r, hex2), 0);
    ck_assert_str_eq(hex, hex2);
}
END_TEST

START_TEST(test_seeds_and_generator)
{
    /* base_seed + worker_id, modulo 2^64, as PyTorch. */
    ck_assert_uint_eq(repro_worker_seed(100, 3), 103);
    ck_assert_uint_eq(repro_worker_seed(UINT64_MAX, 1), 0);
    /* Distinct tuples, distinct seeds; a 64-bit index above 2^32 is not
     * folded onto a small one. */
    uint64_t s1 = repro_seed_derive(1, 100, 0, 0, 0, 5);
    ck_assert_uint_ne(s1, repro_seed_derive(1, 100, 0, 0, 1, 5));
    ck_assert_uint_ne(s1, repro_seed_derive(1, 100, 0, 1, 0, 5));
    ck_assert_uint_ne(s1, repro_seed_derive(1, 100, 0, 0, 0, 5 + (1ULL << 32)));
    ck_assert_uint_eq(s1, repro_seed_derive(1, 100, 0, 0, 0, 5));
    /* randperm is a permutation and is the same for the same seed. */
    enum { N = 257 };
    uint32_t p[N], q[N], seen[N] = {0};
    repro_generator g, h;
    repro_generator_init(&g, 9);
    repro_generator_init(&h, 9);
    repro_generator_randperm(&g, N, p);
    repro_generator_randperm(&h, N, q);
    ck_assert_int_eq(memcmp(p, q, sizeof p), 0);
    int moved = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_uint_lt(p[i], N);
        ck_assert_uint_eq(seen[p[i]]++, 0);
        moved += p[i] != (uint32_t)i;
    }
    ck_assert_int_gt(moved, N / 2);
    ck_assert_uint_eq(repro_generator_u32(&g), repro_generator_u32(&h));
    float u = repro_generator_unit(&g);
    ck_assert(u >= 0.0f && u < 1.0f);
    /* Philox4x32-10 known answer (Random123 kat_vectors: zero key and counter). */
    uint32_t ctr[4] = {0, 0, 0, 0}, out[4];
    repro_philox4x32_10_block(ctr, 0, 0, out);
    ck_assert_uint_eq(out[0], 0x6627e8d5u);
    ck_assert_uint_eq(out[3], 0x9b00dbd8u);
}
END_TEST

START_TEST(test_runner_protocol)
{
    static const char *const vars[] = {"REPRO_TRACE", "REPRO_SEED", "REPRO_THREADS",
                                       "REPRO_WORKERS", "REPRO_DETERMINISTIC", "REPRO_BENCHMARK",
                                       "REPRO_TRACE_LEVEL", "REPRO_RUN_INDEX", "REPRO_BATCH_SIZE",
                                       "REPRO_SET_MODEL_HIDDEN"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
    repro_run_env e;
    ck_assert_int_eq(repro_run_env_read(&e, 99), 0); /* outside repro: defaults */
    ck_assert_int_eq(e.under_repro, 0);
    ck_assert_uint_eq(e.seed, 99);
    ck_assert_int_eq(e.threads, 1);
    ck_assert_int_eq(e.deterministic, 1);
    ck_assert_int_eq(e.level, REPRO_LEVEL_TENSOR);
    setenv("REPRO_TRACE", "/tmp/t.jsonl", 1);
    setenv("REPRO_SEED", "18446744073709551615", 1);
    setenv("REPRO_THREADS", "3", 1);
    setenv("REPRO_WORKERS", "2", 1);
    setenv("REPRO_DETERMINISTIC", "warn", 1);
    setenv("REPRO_BENCHMARK", "on", 1);
    setenv("REPRO_TRACE_LEVEL", "op", 1);
    setenv("REPRO_RUN_INDEX", "1", 1);
    setenv("REPRO_SET_MODEL_HIDDEN", "128", 1);
    ck_assert_int_eq(repro_run_env_read(&e, 99), 0);
    ck_assert(e.under_repro);
    ck_assert_str_eq(e.trace_path, "/tmp/t.jsonl");
    ck_assert_uint_eq(e.seed, UINT64_MAX);
    ck_assert_int_eq(e.threads, 3);
    ck_assert_int_eq(e.workers, 2);
    ck_assert_int_eq(e.deterministic, 2);
    ck_assert_int_eq(e.benchmark, 1);
    ck_assert_int_eq(e.level, REPRO_LEVEL_OP);
    ck_assert_int_eq(e.run_index, 1);
    ck_assert_str_eq(repro_run_env_setting("model.hidden"), "128");
    ck_assert_ptr_null(repro_run_env_setting("model.depth"));
    /* `--set trace.every=K` and `trace.digest` reach the recorder options;
     * a value that is not a count >= 1 leaves the default (10, as the
     * built-in experiments'). */
    static const struct {
        const char *every;
        int want;
    } everies[] = {{"7", 7}, {"1", 1}, {"0", 10}, {"-3", 10}, {"2x", 10}, {"", 10}, {NULL, 10}};
    for (size_t i = 0; i < sizeof everies / sizeof *everies; i++) {
        if (everies[i].every)
            setenv("REPRO_SET_TRACE_EVERY", everies[i].every, 1);
        else
            unsetenv("REPRO_SET_TRACE_EVERY");
        setenv("REPRO_SET_TRACE_DIGEST", "sha256", 1);
        repro_recorder_options o;
        repro_recorder_options_init(&o);
        repro_recorder_options_from_env(&o, &e);
        ck_assert_msg(o.every == everies[i].want, "every \"%s\": %d",
                      everies[i].every ? everies[i].every : "(unset)", o.every);
        ck_assert_int_eq(o.digest, REPRO_DIGEST_SHA256);
        ck_assert_int_eq(o.level, REPRO_LEVEL_OP);
    }
    unsetenv("REPRO_SET_TRACE_EVERY");
    unsetenv("REPRO_SET_TRACE_DIGEST");
    /* Malformed values stop the program, naming the variable. */
    static const char *const bad[][2] = {{"REPRO_SEED", "0x1F"},      {"REPRO_SEED", "-1"},
                                         {"REPRO_SEED", "18446744073709551616"},
                                         {"REPRO_THREADS", "0"},      {"REPRO_THREADS", "2 "},
                                         {"REPRO_TRACE_LEVEL", "all"}, {"REPRO_DETERMINISTIC", "1"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char keep[64];
        snprintf(keep, sizeof keep, "%s", getenv(bad[i][0]));
        setenv(bad[i][0], bad[i][1], 1);
        ck_assert_int_eq(repro_run_env_read(&e, 0), REPRO_EINVAL);
        ck_assert_msg(strstr(repro_error_last(), bad[i][0]), "%s", repro_error_last());
        setenv(bad[i][0], keep, 1);
    }
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}
END_TEST

Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_three_steps_compare_identical_then_changed);
    tcase_add_test(tc, test_first_step_has_detail_by_default);
    tcase_add_test(tc, test_leaf_digests_equal_host_bytes);
    tcase_add_test(tc, test_final_params_sha256_in_the_trailer);
    tcase_add_test(tc, test_truncated_side_is_never_identical);
    tcase_add_test(tc, test_errors_are_codes_with_messages);
    tcase_add_test(tc, test_trace_path_from_environment_and_levels);
    tcase_add_test(tc, test_seeds_and_generator);
    tcase_add_test(tc, test_runner_protocol);
    tcase_add_test(tc, test_threads_used_in_the_header);
    suite_add_tcase(s, tc);
    return s;
}
