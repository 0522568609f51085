/* The size of proof grows with the run, not faster: a trace at the default
 * level stays under 1,000 bytes a step (30 MB for 30,000 steps), a golden
 * under 200 (6 MB), measured on 3,000 real steps of a small MLP (the line
 * sizes depend on the number of tensors, not their sizes), with detail on
 * every step as the negative control. The golden keeps what a comparison
 * needs: the same chain, steps and loss as the trace it was made from. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "golden/golden.h"
#include "record/trace.h"
#include "testutil.h"
#include "tu_procs.h"
#include "util/error.h"

#define STEPS 3000
#define TRACE_BYTES_PER_STEP 1000 /* 30 MB / 30,000 steps */
#define GOLDEN_BYTES_PER_STEP 200 /* 6 MB / 30,000 steps */

static const char small_ini[] = "[model]\ntype = mlp\nhidden = 16\n\n"
                                "[data]\ndataset = synthetic\ntrain_size = 256\ntest_size = 64\n\n"
                                "[train]\nsteps = 10\nbatch_size = 8\n";

static char out[1 << 14], err[1 << 14];
static char dir[TU_TMP_LEN], ini[TU_TMP_LEN + 16];

static void setup(void)
{
    tu_tmp_template(dir, sizeof dir, "size");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(ini, sizeof ini, "%s/small.ini", dir);
    FILE *f = fopen(ini, "w");
    ck_assert_ptr_nonnull(f);
    fputs(small_ini, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Runs the small MLP for `steps` steps into DIR/name with `set` (a
 * "--set K=V" or ""); returns the trace's size in bytes. */
static long run_size(const char *name, long steps, const char *set, char *path, size_t len)
{
    char args[1024];
    snprintf(path, len, "%s/%s", dir, name);
    snprintf(args, sizeof args, "run %s --steps %ld -q %s -o %s", ini, steps, set, path);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (long)st.st_size;
}

START_TEST(test_trace_bytes_per_step_bounded)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("trace_size",
            "an ASan build: sizes are the same under ASan; 3,000 steps there are not worth it");
    return;
#endif
    setup();
    char path[TU_TMP_LEN + 64];
    long size = run_size("t.jsonl", STEPS, "", path, sizeof path);
    ck_assert_msg(size / STEPS <= TRACE_BYTES_PER_STEP,
                  "the default level writes %ld bytes a step (bound %d)", size / STEPS,
                  TRACE_BYTES_PER_STEP);
    /* Every step keeps its digests and loss: the streamed reader sees each. */
    repro_trace t;
    ck_assert_msg(repro_trace_read(&t, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(t.version, REPRO_TRACE_VERSION);
    ck_assert_int_eq(t.nsteps, STEPS);
    long detail = 0;
    for (long i = 0; i < t.nsteps; i++) {
        ck_assert_int_eq(t.steps[i].has_loss, 1);
        detail += t.steps[i].has_detail;
    }
    ck_assert_int_eq(detail, STEPS / 10); /* every 10th (the last is one) */
    repro_trace_release(&t);
    unlink(path);

    /* The negative control: detail on every step is far over the bound. */
    size = run_size("d.jsonl", 300, "--set trace.every=1", path, sizeof path);
    ck_assert_msg(size / 300 > 2 * TRACE_BYTES_PER_STEP,
                  "detail on every step is only %ld bytes a step: the measure sees nothing",
                  size / 300);
    unlink(path);
    unlink(ini);
    rmdir(dir);
}
END_TEST

START_TEST(test_golden_bytes_per_step_bounded)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("trace_size",
            "an ASan build: sizes are the same under ASan; 3,000 steps there are not worth it");
    return;
#endif
    setup();
    char path[TU_TMP_LEN + 64], gpath[TU_TMP_LEN + 64];
    /* What `repro bless` does: runs at its default --every (100), then
     * installs the trace as the golden. */
    run_size("t.jsonl", STEPS, "--set trace.every=100", path, sizeof path);
    snprintf(gpath, sizeof gpath, "%s/golden/small/cls.jsonl", dir);
    json_t *prov = json_pack("{s:s}", "commit", "test");
    ck_assert_msg(repro_golden_install(path, gpath, prov, 5) == 0, "%s", repro_error_message());
    json_decref(prov);
    struct stat st;
    ck_assert_int_eq(stat(gpath, &st), 0);
    ck_assert_msg(st.st_size / STEPS <= GOLDEN_BYTES_PER_STEP,
                  "the golden keeps %ld bytes a step (bound %d)", (long)(st.st_size / STEPS),
                  GOLDEN_BYTES_PER_STEP);

    /* The golden reads, and compares as the trace it came from. */
    repro_trace t, g;
    repro_divergence d;
    ck_assert_msg(repro_trace_read(&t, path) == 0, "%s", repro_error_message());
    ck_assert_msg(repro_trace_read(&g, gpath) == 0, "%s", repro_error_message());
    ck_assert_msg(repro_compare_traces(&g, &t, &d) == 0, "%s", repro_error_message());
    ck_assert_int_eq(d.identical, 1);
    ck_assert_int_eq(d.curve_steps, STEPS / 100);
    for (long i = 0; i < g.nsteps; i++) {
        ck_assert(repro_digest_eq(&g.steps[i].chain, &t.steps[i].chain));
        ck_assert_uint_eq(g.steps[i].loss_bits, t.steps[i].loss_bits);
    }
    repro_divergence_release(&d);
    repro_trace_release(&t);
    repro_trace_release(&g);

    /* Only lines without detail lose their chain; the trailer keeps it. */
    FILE *f = fopen(gpath, "r");
    ck_assert_ptr_nonnull(f);
    char *line = NULL;
    size_t cap = 0;
    long with_chain = 0, steps = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_ptr_nonnull(o);
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!strcmp(type, "step")) {
            steps++;
            with_chain += json_object_get(o, "chain") != NULL;
            ck_assert_int_eq(json_object_get(o, "chain") != NULL,
                             json_object_get(o, "tensors") != NULL);
        } else if (!strcmp(type, "trailer")) {
            ck_assert_ptr_nonnull(json_object_get(o, "chain"));
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    ck_assert_int_eq(steps, STEPS);
    ck_assert_int_eq(with_chain, STEPS / 100);
    unlink(gpath);
    unlink(path);
    char sub[TU_TMP_LEN + 32];
    snprintf(sub, sizeof sub, "%s/golden/small", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/golden/.gitignore", dir);
    unlink(sub);
    snprintf(sub, sizeof sub, "%s/golden", dir);
    rmdir(sub);
    unlink(ini);
    rmdir(dir);
}
END_TEST

/* `repro check` compares its runs as streams (and with the golden): its
 * peak memory is the same for 3,000 and 30,000 steps, where reading one of
 * the 30,000-step traces whole (as check did) costs more than that. */
START_TEST(test_check_memory_independent_of_steps)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("trace_size",
            "an ASan build: ASan's shadow memory and quarantine make RSS no measure of this");
    return;
#endif
    setup();
    const long lengths[2] = {3000, 30000};
    long check_kib[2];
    for (int i = 0; i < 2; i++) {
        char steps[32];
        snprintf(steps, sizeof steps, "%ld", lengths[i]);
        const char *args[] = {"repro", "check", ini, "--steps", steps, "--jobs", "1", "-q",
                              NULL};
        int status;
        check_kib[i] = tu_peak_kib(args, NULL, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "repro check: status %d",
                      status);
    }
    ck_assert_msg(check_kib[1] <= check_kib[0] * 11 / 10 && check_kib[0] <= check_kib[1] * 11 / 10,
                  "repro check peaks at %ld KiB for 3,000 steps, %ld KiB for 30,000",
                  check_kib[0], check_kib[1]);
    /* The negative control: one whole 30,000-step trace is past the bound. */
    char path[TU_TMP_LEN + 64];
    run_size("w.jsonl", lengths[1], "", path, sizeof path);
    int status;
    long whole = tu_peak_kib(NULL, path, &status);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_msg(whole > check_kib[0] * 12 / 10,
                  "reading a 30,000-step trace whole peaks at %ld KiB, check at %ld: the "
                  "measure cannot tell them apart",
                  whole, check_kib[0]);
    unlink(path);
    unlink(ini);
    rmdir(dir);
}
END_TEST

Suite *trace_size_suite(void);
Suite *trace_size_suite(void)
{
    Suite *s = suite_create("trace_size");
    TCase *tc = tcase_create("size");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_trace_bytes_per_step_bounded);
    tcase_add_test(tc, test_golden_bytes_per_step_bounded);
    tcase_add_test(tc, test_check_memory_independent_of_steps);
    suite_add_tcase(s, tc);
    return s;
}
