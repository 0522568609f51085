/* Program bundles end to end (`repro submit -- PROGRAM`, `repro verify`):
 * a scratch repository of a small C program with its own Makefile, built
 * against the staged install (REPRO_STAGE), submitted with --build make,
 * and hostile variants of its bundle (an unsigned manifest can say
 * anything; the program takes its behaviour from its arguments):
 * - the genuine bundle is "reproduced" in the sandbox, with the host's
 *   score (the host's evaluator on the re-run's output) and the output's
 *   SHA-256 in the receipt;
 * - a declared output that is not the submitter's (a time stamp in it)
 *   is "outputs differ" with a signed receipt, and "reproduced" once the
 *   host declares it unscored (--unscored-output);
 * - the verifier's environment is nowhere in the sandbox's /proc (and,
 *   the control, the program finds it there with --no-sandbox);
 * - a claimed score above the host's is rejected naming both values, and
 *   the metric the program prints itself never becomes the host's score;
 * - an edited loss_value in the claimed trace is an error naming the step;
 * - a failing build command: "build failed", never "reproduced";
 * - a program that opens a network socket fails inside the sandbox (and,
 *   the negative control, connects and reproduces with --no-sandbox,
 *   which the receipt records);
 * - a grandchild that would outlive the program is killed with it;
 * - a program past --max-seconds is "exceeded limits"; one writing a host
 *   file outside its scratch directory fails in the sandbox (and, the
 *   control, writes it with --no-sandbox);
 * - without bubblewrap on PATH, verify exits 3 saying what to install;
 * - a dirty tree is refused without --allow-dirty and recorded with it;
 * - a manifest smuggling an environment variable (REPRO_DATA too), an
 *   absolute program, a malformed "data" digest or a symbolic link in the
 *   tree is an invalid submission. */
#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"

static char base[256], repo[512], bin[PATH_MAX], good[600], evalsh[600];
static char host_score[64]; /* what the evaluator says of the genuine output */

typedef struct {
    int rc;
    char out[1 << 16], err[1 << 16];
} result;
static result r;

/* Modes by argument: "ok" trains and writes model.txt; "stamp" also
 * writes the time into model.txt (an output that never reproduces);
 * "secret NAME" first looks for "NAME=" in every environ and cmdline
 * under /proc (exit 8 when found); "fill MIB" first
 * writes MIB MiB into its scratch directory; "alloc MIB" first allocates
 * and touches MIB MiB; "socket PORT"
 * first connects to 127.0.0.1:PORT (exit 4 when it cannot); "grandchild
 * MARKER" leaves the trace's end to a child that writes MARKER a second
 * after the program exited. Every mode prints a forged metric. */
static const char prog_c[] =
    "#include <arpa/inet.h>\n#include <errno.h>\n#include <netinet/in.h>\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#include <sys/socket.h>\n#include <unistd.h>\n#include <repro/repro.h>\n"
    "#include <dirent.h>\n#include <time.h>\n"
    "enum { N = 16 };\n"
    "static int leaks(const char *name)\n{\n"
    "    char want[200], p[300];\n    static char buf[1 << 16];\n"
    "    snprintf(want, sizeof want, \"%s=\", name);\n"
    "    DIR *d = opendir(\"/proc\");\n    struct dirent *e;\n    int found = 0;\n"
    "    while (d && !found && (e = readdir(d))) {\n"
    "        for (int k = 0; k < 2 && e->d_name[0] >= '1' && e->d_name[0] <= '9'; k++) {\n"
    "            snprintf(p, sizeof p, \"/proc/%s/%s\", e->d_name, k ? \"cmdline\" : \"environ\");\n"
    "            FILE *f = fopen(p, \"r\");\n            if (!f)\n                continue;\n"
    "            size_t n = fread(buf, 1, sizeof buf - 1, f);\n            fclose(f);\n"
    "            for (size_t i = 0; i < n; i++)\n                buf[i] = buf[i] ? buf[i] : ' ';\n"
    "            buf[n] = 0;\n"
    "            if (strstr(buf, want)) {\n"
    "                fprintf(stderr, \"the host's %s is in %s\\n\", name, p);\n"
    "                found = 1;\n                break;\n            }\n        }\n    }\n"
    "    if (d)\n        closedir(d);\n    return found;\n}\n"
    "static int net(const char *port)\n{\n"
    "    int s = socket(AF_INET, SOCK_STREAM, 0);\n"
    "    struct sockaddr_in a = {0};\n    a.sin_family = AF_INET;\n"
    "    a.sin_port = htons((unsigned short)atoi(port));\n"
    "    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n"
    "    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {\n"
    "        fprintf(stderr, \"no network: %s\\n\", strerror(errno));\n        return 4;\n    }\n"
    "    close(s);\n    return 0;\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    const char *mode = argc > 1 ? argv[1] : \"ok\";\n"
    "    if (!strcmp(mode, \"socket\") && net(argv[2]))\n        return 4;\n"
    "    if (!strcmp(mode, \"secret\") && leaks(argv[2]))\n        return 8;\n"
    "    if (!strcmp(mode, \"sleep\"))\n        sleep((unsigned)atoi(argv[2]));\n"
    "    if (!strcmp(mode, \"fill\")) {\n"
    "        FILE *o = fopen(\"fill.bin\", \"w\");\n"
    "        static char block[1 << 16];\n"
    "        for (long i = 0; o && i < atol(argv[2]) * 16; i++)\n"
    "            if (fwrite(block, 1, sizeof block, o) != sizeof block || fflush(o)) {\n"
    "                fprintf(stderr, \"cannot write fill.bin: %s\\n\", strerror(errno));\n"
    "                return 5;\n            }\n    }\n"
    "    if (!strcmp(mode, \"alloc\")) {\n"
    "        size_t n = (size_t)atol(argv[2]) << 20;\n"
    "        char *m = malloc(n);\n"
    "        if (!m) {\n            fprintf(stderr, \"Cannot allocate memory\\n\");\n"
    "            return 6;\n        }\n"
    "        memset(m, 1, n);\n        free(m);\n    }\n"
    "    if (!strcmp(mode, \"write\")) {\n"
    "        FILE *o = fopen(argv[2], \"w\");\n"
    "        if (!o || fputs(\"owned\\n\", o) < 0 || fclose(o)) {\n"
    "            fprintf(stderr, \"cannot write %s: %s\\n\", argv[2], strerror(errno));\n"
    "            return 5;\n        }\n    }\n"
    "    repro_run_env env;\n    if (repro_run_env_read(&env, 7))\n        return 3;\n"
    "    repro_generator g;\n    repro_generator_init(&g, env.seed);\n"
    "    float w[N], target[N], x[N];\n"
    "    for (int i = 0; i < N; i++) {\n        w[i] = 0.0f;\n"
    "        target[i] = repro_generator_unit(&g) - 0.5f;\n    }\n"
    "    repro_run_info info = {\"tinyfit\", env.seed, \"{}\"};\n"
    "    repro_recorder *r;\n    if (repro_recorder_open(&r, NULL, &info))\n        return 3;\n"
    "    int64_t shape[1] = {N};\n"
    "    for (long step = 1; step <= 4; step++) {\n"
    "        for (int i = 0; i < N; i++)\n            x[i] = repro_generator_unit(&g);\n"
    "        float err = 0.0f;\n"
    "        for (int i = 0; i < N; i++)\n            err += (w[i] - target[i]) * x[i];\n"
    "        for (int i = 0; i < N; i++)\n            w[i] -= 0.1f * err * x[i];\n"
    "        if (repro_recorder_tensor(r, \"param.w\", REPRO_F32, 1, shape, w) ||\n"
    "            repro_recorder_step(r, step, (double)(err * err)))\n            return 3;\n    }\n"
    "    FILE *f = fopen(\"model.txt\", \"w\");\n"
    "    for (int i = 0; i < N; i++)\n        fprintf(f, \"%.9g\\n\", w[i]);\n"
    "    if (!strcmp(mode, \"stamp\")) {\n        struct timespec ts;\n"
    "        clock_gettime(CLOCK_REALTIME, &ts);\n"
    "        fprintf(f, \"%ld.%09ld\\n\", (long)ts.tv_sec, ts.tv_nsec);\n    }\n"
    "    fclose(f);\n"
    "    printf(\"accuracy 0.99\\n\");\n"
    "    if (!strcmp(mode, \"grandchild\")) {\n"
    "        fflush(NULL);\n"
    "        if (fork() == 0) {\n            sleep(1);\n"
    "            FILE *m = fopen(argv[2], \"w\");\n            if (m)\n                fclose(m);\n"
    "            repro_recorder_close(r, NULL);\n            _exit(0);\n        }\n"
    "        _exit(0);\n    }\n"
    "    return repro_recorder_close(r, NULL) ? 3 : 0;\n}\n";

/* A shell command line in dir, with a TMPDIR of the test's own. */
static void sh_in(const char *dir, const char *line)
{
    char cmd[PATH_MAX + 6000], op[600], ep[600];
    snprintf(op, sizeof op, "%s/cmd.out", base);
    snprintf(ep, sizeof ep, "%s/cmd.err", base);
    snprintf(cmd, sizeof cmd, TU_GIT_ENV "cd '%s' && TMPDIR='%s' %s >'%s' 2>'%s' </dev/null",
             base, dir, base, line, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_slurp(op, r.out, sizeof r.out);
    tu_slurp(ep, r.err, sizeof r.err);
}

static void repro_in(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void repro_in(const char *dir, const char *fmt, ...)
{
    char args[4096], line[PATH_MAX + 4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "'%s' %s", bin, args);
    sh_in(dir, line);
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

/* base/NAME: a copy of the genuine bundle whose manifest `edit` changes
 * (an unsigned manifest: its author can write anything). */
static void variant(const char *name, void (*edit)(json_t *m, const char *arg), const char *arg,
                    char *out, size_t len)
{
    snprintf(out, len, "%s/%s", base, name);
    tu_git_sh("rm -rf '%s' && cp -r '%s' '%s'", out, good, out);
    char p[700];
    snprintf(p, sizeof p, "%s/manifest.json", out);
    json_t *m = load_json(p);
    edit(m, arg);
    ck_assert_int_eq(json_dump_file(m, p, JSON_INDENT(2)), 0);
    json_decref(m);
}

static void set_score(json_t *m, const char *v)
{
    json_object_set_new(m, "score", json_string(v));
}

static void set_build(json_t *m, const char *v)
{
    json_object_set_new(json_object_get(m, "program"), "build", json_string(v));
}

/* argv = ./prog MODE ARG ("MODE ARG" in v). */
static void set_argv(json_t *m, const char *v)
{
    char mode[64], arg[400];
    ck_assert_int_eq(sscanf(v, "%63s %399s", mode, arg), 2);
    json_object_set_new(json_object_get(m, "program"), "argv",
                        json_pack("[s, s, s]", "./prog", mode, arg));
}

static void add_env(json_t *m, const char *v)
{
    json_array_append_new(json_object_get(json_object_get(m, "program"), "env"), json_string(v));
}

/* "program"."data" = {"sha256": v, "files": 1, "bytes": 1}. */
static void set_data(json_t *m, const char *v)
{
    json_object_set_new(json_object_get(m, "program"), "data",
                        json_pack("{s:s, s:i, s:i}", "sha256", v, "files", 1, "bytes", 1));
}

static void set_argv0(json_t *m, const char *v)
{
    json_array_set_new(json_object_get(json_object_get(m, "program"), "argv"), 0,
                       json_string(v));
}

/* Verifies bundle with extra options; the receipt in base/receipt.json. */
static json_t *verify(const char *bundle, const char *extra)
{
    char rp[600];
    snprintf(rp, sizeof rp, "%s/receipt.json", base);
    unlink(rp);
    repro_in(base, "verify '%s' -o '%s' %s", bundle, rp, extra);
    return access(rp, F_OK) == 0 ? load_json(rp) : NULL;
}

static const char *str_at(json_t *j, const char *a, const char *b)
{
    json_t *v = json_object_get(j, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

static void suite_setup(void)
{
    tu_tmp_template(base, sizeof base, "submit-prog");
    ck_assert_ptr_nonnull(mkdtemp(base));
    tu_git_home(base);
    const char *b = getenv("REPRO_BIN"), *stage = getenv("REPRO_STAGE");
    ck_assert_msg(realpath(b ? b : "./build/repro", bin) != NULL, "no repro binary to test");
    ck_assert_msg(stage && *stage, "REPRO_STAGE is not set: run the suite through `make check`");
    snprintf(repo, sizeof repo, "%s/repo", base);
    tu_git_init(repo);
    tu_git_write(repo, "prog.c", "w", prog_c);
#if defined(__SANITIZE_ADDRESS__)
    const char *san = " -fsanitize=address,undefined";
#else
    const char *san = "";
#endif
    char mk[1024];
    snprintf(mk, sizeof mk,
             "STAGE = %s\nprog: prog.c\n\t$(CC) -std=c11 -D_GNU_SOURCE -O2%s -o $@ prog.c "
             "-I$(STAGE)/include -L$(STAGE)/lib -Wl,-rpath,$(STAGE)/lib -lrepro\n",
             stage, san);
    tu_git_write(repo, "Makefile", "w", mk);
    tu_git_write(repo, ".gitignore", "w", "prog\nmodel.txt\n");
    tu_git_commit_all(repo, "tinyfit", NULL);
    /* The host's evaluator: the sum of squares of the weights. */
    snprintf(evalsh, sizeof evalsh, "%s/eval.sh", base);
    tu_git_write(base, "eval.sh", "w",
                 "#!/bin/sh\nawk '{s += $1 * $1} END {printf \"%.6f\\n\", s}' \"$1\"\n");
    ck_assert_int_eq(chmod(evalsh, 0755), 0);
    snprintf(good, sizeof good, "%s/good", base);
    repro_in(repo, "submit -o '%s' --build make --program-output model.txt -- ./prog ok", good);
    ck_assert_msg(r.rc == 0, "submit: rc %d\n%s\n%s", r.rc, r.out, r.err);
    tu_git_capture(host_score, sizeof host_score, "'%s' '%s/outputs/model.txt'", evalsh, good);
    /* The genuine claim is the host's own number. */
    char p[700];
    snprintf(p, sizeof p, "%s/manifest.json", good);
    json_t *m = load_json(p);
    set_score(m, host_score);
    ck_assert_int_eq(json_dump_file(m, p, JSON_INDENT(2)), 0);
    json_decref(m);
}

static void suite_teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (base[0] && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", base);
}

START_TEST(test_submit_packs_the_program)
{
    char p[700];
    snprintf(p, sizeof p, "%s/manifest.json", good);
    json_t *m = load_json(p), *prog = json_object_get(m, "program");
    ck_assert_ptr_null(json_object_get(m, "config"));
    ck_assert_str_eq(json_string_value(json_object_get(prog, "build")), "make");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(prog, "argv"), 0)),
                     "./prog");
    ck_assert(json_is_false(json_object_get(prog, "dirty")));
    ck_assert_str_eq(str_at(prog, "cwd", NULL), "");
    json_t *o = json_array_get(json_object_get(prog, "outputs"), 0);
    ck_assert_str_eq(str_at(o, "path", NULL), "model.txt");
    /* The packed tree is the commit's: sources and Makefile, no build
     * products (ignored), no output. */
    snprintf(p, sizeof p, "%s/tree/prog.c", good);
    ck_assert_int_eq(access(p, R_OK), 0);
    snprintf(p, sizeof p, "%s/tree/prog", good);
    ck_assert_int_ne(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/tree/model.txt", good);
    ck_assert_int_ne(access(p, F_OK), 0);
    json_decref(m);
}
END_TEST

START_TEST(test_genuine_bundle_reproduces_with_host_score)
{
    char extra[700];
    snprintf(extra, sizeof extra, "--score '%s'", evalsh);
    json_t *rc = verify(good, extra);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, ": reproduced\n"));
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "reproduced");
    ck_assert_str_eq(str_at(rc, "score", "host"), host_score);
    ck_assert_str_eq(str_at(rc, "score", "claimed"), host_score);
    json_t *prog = json_object_get(rc, "program");
    ck_assert(json_is_false(json_object_get(prog, "no_sandbox")));
    ck_assert_ptr_nonnull(strstr(str_at(prog, "sandbox", NULL), "address space"));
    ck_assert_str_eq(str_at(prog, "build_status", NULL), "exited 0");
    json_t *o = json_array_get(json_object_get(prog, "outputs"), 0);
    char want[65];
    tu_git_capture(want, sizeof want, "sha256sum '%s/outputs/model.txt' | cut -c1-64", good);
    ck_assert_str_eq(str_at(o, "sha256", NULL), want);
    ck_assert(json_is_true(json_object_get(o, "identical")));
    ck_assert(json_is_false(json_object_get(o, "unscored")));
    json_decref(rc);
}
END_TEST

/* A declared output that does not reproduce (it holds the time it was
 * written) is "outputs differ", exit 1, with a signed receipt, the output
 * named in the reason; the control: the host declaring it unscored gets
 * "reproduced", and the receipt still says the output is not the
 * submitter's. */
START_TEST(test_output_that_differs_is_not_reproduced)
{
    char b[600], extra[1200];
    snprintf(b, sizeof b, "%s/stamped", base);
    repro_in(repo, "submit -o '%s' --build make --program-output model.txt -- ./prog stamp", b);
    ck_assert_msg(r.rc == 0, "submit: rc %d\n%s", r.rc, r.err);
    repro_in(base, "keygen -o '%s/stamp-host.pem'", base);
    ck_assert_int_eq(r.rc, 0);
    snprintf(extra, sizeof extra, "--key '%s/stamp-host.pem'", base);
    json_t *rc = verify(b, extra);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "outputs differ");
    ck_assert_ptr_nonnull(strstr(r.out, ": outputs differ\n"));
    ck_assert_msg(strstr(r.out, "the declared output 'model.txt' is not the submitter's"), "%s",
                  r.out);
    json_t *o = json_array_get(json_object_get(json_object_get(rc, "program"), "outputs"), 0);
    ck_assert(json_is_false(json_object_get(o, "identical")));
    ck_assert(json_is_false(json_object_get(o, "unscored")));
    /* The training itself reproduced: only the output did not. */
    ck_assert_str_eq(str_at(rc, "digests", NULL), "identical");
    json_decref(rc);
    repro_in(base, "verify-receipt '%s/receipt.json' --pub '%s/stamp-host.pem.pub'", base, base);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "verdict: outputs differ"));
    rc = verify(b, "--unscored-output model.txt");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "reproduced");
    o = json_array_get(json_object_get(json_object_get(rc, "program"), "outputs"), 0);
    ck_assert(json_is_false(json_object_get(o, "identical")));
    ck_assert(json_is_true(json_object_get(o, "unscored")));
    ck_assert_ptr_nonnull(strstr(r.out, "(not the submitter's) (unscored: --unscored-output)"));
    json_decref(rc);
}
END_TEST

/* The verifier's environment is nowhere in the sandbox's /proc (issue
 * 48): with REPRO_TEST_SECRET set for `repro verify`, a program looking
 * for it in every environ and cmdline there reproduces; the control,
 * unsandboxed, finds it in the verifier's own /proc entry and fails. */
START_TEST(test_host_environment_is_not_in_the_sandbox)
{
    char b[600], line[PATH_MAX + 1400], rp[600];
    variant("secret", set_argv, "secret REPRO_TEST_SECRET", b, sizeof b);
    snprintf(rp, sizeof rp, "%s/receipt.json", base);
    for (int plain = 0; plain < 2; plain++) {
        snprintf(line, sizeof line, "REPRO_TEST_SECRET=host-only-%ld '%s' verify '%s' -o '%s' %s",
                 (long)getpid(), bin, b, rp, plain ? "--no-sandbox" : "");
        sh_in(base, line);
        if (!plain) {
            ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
        } else {
            ck_assert_msg(r.rc == 1, "the control: rc %d\n%s\n%s", r.rc, r.out, r.err);
            ck_assert_msg(strstr(r.out, "the host's REPRO_TEST_SECRET is in /proc/"), "%s", r.out);
        }
    }
}
END_TEST

START_TEST(test_higher_claim_is_rejected_and_printed_metric_ignored)
{
    char b[600], extra[1200];
    /* 0.99 is what the program prints as its own "accuracy". */
    variant("high", set_score, "0.99", b, sizeof b);
    snprintf(extra, sizeof extra, "--score '%s'", evalsh);
    json_t *rc = verify(b, extra);
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "score mismatch");
    ck_assert_str_eq(str_at(rc, "score", "host"), host_score);
    ck_assert_str_ne(host_score, "0.99");
    char want[200];
    snprintf(want, sizeof want, "the claimed score 0.99 is not the host's score %s", host_score);
    ck_assert_msg(strstr(r.out, want), "no '%s' in:\n%s", want, r.out);
    json_decref(rc);
    /* A signed receipt of the new verdict checks. */
    repro_in(base, "keygen -o '%s/host.pem'", base);
    ck_assert_int_eq(r.rc, 0);
    snprintf(extra, sizeof extra, "--score '%s' --key '%s/host.pem'", evalsh, base);
    json_decref(verify(b, extra));
    ck_assert_int_eq(r.rc, 1);
    repro_in(base, "verify-receipt '%s/receipt.json' --pub '%s/host.pem.pub'", base, base);
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "verdict: score mismatch"));
    snprintf(extra, sizeof extra, "--score '%s'", evalsh);
    /* A claim made by submit itself goes the same way. */
    snprintf(b, sizeof b, "%s/claimed", base);
    repro_in(repo, "submit -o '%s' --build make --program-output model.txt --claim-score 1.5 -- "
                   "./prog ok",
             b);
    ck_assert_msg(r.rc == 0, "submit: %s", r.err);
    rc = verify(b, extra);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(str_at(rc, "score", "claimed"), "1.5");
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "score mismatch");
    json_decref(rc);
}
END_TEST

START_TEST(test_edited_loss_value_names_the_step)
{
    char b[600];
    variant("lossedit", set_score, host_score, b, sizeof b);
    /* step 2's loss (float32 bits: every step has them, detail or not) */
    tu_git_sh("sed -i '3s/\"loss\":\"0x[0-9a-f]*\"/\"loss\":\"0x3f000000\"/' '%s/trace.jsonl'",
              b);
    json_t *rc = verify(b, "");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict_text", NULL), "diverged at step 2");
    ck_assert_msg(strstr(r.out, "the claimed loss is \"0x3f000000\""), "%s", r.out);
    json_decref(rc);
}
END_TEST

START_TEST(test_failing_build_is_not_reproduced)
{
    char b[600];
    variant("badbuild", set_build, "echo cannot build >&2; exit 7", b, sizeof b);
    json_t *rc = verify(b, "");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "build failed");
    ck_assert_str_eq(str_at(json_object_get(rc, "program"), "build_status", NULL), "exited 7");
    ck_assert_ptr_nonnull(strstr(r.out, "cannot build"));
    ck_assert_str_eq(str_at(json_object_get(rc, "program"), "run_status", NULL), "not run");
    json_decref(rc);
}
END_TEST

START_TEST(test_network_is_cut_in_the_sandbox)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s, 16), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &al), 0);
    char arg[64], b[600];
    snprintf(arg, sizeof arg, "socket %d", ntohs(a.sin_port));
    variant("net", set_argv, arg, b, sizeof b);
    json_t *rc = verify(b, "");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "run failed");
    ck_assert_ptr_nonnull(strstr(r.out, "no network"));
    json_decref(rc);
    /* The control: unsandboxed, the same program reaches the host's port
     * and reproduces; the receipt says it ran without a sandbox. */
    rc = verify(b, "--no-sandbox");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert(json_is_true(json_object_get(json_object_get(rc, "program"), "no_sandbox")));
    ck_assert_ptr_nonnull(strstr(str_at(json_object_get(rc, "program"), "sandbox", NULL),
                                 "NO SANDBOX"));
    json_decref(rc);
    close(s);
}
END_TEST

static void check_grandchild(const char *extra)
{
    char b[600], marker[600], arg[700];
    snprintf(marker, sizeof marker, "%s/grandchild-was-here", base);
    unlink(marker);
    snprintf(arg, sizeof arg, "grandchild %s", marker);
    variant("gc", set_argv, arg, b, sizeof b);
    json_t *rc = verify(b, extra);
    ck_assert_msg(r.rc == 1, "%s: rc %d\n%s\n%s", extra, r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "run failed");
    ck_assert_ptr_nonnull(strstr(r.out, "cut short"));
    sleep(2); /* the grandchild would have written by now */
    ck_assert_msg(access(marker, F_OK) != 0, "%s: the grandchild outlived the program", extra);
    json_decref(rc);
}

START_TEST(test_grandchild_dies_with_the_program)
{
    check_grandchild("");
    check_grandchild("--no-sandbox");
}
END_TEST

START_TEST(test_time_limit_and_writes_outside_scratch)
{
    char b[600], target[600], arg[700];
    variant("slow", set_argv, "sleep 30", b, sizeof b);
    json_t *rc = verify(b, "--max-seconds 3");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "exceeded limits");
    ck_assert_ptr_nonnull(strstr(r.out, "limit"));
    json_decref(rc);
    /* A host file outside the scratch directory: the write fails in the
     * sandbox, or lands in its private /tmp (this test's directory is
     * under TMPDIR), never on the host; the control writes it
     * unsandboxed. */
    snprintf(target, sizeof target, "%s/host-file", base);
    unlink(target);
    snprintf(arg, sizeof arg, "write %s", target);
    variant("writer", set_argv, arg, b, sizeof b);
    rc = verify(b, "");
    ck_assert_msg(r.rc == 0 || r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(access(target, F_OK) != 0, "the sandboxed program wrote %s", target);
    json_decref(rc);
    rc = verify(b, "--no-sandbox");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_int_eq(access(target, F_OK), 0);
    json_decref(rc);
}
END_TEST

/* A program that fills the disk is ended by the file-size limit, and one
 * that allocates past --max-memory fails: neither is "reproduced". The
 * controls: under limits above what they take, both reproduce. */
START_TEST(test_disk_and_memory_limits)
{
    char b[600];
    variant("filler", set_argv, "fill 8", b, sizeof b);
    json_t *rc = verify(b, "--max-file-size 1M");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(!strcmp(str_at(rc, "verdict", NULL), "exceeded limits"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "file size"), "%s", r.out);
    json_decref(rc);
    rc = verify(b, "--max-file-size 64M");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    json_decref(rc);
    /* The total: 8 MiB in a scratch directory of 2 MiB (where this host
     * can mount the tmpfs that caps it; the receipt says which). */
    rc = verify(b, "--max-file-size 64M --max-disk 2M");
    const char *sb = str_at(json_object_get(rc, "program"), "sandbox", NULL);
    if (sb && strstr(sb, "total size NOT limited")) {
        fprintf(stderr, "submit_program: --max-disk not checked: %s\n", sb);
    } else {
        ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
        ck_assert_msg(!strcmp(str_at(rc, "verdict", NULL), "exceeded limits"), "%s", r.out);
        ck_assert_msg(strstr(r.out, "disk limit (2.0 MiB)"), "%s", r.out);
        ck_assert_msg(sb && strstr(sb, "scratch 2.0 MiB in all (tmpfs)"), "%s", sb);
    }
    json_decref(rc);
#if !defined(__SANITIZE_ADDRESS__)
    /* (a sanitizer build runs its re-runs with no address-space limit) */
    variant("hog", set_argv, "alloc 1024", b, sizeof b);
    rc = verify(b, "--max-memory 256M");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strcmp(str_at(rc, "verdict", NULL), "reproduced"), "%s", r.out);
    json_decref(rc);
    rc = verify(b, "--max-memory 3G");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    json_decref(rc);
#else
    tu_skip("submit_program", "an ASan build: its re-runs have no address-space limit to exceed");
#endif
}
END_TEST

START_TEST(test_without_bubblewrap_exit_3)
{
    char rp[600];
    snprintf(rp, sizeof rp, "%s/receipt.json", base);
    unlink(rp);
    char line[PATH_MAX + 1400];
    snprintf(line, sizeof line, "PATH=/nonexistent '%s' verify '%s' -o '%s'", bin, good, rp);
    sh_in(base, line);
    ck_assert_msg(r.rc == 3, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "install bubblewrap"));
    ck_assert_ptr_nonnull(strstr(r.err, "bubblewrap"));
    ck_assert_int_ne(access(rp, F_OK), 0);
}
END_TEST

/* The submitter's class, as a CUDA class (and the fingerprint's, which
 * must agree). */
static void set_class(json_t *m, const char *v)
{
    json_object_set_new(m, "env_class", json_string(v));
    json_object_set_new(json_object_get(m, "env"), "class", json_string(v));
}

/* A GPU program bundle (--gpu, or a CUDA class) on a host without NVIDIA
 * device nodes: refused before anything runs, exit 3, no receipt, naming
 * the missing nodes. Skipped on a host that has them. The control: the
 * same bundle without --gpu reproduces (test_genuine_bundle_...). */
START_TEST(test_gpu_bundle_without_gpu_exit_3)
{
    struct stat st;
    if (stat("/dev/nvidia0", &st) == 0 && S_ISCHR(st.st_mode)) {
        tu_skip("submit_program", "this host has /dev/nvidia0: no refusal to see");
        return;
    }
    char rp[600], b[600];
    snprintf(rp, sizeof rp, "%s/receipt.json", base);
    json_t *rc = verify(good, "--gpu");
    ck_assert_msg(r.rc == 3 && !rc, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.err, "needs a GPU (--gpu), and this host has none to give it: no "
                                "NVIDIA GPU device nodes: /dev/nvidia0 (no nvidiaN device), "
                                "/dev/nvidiactl, /dev/nvidia-uvm missing"),
                  "%s", r.err);
    variant("cuda", set_class, "cuda-x86_64-0123456789ab", b, sizeof b);
    rc = verify(b, "");
    ck_assert_msg(r.rc == 3 && !rc, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_msg(strstr(r.err, "needs a GPU (its environment class is a CUDA one)") &&
                      strstr(r.err, "/dev/nvidia0"),
                  "%s", r.err);
    rc = verify(b, "--no-sandbox"); /* unsandboxed it could not run either */
    ck_assert_msg(r.rc == 3 && !rc, "rc %d\n%s\n%s", r.rc, r.out, r.err);
}
END_TEST

START_TEST(test_dirty_tree_needs_allow_dirty)
{
    char b[600], p[700];
    tu_git_write(repo, "NOTES", "w", "uncommitted\n");
    snprintf(b, sizeof b, "%s/dirty", base);
    repro_in(repo, "submit -o '%s' -- ./prog ok", b);
    ck_assert_msg(r.rc == 2, "rc %d\n%s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "uncommitted changes"));
    ck_assert_ptr_nonnull(strstr(r.err, "NOTES"));
    repro_in(repo, "submit -o '%s' --allow-dirty -- ./prog ok", b);
    ck_assert_msg(r.rc == 0, "rc %d\n%s", r.rc, r.err);
    snprintf(p, sizeof p, "%s/manifest.json", b);
    json_t *m = load_json(p);
    ck_assert(json_is_true(json_object_get(json_object_get(m, "program"), "dirty")));
    json_decref(m);
    snprintf(p, sizeof p, "%s/tree/NOTES", b);
    ck_assert_int_eq(access(p, R_OK), 0);
    tu_git_sh("rm -f '%s/NOTES'", repo);
}
END_TEST

static void expect_invalid(const char *b, const char *msg)
{
    json_t *rc = verify(b, "");
    ck_assert_msg(r.rc == 2, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "invalid submission");
    ck_assert_msg(strstr(r.err, msg), "no '%s' in:\n%s", msg, r.err);
    json_decref(rc);
}

START_TEST(test_hostile_manifests_are_invalid)
{
    char b[600];
    variant("env", add_env, "LD_PRELOAD=/tmp/evil.so", b, sizeof b);
    expect_invalid(b, "LD_PRELOAD");
    variant("fault", add_env, "REPRO_FAULT=step:2", b, sizeof b);
    expect_invalid(b, "REPRO_FAULT");
    variant("abs", set_argv0, "/bin/sh", b, sizeof b);
    expect_invalid(b, "not an absolute path");
    /* The data directory is the host's to name (--data), never the bundle's. */
    variant("data-env", add_env, "REPRO_DATA=/etc", b, sizeof b);
    expect_invalid(b, "REPRO_DATA");
    variant("data-digest", set_data, "not-a-digest", b, sizeof b);
    expect_invalid(b, "\"program\".\"data\" must be {\"sha256\": 64 hex");
    variant("link", set_score, host_score, b, sizeof b);
    tu_git_sh("ln -s /etc '%s/tree/etc'", b);
    expect_invalid(b, "symbolic link");
}
END_TEST

/* An experiment's host score is repro's own eval of the re-run. */
START_TEST(test_experiment_score_is_the_rerun_eval)
{
    char ini[600], b[600];
    snprintf(ini, sizeof ini, "%s/tiny.ini", base);
    tu_git_write(base, "tiny.ini", "w",
                 "[model]\ntype = mlp\nhidden = 16\n\n[data]\ndataset = synthetic\n"
                 "train_size = 256\ntest_size = 64\n\n[train]\nsteps = 6\neval_every = 3\n");
    snprintf(b, sizeof b, "%s/exp-high", base);
    repro_in(base, "submit '%s' -o '%s' --claim-score 0.99 -q", ini, b);
    ck_assert_msg(r.rc == 0, "submit: %s", r.err);
    json_t *rc = verify(b, "");
    ck_assert_msg(r.rc == 1, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "score mismatch");
    char host[32];
    snprintf(host, sizeof host, "%s", str_at(rc, "score", "host"));
    ck_assert_str_eq(host, str_at(json_object_get(rc, "rerun_metrics"), "eval_accuracy", NULL));
    ck_assert_str_eq(str_at(rc, "score", "by"), "repro's eval_accuracy of the re-run");
    json_decref(rc);
    snprintf(b, sizeof b, "%s/exp-true", base);
    repro_in(base, "submit '%s' -o '%s' --claim-score %s -q", ini, b, host);
    ck_assert_msg(r.rc == 0, "submit: %s", r.err);
    rc = verify(b, "");
    ck_assert_msg(r.rc == 0, "rc %d\n%s\n%s", r.rc, r.out, r.err);
    ck_assert_str_eq(str_at(rc, "score", "claimed"), host);
    ck_assert(json_is_null(json_object_get(rc, "program")));
    json_decref(rc);
}
END_TEST

Suite *submit_program_suite(void)
{
    Suite *s = suite_create("submit_program");
    TCase *tc = tcase_create("program bundles");
    tcase_set_timeout(tc, 240);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_submit_packs_the_program);
    tcase_add_test(tc, test_genuine_bundle_reproduces_with_host_score);
    tcase_add_test(tc, test_output_that_differs_is_not_reproduced);
    tcase_add_test(tc, test_host_environment_is_not_in_the_sandbox);
    tcase_add_test(tc, test_higher_claim_is_rejected_and_printed_metric_ignored);
    tcase_add_test(tc, test_edited_loss_value_names_the_step);
    tcase_add_test(tc, test_failing_build_is_not_reproduced);
    tcase_add_test(tc, test_network_is_cut_in_the_sandbox);
    tcase_add_test(tc, test_grandchild_dies_with_the_program);
    tcase_add_test(tc, test_time_limit_and_writes_outside_scratch);
    tcase_add_test(tc, test_disk_and_memory_limits);
    tcase_add_test(tc, test_without_bubblewrap_exit_3);
    tcase_add_test(tc, test_gpu_bundle_without_gpu_exit_3);
    tcase_add_test(tc, test_dirty_tree_needs_allow_dirty);
    tcase_add_test(tc, test_hostile_manifests_are_invalid);
    tcase_add_test(tc, test_experiment_score_is_the_rerun_eval);
    suite_add_tcase(s, tc);
    return s;
}
