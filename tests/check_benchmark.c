/* Benchmark mode and `repro compare`: the choice per call site is recorded
 * in the trace; replaying it with --algo-lock is bitwise identical;
 * benchmark = off is bitwise stable; compare reports known answers (varying
 * threads must give the same bits) and refuses bad --vary keys. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char out[1 << 18], err[1 << 16];

static const char *chain_of(const char *text)
{
    const char *c = strstr(text, "chain ");
    ck_assert_ptr_nonnull(c);
    return c;
}

static json_t *algorithms_in(const char *trace)
{
    FILE *f = fopen(trace, "r");
    ck_assert_ptr_nonnull(f);
    char line[1 << 16];
    json_t *found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        if (json_object_get(j, "algorithms"))
            found = json_incref(json_object_get(j, "algorithms"));
        json_decref(j);
    }
    fclose(f);
    return found;
}

START_TEST(test_choice_recorded_and_lock_replays)
{
    char dir[TU_TMP_LEN], args[512], trace[300];
    tu_tmp_template(dir, sizeof dir, "bench");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/on.jsonl", dir);
    snprintf(args, sizeof args, "run experiments/cnn.ini --steps 4 -q --set benchmark=on -o %s",
             trace);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    char on_chain[80];
    snprintf(on_chain, sizeof on_chain, "%.70s", chain_of(out));
    json_t *al = algorithms_in(trace);
    ck_assert_ptr_nonnull(al);
    ck_assert_int_eq(json_array_size(al), 2);
    json_t *c0 = json_array_get(al, 0);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "site")), "conv1.fwd");
    ck_assert_str_eq(json_string_value(json_object_get(c0, "chosen_by")), "benchmark");
    ck_assert(json_is_object(json_object_get(c0, "time_us"))); /* the measured times */
    json_decref(al);

    /* Replaying the lock reproduces the run bit for bit, benchmark on or off. */
    snprintf(args, sizeof args,
             "run experiments/cnn.ini --steps 4 -q --no-trace --set benchmark=on --algo-lock %s",
             trace);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert(strncmp(chain_of(out), on_chain, 70) == 0);
    snprintf(args, sizeof args, "run experiments/cnn.ini --steps 4 -q --no-trace --algo-lock %s",
             trace);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert(strncmp(chain_of(out), on_chain, 70) == 0);

    /* A lock that does not fit: exit 2 naming the file. */
    ck_assert_int_eq(tu_run_repro("run experiments/cnn.ini --steps 1 --no-trace --algo-lock "
                                  "experiments/cnn.ini",
                                  out, sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "experiments/cnn.ini: no \"algorithms\""));
}
END_TEST

START_TEST(test_benchmark_off_is_stable_and_rule_recorded)
{
    ck_assert_int_eq(tu_run_repro("check experiments/cnn.ini --steps 5 --set benchmark=off "
                                  "--no-golden",
                                  out, sizeof out, err, sizeof err),
                     0);
    char dir[TU_TMP_LEN], args[512], trace[300];
    tu_tmp_template(dir, sizeof dir, "bench");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/off.jsonl", dir);
    snprintf(args, sizeof args, "run experiments/cnn.ini --steps 2 -q -o %s", trace);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    json_t *al = algorithms_in(trace);
    /* the documented rule: winograd only from 64 input channels, so both
     * of the CNN's convolutions (C = 1 and 8) are direct */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(al, 0), "algo")), "direct");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(al, 1), "algo")), "direct");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(al, 1), "chosen_by")),
                     "rule");
    json_decref(al);
}
END_TEST

START_TEST(test_compare_known_answers)
{
    /* Threads must not change the bits: compare says so. */
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary threads=1,2 --steps 4 "
                                  "--json",
                                  out, sizeof out, err, sizeof err),
                     0);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
    json_t *vals = json_object_get(doc, "values");
    ck_assert_int_eq(json_array_size(vals), 2);
    for (int i = 0; i < 2; i++) {
        json_t *v = json_array_get(vals, (size_t)i);
        ck_assert(json_is_true(json_object_get(v, "identical")));
        ck_assert(json_is_true(json_object_get(v, "bitwise_equal_to_first")));
        ck_assert_int_eq(json_integer_value(json_object_get(v, "max_ulp_vs_first")), 0);
        ck_assert(json_is_null(json_object_get(v, "first_divergent_step_vs_first")));
        ck_assert(json_real_value(json_object_get(v, "median_step_ms")) > 0);
    }
    json_decref(doc);
    /* A different algorithm rounds differently: diverges from step 1. */
    char plot[TU_TMP_LEN];
    tu_tmp_template(plot, sizeof plot, "cmp");
    ck_assert_int_ne(mkstemp(plot), -1);
    char args[400];
    snprintf(args, sizeof args,
             "compare experiments/cnn.ini --vary variant.conv2d.bwd_filter=direct --steps 3 "
             "--runs 1 --plot %s",
             plot);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "conv algorithms per call site"));
    ck_assert_int_eq(tu_run_repro("compare experiments/mlp.ini --vary lr=0.05,0.1 --steps 3 "
                                  "--runs 1",
                                  out, sizeof out, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "step 1"));
    FILE *f = fopen(plot, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(err, sizeof err, f));
    fclose(f);
    ck_assert_ptr_nonnull(strstr(err, "<?xml"));
}
END_TEST

START_TEST(test_compare_accumulation_vs_big_batch)
{
    /* k micro-batches of b against one batch of k*b: two keys at once. No
     * dropout, so the only difference is the summation order. */
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary "
                                  "accumulation_steps=1,2+batch_size=32 --steps 3 --runs 1 --json",
                                  out, sizeof out, err, sizeof err),
                     0);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    ck_assert_msg(doc != NULL, "not JSON: %s", je.text);
    json_t *v1 = json_array_get(json_object_get(doc, "values"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(v1, "value")), "2+batch_size=32");
    ck_assert(json_is_false(json_object_get(v1, "bitwise_equal_to_first")));
    double rel = json_real_value(json_object_get(v1, "final_rel_l2_vs_first"));
    ck_assert_msg(rel > 0 && rel < 1e-4, "rel L2 %g", rel); /* close, not equal */
    /* The true distance from the dumps, beside the norm gap under its name:
     * different parameters, so the distance is > 0 and ULP max >= p99 >= p50. */
    double dist = json_real_value(json_object_get(v1, "final_rel_distance_vs_first"));
    ck_assert_msg(dist > 0 && dist < 1e-2, "distance %g", dist);
    ck_assert(json_is_real(json_object_get(v1, "final_norm_gap_vs_first")));
    json_t *u = json_object_get(v1, "ulp_vs_first");
    ck_assert_ptr_nonnull(u);
    json_int_t p50 = json_integer_value(json_object_get(u, "p50")),
               p99 = json_integer_value(json_object_get(u, "p99")),
               mx = json_integer_value(json_object_get(u, "max"));
    ck_assert(mx >= p99 && p99 >= p50 && mx > 0);
    ck_assert(json_is_integer(json_object_get(u, "sign_crossings")));
    json_decref(doc);
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary "
                                  "accumulation_steps=1,2+nosuch=3 --steps 1",
                                  out, sizeof out, err, sizeof err),
                     2);
}
END_TEST

START_TEST(test_compare_bad_vary)
{
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary nosuch=1,2", out, sizeof out,
                                  err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "unknown key 'nosuch'"));
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary benchmark=on,maybe", out,
                                  sizeof out, err, sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "'maybe' is not on/off"));
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini --vary benchmark", out, sizeof out,
                                  err, sizeof err),
                     2);
    ck_assert_int_eq(tu_run_repro("compare experiments/cnn.ini", out, sizeof out, err, sizeof err),
                     2);
}
END_TEST

Suite *benchmark_suite(void)
{
    Suite *s = suite_create("benchmark");
    TCase *tc = tcase_create("benchmark");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_choice_recorded_and_lock_replays);
    tcase_add_test(tc, test_benchmark_off_is_stable_and_rule_recorded);
    tcase_add_test(tc, test_compare_known_answers);
    tcase_add_test(tc, test_compare_accumulation_vs_big_batch);
    tcase_add_test(tc, test_compare_bad_vary);
    suite_add_tcase(s, tc);
    return s;
}
