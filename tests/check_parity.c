/* `repro parity` (analysis/parity.h): the trainer's forward against an
 * inference side on one checkpoint, in batches of 1, 7 and 64. Parity
 * holds for the MLP, the CNN and charlm; the split-K linear forward on the
 * inference side only (and charlm's split recurrent sum) is the negative
 * control that must fail under scope "engine", naming the probe, position,
 * element and op; bad inputs exit 2 naming what is wrong, a program that
 * does not speak the protocol exits 3. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/parity.h"
#include "testutil.h"
#include "util/npy.h"

static char out[32768], err[16384];

static void tmpdir(char *dir, size_t len)
{
    tu_tmp_template(dir, len, "parity");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* `repro parity ARGS` with its output in out/err; returns the exit code. */
static int parity(const char *fmt, const char *a, const char *b)
{
    char args[4096];
    snprintf(args, sizeof args, fmt, a, b);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

/* The bytes of a .npy file (malloc'd), its size in *n. */
static void *npy(const char *dir, const char *name, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *d = repro_npy_read(path, n);
    ck_assert_msg(d != NULL, "%s: %s", path, path);
    return d;
}

START_TEST(test_mlp_parity_in_batches_1_7_64)
{
    char dir[TU_TMP_LEN];
    tmpdir(dir, sizeof dir);
    int rc = parity("parity experiments/mlp.ini --steps 3 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "parity of mlp (scope: engine)"));
    ck_assert_ptr_nonnull(strstr(out, "100 probes"));
    ck_assert_ptr_nonnull(strstr(out, "batch 1      identical"));
    ck_assert_ptr_nonnull(strstr(out, "batch 7      identical"));
    ck_assert_ptr_nonnull(strstr(out, "batch 64     identical"));
    ck_assert_ptr_nonnull(strstr(out, "parity: every probe's output identical bit for bit"));
    /* The outputs it compared are on disk: every composition's logits
     * are the trainer's, byte for byte, and not all zero. */
    size_t nt, ni;
    float *t = npy(dir, "train.npy", &nt);
    ck_assert_uint_eq(nt, 100 * 10 * sizeof(float));
    int nonzero = 0;
    for (size_t i = 0; i < 1000; i++)
        nonzero += t[i] != 0.0f;
    ck_assert_int_gt(nonzero, 900);
    const char *names[] = {"infer.batch-1.npy", "infer.batch-7.npy", "infer.batch-64.npy"};
    for (int k = 0; k < 3; k++) {
        void *in = npy(dir, names[k], &ni);
        ck_assert_uint_eq(ni, nt);
        ck_assert_msg(!memcmp(in, t, nt), "%s differs from train.npy", names[k]);
        free(in);
    }
    free(t);
    /* The inference side read the checkpoint file: restoring it gives
     * the same verdict and the same trainer outputs. */
    char ckpt[TU_TMP_LEN + 32], dir2[TU_TMP_LEN];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-3.bin", dir);
    ck_assert_int_eq(access(ckpt, R_OK), 0);
    tmpdir(dir2, sizeof dir2);
    rc = parity("parity experiments/mlp.ini --checkpoint '%s' --dir '%s' -q", ckpt, dir2);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "(step 3)"));
    size_t n2;
    float *a = npy(dir, "train.npy", &nt), *b = npy(dir2, "train.npy", &n2);
    ck_assert_uint_eq(nt, n2);
    ck_assert(!memcmp(a, b, nt));
    free(a);
    free(b);
}
END_TEST

START_TEST(test_cnn_parity)
{
    char dir[TU_TMP_LEN];
    tmpdir(dir, sizeof dir);
    int rc = parity("parity experiments/cnn.ini --steps 2 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "batch 64     identical"));
    ck_assert_ptr_nonnull(strstr(out, "parity: every probe's output identical"));
    /* Its checkpoint is not the MLP's: bad input, named. */
    char ckpt[TU_TMP_LEN + 32];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt-2.bin", dir);
    rc = parity("parity experiments/mlp.ini --checkpoint '%s' --dir '%s' -q", ckpt, dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "checkpoint of experiment 'cnn', not 'mlp'"));
}
END_TEST

/* The negative control: split-K on the inference side only. Batches of 1
 * and 7 split the reduction (4 chunks), 64 does not: so batch 64 keeps
 * parity, the others lose it, and the report names the engine, probe 0,
 * its first value, fc1 and the inference side's variant. */
START_TEST(test_splitk_on_the_inference_side_breaks_parity)
{
    char dir[TU_TMP_LEN];
    tmpdir(dir, sizeof dir);
    int rc = parity("parity experiments/mlp.ini --steps 3 --dir '%s' --json "
                    "--infer-set linear.fwd=splitk%s",
                    dir, "");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, out);
    ck_assert_str_eq(json_string_value(json_object_get(j, "scope")), "engine");
    ck_assert(json_is_false(json_object_get(j, "parity")));
    ck_assert(json_is_false(json_object_get(j, "inference_batch_invariant")));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "differ")), 100);
    json_t *comps = json_object_get(j, "compositions");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(comps, 0), "differ")), 100);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(comps, 1), "differ")), 100);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(comps, 2), "differ")), 0);
    json_t *f = json_object_get(j, "first");
    ck_assert_int_eq(json_integer_value(json_object_get(f, "probe")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(f, "line")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(f, "composition")), "batch 1");
    ck_assert_int_eq(json_integer_value(json_object_get(f, "position")), 0);
    ck_assert_int_lt(json_integer_value(json_object_get(f, "element")), 10);
    ck_assert(json_real_value(json_object_get(f, "trainer")) !=
              json_real_value(json_object_get(f, "inference")));
    ck_assert_str_eq(json_string_value(json_object_get(f, "first_op")), "fwd.fc1");
    ck_assert_str_eq(json_string_value(json_object_get(f, "op")), "linear.fwd");
    ck_assert_str_eq(json_string_value(json_object_get(f, "trainer_variant")), "ordered");
    ck_assert_str_eq(json_string_value(json_object_get(f, "inference_variant")), "splitk");
    ck_assert_str_eq(json_string_value(json_object_get(f, "changed")), "inference");
    json_decref(j);
    /* The same in text; and split-K on both sides is the same kernels in
     * another batch, which the report tells apart. */
    rc = parity("parity experiments/mlp.ini --steps 3 --dir '%s' -q --set linear.fwd=splitk%s",
                dir, "");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "NO PARITY (scope: engine)"));
    ck_assert_ptr_nonnull(strstr(out, "first difference: probe 0 (line 1: test:0), position 0"));
    ck_assert_ptr_nonnull(strstr(out, "trainer splitk, inference splitk"));
    ck_assert_ptr_nonnull(strstr(out, "changed: neither side's kernels"));
}
END_TEST

/* 70 prompts: batch 64 leaves a short last batch of 6. */
static void charlm_probes(char *path, size_t len)
{
    static const char *const w[] = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "park"};
    char text[8192] = "# charlm probes\n";
    size_t n = strlen(text);
    for (int i = 0; i < 70; i++) {
        for (int k = 0; k <= i % 5; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", k ? " " : "",
                                  w[(i * 7 + k * 3) % 9]);
        text[n++] = '\n';
    }
    text[n] = '\0';
    tu_write_temp(path, len, "probes.txt", text);
}

static const char *charlm_bin(void)
{
    static char path[1024];
    const char *d = getenv("REPRO_EXAMPLES");
    ck_assert_msg(d && *d, "REPRO_EXAMPLES is not set: run the suite through `make check`");
    snprintf(path, sizeof path, "%s/charlm", d);
    return path;
}

START_TEST(test_charlm_parity_and_its_control)
{
    char probes[TU_TMP_LEN + 32], dir[TU_TMP_LEN], fmt[512];
    charlm_probes(probes, sizeof probes);
    tmpdir(dir, sizeof dir);
    snprintf(fmt, sizeof fmt, "parity --probes '%%s' --steps 20 --dir '%%s' -q -- '%s'",
             charlm_bin());
    int rc = parity(fmt, probes, dir);
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "parity of charlm (scope: engine)"));
    ck_assert_ptr_nonnull(strstr(out, "70 probes"));
    ck_assert_ptr_nonnull(strstr(out, "batch 1      identical"));
    ck_assert_ptr_nonnull(strstr(out, "batch 7      identical"));
    ck_assert_ptr_nonnull(strstr(out, "batch 64     identical"));
    /* Each side recorded its outputs in its trace, too. */
    char trace[TU_TMP_LEN + 64], body[65536];
    snprintf(trace, sizeof trace, "%s/infer-batch-7/trace.jsonl", dir);
    tu_slurp(trace, body, sizeof body);
    ck_assert_ptr_nonnull(strstr(body, "\"infer.69\""));
    snprintf(trace, sizeof trace, "%s/train/trace.jsonl", dir);
    tu_slurp(trace, body, sizeof body);
    ck_assert_ptr_nonnull(strstr(body, "\"train.0\""));
    /* Its negative control: the split recurrent sum, inference side only. */
    snprintf(fmt, sizeof fmt,
             "parity --probes '%%s' --steps 20 --dir '%%s' -q --infer-set splitk=1 -- '%s'",
             charlm_bin());
    rc = parity(fmt, probes, dir);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(out, "NO PARITY (scope: engine)"));
    ck_assert_ptr_nonnull(strstr(out, "first difference: probe "));
    ck_assert_ptr_nonnull(strstr(out, ", position "));
    ck_assert_ptr_nonnull(strstr(out, ", element "));
    ck_assert_ptr_nonnull(strstr(out, "the inference side is NOT batch-invariant"));
    /* 64 rows are not split; only the last batch of 6 is (a probe of
     * one character has no recurrent sum to split). */
    const char *b64 = strstr(out, "batch 64     ");
    int n64 = 0;
    ck_assert_ptr_nonnull(b64);
    ck_assert_int_eq(sscanf(b64, "batch 64 %d of 70 probes differ", &n64), 1);
    ck_assert_msg(n64 >= 1 && n64 <= 6, "%s", out);
}
END_TEST

/* The location logic on outputs made by hand: probe 1's second position,
 * third element differs in the second composition only. */
START_TEST(test_compare_names_probe_position_element)
{
    repro_parity_probes ps;
    ck_assert_int_eq(repro_parity_probes_default(&ps, 3), 0);
    repro_parity_outputs t, in[2];
    ck_assert_int_eq(repro_parity_outputs_alloc(&t, 3), 0);
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(repro_parity_outputs_alloc(&in[c], 3), 0);
    t.nelem = in[0].nelem = in[1].nelem = 4;
    for (int i = 0; i < 3; i++) {
        t.npos[i] = in[0].npos[i] = in[1].npos[i] = 2;
        t.out[i] = calloc(8, sizeof(float));
        in[0].out[i] = calloc(8, sizeof(float));
        in[1].out[i] = calloc(8, sizeof(float));
        for (int k = 0; k < 8; k++)
            t.out[i][k] = in[0].out[i][k] = in[1].out[i][k] = (float)(i * 10 + k);
    }
    in[1].out[1][6] = 16.5f; /* probe 1, position 1, element 2 */
    in[1].out[1][7] = 18.0f;
    repro_parity_result r;
    memset(&r, 0, sizeof r);
    r.ncomps = 2;
    r.train_batch = 2;
    r.comps[0].size = 1;
    r.comps[1].size = 2;
    snprintf(r.comps[1].label, sizeof r.comps[1].label, "batch 2");
    ck_assert_int_eq(repro_parity_compare(&ps, &t, in, 2, &r), 0);
    ck_assert_int_eq(r.parity, 0);
    ck_assert_int_eq(r.ndiffer, 1);
    ck_assert_int_eq(r.comps[0].ndiffer, 0);
    ck_assert_int_eq(r.comps[1].ndiffer, 1);
    ck_assert_int_eq(r.infer_batch_invariant, 0);
    ck_assert_int_eq(r.first.probe, 1);
    ck_assert_int_eq(r.first.comp, 1);
    ck_assert_int_eq(r.first.position, 1);
    ck_assert_int_eq(r.first.element, 2);
    ck_assert_int_eq(r.first.ndiffer_values, 2);
    ck_assert(r.first.train_value == 16.0f && r.first.infer_value == 16.5f);
    ck_assert_int_eq(r.first.batch, 0); /* probe 1 in batches of 2: batch 0, row 1 of 2 */
    ck_assert_int_eq(r.first.row, 1);
    ck_assert_int_eq(r.first.bsize, 2);
    ck_assert_int_eq(r.first.infer_self_consistent, 0);
    /* Shapes that disagree cannot be compared: could not test. */
    in[0].npos[2] = 1;
    memset(&r, 0, sizeof r);
    r.ncomps = 2;
    ck_assert_int_eq(repro_parity_compare(&ps, &t, in, 2, &r), -1);
    repro_parity_outputs_free(&t, 3);
    repro_parity_outputs_free(&in[0], 3);
    repro_parity_outputs_free(&in[1], 3);
    repro_parity_probes_free(&ps);
}
END_TEST

START_TEST(test_bad_inputs_exit_2)
{
    char dir[TU_TMP_LEN], probes[TU_TMP_LEN + 32];
    tmpdir(dir, sizeof dir);
    /* a checkpoint that is not there */
    int rc = parity("parity experiments/mlp.ini --checkpoint '%s/none.bin' --dir '%s' -q", dir,
                    dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "none.bin: no such file"));
    /* a checkpoint that is not one */
    tu_write_temp(probes, sizeof probes, "garbage.bin", "not a checkpoint\n");
    rc = parity("parity experiments/mlp.ini --checkpoint '%s' --dir '%s' -q", probes, dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    /* a probes file with a control character on line 3 */
    tu_write_temp(probes, sizeof probes, "p.txt", "test:0\n# fine\ntest:\0011\n");
    rc = parity("parity experiments/mlp.ini --probes '%s' --batch-sizes 1 --dir '%s' -q", probes,
                dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "p.txt:3: byte 6 is not printable"));
    /* a probe a built-in experiment cannot read, line 2 */
    tu_write_temp(probes, sizeof probes, "p.txt", "test:0\ntest:x\n");
    rc = parity("parity experiments/mlp.ini --probes '%s' --batch-sizes 1 --dir '%s' -q", probes,
                dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "p.txt:2: 'test:x'"));
    /* a held-out sample past the test set */
    tu_write_temp(probes, sizeof probes, "p.txt", "test:0\n\ntest:999999\n");
    rc = parity("parity experiments/mlp.ini --probes '%s' --batch-sizes 1 --dir '%s' -q", probes,
                dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "p.txt:3:"));
    /* an empty probes file; a missing one */
    tu_write_temp(probes, sizeof probes, "p.txt", "# nothing\n\n");
    rc = parity("parity experiments/mlp.ini --probes '%s' --dir '%s' -q", probes, dir);
    ck_assert_msg(rc == 2 && strstr(err, "no probes"), "exit %d\n%s%s", rc, out, err);
    rc = parity("parity experiments/mlp.ini --probes '%s/missing.txt' --dir '%s' -q", dir, dir);
    ck_assert_msg(rc == 2 && strstr(err, "missing.txt"), "exit %d\n%s%s", rc, out, err);
    /* batch sizes that do not fit: larger than the probes, zero, junk */
    rc = parity("parity experiments/mlp.ini --batch-sizes 1,200 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 2 && strstr(err, "batch size 200 does not fit 100 probes"),
                  "exit %d\n%s%s", rc, out, err);
    rc = parity("parity experiments/mlp.ini --batch-sizes 0 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    rc = parity("parity experiments/mlp.ini --batch-sizes 1,,7 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    /* an inference override that is not a key */
    rc = parity("parity experiments/mlp.ini --infer-set nosuch.key=1 --dir '%s' -q%s", dir, "");
    ck_assert_msg(rc == 2 && strstr(err, "nosuch"), "exit %d\n%s%s", rc, out, err);
}
END_TEST

START_TEST(test_program_bad_inputs_and_could_not_test)
{
    char dir[TU_TMP_LEN], probes[TU_TMP_LEN + 32], fmt[512];
    tmpdir(dir, sizeof dir);
    /* a program needs a probes file */
    snprintf(fmt, sizeof fmt, "parity --dir '%%s' -q%%s -- '%s'", charlm_bin());
    int rc = parity(fmt, dir, "");
    ck_assert_msg(rc == 2 && strstr(err, "--probes"), "exit %d\n%s%s", rc, out, err);
    /* a probe charlm cannot read: its own error, file:line, exit 2 */
    tu_write_temp(probes, sizeof probes, "p.txt", "the cat\nThe Dog\n");
    snprintf(fmt, sizeof fmt, "parity --probes '%%s' --batch-sizes 1,2 --steps 3 --dir '%%s' -q "
                              "-- '%s'",
             charlm_bin());
    rc = parity(fmt, probes, dir);
    ck_assert_msg(rc == 2, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "p.txt:2:"));
    /* a program that does not speak the protocol: could not test */
    tu_write_temp(probes, sizeof probes, "p.txt", "the cat\n");
    rc = parity("parity --probes '%s' --batch-sizes 1 --dir '%s' -q -- /bin/true", probes, dir);
    ck_assert_msg(rc == 3, "exit %d\n%s%s", rc, out, err);
    ck_assert_ptr_nonnull(strstr(err, "wrote no checkpoint"));
}
END_TEST

Suite *parity_suite(void)
{
    Suite *s = suite_create("parity");
    TCase *tc = tcase_create("parity");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_mlp_parity_in_batches_1_7_64);
    tcase_add_test(tc, test_cnn_parity);
    tcase_add_test(tc, test_splitk_on_the_inference_side_breaks_parity);
    tcase_add_test(tc, test_charlm_parity_and_its_control);
    tcase_add_test(tc, test_compare_names_probe_position_element);
    tcase_add_test(tc, test_bad_inputs_exit_2);
    tcase_add_test(tc, test_program_bad_inputs_and_could_not_test);
    suite_add_tcase(s, tc);
    return s;
}
