/* `repro diff --tolerance` and `--map`: traces of different producers
 * compared value by value. A C program (this test, through the public
 * recorder) writes traces whose tensor drifts by a known number of ULPs per
 * step, so the first step past each rule is known exactly; the negative
 * controls tighten the rule and must see it diverge. Bad input (a SPEC or
 * map line that does not parse, a mapped tensor in neither trace, other
 * steps, missing values, a shape that differs) is exit 2 naming the
 * argument or FILE:LINE. The built-in MLP's forward against PyTorch's on
 * the same checkpoint (examples/torch/mlp_forward.py) passes under the
 * bound the docs state and fails under a tight one; a NumPy trace of the
 * Python client against the C program's is bitwise equal through the map. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/tolerance.h"
#include "util/npy.h"
#include "repro/repro.h"
#include "testutil.h"
#include "tu_procs.h"
#include "util/error.h"
#include "util/ulp.h"

static char out[65536], err[8192];

/* A 4x8 float tensor 1.0, 1.25, ...; element 5 moved by ulps[step-1] ULPs
 * (upward). dir/trace.jsonl, values beside it unless !values. shape_t
 * swaps the shape to 8x4; finish 0 leaves it without a trailer. */
typedef struct {
    const char *name;
    long nsteps;
    const int *ulps;
    int values, shape_t, finish;
} prog;

static void write_prog(const char *dir, const prog *p)
{
    char path[512];
    snprintf(path, sizeof path, "%s/trace.jsonl", dir);
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    o.every = 1;
    repro_run_info info = {"tol-prog", 7, NULL};
    repro_recorder *r;
    ck_assert_int_eq(repro_recorder_open_ex(&r, path, &info, &o), 0);
    if (p->values)
        ck_assert_int_eq(repro_recorder_values(r, NULL), 0);
    for (long s = 1; s <= p->nsteps; s++) {
        float w[32];
        int32_t ids[8];
        for (int i = 0; i < 32; i++)
            w[i] = 1.0f + 0.25f * (float)i;
        uint32_t bits;
        memcpy(&bits, &w[5], 4);
        bits += (uint32_t)(p->ulps ? p->ulps[s - 1] : 0);
        memcpy(&w[5], &bits, 4);
        for (int i = 0; i < 8; i++)
            ids[i] = i * 3;
        int64_t shape[2] = {p->shape_t ? 8 : 4, p->shape_t ? 4 : 8}, n8 = 8;
        ck_assert_int_eq(repro_recorder_tensor(r, "ids", REPRO_I32, 1, &n8, ids), 0);
        ck_assert_int_eq(repro_recorder_tensor(r, p->name, REPRO_F32, 2, shape, w), 0);
        ck_assert_int_eq(repro_recorder_step(r, s, 0.5), 0);
    }
    if (p->finish)
        ck_assert_int_eq(repro_recorder_close(r, NULL), 0);
    else
        repro_recorder_abort(r);
}

static char dir_a[TU_TMP_LEN + 32], dir_b[TU_TMP_LEN + 32], map[256];

static void fresh(char *dir, const char *tag)
{
    tu_tmp_template(dir, TU_TMP_LEN, tag);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* A: "w" unmoved; B: "fc.w" moved 1, 3, 9 ULPs at steps 1, 2, 3; the map
 * names fc.w as w. */
static void two_programs(void)
{
    static const int drift[] = {1, 3, 9};
    fresh(dir_a, "tol-a");
    fresh(dir_b, "tol-b");
    write_prog(dir_a, &(prog){"w", 3, NULL, 1, 0, 1});
    write_prog(dir_b, &(prog){"fc.w", 3, drift, 1, 0, 1});
    snprintf(map, sizeof map, "%s/names.map", dir_b);
    FILE *f = fopen(map, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# B = A\nfc.w = w   # the C port's name\n", f);
    fclose(f);
}

static int diff(const char *opts)
{
    char args[1024];
    snprintf(args, sizeof args, "diff %s/trace.jsonl %s/trace.jsonl %s", dir_a, dir_b, opts);
    return tu_run_repro(args, out, sizeof out, err, sizeof err);
}

START_TEST(t_first_step_past)
{
    two_programs();
    char o[512];
    snprintf(o, sizeof o, "--tolerance ulp:9 --map %s", map);
    ck_assert_int_eq(diff(o), 0);
    ck_assert_ptr_nonnull(strstr(out, "w f32[4,8] (B: fc.w), rule ulp:9: within tolerance"));
    ck_assert_ptr_nonnull(strstr(out, "within tolerance: the bits differ"));
    ck_assert_ptr_null(strstr(out, "identical"));
    /* ids: same name, same digest: bitwise equal without reading values. */
    ck_assert_ptr_nonnull(strstr(out, "(same digest)"));
    /* Negative controls: tightened, it diverges where the drift passes it. */
    snprintf(o, sizeof o, "--tolerance ulp:2 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 2: w is the first tensor past"));
    snprintf(o, sizeof o, "--tolerance ulp:0 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 1"));
    snprintf(o, sizeof o, "--tolerance exact --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    /* An override wins over the default for the tensors it matches. */
    snprintf(o, sizeof o, "--tolerance ulp:0 --tolerance 'w=ulp:16' --map %s", map);
    ck_assert_int_eq(diff(o), 0);
    /* rtol: 9 ULPs at 2.25 are 9.5e-7 relative; one is 1.06e-7. */
    snprintf(o, sizeof o, "--tolerance rtol:1e-5 --map %s", map);
    ck_assert_int_eq(diff(o), 0);
    snprintf(o, sizeof o, "--tolerance rtol:1e-7 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 1"));
    snprintf(o, sizeof o, "--tolerance 'rtol:0,atol:1e-6' --map %s", map);
    ck_assert_int_eq(diff(o), 1); /* 9 ULPs at 2.25: 2.1e-6 */
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 3"));
}
END_TEST

START_TEST(t_json)
{
    two_programs();
    char o[512];
    snprintf(o, sizeof o, "--json --tolerance ulp:2 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "diverged");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "first_step_past")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(j, "first_tensor_past")), "w");
    ck_assert(json_is_false(json_object_get(j, "bitwise_equal")));
    json_t *ts = json_object_get(j, "tensors"), *w = NULL;
    for (size_t i = 0; i < json_array_size(ts); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(ts, i), "name")), "w"))
            w = json_array_get(ts, i);
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(json_string_value(json_object_get(w, "name_b")), "fc.w");
    ck_assert_int_eq(json_integer_value(json_object_get(w, "max_ulp")), 9);
    json_t *rows = json_object_get(w, "steps");
    ck_assert_int_eq(json_array_size(rows), 3);
    static const int want[] = {1, 3, 9};
    for (int i = 0; i < 3; i++) {
        json_t *r = json_array_get(rows, i);
        ck_assert_int_eq(json_integer_value(json_object_get(r, "max_ulp")), want[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(r, "differ")), 1);
        ck_assert_int_eq(json_integer_value(json_object_get(r, "past_rule")), i ? 1 : 0);
    }
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(rows, 1),
                                                        "first_past_element")), 5);
    json_decref(j);
}
END_TEST

/* Two traces with the same bits and names need no values: "within
 * tolerance", said as bitwise equal, never "identical". */
START_TEST(t_bitwise_equal)
{
    fresh(dir_a, "tol-a");
    fresh(dir_b, "tol-b");
    write_prog(dir_a, &(prog){"w", 2, NULL, 0, 0, 1});
    write_prog(dir_b, &(prog){"w", 2, NULL, 0, 0, 1});
    ck_assert_int_eq(diff("--tolerance ulp:0"), 0);
    ck_assert_ptr_nonnull(strstr(out, "within tolerance: every compared value is bitwise equal"));
    ck_assert_ptr_null(strstr(out, "identical"));
}
END_TEST

START_TEST(t_bad_tolerance)
{
    two_programs();
    static const char *bad[] = {"ulp:x", "ulp:-1", "ulp:", "rtol:-1", "rtol:nan", "foo:1",
                                "=ulp:1", "w=", "rtol:1e-3,btol:2", "ulp:1,rtol:2", "atol:inf",
                                "ulp:4294967296", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char o[256], want[128];
        snprintf(o, sizeof o, "--tolerance '%s'", bad[i]);
        ck_assert_msg(diff(o) == 2, "%s: exit not 2", bad[i]);
        snprintf(want, sizeof want, "--tolerance '%s'", bad[i]);
        ck_assert_msg(strstr(err, want), "%s: %s", bad[i], err);
    }
    /* --plot draws the bitwise comparison only. */
    ck_assert_int_eq(diff("--tolerance ulp:1 --plot x.svg"), 2);
    ck_assert_ptr_nonnull(strstr(err, "--plot"));
}
END_TEST

static void write_map(const char *text)
{
    FILE *f = fopen(map, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Each map error is exit 2 naming FILE:LINE. */
static void map_fails(const char *text, const char *where, const char *what)
{
    write_map(text);
    char o[512], want[400];
    snprintf(o, sizeof o, "--tolerance ulp:9 --map %s", map);
    ck_assert_msg(diff(o) == 2, "%s: exit not 2 (%s)", text, out);
    snprintf(want, sizeof want, "%s:%s", map, where);
    ck_assert_msg(strstr(err, want) && strstr(err, what), "%s: %s", text, err);
}

START_TEST(t_bad_map)
{
    two_programs();
    map_fails("fc.w w\n", "1:", "expected 'B_NAME = A_NAME'");
    map_fails("fc.w = w\nfc.w = ids\n", "2:", "B's fc.w is already mapped on line 1");
    map_fails("fc.w = w\nx = w\n", "2:", "A's w is already mapped on line 1");
    map_fails("fc.w = w\nfc.v = nope\n", "2:", "has no tensor fc.v");
    map_fails("# ok\nfc.w = nope\n", "2:", "has no tensor nope");
    map_fails("fc.w = w extra\n", "1:", "expected");
    /* A missing map file. */
    char o[512];
    snprintf(o, sizeof o, "--tolerance ulp:9 --map %s/absent.map", dir_b);
    ck_assert_int_eq(diff(o), 2);
    ck_assert_ptr_nonnull(strstr(err, "absent.map"));
}
END_TEST

START_TEST(t_bad_traces)
{
    char o[512];
    /* Other steps: exit 2 before any value is read. */
    fresh(dir_a, "tol-a");
    fresh(dir_b, "tol-b");
    write_prog(dir_a, &(prog){"w", 3, NULL, 1, 0, 1});
    write_prog(dir_b, &(prog){"w", 2, NULL, 1, 0, 1});
    ck_assert_int_eq(diff("--tolerance ulp:1"), 2);
    ck_assert_ptr_nonnull(strstr(err, "different steps"));
    ck_assert_ptr_nonnull(strstr(err, "has 3 steps (1..3)"));
    /* Missing values: named with the file expected. */
    static const int drift[] = {1, 1, 1};
    fresh(dir_b, "tol-b");
    write_prog(dir_b, &(prog){"w", 3, drift, 0, 0, 1});
    ck_assert_int_eq(diff("--tolerance ulp:1"), 2);
    ck_assert_ptr_nonnull(strstr(err, "step 1: B's w has no values"));
    ck_assert_ptr_nonnull(strstr(err, "dump/step-000001/w.npy does not exist"));
    /* A shape that differs, through the map: its line. */
    fresh(dir_b, "tol-b");
    write_prog(dir_b, &(prog){"fc.w", 3, drift, 1, 1, 1});
    snprintf(map, sizeof map, "%s/names.map", dir_b);
    write_map("\nfc.w = w\n");
    snprintf(o, sizeof o, "--tolerance ulp:1 --map %s", map);
    ck_assert_int_eq(diff(o), 2);
    ck_assert_ptr_nonnull(strstr(err, "names.map:2: step 1: A's w is f32[4,8] but B's fc.w is "
                                      "f32[8,4]"));
    /* A trace cut short. */
    fresh(dir_b, "tol-b");
    write_prog(dir_b, &(prog){"w", 3, drift, 1, 0, 0});
    ck_assert_int_eq(diff("--tolerance ulp:1"), 2);
    ck_assert_ptr_nonnull(strstr(err, "truncated trace"));
    /* A map pairing tensors of other dtypes. */
    fresh(dir_b, "tol-b");
    write_prog(dir_b, &(prog){"w", 3, drift, 1, 0, 1});
    snprintf(map, sizeof map, "%s/names.map", dir_b);
    write_map("w = ids\n");
    snprintf(o, sizeof o, "--tolerance ulp:1 --map %s", map);
    ck_assert_int_eq(diff(o), 2); /* A's ids is i32[8], B's w f32[4,8] */
    ck_assert_ptr_nonnull(strstr(err, "names.map:1:"));
}
END_TEST

/* The measure itself: signed zeros, NaN, f64 and integers. */
START_TEST(t_measure)
{
    repro_tolerance t = {0};
    ck_assert_int_eq(repro_tolerance_add(&t, "ulp:1"), 0);
    ck_assert_int_eq(repro_tolerance_add(&t, "grad.*=rtol:1e-3,atol:1e-9"), 0);
    ck_assert_int_eq(repro_tolerance_add(&t, "ids=exact"), 0);
    const repro_tol_rule *ulp1 = repro_tolerance_for(&t, "param.w");
    ck_assert_int_eq(ulp1->kind, REPRO_TOL_ULP);
    ck_assert_int_eq(repro_tolerance_for(&t, "grad.w")->kind, REPRO_TOL_REL);
    ck_assert_int_eq(repro_tolerance_for(&t, "ids")->kind, REPRO_TOL_EXACT);
    repro_tol_measure m;
    float a[4] = {0.0f, 1.0f, NAN, 2.0f}, b[4] = {-0.0f, 1.0f, 1.0f, 2.0f};
    ck_assert_int_eq(repro_tol_measure_values(ulp1, "f32", a, b, sizeof a, &m), 0);
    ck_assert_int_eq(m.differ, 2);  /* -0 and the NaN */
    ck_assert_int_eq(m.outside, 1); /* only the NaN: +0 and -0 are 0 ULPs apart */
    ck_assert_int_eq(m.first_outside, 2);
    ck_assert(m.max_ulp == REPRO_ULP_NAN);
    ck_assert(isinf(m.max_rel));
    const repro_tol_rule *ex = repro_tolerance_for(&t, "ids");
    ck_assert_int_eq(repro_tol_measure_values(ex, "f32", a, b, sizeof a, &m), 0);
    ck_assert_int_eq(m.outside, 2); /* exact: the sign of zero counts */
    double da[2] = {1.0, 3.0}, db[2] = {1.0, 3.0};
    uint64_t bits;
    memcpy(&bits, &db[1], 8);
    bits += 2;
    memcpy(&db[1], &bits, 8);
    ck_assert_int_eq(repro_tol_measure_values(ulp1, "f64", da, db, sizeof da, &m), 0);
    ck_assert_int_eq(m.max_ulp, 2);
    ck_assert_int_eq(m.outside, 1);
    /* Integers do not round: any difference is past any rule. */
    repro_tolerance loose = {0};
    ck_assert_int_eq(repro_tolerance_add(&loose, "ulp:1000000"), 0);
    int32_t ia[3] = {1, 2, 3}, ib[3] = {1, 2, 4};
    ck_assert_int_eq(repro_tol_measure_values(repro_tolerance_for(&loose, "x"), "i32", ia, ib,
                                              sizeof ia, &m), 0);
    ck_assert_int_eq(m.outside, 1);
    ck_assert_int_eq(repro_tol_measure_values(ulp1, "f16", ia, ib, 4, &m), -1);
    /* A tensor no rule matches and no default: exact. */
    repro_tolerance only = {0};
    ck_assert_int_eq(repro_tolerance_add(&only, "grad.*=ulp:4"), 0);
    ck_assert_int_eq(repro_tolerance_for(&only, "param.w")->kind, REPRO_TOL_EXACT);
}
END_TEST

/* Memory per tensor is bounded: past REPRO_TOL_ROWS (64) compared steps
 * only the first step past the rule and the last are kept as rows, and
 * the report says how many steps it does not show. */
START_TEST(t_rows_bounded)
{
    static int drift[70];
    for (int i = 0; i < 70; i++)
        drift[i] = i >= 65 ? 5 : 1; /* past ulp:2 from step 66 */
    fresh(dir_a, "tol-a");
    fresh(dir_b, "tol-b");
    write_prog(dir_a, &(prog){"w", 70, NULL, 1, 0, 1});
    write_prog(dir_b, &(prog){"w", 70, drift, 1, 0, 1});
    ck_assert_int_eq(diff("--tolerance ulp:2"), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 66: w is the first"));
    ck_assert_ptr_nonnull(strstr(out, "... 6 more steps"));
    ck_assert_int_eq(diff("--json --tolerance ulp:2"), 1);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *ts = json_object_get(j, "tensors"), *w = NULL;
    for (size_t i = 0; i < json_array_size(ts); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(ts, i), "name")), "w"))
            w = json_array_get(ts, i);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(json_integer_value(json_object_get(w, "steps_compared")), 70);
    json_t *rows = json_object_get(w, "steps");
    ck_assert_int_eq(json_array_size(rows), 66);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(rows, 64), "step")), 66);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(rows, 65), "step")), 70);
    json_decref(j);
}
END_TEST

/* The values files are untrusted input: a header that does not say what
 * the reader needs, or data of another length, is refused naming the file. */
static void npy_file(const char *path, const char *dict, size_t ndata)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    size_t n = strlen(dict);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)n, 0};
    fwrite(pre, 1, 10, f);
    fwrite(dict, 1, n, f);
    for (size_t i = 0; i < ndata; i++)
        fputc(0, f);
    fclose(f);
}

START_TEST(t_bad_npy)
{
    char dir[TU_TMP_LEN], path[TU_TMP_LEN + 16];
    fresh(dir, "tol-npy");
    snprintf(path, sizeof path, "%s/x.npy", dir);
    repro_npy v;
    npy_file(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24);
    ck_assert_int_eq(repro_npy_load(path, &v), 0);
    ck_assert_str_eq(v.dtype, "f32");
    ck_assert_int_eq(v.ndim, 2);
    ck_assert_int_eq(v.shape[1], 3);
    repro_npy_free(&v);
    static const struct {
        const char *dict;
        size_t ndata;
        const char *why;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20, "bytes its shape"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "dtype"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n", 4, "dtype"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", 8, "Fortran"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }\n", 8, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", 8, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }\n", 8,
         "shape"},
        {"{'descr': '<f4', 'fortran_order': False}\n", 8, "without"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        npy_file(path, bad[i].dict, bad[i].ndata);
        ck_assert_msg(repro_npy_load(path, &v) == -1, "%s loaded", bad[i].dict);
        ck_assert_msg(strstr(repro_error_message(), path) &&
                          strstr(repro_error_message(), bad[i].why),
                      "%s: %s", bad[i].dict, repro_error_message());
    }
}
END_TEST

/* Streamed: `repro diff --tolerance` peaks within 10% at 3,000 and 30,000
 * detail steps (every tensor compared at every step); the negative
 * control is the whole-trace reader on the same trace, which grows. */
static void prog_in_child(const char *dir, long nsteps)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        write_prog(dir, &(prog){"w", nsteps, NULL, 0, 0, 1});
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(t_memory_independent_of_steps)
{
#if defined(__SANITIZE_ADDRESS__)
    tu_skip("tolerance",
            "an ASan build: ASan's shadow memory and quarantine make RSS no measure of this");
    return;
#endif
    const long lengths[2] = {3000, 30000};
    long kib[2], whole[2];
    for (int i = 0; i < 2; i++) {
        fresh(dir_a, "tol-a");
        fresh(dir_b, "tol-b");
        prog_in_child(dir_a, lengths[i]);
        prog_in_child(dir_b, lengths[i]);
        char pa[256], pb[256];
        snprintf(pa, sizeof pa, "%s/trace.jsonl", dir_a);
        snprintf(pb, sizeof pb, "%s/trace.jsonl", dir_b);
        const char *const args[] = {"repro", "diff", pa, pb, "--tolerance", "ulp:0", NULL};
        int status;
        kib[i] = tu_peak_kib(args, NULL, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
        whole[i] = tu_peak_kib(NULL, pa, &status);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    long floor_kib = tu_own_rss_kib();
    ck_assert_msg(kib[0] > floor_kib, "the diff's peak %ld KiB is no more than this process's "
                  "%ld KiB: the measure cannot see it", kib[0], floor_kib);
    ck_assert_msg(kib[1] <= kib[0] * 11 / 10 && kib[0] <= kib[1] * 11 / 10,
                  "diff --tolerance peaks at %ld KiB for 3,000 steps, %ld KiB for 30,000",
                  kib[0], kib[1]);
    ck_assert_msg(whole[1] > whole[0] * 3 / 2, "whole-trace reading peaks at %ld KiB for 3,000 "
                  "steps, %ld KiB for 30,000", whole[0], whole[1]);
}
END_TEST

static int sh(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The Python client (NumPy) as producer B against this C program as A: the
 * same values under another name are bitwise equal through the map, and a
 * moved element is seen. */
START_TEST(t_python_client_values)
{
    const char *why = tu_no_python("numpy");
    if (*why) {
        tu_skip("tolerance", "%s", why);
        return;
    }
    fresh(dir_a, "tol-a");
    fresh(dir_b, "tol-b");
    write_prog(dir_a, &(prog){"w", 2, NULL, 1, 0, 1});
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH=python /usr/bin/python3 -c '\n"
             "import numpy as np, repro\n"
             "with repro.Recorder(\"numpy-port\", 7, trace_path=\"%s/trace.jsonl\", every=1,\n"
             "                    values=True) as rec:\n"
             "    for s in (1, 2):\n"
             "        w = (1.0 + 0.25 * np.arange(32, dtype=np.float32)).reshape(4, 8)\n"
             "        if s == 2:\n"
             "            w.view(np.uint32)[0, 5] += 4\n"
             "        rec.tensor(\"ids\", np.arange(8, dtype=np.int32) * 3)\n"
             "        rec.tensor(\"weight\", w)\n"
             "        rec.step(s, 0.5)\n'",
             dir_b);
    int rc = sh(cmd);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    snprintf(map, sizeof map, "%s/names.map", dir_b);
    write_map("weight = w\n");
    char o[512];
    snprintf(o, sizeof o, "--tolerance ulp:4 --map %s", map);
    ck_assert_int_eq(diff(o), 0);
    ck_assert_ptr_nonnull(strstr(out, "B: numpy-port"));
    ck_assert_ptr_nonnull(strstr(out, "bits differ at 1 of them; max 4 ULP"));
    snprintf(o, sizeof o, "--tolerance ulp:3 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 2"));
}
END_TEST

/* The port-vs-original use (docs/tolerance.md): repro's MLP trained 20
 * steps, resumed for step 21 with its values dumped; PyTorch's MLP on the
 * checkpoint's weights runs the same batch (examples/torch/mlp_forward.py).
 * The inputs are bitwise equal; the logits are within the bound the docs
 * state (64 ULPs, 1e-6 absolute near zero) and not bitwise (OpenBLAS sums
 * in another order), so a tight rule must fail. */
START_TEST(t_torch_mlp_forward)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("tolerance", "%s", why);
        return;
    }
    char base[TU_TMP_LEN], args[2048];
    fresh(base, "tol-mlp");
    snprintf(args, sizeof args, "run experiments/mlp.ini -q --set model.dropout=0 --steps 20 "
             "--checkpoint-every 20 -o %s/train/trace.jsonl", base);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(dir_a, sizeof dir_a, "%s/c", base);
    snprintf(args, sizeof args, "run experiments/mlp.ini -q --set model.dropout=0 --resume "
             "%s/train/ckpt-20.bin --steps 21 --dump 21 -o %s/trace.jsonl", base, dir_a);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(dir_b, sizeof dir_b, "%s/torch", base);
    snprintf(args, sizeof args, "PYTHONPATH=python /usr/bin/python3 examples/torch/mlp_forward.py "
             "%s/train/ckpt-20.bin %s/dump/step-000021/batch.x.npy %s/trace.jsonl",
             base, dir_a, dir_b);
    int rc = sh(args);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "recorded step 21"));
    snprintf(map, sizeof map, "%s/names.map", base);
    write_map("infer.input = batch.x\ninfer.output = logits\n");
    char o[512];
    snprintf(o, sizeof o, "--tolerance 'ulp:64,atol:1e-6' --tolerance 'batch.x=exact' --map %s",
             map);
    ck_assert_msg(diff(o) == 0, "%s%s", out, err);
    ck_assert_ptr_nonnull(strstr(out, "batch.x f32[64,1,28,28] (B: infer.input), rule exact: "
                                      "within tolerance"));
    ck_assert_ptr_nonnull(strstr(out, "logits f32[64,10] (B: infer.output), rule ulp:64,atol:1e-6: "
                                      "within tolerance"));
    ck_assert_ptr_nonnull(strstr(out, "within tolerance: the bits differ"));
    /* Negative control: tightened to 1 ULP, the logits diverge at 21. */
    snprintf(o, sizeof o, "--tolerance ulp:1 --map %s", map);
    ck_assert_int_eq(diff(o), 1);
    ck_assert_ptr_nonnull(strstr(out, "diverged at step 21: logits is the first tensor past"));
    /* The same diff without the map compares nothing: exit 2, named. */
    ck_assert_int_eq(diff("--tolerance ulp:64"), 2);
    ck_assert_ptr_nonnull(strstr(err, "no tensor in common"));
}
END_TEST

/* The Python side's pieces: record_forward names a list of probe batches
 * .0, .1, restores the training mode and writes values; load_checkpoint
 * refuses a checkpoint whose digest does not match; values= without a
 * trace is refused by the C recorder, named. */
START_TEST(t_python_forward_api)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("tolerance", "%s", why);
        return;
    }
    char base[TU_TMP_LEN], args[3072];
    fresh(base, "tol-fwd");
    snprintf(args, sizeof args, "run experiments/mlp.ini -q --steps 2 --checkpoint-every 2 "
             "-o %s/train/trace.jsonl", base);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(args, sizeof args,
             "cd '%s' && PYTHONPATH=$OLDPWD/python /usr/bin/python3 -c '\n"
             "import os, torch, repro\n"
             "ck = repro.load_checkpoint(\"train/ckpt-2.bin\")\n"
             "print(\"step\", ck[\"step\"], sorted(ck[\"params\"])[:2], ck[\"params\"][\"fc1.weight\"].shape)\n"
             "m = torch.nn.Linear(3, 2)\n"
             "m.train()\n"
             "repro.record_forward(m, [torch.ones(1, 3), torch.zeros(4, 3)], \"f/trace.jsonl\", step=5)\n"
             "print(\"training\", m.training, sorted(os.listdir(\"f/dump/step-000005\")))\n"
             "data = bytearray(open(\"train/ckpt-2.bin\", \"rb\").read())\n"
             "data[100] ^= 1\n"
             "open(\"bad.bin\", \"wb\").write(data)\n"
             "try:\n"
             "    repro.load_checkpoint(\"bad.bin\")\n"
             "except ValueError as e:\n"
             "    print(\"refused:\", e)\n"
             "try:\n"
             "    repro.Recorder(\"x\", 1, trace_path=\"\", values=True)\n"
             "except repro.ReproError as e:\n"
             "    print(\"values:\", e)\n'",
             base);
    int rc = sh(args);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "step 2 ['fc1.bias', 'fc1.weight'] (256, 784)"), "%s", out);
    ck_assert_msg(strstr(out, "training True ['infer.input.0.npy', 'infer.input.1.npy', "
                              "'infer.output.0.npy', 'infer.output.1.npy']"), "%s", out);
    ck_assert_msg(strstr(out, "refused: bad.bin: corrupted checkpoint"), "%s", out);
    ck_assert_msg(strstr(out, "values: recorder: values: no trace is written"), "%s", out);
}
END_TEST

Suite *tolerance_suite(void)
{
    Suite *s = suite_create("tolerance");
    TCase *tc = tcase_create("tolerance");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, t_first_step_past);
    tcase_add_test(tc, t_json);
    tcase_add_test(tc, t_bitwise_equal);
    tcase_add_test(tc, t_bad_tolerance);
    tcase_add_test(tc, t_bad_map);
    tcase_add_test(tc, t_bad_traces);
    tcase_add_test(tc, t_measure);
    tcase_add_test(tc, t_rows_bounded);
    tcase_add_test(tc, t_bad_npy);
    tcase_add_test(tc, t_memory_independent_of_steps);
    tcase_add_test(tc, t_python_client_values);
    tcase_add_test(tc, t_torch_mlp_forward);
    tcase_add_test(tc, t_python_forward_api);
    suite_add_tcase(s, tc);
    return s;
}
