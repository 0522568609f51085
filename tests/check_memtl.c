/* The memory timeline (core/memtl.h, analysis/memtl_svg.h, `repro run
 * --memory-timeline`): what the picture and the snapshot JSON hold for a
 * repro run and a Python-client run, that a failed run still writes what
 * it recorded (cut), that bad paths are refused before the run, and the
 * seed's memory tips checked on the recorded numbers, each with a control:
 * set_to_none frees the gradients between steps, accumulation keeps one
 * micro-batch's activations, bf16 halves them, a release gives reserved
 * memory back. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/memtl_svg.h"
#include "core/memtl.h"
#include "testutil.h"
#include "util/error.h"

#define MLP "experiments/mlp.ini"
#define CNN "experiments/cnn.ini"
#define PYRUN "/usr/bin/python3 tests/python/memtl_run.py"

static char out[1 << 16], err[1 << 16];
static char svg_text[1 << 20];

static void tmpdir(char *dir, size_t len)
{
    tu_tmp_template(dir, len, "memtl");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* `repro run EXP --steps N --no-trace -q EXTRA --memory-timeline DIR/NAME`;
 * the exit code; the JSON read into tl when NAME ends in .json. */
static int run_tl(repro_memtl *tl, const char *dir, const char *name, const char *exp, int steps,
                  const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "run %s --steps %d --no-trace -q %s --memory-timeline %s/%s", exp,
             steps, extra, dir, name);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    if (tl) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        ck_assert_msg(repro_memtl_read(tl, path) == 0, "%s: %s (run: exit %d, %s)", path,
                      repro_error_message(), rc, err);
    }
    return rc;
}

static const repro_memtl_step *step_of(const repro_memtl *tl, long step)
{
    for (size_t i = 0; i < tl->nsteps; i++)
        if (tl->steps[i].step == step)
            return &tl->steps[i];
    ck_abort_msg("no step %ld in the timeline (%zu steps)", step, tl->nsteps);
    return NULL;
}

static void assert_svg_picture(const char *path, const char *const *names, int n, long steps)
{
    tu_slurp(path, svg_text, sizeof svg_text);
    ck_assert_msg(strncmp(svg_text, "<svg", 4) == 0 && strstr(svg_text, "</svg>"),
                  "not an SVG: %.200s", svg_text);
    ck_assert_msg(strstr(svg_text, "class=\"line-allocated\"") &&
                      strstr(svg_text, "class=\"line-reserved\""),
                  "both lines, allocated and reserved");
    for (int i = 0; i < n; i++)
        ck_assert_msg(strstr(svg_text, names[i]), "the legend names '%s'", names[i]);
    char want[64];
    snprintf(want, sizeof want, ", %ld steps;", steps);
    ck_assert_msg(strstr(svg_text, want), "the subtitle says %s", want);
    ck_assert_msg(strstr(svg_text, ">step</text>"), "the x axis is steps");
    ck_assert_msg(!strstr(svg_text, "<script"), "no scripts");
}

START_TEST(test_cnn_svg)
{
    char dir[256];
    tmpdir(dir, sizeof dir);
    ck_assert_msg(run_tl(NULL, dir, "t.svg", CNN, 4, "") == 0, "%s", err);
    char path[300];
    snprintf(path, sizeof path, "%s/t.svg", dir);
    static const char *const names[] = {
        "parameters", "gradients", "optimizer state", "activations", "activation grads",
        "workspace", "loader buffers", "recorder buffers", "class=\"area-activations\"",
        "class=\"area-params\"", "zero_grad = zero", "measured: process resident set"};
    assert_svg_picture(path, names, (int)(sizeof names / sizeof names[0]), 4);
    ck_assert_msg(!strstr(svg_text, "class=\"cut\""), "a finished run is not cut");
    ck_assert_msg(!strstr(svg_text, "working copies"), "fp32: no working copies");
}
END_TEST

/* The snapshot layout: replaying device_traces as PyTorch's viewer does
 * ends at the last step's allocated and reserved bytes. */
START_TEST(test_cnn_json_snapshot)
{
    char dir[256], path[300];
    tmpdir(dir, sizeof dir);
    repro_memtl tl;
    ck_assert_msg(run_tl(&tl, dir, "t.json", CNN, 3, "--set zero_grad=none") == 0, "%s", err);
    ck_assert_uint_eq(tl.nsteps, 4); /* the setup, then 3 steps */
    ck_assert_uint_eq(tl.cats_known, ((1u << REPRO_MEMTL_NCAT) - 1) & ~(1u << REPRO_MEMTL_WORKING));
    const repro_memtl_step *last = step_of(&tl, 3);
    snprintf(path, sizeof path, "%s/t.json", dir);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    ck_assert_ptr_nonnull(doc);
    json_t *trace = json_array_get(json_object_get(doc, "device_traces"), 0);
    ck_assert_msg(json_array_size(trace) > 20, "allocator events");
    long long live = 0, reserved = 0;
    size_t i;
    json_t *e;
    int allocs = 0;
    json_array_foreach(trace, i, e) {
        const char *a = json_string_value(json_object_get(e, "action"));
        long long size = json_integer_value(json_object_get(e, "size"));
        ck_assert_ptr_nonnull(json_object_get(e, "frames"));
        if (!strcmp(a, "alloc"))
            live += size, allocs++;
        else if (!strcmp(a, "free_completed"))
            live -= size;
        else if (!strcmp(a, "segment_alloc"))
            reserved += size;
        else if (!strcmp(a, "segment_free"))
            reserved -= size;
        else
            ck_assert_str_eq(a, "free_requested");
    }
    ck_assert_int_eq(live, last->allocated);
    ck_assert_int_eq(reserved, last->reserved);
    ck_assert_int_ge(allocs, 3 * 4);
    json_t *seg = json_array_get(json_object_get(doc, "segments"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(seg, "total_size")), last->reserved);
    ck_assert_int_eq(json_integer_value(json_object_get(seg, "allocated_size")), last->allocated);
    json_decref(doc);
    repro_memtl_release(&tl);
}
END_TEST

/* set_to_none: gradients are allocated in the backward and freed after the
 * update; zero (the control) keeps them between steps. */
START_TEST(test_tip_set_to_none)
{
    char dir[256];
    tmpdir(dir, sizeof dir);
    repro_memtl none, zero;
    ck_assert_msg(run_tl(&none, dir, "n.json", MLP, 3, "--set zero_grad=none") == 0, "%s", err);
    ck_assert_msg(run_tl(&zero, dir, "z.json", MLP, 3, "--set zero_grad=zero") == 0, "%s", err);
    int64_t params = step_of(&none, 0)->at_end[REPRO_MEMTL_PARAMS];
    ck_assert_int_gt(params, 0);
    for (long s = 1; s <= 3; s++) {
        const repro_memtl_step *n = step_of(&none, s), *z = step_of(&zero, s);
        ck_assert_int_eq(n->at_peak[REPRO_MEMTL_GRADS], params);
        ck_assert_int_eq(n->at_end[REPRO_MEMTL_GRADS], 0);
        ck_assert_int_eq(z->at_end[REPRO_MEMTL_GRADS], params); /* the control */
        ck_assert_int_eq(z->allocated - n->allocated, params);
        ck_assert_int_eq(z->peak_allocated, n->peak_allocated); /* the peak is the same */
        ck_assert_uint_eq(n->marks & REPRO_MEMTL_MARK_ZERO_NONE, REPRO_MEMTL_MARK_ZERO_NONE);
        ck_assert_uint_eq(z->marks & REPRO_MEMTL_MARK_ZERO_ZERO, REPRO_MEMTL_MARK_ZERO_ZERO);
    }
    repro_memtl_release(&none);
    repro_memtl_release(&zero);
}
END_TEST

/* Accumulating 4 micro-batches of 16 keeps the activations of one (those
 * of a batch of 16), not of 64 (the control: one batch of 64). */
START_TEST(test_tip_accumulation)
{
    char dir[256];
    tmpdir(dir, sizeof dir);
    repro_memtl acc, one16, one64;
    const char *acc_set = "--set accumulation_steps=4 --set batch_size=16 --set shard_size=16";
    ck_assert_msg(run_tl(&acc, dir, "a.json", CNN, 2, acc_set) == 0, "%s", err);
    ck_assert_msg(run_tl(&one16, dir, "b.json", CNN, 2,
                         "--set batch_size=16 --set shard_size=16") == 0, "%s", err);
    ck_assert_msg(run_tl(&one64, dir, "c.json", CNN, 2, "") == 0, "%s", err);
    int64_t a = step_of(&acc, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    int64_t b = step_of(&one16, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    int64_t c = step_of(&one64, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    ck_assert_int_gt(a, 0);
    ck_assert_int_eq(a, b);
    ck_assert_int_eq(4 * a, c);
    ck_assert_int_eq(4 * step_of(&acc, 2)->at_peak[REPRO_MEMTL_ACTIVATION_GRADS],
                     step_of(&one64, 2)->at_peak[REPRO_MEMTL_ACTIVATION_GRADS]);
    ck_assert_uint_eq(step_of(&acc, 2)->marks & REPRO_MEMTL_MARK_ACCUM, REPRO_MEMTL_MARK_ACCUM);
    ck_assert_uint_eq(step_of(&one64, 2)->marks & REPRO_MEMTL_MARK_ACCUM, 0);
    repro_memtl_release(&acc);
    repro_memtl_release(&one16);
    repro_memtl_release(&one64);
}
END_TEST

/* bf16 halves the activations (an MLP without dropout: nothing but
 * values), and their gradients; fp32 against fp32 (the control) does not;
 * the working copies appear only under bf16. */
START_TEST(test_tip_bf16_halves_activations)
{
    char dir[256];
    tmpdir(dir, sizeof dir);
    repro_memtl f32, b16, f32b;
    ck_assert_msg(run_tl(&f32, dir, "f.json", MLP, 2, "--set dropout=0") == 0, "%s", err);
    ck_assert_msg(run_tl(&b16, dir, "b.json", MLP, 2, "--set dropout=0 --set precision=bf16") == 0,
                  "%s", err);
    ck_assert_msg(run_tl(&f32b, dir, "g.json", MLP, 2, "--set dropout=0") == 0, "%s", err);
    const repro_memtl_step *f = step_of(&f32, 2), *b = step_of(&b16, 2), *g = step_of(&f32b, 2);
    ck_assert_int_gt(f->at_peak[REPRO_MEMTL_ACTIVATIONS], 0);
    ck_assert_int_eq(2 * b->at_peak[REPRO_MEMTL_ACTIVATIONS], f->at_peak[REPRO_MEMTL_ACTIVATIONS]);
    ck_assert_int_eq(2 * b->at_peak[REPRO_MEMTL_ACTIVATION_GRADS],
                     f->at_peak[REPRO_MEMTL_ACTIVATION_GRADS]);
    ck_assert_int_eq(g->at_peak[REPRO_MEMTL_ACTIVATIONS], f->at_peak[REPRO_MEMTL_ACTIVATIONS]);
    ck_assert_int_eq(b->at_peak[REPRO_MEMTL_PARAMS], f->at_peak[REPRO_MEMTL_PARAMS]); /* fp32 */
    ck_assert_int_gt(b->at_peak[REPRO_MEMTL_WORKING], 0);
    ck_assert_int_eq(b->at_end[REPRO_MEMTL_WORKING], 0); /* freed after the backward */
    ck_assert_uint_eq(b->marks & REPRO_MEMTL_MARK_WORKING, REPRO_MEMTL_MARK_WORKING);
    ck_assert_uint_eq(f->marks & REPRO_MEMTL_MARK_WORKING, 0);
    repro_memtl_release(&f32);
    repro_memtl_release(&b16);
    repro_memtl_release(&f32b);
}
END_TEST

/* A release after step 2 gives the cached bytes back: reserved falls to
 * allocated there and grows again in step 3; without it (the control)
 * reserved stays at the peak. */
START_TEST(test_tip_release_returns_reserved)
{
    char dir[256];
    tmpdir(dir, sizeof dir);
    repro_memtl rel, keep;
    ck_assert_msg(run_tl(&rel, dir, "r.json", CNN, 3, "--memory-release-every 2") == 0, "%s", err);
    ck_assert_msg(run_tl(&keep, dir, "k.json", CNN, 3, "") == 0, "%s", err);
    const repro_memtl_step *r2 = step_of(&rel, 2), *k2 = step_of(&keep, 2);
    ck_assert_uint_eq(r2->marks & REPRO_MEMTL_MARK_RELEASE, REPRO_MEMTL_MARK_RELEASE);
    ck_assert_int_eq(r2->reserved, r2->allocated);
    ck_assert_int_lt(r2->reserved, r2->peak_reserved);
    ck_assert_int_eq(step_of(&rel, 3)->reserved, step_of(&rel, 3)->peak_allocated);
    ck_assert_int_eq(k2->reserved, k2->peak_reserved); /* the control */
    ck_assert_int_gt(k2->reserved, k2->allocated);
    ck_assert_uint_eq(step_of(&rel, 1)->marks & REPRO_MEMTL_MARK_RELEASE, 0);
    ck_assert_uint_eq(k2->marks & REPRO_MEMTL_MARK_RELEASE, 0);
    repro_memtl_release(&rel);
    repro_memtl_release(&keep);
}
END_TEST

/* A checkpoint is marked on the step it follows. */
START_TEST(test_checkpoint_marked)
{
    char dir[256], extra[600];
    tmpdir(dir, sizeof dir);
    snprintf(extra, sizeof extra, "--checkpoint-every 2 --checkpoint-dir %s/ck", dir);
    repro_memtl tl;
    ck_assert_msg(run_tl(&tl, dir, "c.json", MLP, 3, extra) == 0, "%s", err);
    ck_assert_uint_eq(step_of(&tl, 2)->marks & REPRO_MEMTL_MARK_CHECKPOINT,
                      REPRO_MEMTL_MARK_CHECKPOINT);
    ck_assert_uint_eq(step_of(&tl, 1)->marks & REPRO_MEMTL_MARK_CHECKPOINT, 0);
    ck_assert_uint_eq(step_of(&tl, 3)->marks & REPRO_MEMTL_MARK_CHECKPOINT, 0);
    repro_memtl_release(&tl);
}
END_TEST

/* A run that fails at step 5 of 8 (a planted gradient flip that the
 * replay catches) still writes steps 0..4, marked cut. */
START_TEST(test_failed_run_is_cut)
{
    char dir[256], path[300];
    tmpdir(dir, sizeof dir);
    setenv("REPRO_FAULT", "flip:step=5:tensor=grad.fc2.weight:element=7", 1);
    repro_memtl tl;
    int rc = run_tl(&tl, dir, "cut.json", MLP, 8, "--set replay.every=5");
    ck_assert_msg(rc == 1, "the replay fails the run: exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "(cut)"), "says it wrote the cut timeline: %s", err);
    ck_assert_int_eq(tl.cut, 1);
    ck_assert_int_eq(tl.planned_steps, 8);
    ck_assert_int_eq(tl.steps[tl.nsteps - 1].step, 4);
    ck_assert_msg(strstr(tl.cut_reason, "replay"), "the reason: %s", tl.cut_reason);
    repro_memtl_release(&tl);
    rc = run_tl(NULL, dir, "cut.svg", MLP, 8, "--set replay.every=5");
    unsetenv("REPRO_FAULT");
    ck_assert_int_eq(rc, 1);
    snprintf(path, sizeof path, "%s/cut.svg", dir);
    tu_slurp(path, svg_text, sizeof svg_text);
    ck_assert_msg(strstr(svg_text, "class=\"cut\"") && strstr(svg_text, "cut at step 4 of 8"),
                  "the picture says cut: %.300s", svg_text);
    /* The control: the same run without the fault is not cut. */
    rc = run_tl(&tl, dir, "whole.json", MLP, 8, "--set replay.every=5");
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(tl.cut, 0);
    ck_assert_int_eq(tl.steps[tl.nsteps - 1].step, 8);
    repro_memtl_release(&tl);
}
END_TEST

/* SIGTERM in the middle of a long run: the steps done are written, cut,
 * and repro still ends by that signal. */
START_TEST(test_signal_cut)
{
    char dir[256], errp[300], tlp[300];
    tmpdir(dir, sizeof dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    snprintf(tlp, sizeof tlp, "%s/s.json", dir);
    const char *bin = getenv("REPRO_BIN") ? getenv("REPRO_BIN") : "./build/repro";
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        FILE *e = freopen(errp, "w", stderr);
        FILE *o = freopen("/dev/null", "w", stdout);
        (void)e, (void)o;
        execl(bin, bin, "run", CNN, "--steps", "1000000", "--no-trace", "--set", "log_every=1",
              "--memory-timeline", tlp, (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 1200 && (stat(errp, &st) != 0 || st.st_size < 200); i++)
        usleep(50000); /* progress lines: it is training */
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
                  "ends by the signal (status %#x)", status);
    repro_memtl tl;
    ck_assert_msg(repro_memtl_read(&tl, tlp) == 0, "%s", repro_error_message());
    ck_assert_int_eq(tl.cut, 1);
    ck_assert_int_ge(tl.nsteps, 2);
    ck_assert_int_lt(tl.steps[tl.nsteps - 1].step, 1000000);
    ck_assert_msg(strstr(tl.cut_reason, "interrupted by signal 15"), "%s", tl.cut_reason);
    repro_memtl_release(&tl);
}
END_TEST

/* Exit 2 before any training: a directory, a missing directory, a name
 * that is neither .svg nor .json, an unwritable file; and for a program. */
START_TEST(test_bad_paths_refused_before_the_run)
{
    char dir[256], args[800];
    tmpdir(dir, sizeof dir);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/d.svg", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    const char *bad[] = {"d.svg", "missing/t.svg", "t.png"};
    const char *why[] = {"is a directory", "no directory", "neither .svg nor .json"};
    for (int i = 0; i < 3; i++) {
        int rc = run_tl(NULL, dir, bad[i], MLP, 1000000, "");
        ck_assert_msg(rc == 2 && strstr(err, why[i]), "%s: exit %d: %s", bad[i], rc, err);
        ck_assert_msg(!strstr(out, "repro run"), "refused before the run: %s", out);
    }
    snprintf(args, sizeof args, "run --memory-timeline %s -- /bin/sh -c 'echo ran >&2'", sub);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "is a directory") && !strstr(err, "ran"),
                  "a program is not started: exit %d: %s", rc, err);
    snprintf(args, sizeof args, "run %s --steps 1 --no-trace -q --memory-release-every 1", MLP);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "needs --memory-timeline"), "%d %s", rc, err);
    /* A directory no one may write into (root included: /proc/sys). */
    if (access("/proc/sys", W_OK) != 0) {
        snprintf(args, sizeof args, "run %s --steps 1000000 --memory-timeline /proc/sys/t.json",
                 MLP);
        rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2 && strstr(err, "is not writable"), "exit %d: %s", rc, err);
    }
    if (geteuid() == 0) {
        tu_skip("memtl", "an unwritable --memory-timeline file: root may write any file");
        return;
    }
    char ro[300];
    snprintf(ro, sizeof ro, "%s/ro.json", dir);
    FILE *f = fopen(ro, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(chmod(ro, 0444), 0);
    rc = run_tl(NULL, dir, "ro.json", MLP, 1000000, "");
    ck_assert_msg(rc == 2 && strstr(err, "not writable"), "exit %d: %s", rc, err);
}
END_TEST

/* The renderer alone: a long run is binned (the picture stays small), a
 * title is escaped, a Python timeline's uncategorized rest is drawn. */
START_TEST(test_svg_render_synthetic)
{
    repro_memtl tl;
    repro_memtl_init(&tl, "python", "a <b> & \"c\"");
    tl.cats_known = 1u << REPRO_MEMTL_PARAMS;
    for (long s = 0; s <= 20000; s++) {
        repro_memtl_step st;
        repro_memtl_step_blank(&st, s);
        st.at_peak[REPRO_MEMTL_PARAMS] = st.at_end[REPRO_MEMTL_PARAMS] = 1000;
        st.peak_allocated = 3000 + s % 7;
        st.allocated = 1500;
        st.reserved = st.peak_reserved = 4000;
        st.marks = s % 5000 == 0 ? REPRO_MEMTL_MARK_CHECKPOINT : 0;
        st.measured_device = 900000; /* far above: drawn along the top, with a note */
        ck_assert_int_eq(repro_memtl_push_step(&tl, &st), 0);
    }
    char *svg = repro_memtl_svg(&tl);
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(strlen(svg) < 400000, "binned: %zu bytes", strlen(svg));
    ck_assert_msg(strstr(svg, "a &lt;b&gt; &amp; &quot;c&quot;"), "escaped title");
    ck_assert_msg(strstr(svg, "class=\"area-other\"") && strstr(svg, "other (not categorized)"),
                  "the rest of allocated");
    ck_assert_msg(strstr(svg, "class=\"mark-checkpoint\""), "checkpoint marks");
    ck_assert_msg(strstr(svg, "class=\"line-device-used\"") &&
                      strstr(svg, "device used (cudaMemGetInfo)") &&
                      strstr(svg, "above the scale, along the top: device used 0.9 to 0.9 MiB"),
                  "the device's line, above the scale");
    ck_assert_msg(strstr(svg, "Python-client run, 20000 steps"), "subtitle");
    free(svg);
    repro_memtl_release(&tl);
}
END_TEST

/* What is not a timeline is refused, naming the file; a title from the
 * file cannot break out of the SVG's text. */
START_TEST(test_read_refuses_bad_json)
{
    static const char *const bad[] = {
        "{\"segments\": []}",
        "{\"repro_memory_timeline\": {\"version\": 2, \"steps\": []}}",
        "{\"repro_memory_timeline\": {\"version\": 1, \"steps\": [7]}}",
        "not json",
    };
    static const char *const why[] = {"no \"repro_memory_timeline\"", "version 2",
                                      "steps[0]", "bad.json:1"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        tu_write_temp(path, sizeof path, "bad.json", bad[i]);
        repro_memtl tl;
        ck_assert_int_eq(repro_memtl_read(&tl, path), -1);
        ck_assert_msg(strstr(repro_error_message(), why[i]) && strstr(repro_error_message(), path),
                      "%d: %s", i, repro_error_message());
        repro_memtl_release(&tl);
    }
    char path[512];
    tu_write_temp(path, sizeof path, "t.json",
                  "{\"repro_memory_timeline\": {\"version\": 1, \"source\": \"python\", "
                  "\"title\": \"</text><script>x</script>\", \"steps\": [{\"step\": 0, "
                  "\"allocated\": 10, \"reserved\": 20, \"at_end\": {\"params\": 10}}]}}");
    repro_memtl tl;
    ck_assert_int_eq(repro_memtl_read(&tl, path), 0);
    char *svg = repro_memtl_svg(&tl);
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(!strstr(svg, "<script") && strstr(svg, "&lt;script&gt;"), "escaped");
    free(svg);
    repro_memtl_release(&tl);
}
END_TEST

/* ---- the Python client ---- */

static int py(const char *args)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "env -u REPRO_MEMORY_TIMELINE %s %s >/dev/null 2>&1", PYRUN, args);
    return system(cmd);
}

static void py_tl(repro_memtl *tl, const char *dir, const char *name, const char *args)
{
    char a[1000], path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(a, sizeof a, "path=%s %s", path, args);
    ck_assert_msg(py(a) == 0, "%s %s failed", PYRUN, a);
    ck_assert_msg(repro_memtl_read(tl, path) == 0, "%s", repro_error_message());
}

START_TEST(test_python_client_run_picture)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("memtl", "the Python client's timeline: %s", why);
        return;
    }
    char dir[256], args[800], path[300];
    tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "run --memory-timeline %s/p.svg -- " PYRUN " steps=5 record=1",
             dir);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    snprintf(path, sizeof path, "%s/p.svg", dir);
    static const char *const names[] = {"parameters", "gradients", "optimizer state",
                                        "activations", "Python-client run",
                                        "zero_grad = none"};
    assert_svg_picture(path, names, (int)(sizeof names / sizeof names[0]), 5);
    snprintf(args, sizeof args, "run --memory-timeline %s/p.json -- " PYRUN " steps=5 record=1",
             dir);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/p.json", dir);
    repro_memtl tl;
    ck_assert_msg(repro_memtl_read(&tl, path) == 0, "%s", repro_error_message());
    ck_assert_str_eq(tl.source, "python");
    ck_assert_uint_eq(tl.nsteps, 6);
    for (long s = 1; s <= 5; s++) {
        const repro_memtl_step *st = step_of(&tl, s);
        ck_assert_int_gt(st->allocated, 0);
        ck_assert_int_gt(st->reserved, 0);
        ck_assert_int_gt(st->at_peak[REPRO_MEMTL_ACTIVATIONS], 0);
    }
    repro_memtl_release(&tl);
    /* The client's file left nothing beside the picture. */
    snprintf(args, sizeof args, "ls %s | grep -c client >/dev/null", dir);
    ck_assert_msg(system(args) != 0, "the client's temporary file is removed");
}
END_TEST

/* A program that fails midway: its timeline comes out cut; one that
 * records none makes `repro run` say so. */
START_TEST(test_python_client_cut)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("memtl", "the Python client's timeline: %s", why);
        return;
    }
    char dir[256], args[800];
    tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args,
             "run --memory-timeline %s/p.json -- " PYRUN " steps=6 fail=4 record=1", dir);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc != 0, "the program failed");
    char path[300];
    snprintf(path, sizeof path, "%s/p.json", dir);
    repro_memtl tl;
    ck_assert_msg(repro_memtl_read(&tl, path) == 0, "%s", repro_error_message());
    ck_assert_int_eq(tl.cut, 1);
    ck_assert_int_eq(tl.steps[tl.nsteps - 1].step, 3);
    ck_assert_msg(strstr(tl.cut_reason, "planted failure"), "%s", tl.cut_reason);
    repro_memtl_release(&tl);
    /* A timeline the program never closes is written at exit: cut with the
     * exception that ended it, whole when the program ends normally. */
    for (int fail = 0; fail <= 1; fail++) {
        snprintf(args, sizeof args, "run --memory-timeline %s/x%d.json -- " PYRUN
                 " steps=5 close=exit record=1 fail=%d", dir, fail, fail ? 3 : 0);
        rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(fail ? rc != 0 : rc == 0, "exit %d: %s", rc, err);
        snprintf(path, sizeof path, "%s/x%d.json", dir, fail);
        ck_assert_msg(repro_memtl_read(&tl, path) == 0, "%s", repro_error_message());
        ck_assert_int_eq(tl.cut, fail);
        ck_assert_int_eq(tl.steps[tl.nsteps - 1].step, fail ? 2 : 5);
        ck_assert_msg(!fail || strstr(tl.cut_reason, "RuntimeError: planted failure"), "%s",
                      tl.cut_reason);
        repro_memtl_release(&tl);
    }
    snprintf(args, sizeof args,
             "run --set steps=2 --memory-timeline %s/none.svg -- /usr/bin/python3 "
             "examples/torch/mlp.py", dir);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 2 && strstr(err, "wrote no memory timeline"), "exit %d: %s", rc, err);
}
END_TEST

/* The tips on what PyTorch itself holds (the Python client's numbers). */
START_TEST(test_python_tips)
{
    const char *why = tu_no_python("torch");
    if (*why) {
        tu_skip("memtl", "the memory tips in PyTorch: %s", why);
        return;
    }
    char dir[256];
    tmpdir(dir, sizeof dir);
    repro_memtl none, zero, f32, b16, acc, one16;
    py_tl(&none, dir, "none.json", "zero=none steps=3");
    py_tl(&zero, dir, "zero.json", "zero=zero steps=3");
    int64_t params = step_of(&none, 2)->at_end[REPRO_MEMTL_PARAMS];
    ck_assert_int_eq(step_of(&none, 2)->at_peak[REPRO_MEMTL_GRADS], params);
    ck_assert_int_eq(step_of(&none, 2)->at_end[REPRO_MEMTL_GRADS], 0); /* set_to_none */
    ck_assert_int_eq(step_of(&zero, 2)->at_end[REPRO_MEMTL_GRADS], params); /* control */
    ck_assert_uint_eq(step_of(&zero, 2)->marks & REPRO_MEMTL_MARK_ZERO_ZERO,
                      REPRO_MEMTL_MARK_ZERO_ZERO);

    py_tl(&f32, dir, "f32.json", "precision=fp32 steps=2");
    py_tl(&b16, dir, "b16.json", "precision=bf16 steps=2");
    double fa = (double)step_of(&f32, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    double ba = (double)step_of(&b16, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    ck_assert_msg(ba / fa > 0.48 && ba / fa < 0.53, "bf16/fp32 activations %.0f/%.0f", ba, fa);
    ck_assert_int_gt(step_of(&b16, 2)->at_peak[REPRO_MEMTL_WORKING], 0);
    ck_assert_int_eq(step_of(&f32, 2)->at_peak[REPRO_MEMTL_WORKING], 0);

    py_tl(&acc, dir, "acc.json", "k=4 batch=16 steps=2");
    py_tl(&one16, dir, "one16.json", "k=1 batch=16 steps=2");
    int64_t a = step_of(&acc, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS];
    ck_assert_int_eq(a, step_of(&one16, 2)->at_peak[REPRO_MEMTL_ACTIVATIONS]);
    ck_assert_msg(4.0 * (double)a < 1.01 * fa && 4.0 * (double)a > 0.99 * fa,
                  "4 micro-batches of 16 keep a quarter of a batch of 64: %lld vs %.0f",
                  (long long)a, fa);
    ck_assert_uint_eq(step_of(&acc, 2)->marks & REPRO_MEMTL_MARK_ACCUM, REPRO_MEMTL_MARK_ACCUM);
    repro_memtl *all[] = {&none, &zero, &f32, &b16, &acc, &one16};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        repro_memtl_release(all[i]);
}
END_TEST

Suite *memtl_suite(void)
{
    Suite *s = suite_create("memtl");
    TCase *tc = tcase_create("memtl");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cnn_svg);
    tcase_add_test(tc, test_cnn_json_snapshot);
    tcase_add_test(tc, test_tip_set_to_none);
    tcase_add_test(tc, test_tip_accumulation);
    tcase_add_test(tc, test_tip_bf16_halves_activations);
    tcase_add_test(tc, test_tip_release_returns_reserved);
    tcase_add_test(tc, test_checkpoint_marked);
    tcase_add_test(tc, test_failed_run_is_cut);
    tcase_add_test(tc, test_signal_cut);
    tcase_add_test(tc, test_bad_paths_refused_before_the_run);
    tcase_add_test(tc, test_svg_render_synthetic);
    tcase_add_test(tc, test_read_refuses_bad_json);
    tcase_add_test(tc, test_python_client_run_picture);
    tcase_add_test(tc, test_python_client_cut);
    tcase_add_test(tc, test_python_tips);
    suite_add_tcase(s, tc);
    return s;
}
