/* Streaming trace readers: the stream yields what the whole-trace reader
 * holds, step by step, with the same errors; the streamed comparison
 * equals the whole-trace one; the divergence curve stays bounded and still
 * shows the first divergent and the last step; and `repro diff` peaks at
 * the same memory for 3,000 and 30,000 steps, while the whole-trace reader
 * (the negative control) does not. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "record/trace.h"
#include "util/error.h"
#include "testutil.h"
#include "tu_procs.h"

/* The generator lives in check_trace_read.c (see its comment); flags: */
#define TRF_NO_TRAILER 2u
#define TRF_OPS 4u
char *tr_fixture(const char *exp, long nsteps, long diverge_at, unsigned flags, int every);

static void fixture_file(char *path, size_t len, const char *name, long nsteps, long diverge_at,
                         unsigned flags, int every)
{
    char *text = tr_fixture("mlp", nsteps, diverge_at, flags, every);
    tu_write_temp(path, len, name, text);
    free(text);
}

static int same_tensor(const repro_trace_tensor *x, const repro_trace_tensor *y)
{
    return !strcmp(x->name, y->name) && repro_digest_eq(&x->digest, &y->digest) &&
           x->l2 == y->l2 && x->sum == y->sum && x->ndim == y->ndim;
}

START_TEST(test_stream_yields_the_whole_trace)
{
    char path[256];
    fixture_file(path, sizeof path, "a.jsonl", 9, 0, TRF_OPS, 2);
    repro_trace whole, head;
    ck_assert_msg(repro_trace_read(&whole, path) == 0, "%s", repro_error_message());
    repro_trace_stream *st;
    ck_assert_msg(repro_trace_stream_open(&st, &head, path) == 0, "%s", repro_error_message());
    ck_assert_str_eq(head.experiment, whole.experiment);
    ck_assert(repro_digest_eq(&head.numerics_digest, &whole.numerics_digest));
    ck_assert_ptr_null(head.steps);
    const repro_trace_step *s;
    long n = 0;
    while (repro_trace_stream_next(st, &s) == 1) {
        const repro_trace_step *w = &whole.steps[n++];
        ck_assert_int_eq(s->step, w->step);
        ck_assert_int_eq(s->line, w->line);
        ck_assert_int_eq(s->has_detail, w->has_detail);
        ck_assert(repro_digest_eq(&s->chain, &w->chain));
        ck_assert_int_eq(s->ntensors, w->ntensors);
        ck_assert_int_eq(s->nops, w->nops);
        for (int i = 0; i < s->ntensors; i++)
            ck_assert(same_tensor(&s->tensors[i], &w->tensors[i]));
        for (int i = 0; i < s->nops; i++)
            ck_assert(same_tensor(&s->ops[i], &w->ops[i]));
        ck_assert_int_eq(head.nsteps, n);
    }
    ck_assert_int_eq(n, 9);
    ck_assert_int_eq(head.has_trailer, 1);
    ck_assert(repro_digest_eq(&head.trailer_chain, &whole.trailer_chain));
    ck_assert_int_eq(head.last_line, whole.steps[8].line);
    ck_assert_ptr_null(repro_trace_find_step(&head, 1)); /* a streamed trace keeps no steps */
    repro_trace_stream_close(st);
    repro_trace_release(&head);
    repro_trace_release(&whole);
}
END_TEST

/* A broken chain on line 4: the stream yields steps 1 and 2, then fails
 * with the whole reader's message. */
START_TEST(test_stream_errors_as_the_whole_reader)
{
    char *text = tr_fixture("mlp", 5, 0, 0, 1), path[256];
    char *line4 = text;
    for (int i = 0; i < 3; i++)
        line4 = strchr(line4, '\n') + 1;
    char *chain = strstr(line4, "\"chain\": \"") + 10;
    *chain = *chain == '0' ? '1' : '0';
    tu_write_temp(path, sizeof path, "bad.jsonl", text);
    free(text);
    repro_trace whole, head;
    ck_assert_int_eq(repro_trace_read(&whole, path), -1);
    char want[1024];
    snprintf(want, sizeof want, "%s", repro_error_message());
    ck_assert_ptr_nonnull(strstr(want, ":4: step 3: \"chain\" is not SHA-256"));
    repro_trace_stream *st;
    ck_assert_int_eq(repro_trace_stream_open(&st, &head, path), 0);
    const repro_trace_step *s;
    ck_assert_int_eq(repro_trace_stream_next(st, &s), 1);
    ck_assert_int_eq(repro_trace_stream_next(st, &s), 1);
    ck_assert_int_eq(s->step, 2);
    ck_assert_int_eq(repro_trace_stream_next(st, &s), -1);
    ck_assert_str_eq(repro_error_message(), want);
    repro_trace_stream_close(st);
    repro_trace_release(&head);
}
END_TEST

/* The streamed comparison equals the whole-trace one, field by field,
 * here with a resumed-length prefix (B shorter), ops and sparse detail. */
START_TEST(test_streamed_compare_equals_whole)
{
    char pa[256], pb[256];
    fixture_file(pa, sizeof pa, "a.jsonl", 40, 0, TRF_OPS, 3);
    fixture_file(pb, sizeof pb, "b.jsonl", 40, 21, TRF_OPS, 3);
    repro_trace a, b, ha, hb;
    repro_divergence dw, ds;
    ck_assert_int_eq(repro_trace_read(&a, pa), 0);
    ck_assert_int_eq(repro_trace_read(&b, pb), 0);
    ck_assert_int_eq(repro_compare_traces(&a, &b, &dw), 0);
    ck_assert_msg(repro_compare_files(pa, pb, &ha, &hb, 1, 1, &ds) == 0, "%s",
                  repro_error_message());
    ck_assert_int_eq(ds.first_step, 21);
    ck_assert_int_eq(ds.first_step, dw.first_step);
    ck_assert_int_eq(ds.identical, dw.identical);
    ck_assert_int_eq(ds.common_steps, dw.common_steps);
    ck_assert_int_eq(ds.steps_a, dw.steps_a);
    ck_assert_int_eq(ds.first_has_detail, dw.first_has_detail);
    ck_assert_int_eq(ds.ntensors, dw.ntensors);
    ck_assert_int_eq(ds.nops, dw.nops);
    for (int i = 0; i < ds.ntensors; i++)
        ck_assert_str_eq(ds.tensors[i].name, dw.tensors[i].name);
    ck_assert_int_eq(ds.ncurve, dw.ncurve);
    ck_assert_int_eq(ds.curve_steps, dw.ncurve);
    for (long i = 0; i < ds.ncurve; i++) {
        ck_assert_int_eq(ds.curve[i].step, dw.curve[i].step);
        ck_assert_double_eq(ds.curve[i].rel_l2, dw.curve[i].rel_l2);
    }
    ck_assert(repro_digest_eq(&ds.final_chain_b, &dw.final_chain_b));
    repro_divergence_release(&ds);
    repro_divergence_release(&dw);
    repro_trace_release(&a);
    repro_trace_release(&b);
    repro_trace_release(&ha);
    repro_trace_release(&hb);

    /* A truncated B is an input error only when a trailer is required. */
    fixture_file(pb, sizeof pb, "cut.jsonl", 40, 0, TRF_OPS | TRF_NO_TRAILER, 3);
    ck_assert_int_eq(repro_compare_files(pa, pb, &ha, &hb, 1, 1, &ds), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "truncated trace (no trailer after line"));
    repro_trace_release(&ha);
    repro_trace_release(&hb);
    ck_assert_int_eq(repro_compare_files(pa, pb, &ha, &hb, 1, 0, &ds), 0);
    ck_assert_int_eq(ds.truncated_b, 1);
    ck_assert_int_eq(ds.identical, 0);
    repro_divergence_release(&ds);
    repro_trace_release(&ha);
    repro_trace_release(&hb);
}
END_TEST

/* Fed 100,000 detail steps, the curve keeps at most REPRO_CURVE_MAX + 2
 * points, in step order, evenly spread, with the first divergent step and
 * the last; below the cap it keeps every point (checked above). */
START_TEST(test_curve_is_bounded)
{
    repro_divergence d;
    repro_compare_walk w;
    repro_compare_walk_begin(&w, &d);
    repro_trace_step sa = {0}, sb = {0};
    sa.has_detail = sb.has_detail = 1;
    const long n = 100000, first = 77777;
    for (long k = 1; k <= n; k++) {
        sa.step = sb.step = k;
        sb.chain.b[0] = k >= first; /* the chains part at `first` */
        sa.loss_value = sb.loss_value = (double)k;
        ck_assert_int_eq(repro_compare_walk_step(&w, &sa, &sb), 0);
    }
    repro_trace ta = {0}, tb = {0};
    ta.nsteps = tb.nsteps = n;
    ta.first_step = tb.first_step = 1;
    ta.has_trailer = tb.has_trailer = 1;
    repro_compare_walk_end(&w, &ta, &tb, NULL, NULL);
    ck_assert_int_eq(d.first_step, first);
    ck_assert_int_eq(d.curve_steps, n);
    ck_assert_int_le(d.ncurve, REPRO_CURVE_MAX + 2);
    ck_assert_int_ge(d.ncurve, REPRO_CURVE_MAX / 2);
    int saw_first = 0;
    for (long i = 0; i < d.ncurve; i++) {
        if (i)
            ck_assert_int_gt(d.curve[i].step, d.curve[i - 1].step);
        saw_first |= d.curve[i].step == first;
    }
    ck_assert(saw_first);
    ck_assert_int_eq(d.curve[0].step, 1);
    ck_assert_int_eq(d.curve[d.ncurve - 1].step, n);
    /* Evenly spread: no gap wider than twice the mean. */
    for (long i = 1; i < d.ncurve; i++)
        ck_assert_int_le(d.curve[i].step - d.curve[i - 1].step, 2 * n / (d.ncurve - 2) + 1);
    repro_divergence_release(&d);
}
END_TEST

/* Writes a fixture in a child process, so that this process (whose size
 * every child starts from: a child's peak RSS counts what it inherited
 * before exec) does not grow with the fixture. */
static void fixture_in_child(const char *path, long nsteps, long diverge_at, int every)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *text = tr_fixture("mlp", nsteps, diverge_at, 0, every);
        FILE *f = fopen(path, "w");
        _exit(!f || fputs(text, f) == EOF || fclose(f) ? 1 : 0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(test_diff_memory_independent_of_steps)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("stream",
            "an ASan build: ASan's shadow memory and quarantine make RSS no measure of this");
    return;
#endif
    const long lengths[2] = {3000, 30000};
    long diff_kib[2], whole_kib[2];
    char dir[256];
    tu_tmp_template(dir, sizeof dir, "stream");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int i = 0; i < 2; i++) {
        char pa[300], pb[300];
        snprintf(pa, sizeof pa, "%s/a.jsonl", dir);
        snprintf(pb, sizeof pb, "%s/b.jsonl", dir);
        /* Detail every 5th step: 6,000 curve points at 30,000 steps, past
         * REPRO_CURVE_MAX, so the sampling is part of what is measured. */
        fixture_in_child(pa, lengths[i], 0, 5);
        fixture_in_child(pb, lengths[i], lengths[i] / 2, 5);
        int status;
        const char *const diff_args[] = {"repro", "diff", pa, pb, NULL};
        diff_kib[i] = tu_peak_kib(diff_args, NULL, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "repro diff: status %d",
                      status);
        whole_kib[i] = tu_peak_kib(NULL, pa, &status);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        unlink(pa);
        unlink(pb);
    }
    rmdir(dir);
    /* What a child inherits is a floor under its peak: the measure says
     * something only where repro's own peak is above it. */
    long floor_kib = tu_own_rss_kib();
    ck_assert_msg(diff_kib[0] > floor_kib, "repro diff's peak %ld KiB is no more than this "
                  "process's %ld KiB: the measure cannot see it", diff_kib[0], floor_kib);
    ck_assert_msg(diff_kib[1] <= diff_kib[0] * 11 / 10 && diff_kib[0] <= diff_kib[1] * 11 / 10,
                  "repro diff peaks at %ld KiB for 3,000 steps, %ld KiB for 30,000", diff_kib[0],
                  diff_kib[1]);
    /* The negative control: the measure sees a reader that grows. */
    ck_assert_msg(whole_kib[1] > whole_kib[0] * 3 / 2,
                  "whole-trace reading peaks at %ld KiB for 3,000 steps, %ld KiB for 30,000",
                  whole_kib[0], whole_kib[1]);
}
END_TEST

/* verify reads the claimed trace as a stream: bundles of one experiment
 * with claimed traces of ~4 MB and ~64 MB (900 and 14,500 steps of a tiny
 * MLP, every step in detail) peak within 10% of each other. The
 * re-run child of this tiny model is smaller than the verifier, so the
 * peak measured (the largest of the two) is the verifier's own. The
 * negative control: the whole-trace reader on the same claimed traces. */
START_TEST(test_verify_memory_independent_of_claimed_steps)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("stream",
            "an ASan build: ASan's shadow memory and quarantine make RSS no measure of this");
    return;
#endif
    char dir[256];
    tu_tmp_template(dir, sizeof dir, "stream-verify");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const long lengths[2] = {900, 14500};
    long verify_kib[2], whole_kib[2], claimed_bytes[2];
    for (int i = 0; i < 2; i++) {
        char ini[300], bundle[300], trace[400], out[256], err[2048];
        snprintf(ini, sizeof ini, "%s/long.ini", dir);
        FILE *f = fopen(ini, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "[model]\ntype = mlp\nhidden = 4\n\n[data]\ndataset = synthetic\n"
                   "train_size = 64\ntest_size = 64\n\n[train]\nsteps = %ld\nbatch_size = 8\n\n"
                   "[trace]\nlevel = tensor\nevery = 1\n",
                lengths[i]);
        fclose(f);
        snprintf(bundle, sizeof bundle, "%s/b%d", dir, i);
        char args[800];
        snprintf(args, sizeof args, "submit %s -o %s", ini, bundle);
        ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
        int status;
        const char *const vargs[] = {"repro", "verify", bundle, NULL};
        verify_kib[i] = tu_peak_kib(vargs, NULL, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "verify: status %d",
                      status);
        snprintf(trace, sizeof trace, "%s/trace.jsonl", bundle);
        struct stat sb;
        ck_assert_int_eq(stat(trace, &sb), 0);
        claimed_bytes[i] = (long)sb.st_size;
        whole_kib[i] = tu_peak_kib(NULL, trace, &status);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    long floor_kib = tu_own_rss_kib();
    ck_assert_msg(verify_kib[0] > floor_kib, "verify's peak %ld KiB is no more than this "
                  "process's %ld KiB: the measure cannot see it", verify_kib[0], floor_kib);
    ck_assert_msg(verify_kib[1] <= verify_kib[0] * 11 / 10 &&
                      verify_kib[0] <= verify_kib[1] * 11 / 10,
                  "verify peaks at %ld KiB for a %ld-byte claimed trace, %ld KiB for %ld bytes",
                  verify_kib[0], claimed_bytes[0], verify_kib[1], claimed_bytes[1]);
    ck_assert_msg(claimed_bytes[0] > (2L << 20) && claimed_bytes[1] > (40L << 20),
                  "claimed traces of %ld and %ld bytes: not the sizes this test is about",
                  claimed_bytes[0], claimed_bytes[1]);
    ck_assert_msg(whole_kib[1] > whole_kib[0] * 11 / 10,
                  "whole-trace reading peaks at %ld KiB for %ld bytes, %ld KiB for %ld",
                  whole_kib[0], claimed_bytes[0], whole_kib[1], claimed_bytes[1]);
}
END_TEST

Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("stream");
    tcase_add_test(tc, test_stream_yields_the_whole_trace);
    tcase_add_test(tc, test_stream_errors_as_the_whole_reader);
    tcase_add_test(tc, test_streamed_compare_equals_whole);
    tcase_add_test(tc, test_curve_is_bounded);
    tcase_add_test(tc, test_diff_memory_independent_of_steps);
    tcase_add_test(tc, test_verify_memory_independent_of_claimed_steps);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
