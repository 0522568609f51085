/* `repro check --report FILE.html` (issue 46): the page of a failed check
 * names the scope, the first divergent step and the likely origin tensor,
 * and renders in a real browser (headless chromium) as a page, not a blank
 * one; a passing check's page too; nothing in it is fetched or run; a
 * report path that cannot be written is exit 2 before any run starts; a
 * check interrupted midway still writes its page, marked as cut. The
 * screenshots are decoded (tests/tu_png.h) and their pixels counted; a
 * blank page's screenshot is the negative control that shows the count
 * can come out empty. Without chromium the browser half skips, saying so;
 * the HTML content is checked either way. */
#include <check.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "tu_png.h"
#include "util/html.h"

#define PAGE_MAX (1 << 20)

/* The banners' backgrounds (analysis/check_html.c's style sheet) and the
 * divergence curve's stroke (plot.c). */
#define FAIL_BG 0xfbe3e1u
#define PASS_BG 0xe3f4e1u
#define CUT_BG 0xfff1d6u
#define CURVE 0x1f5fbfu

static char dir[TU_TMP_LEN];

static void mk_dir(void)
{
    tu_tmp_template(dir, sizeof dir, "htmlreport");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static char *read_page(const char *path)
{
    char *buf = malloc(PAGE_MAX);
    ck_assert_ptr_nonnull(buf);
    tu_slurp(path, buf, PAGE_MAX);
    return buf;
}

/* Nothing in the page reaches the network or runs. */
static void assert_self_contained(const char *page)
{
    ck_assert_msg(!strstr(page, "http://"), "the page names an http:// address");
    ck_assert_msg(!strstr(page, "https://"), "the page names an https:// address");
    ck_assert_msg(!strstr(page, "<script"), "the page has a script");
    ck_assert_msg(!strstr(page, "<link"), "the page links a resource");
    ck_assert_msg(!strstr(page, "@import") && !strstr(page, "url("),
                  "the style sheet loads something");
}

/* Run 1's memory timeline is drawn inline (analysis/memtl_svg.h): its
 * title and both lines' legend, inside an <svg> of the memory section. */
static void assert_memory_drawn(const char *page)
{
    const char *mem = strstr(page, "<h2 id=\"memory\">");
    ck_assert_msg(mem != NULL, "no memory section");
    const char *end = strstr(mem, "<h2 id=\"environment\">");
    const char *svg = strstr(mem, "<svg ");
    ck_assert_msg(svg && end && svg < end, "no memory timeline drawn");
    const char *title = strstr(svg, "memory timeline: mlp"), *res = strstr(svg, "reserved");
    ck_assert_msg(title && title < end && res && res < end, "the timeline has no title or lines");
}

/* The chromium binary, or NULL. */
static const char *chromium(void)
{
    static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (access(names[i], X_OK) == 0)
            return names[i];
    return NULL;
}

/* Headless chromium's screenshot of the file at html (absolute) into png;
 * 1 when it was taken, 0 (the test skipped, saying why) when there is no
 * chromium. */
static int screenshot(const char *html, const char *png)
{
    const char *bin = chromium();
    if (!bin) {
        tu_skip("html_report", "no chromium to render the report in (install Debian's "
                               "chromium: scripts/ensure-deps.sh --tests)");
        return 0;
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s --headless --no-sandbox --disable-gpu --hide-scrollbars "
             "--user-data-dir=%s/profile --window-size=1000,1400 --screenshot=%s 'file://%s' "
             ">%s/chromium.log 2>&1",
             bin, dir, png, html, dir);
    int st = system(cmd);
    char log[4096], log_path[TU_TMP_LEN + 16];
    snprintf(log_path, sizeof log_path, "%s/chromium.log", dir);
    tu_slurp(log_path, log, sizeof log);
    ck_assert_msg(st == 0, "chromium failed (status %#x): %s", st, log);
    return 1;
}

/* The screenshot's pixel counts: non-white, and near each of 3 colours. */
static tu_png_count shot_of(const char *html, const char *name, unsigned c0, unsigned c1,
                            unsigned c2, int *taken)
{
    char png[TU_TMP_LEN + 32], err[512];
    unsigned colors[3] = {c0, c1, c2};
    tu_png_count n;
    memset(&n, 0, sizeof n);
    snprintf(png, sizeof png, "%s/%s.png", dir, name);
    *taken = screenshot(html, png);
    if (*taken)
        ck_assert_msg(tu_png_count_pixels(png, colors, 3, &n, err, sizeof err) == 0, "%s", err);
    return n;
}

/* An absolute path in dir. */
static void in_dir(char *buf, size_t len, const char *name)
{
    char abs[4096];
    ck_assert_ptr_nonnull(realpath(dir, abs));
    snprintf(buf, len, "%s/%s", abs, name);
}

START_TEST(test_failed_check_page_shows_the_divergence)
{
    static char out[1 << 16], err[1 << 16];
    char html[4200], args[4400];
    mk_dir();
    in_dir(html, sizeof html, "r.html");
    snprintf(args, sizeof args, "check experiments/mlp-nondet.ini --steps 30 --report %s", html);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 1);
    /* What the text report says, the page must say: the step and the tensor. */
    long step = 0;
    const char *div = strstr(out, "DIVERGED at step ");
    ck_assert_msg(div && sscanf(div, "DIVERGED at step %ld", &step) == 1, "%s", out);
    const char *origin = strstr(out, "<- likely origin");
    ck_assert_msg(origin != NULL, "%s", out);
    const char *line = origin;
    while (line > out && line[-1] != '\n')
        line--;
    char tensor[64];
    ck_assert_int_eq(sscanf(line, " %63s", tensor), 1);

    char *page = read_page(html);
    assert_self_contained(page);
    char want[256];
    ck_assert_msg(strstr(page, "NOT reproducible"), "no verdict in the page");
    ck_assert_msg(strstr(page, "<td>fresh-process run to run</td>"), "the scope is not named");
    ck_assert_msg(strstr(page, "broken: 1 run differs from run 1"), "no per-scope verdict");
    snprintf(want, sizeof want, "differs from run 1 at step %ld</a>", step);
    ck_assert_msg(strstr(page, want), "the page does not name step %ld", step);
    snprintf(want, sizeof want, "<td class=\"bad\">step %ld</td>", step);
    ck_assert_msg(strstr(page, want), "no first divergent step %ld in the divergence", step);
    snprintf(want, sizeof want, "<td class=\"name\">%s <span class=\"mark\">likely origin", tensor);
    ck_assert_msg(strstr(page, want), "the likely origin %s is not marked", tensor);
    ck_assert_msg(strstr(page, "<svg class=\"curve\""), "no divergence curve");
    ck_assert_msg(strstr(page, "first divergence: step"), "the curve does not mark the step");
    ck_assert_msg(strstr(page, "elements that differ"), "no element detail");
    ck_assert_msg(strstr(page, "id=\"environment\"") && strstr(page, "cpu_model"),
                  "no environment fingerprint");
    ck_assert_msg(strstr(page, "<svg class=\"timing\""), "no timing chart");
    ck_assert_msg(strstr(page, "History (repro log)"), "no golden history");
    assert_memory_drawn(page);
    free(page);

    int taken;
    tu_png_count n = shot_of(html, "fail", FAIL_BG, PASS_BG, CURVE, &taken);
    if (!taken)
        return;
    /* A page, not a blank: text, tables, the red banner and the curve. */
    ck_assert_msg(n.non_white > n.pixels / 50, "%ld of %ld pixels not white", n.non_white,
                  n.pixels);
    ck_assert_msg(n.near[0] > 5000, "the failure banner is not drawn (%ld pixels)", n.near[0]);
    /* (a few pixels of anti-aliased text come near any colour) */
    ck_assert_msg(n.near[1] < 200, "a pass banner on a failed check (%ld pixels)", n.near[1]);
    ck_assert_msg(n.near[2] > 20, "the divergence curve is not drawn (%ld pixels)", n.near[2]);
}
END_TEST

START_TEST(test_passing_check_page)
{
    static char out[1 << 16], err[1 << 16];
    char html[4200], args[4400];
    mk_dir();
    in_dir(html, sizeof html, "pass.html");
    snprintf(args, sizeof args, "check experiments/mlp.ini --steps 10 --report %s", html);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "%s%s", out, err);
    char *page = read_page(html);
    assert_self_contained(page);
    ck_assert_msg(strstr(page, "class=\"verdict pass\""), "not marked as a pass");
    ck_assert_msg(strstr(page, "reproducible: 2 runs identical over 10 steps"), "no verdict");
    ck_assert_msg(strstr(page, "holds: bitwise identical"), "no per-scope verdict");
    ck_assert_msg(!strstr(page, "id=\"divergence\""), "a divergence section on a pass");
    ck_assert_msg(strstr(page, "golden: matches golden/mlp/"), "no golden comparison");
    ck_assert_msg(strstr(page, "commits changed <code>golden/mlp/</code>"), "no golden history");
    free(page);
    int taken;
    tu_png_count n = shot_of(html, "pass", FAIL_BG, PASS_BG, CURVE, &taken);
    if (!taken)
        return;
    ck_assert_msg(n.non_white > n.pixels / 50, "%ld of %ld pixels not white", n.non_white,
                  n.pixels);
    ck_assert_msg(n.near[1] > 5000, "the pass banner is not drawn (%ld pixels)", n.near[1]);
    ck_assert_msg(n.near[0] < 200, "a failure banner on a pass (%ld pixels)", n.near[0]);
}
END_TEST

/* The negative control of the pixel counts: a blank page's screenshot has
 * no pixel that is not white, and none of the banners' colours. */
START_TEST(test_blank_page_counts_as_blank)
{
    char html[4200];
    mk_dir();
    in_dir(html, sizeof html, "blank.html");
    FILE *f = fopen(html, "w");
    ck_assert_ptr_nonnull(f);
    fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body></body></html>\n", f);
    ck_assert_int_eq(fclose(f), 0);
    int taken;
    tu_png_count n = shot_of(html, "blank", FAIL_BG, PASS_BG, CUT_BG, &taken);
    if (!taken)
        return;
    ck_assert_int_eq(n.pixels, 1000L * 1400L);
    ck_assert_msg(n.non_white == 0, "%ld pixels of a blank page not white", n.non_white);
    ck_assert_int_eq(n.near[0] + n.near[1] + n.near[2], 0);
}
END_TEST

/* How many of runs/NAME/'s check directories the check `pid` made. */
static int runs_made_by(const char *name, pid_t pid)
{
    char pat[256];
    glob_t g;
    snprintf(pat, sizeof pat, "runs/%s/check-*-%ld", name, (long)pid);
    int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    return n;
}

START_TEST(test_report_path_refused_before_any_run)
{
    static char out[1 << 14], err[1 << 14];
    char args[4400], file[4200];
    mk_dir();
    /* A directory; one that does not exist; a file taken for a directory;
     * a directory no one may create a file in, root included (/proc/sys). */
    const char *bad[4] = {dir, "/nonexistent-repro-dir/r.html", NULL, "/proc/sys/r.html"};
    in_dir(file, sizeof file, "plain");
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    char under_file[4300];
    snprintf(under_file, sizeof under_file, "%s/r.html", file); /* a file is no directory */
    bad[2] = under_file;
    for (int i = 0; i < 4; i++) {
        if (i == 3 && access("/proc/sys", F_OK) != 0) {
            tu_skip("html_report", "no /proc/sys for an unwritable --report directory");
            continue;
        }
        snprintf(args, sizeof args, "check experiments/mlp.ini --steps 300 --report %s", bad[i]);
        int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2, "--report %s: exit %d, %s", bad[i], rc, err);
        ck_assert_msg(strstr(err, "--report") && strstr(err, bad[i]),
                      "the error does not name --report and the path: %s", err);
        ck_assert_msg(!strstr(err, "run 1 (1/"), "a run started: %s", err);
    }
    /* --batch-invariance has no page. */
    snprintf(args, sizeof args, "check experiments/mlp.ini --batch-invariance --report %s/b.html",
             dir);
    ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "--report"), "%s", err);
}
END_TEST

/* Waits until the check (pid) has started its second run, so run 1 is
 * done: 1, or 0 after the deadline. */
static int second_run_started(pid_t pid, double seconds)
{
    char pat[256];
    snprintf(pat, sizeof pat, "runs/mlp/check-*-%ld/run-2", (long)pid);
    for (int i = 0; i < (int)(seconds * 50); i++) {
        glob_t g;
        int found = glob(pat, 0, NULL, &g) == 0;
        globfree(&g);
        if (found)
            return 1;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

START_TEST(test_interrupted_check_writes_a_cut_page)
{
    char html[4200], log[TU_TMP_LEN + 8];
    mk_dir();
    in_dir(html, sizeof html, "cut.html");
    snprintf(log, sizeof log, "%s/log", dir);
    const char *bin = getenv("REPRO_BIN") ? getenv("REPRO_BIN") : "build/repro";
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(bin, "repro", "check", "experiments/mlp.ini", "--steps", "1500", "--jobs", "1",
              "--no-golden", "--report", html, (char *)NULL);
        _exit(121);
    }
    int started = second_run_started(pid, 120);
    kill(pid, started ? SIGINT : SIGKILL);
    int wst;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert_msg(started, "the check never started its second run");
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 130, "status %#x", wst);
    ck_assert_int_eq(runs_made_by("mlp", pid), 1);

    char *page = read_page(html);
    assert_self_contained(page);
    ck_assert_msg(strstr(page, "class=\"verdict cut\""), "the page is not marked as cut");
    ck_assert_msg(strstr(page, "CUT SHORT: interrupted by signal 2"), "no cause");
    ck_assert_msg(strstr(page, "finished, 1500 steps, chain"), "run 1's result is missing");
    /* (the signal may land before run 2's process starts) */
    ck_assert_msg(strstr(page, "stopped by signal 2 (cut)") ||
                      strstr(page, "not started: interrupted by signal 2 (cut)"),
                  "run 2 is not shown as cut");
    ck_assert_msg(strstr(page, "not known: the check was cut"), "a scope verdict on a cut check");
    ck_assert_msg(strstr(page, "(exit 130)"), "the page does not give the exit status");
    assert_memory_drawn(page); /* run 1 finished: its timeline is there */
    free(page);
    int taken;
    tu_png_count n = shot_of(html, "cut", FAIL_BG, PASS_BG, CUT_BG, &taken);
    if (!taken)
        return;
    ck_assert_msg(n.near[2] > 5000, "the cut banner is not drawn (%ld pixels)", n.near[2]);
    ck_assert_msg(n.near[0] < 200 && n.near[1] < 200, "a pass or fail banner on a cut check");
}
END_TEST

/* Someone else's text never opens a tag: the escaping, on its own. */
START_TEST(test_html_escaping)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    repro_html_text(f, "<script>alert(\"x\")</script> & 'q'\x1b[2J\n\t\xc3\xa9");
    repro_html_svg(f, "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"4\"><rect/></svg>\n");
    repro_html_svg(f, "not <b>svg</b>");
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(buf, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"
                          "\\x1b[2J\n\t\xc3\xa9"
                          "<svg width=\"4\"><rect/></svg>\n"
                          "not &lt;b&gt;svg&lt;/b&gt;");
    free(buf);
}
END_TEST

/* A program whose experiment and tensor names carry markup, and whose
 * second run records other bits (its run index): the names reach the page
 * (in the divergence, the title, the runs) only as text. */
static const char evil_prog[] =
    "#include <repro/repro.h>\n"
    "int main(void)\n{\n"
    "    repro_run_env env;\n"
    "    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    repro_run_info info = {\"evil<b>x\", env.seed, \"{}\"};\n"
    "    repro_recorder *r;\n"
    "    repro_recorder_options o;\n"
    "    repro_recorder_options_init(&o);\n"
    "    repro_recorder_options_from_env(&o, &env);\n"
    "    o.every = 1;\n"
    "    if (repro_recorder_open_ex(&r, NULL, &info, &o))\n        return 3;\n"
    "    int64_t shape[1] = {4};\n"
    "    float w[4] = {1, 2, 3, (float)env.run_index};\n"
    "    for (long step = 1; step <= 3; step++)\n"
    "        if (repro_recorder_tensor(r, \"param.<img src=x onerror=alert(1)>\", REPRO_F32, 1,\n"
    "                                  shape, w) ||\n"
    "            repro_recorder_step(r, step, 0.5))\n            return 3;\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

START_TEST(test_names_from_a_program_are_only_text)
{
    static char out[1 << 16], err[1 << 16];
    char src[4200], prog[4200], html[4200], cmd[16384], args[8800];
    mk_dir();
    in_dir(src, sizeof src, "evil.c");
    in_dir(prog, sizeof prog, "evil");
    in_dir(html, sizeof html, "evil.html");
    FILE *f = fopen(src, "w");
    ck_assert_ptr_nonnull(f);
    fputs(evil_prog, f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -o %s %s %s", prog, src, tu_stage_flags());
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "check --no-golden --report %s -- %s", html, prog);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d: %s%s", rc, out, err);
    char *page = read_page(html);
    assert_self_contained(page);
    ck_assert_msg(!strstr(page, "<img") && !strstr(page, "<b>x"), "a name became markup");
    ck_assert_msg(strstr(page, "param.&lt;img src=x onerror=alert(1)&gt;"),
                  "the tensor is not named as text");
    ck_assert_msg(strstr(page, "differs from run 1 at step 1"), "no divergence");
    ck_assert_msg(strstr(page, "A program&#39;s check records no memory timeline"),
                  "a program's check claims a memory timeline");
    free(page);
}
END_TEST

Suite *html_report_suite(void)
{
    Suite *s = suite_create("html_report");
    TCase *tc = tcase_create("html_report");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_html_escaping);
    tcase_add_test(tc, test_report_path_refused_before_any_run);
    tcase_add_test(tc, test_names_from_a_program_are_only_text);
    tcase_add_test(tc, test_blank_page_counts_as_blank);
    tcase_add_test(tc, test_failed_check_page_shows_the_divergence);
    tcase_add_test(tc, test_passing_check_page);
    tcase_add_test(tc, test_interrupted_check_writes_a_cut_page);
    suite_add_tcase(s, tc);
    return s;
}
