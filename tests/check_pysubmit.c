/* A PyTorch submission end to end (issue 54): tests/python/submit_fit.py,
 * committed in a repository of its own, submitted with `python3 fit.py`
 * (PATH reaching /usr/bin/python3 first) and verified in the sandbox.
 *
 * The default install cannot be made for real by a test (it would write
 * /usr/local for good), so the Makefile stages one laid out exactly as
 * `make install` lays it out for PREFIX=/usr/local (under a DESTDIR,
 * REPRO_STAGE_DEFAULT), and the tests that need it run inside a mount
 * namespace (bwrap --dev-bind / /) where that stage's lib/ is bound over
 * /usr/local/lib: /usr/bin/python3 then finds the client where it looks for
 * /usr/local with no variable set, as after a real `make install`. The
 * custom prefix is REPRO_STAGE (PREFIX=build/stage, which python3 does not
 * search), with no PYTHONPATH at verify.
 *
 * - the install puts the client where python3 searches for /usr/local, and
 *   says what to set for a prefix it does not search (/opt/x);
 * - a client installed with pip in a fresh virtualenv finds the default
 *   prefix's librepro, by its soname in the loader's cache too;
 * - the bundle is "reproduced" (exit 0) by the default install and by the
 *   custom-prefix one, the receipt naming the verifier's client the program
 *   got and the client that wrote the claim;
 * - an edited claim (a halved loss_value) is refused;
 * - a tree carrying its own repro package reproduces with a receipt that
 *   says so (and the genuine one's says none: the control);
 * - a claim of another client protocol, or a verifier without a client, is
 *   refused before anything runs (exit 3);
 * - with --data, the outputs come from the host's data and are scored there
 *   (the receipt records both data directories' digests).
 * Skipped, saying why, without /usr/bin/python3 with PyTorch, without
 * bubblewrap, and in sanitizer builds (python3 cannot load their librepro). */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gitfixture.h"
#include "testutil.h"
#include "util/sandbox.h"
#include "util/version.h"

static char base[256], bin[PATH_MAX], repo[600], bundle[700], checkout[PATH_MAX];
static char stage[1024], def_prefix[1024], def_rel[512], skip_why[400];

typedef struct {
    int rc;
    char out[1 << 16];
} result;
static result r;

/* A shell line (stdout and stderr together into r), in the git fixture's
 * environment, with /usr/bin first on PATH. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char line[12000], cmd[14000], op[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(op, sizeof op, "%s/sh.out", base);
    snprintf(cmd, sizeof cmd,
             TU_GIT_ENV "export PATH=/usr/bin:/bin:$PATH; unset PYTHONPATH LD_LIBRARY_PATH; "
                        "( %s ) >'%s' 2>&1 </dev/null",
             base, line, op);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    tu_slurp(op, r.out, sizeof r.out);
}

/* The same line inside a mount namespace where the default-layout stage
 * stands for /usr/local (its lib/ over /usr/local/lib, its bin/ first on
 * PATH), no REPRO_LIB: as after `make install`. extra: more bwrap options. */
static void in_default(const char *extra, const char *line)
{
    char script[600], text[6000];
    snprintf(script, sizeof script, "%s/in-default.sh", base);
    snprintf(text, sizeof text, "unset REPRO_LIB\nPATH=%s/bin:/usr/bin:/bin\n%s\n", def_prefix,
             line);
    tu_git_write(base, "in-default.sh", "w", text);
    sh("bwrap --dev-bind / / --ro-bind '%s/lib' /usr/local/lib %s -- /bin/sh '%s'", def_prefix,
       extra, script);
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

static const char *str_at(json_t *j, const char *a, const char *b)
{
    json_t *v = json_object_get(j, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

/* Why this suite cannot run here ("" when it can). */
static const char *cannot_run(void)
{
    const char *lib = getenv("REPRO_LIB");
    char why[300];
    if (lib && !*lib)
        return "a sanitizer build (python3 cannot load its librepro)";
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        return "no PyTorch for /usr/bin/python3";
    if (!repro_sandbox_available(why, sizeof why)) {
        snprintf(skip_why, sizeof skip_why, "no sandbox: %s", why);
        return skip_why;
    }
    return "";
}

#define NEED_PYTORCH_AND_BWRAP()                                                       \
    do {                                                                               \
        if (skip_why[0]) {                                                             \
            tu_skip("pysubmit", "%s: %s", __func__, skip_why);       \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* A repository holding fit.py (and `files`, "name=text" pairs), committed. */
static void make_repo(const char *dir, const char *const *files)
{
    char fit[1 << 14];
    tu_slurp("tests/python/submit_fit.py", fit, sizeof fit);
    ck_assert_msg(fit[0], "tests/python/submit_fit.py: run from the checkout");
    tu_git_init(dir);
    tu_git_write(dir, "fit.py", "w", fit);
    tu_git_write(dir, ".gitignore", "w", "preds.txt\n__pycache__/\n");
    for (int i = 0; files && files[i]; i += 2)
        tu_git_write(dir, files[i], "w", files[i + 1]);
    tu_git_commit_all(dir, "fit", NULL);
}

static void suite_setup(void)
{
    tu_git_scratch(base, sizeof base, "pysubmit", bin);
    ck_assert_ptr_nonnull(getcwd(checkout, sizeof checkout));
    const char *s = getenv("REPRO_STAGE"), *d = getenv("REPRO_STAGE_DEFAULT");
    ck_assert_msg(s && *s && d && *d,
                  "REPRO_STAGE or REPRO_STAGE_DEFAULT is not set: run the suite through "
                  "`make check`");
    snprintf(stage, sizeof stage, "%s", s);
    snprintf(def_prefix, sizeof def_prefix, "%s/usr/local", d);
    char marker[PATH_MAX + 40];
    snprintf(marker, sizeof marker, "%s/share/repro/python-site", def_prefix);
    tu_slurp(marker, def_rel, sizeof def_rel);
    def_rel[strcspn(def_rel, "\n")] = '\0';
    snprintf(skip_why, sizeof skip_why, "%s", cannot_run());
    if (skip_why[0])
        return;
    /* Submitted with the default install: python3 imports its client with
     * no variable set. */
    snprintf(repo, sizeof repo, "%s/repo", base);
    snprintf(bundle, sizeof bundle, "%s/bundle", base);
    make_repo(repo, NULL);
    char line[2000];
    snprintf(line, sizeof line,
             "cd %s && repro submit -o %s --program-output preds.txt -- python3 fit.py", repo,
             bundle);
    in_default("", line);
    ck_assert_msg(r.rc == 0, "submit: exit %d\n%s", r.rc, r.out);
}

static void suite_teardown(void)
{
    tu_git_scratch_remove(base);
}

/* The default install's client is where /usr/bin/python3 looks for
 * /usr/local, and imports with no variable set; install-client.sh says
 * what to set for /opt/x (not searched) and to run ldconfig later under a
 * DESTDIR; the custom-prefix stage is not on python3's path. */
START_TEST(test_install_puts_the_client_where_python_looks)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        tu_skip("pysubmit", "%s: no /usr/bin/python3", __func__);
        return;
    }
    ck_assert_msg(def_rel[0] && def_rel[0] != '/', "python-site: '%s'", def_rel);
    sh("/usr/bin/python3 -c 'import sys; print(\"\\n\".join(sys.path))'");
    char want[4096];
    snprintf(want, sizeof want, "\n/usr/local/%s\n", def_rel);
    ck_assert_msg(strstr(r.out, want), "/usr/local/%s is not on python3's path:\n%s", def_rel,
                  r.out);
    char stage_rel[512], marker[PATH_MAX + 40];
    snprintf(marker, sizeof marker, "%s/share/repro/python-site", stage);
    tu_slurp(marker, stage_rel, sizeof stage_rel);
    stage_rel[strcspn(stage_rel, "\n")] = '\0';
    snprintf(want, sizeof want, "\n%s/%s\n", stage, stage_rel);
    ck_assert_msg(!strstr(r.out, want), "the custom prefix is searched?\n%s", r.out);

    sh("cd '%s' && scripts/install-client.sh /usr/bin/python3 /opt/x '%s/optx' "
       "python/repro/*.py",
       checkout, base);
    ck_assert_msg(r.rc == 0, "exit %d\n%s", r.rc, r.out);
    ck_assert_msg(strstr(r.out, "does not search it:\n    export PYTHONPATH=/opt/x/lib/python3."),
                  "%s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "export REPRO_LIB=/opt/x/lib/librepro.so"));
    sh("cd '%s' && scripts/install-client.sh /usr/bin/python3 /usr/local '%s/dd' "
       "python/repro/*.py",
       checkout, base);
    snprintf(want, sizeof want, "searches /usr/local/%s: `import repro` needs no variable",
             def_rel);
    ck_assert_msg(r.rc == 0 && strstr(r.out, want), "exit %d\n%s", r.rc, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "DESTDIR is set: run `ldconfig`"));

    NEED_PYTORCH_AND_BWRAP();
    in_default("", "cd / && /usr/bin/python3 -c 'import repro, repro.torch; "
                   "print(repro.__file__, repro.LIBRARY)'");
    snprintf(want, sizeof want, "/usr/local/%s/repro/__init__.py /usr/local/lib/librepro.so\n",
             def_rel);
    ck_assert_msg(r.rc == 0 && !strcmp(r.out, want), "exit %d, want %s:\n%s", r.rc, want,
                  r.out);
}
END_TEST

/* `pip install ./python` in a fresh virtualenv (offline: the system's
 * setuptools and wheel, --system-site-packages) finds the default
 * prefix's library with no variable: at /usr/local/lib before ldconfig,
 * and by its soname once the loader's cache lists it (a cache made with
 * the staged library, bound on /etc/ld.so.cache). */
START_TEST(test_pip_client_finds_the_default_library)
{
    NEED_PYTORCH_AND_BWRAP();
    sh("cp -r '%s/python' '%s/pysrc' && /usr/bin/python3 -m venv --system-site-packages "
       "'%s/venv' && '%s/venv/bin/pip' install -q --no-build-isolation --no-index '%s/pysrc'",
       checkout, base, base, base, base);
    ck_assert_msg(r.rc == 0, "pip: exit %d\n%s", r.rc, r.out);
    char line[1200], want[1024];
    snprintf(line, sizeof line,
             "cd / && %s/venv/bin/python -c \"import repro; print(repro.__file__, "
             "repro.LIBRARY)\"",
             base);
    in_default("", line);
    snprintf(want, sizeof want, "%s/venv/lib/", base);
    ck_assert_msg(r.rc == 0 && strstr(r.out, want) &&
                      strstr(r.out, " /usr/local/lib/librepro.so.0\n"),
                  "exit %d\n%s", r.rc, r.out);
    sh("ldconfig -C '%s/ld.so.cache' -f /etc/ld.so.conf '%s/lib'", base, def_prefix);
    ck_assert_msg(r.rc == 0, "ldconfig: %s", r.out);
    char extra[600];
    snprintf(extra, sizeof extra, "--ro-bind '%s/ld.so.cache' /etc/ld.so.cache", base);
    in_default(extra, line);
    ck_assert_msg(r.rc == 0 && strstr(r.out, " librepro.so.0\n"), "exit %d\n%s", r.rc, r.out);
}
END_TEST

/* Verifies b with the repro found first on PATH in the default stand-in
 * (repro_cmd NULL) or with repro_cmd, no PYTHONPATH; the receipt. */
static json_t *verify(const char *b, const char *repro_cmd, const char *extra)
{
    char rp[800], line[8000];
    snprintf(rp, sizeof rp, "%s/receipt.json", base);
    unlink(rp);
    snprintf(line, sizeof line, "cd %s && %s verify %s -o %s %s", base,
             repro_cmd ? repro_cmd : "repro", b, rp, extra ? extra : "");
    if (repro_cmd)
        sh("%s", line);
    else
        in_default("", line);
    return access(rp, F_OK) == 0 ? load_json(rp) : NULL;
}

static void assert_reproduced(json_t *rc, const char *client_dir)
{
    ck_assert_msg(r.rc == 0 && strstr(r.out, ": reproduced\n"), "exit %d\n%s", r.rc, r.out);
    ck_assert_str_eq(str_at(rc, "verdict", NULL), "reproduced");
    json_t *c = json_object_get(json_object_get(rc, "program"), "python_client");
    char want[200];
    snprintf(want, sizeof want, "repro-python %s", REPRO_VERSION);
    ck_assert_str_eq(str_at(c, "claimed", NULL), want);
    ck_assert_int_eq(json_integer_value(json_object_get(c, "claimed_protocol")),
                     REPRO_CLIENT_PROTOCOL);
    ck_assert_str_eq(str_at(c, "host", NULL), client_dir);
    ck_assert_ptr_nonnull(strstr(r.out, "  python client: this repro's "));
}

START_TEST(test_default_install_reproduces)
{
    NEED_PYTORCH_AND_BWRAP();
    json_t *rc = verify(bundle, NULL, NULL);
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", def_prefix, def_rel);
    assert_reproduced(rc, dir);
    json_t *c = json_object_get(json_object_get(rc, "program"), "python_client");
    ck_assert(json_is_null(json_object_get(c, "own_package")));
    ck_assert_ptr_null(strstr(r.out, "own client"));
    json_decref(rc);
}
END_TEST

/* Installed only under a prefix python3 does not search, verify gives the
 * program its client all the same, with no PYTHONPATH. */
START_TEST(test_custom_prefix_reproduces_without_pythonpath)
{
    NEED_PYTORCH_AND_BWRAP();
    char cmd[1100], rel[512], marker[1100], dir[2048];
    snprintf(cmd, sizeof cmd, "env -u REPRO_LIB %s/bin/repro", stage);
    snprintf(marker, sizeof marker, "%s/share/repro/python-site", stage);
    tu_slurp(marker, rel, sizeof rel);
    rel[strcspn(rel, "\n")] = '\0';
    snprintf(dir, sizeof dir, "%s/%s", stage, rel);
    json_t *rc = verify(bundle, cmd, NULL);
    assert_reproduced(rc, dir);
    json_decref(rc);
}
END_TEST

/* A copy of the bundle whose claimed trace says a loss half the real one
 * at its last step (an unsigned bundle: anyone can edit it). */
START_TEST(test_halved_loss_value_is_refused)
{
    NEED_PYTORCH_AND_BWRAP();
    char b[800];
    snprintf(b, sizeof b, "%s/halved", base);
    sh("rm -rf '%s' && cp -r '%s' '%s' && /usr/bin/python3 -c '\n"
       "import json, sys\n"
       "p = sys.argv[1] + \"/trace.jsonl\"\n"
       "lines = [json.loads(l) for l in open(p)]\n"
       "last = [l for l in lines if \"loss_value\" in l][-1]\n"
       "last[\"loss_value\"] /= 2\n"
       "open(p, \"w\").write(\"\".join(json.dumps(l) + \"\\n\" for l in lines))\n' '%s'",
       b, bundle, b, b);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    char cmd[PATH_MAX + 8];
    snprintf(cmd, sizeof cmd, "'%s'", bin);
    json_t *rc = verify(b, cmd, NULL);
    ck_assert_msg(r.rc == 1, "exit %d\n%s", r.rc, r.out);
    ck_assert_ptr_nonnull(strstr(str_at(rc, "verdict_text", NULL), "diverged at step"));
    ck_assert_msg(strstr(r.out, "the claimed loss_value is "), "%s", r.out);
    json_decref(rc);
}
END_TEST

/* A tree carrying its own repro package (a copy of the client: Python
 * finds it beside fit.py before the host's): reproduced, and the receipt
 * and summary say the bundle's own package wrote the trace. */
START_TEST(test_own_repro_package_is_noted)
{
    NEED_PYTORCH_AND_BWRAP();
    /* Every module of the client, read from its folder (a copy missing one
     * fails at import, and the client gains modules). */
    enum { MAXMOD = 24 };
    static char text[MAXMOD][1 << 16], names[MAXMOD][300];
    const char *files[2 * MAXMOD + 1];
    int n = 0;
    DIR *d = opendir("python/repro");
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".py"))
            continue;
        ck_assert_msg(n < MAXMOD, "more than %d client modules", MAXMOD);
        char src[300];
        snprintf(src, sizeof src, "python/repro/%s", e->d_name);
        snprintf(names[n], sizeof names[n], "repro/%s", e->d_name);
        tu_slurp(src, text[n], sizeof text[n]);
        files[2 * n] = names[n];
        files[2 * n + 1] = text[n];
        n++;
    }
    closedir(d);
    files[2 * n] = NULL;
    char own_repo[700], own_bundle[700];
    snprintf(own_repo, sizeof own_repo, "%s/own", base);
    snprintf(own_bundle, sizeof own_bundle, "%s/own-bundle", base);
    make_repo(own_repo, files);
    sh("cd '%s' && '%s' submit -o '%s' --program-output preds.txt -- python3 fit.py", own_repo,
       bin, own_bundle);
    ck_assert_msg(r.rc == 0, "submit: exit %d\n%s", r.rc, r.out);
    char cmd[PATH_MAX + 8], dir[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "'%s'", bin);
    snprintf(dir, sizeof dir, "%s/python", checkout);
    json_t *rc = verify(own_bundle, cmd, NULL);
    assert_reproduced(rc, dir);
    json_t *c = json_object_get(json_object_get(rc, "program"), "python_client");
    ck_assert_str_eq(str_at(c, "own_package", NULL), "repro/__init__.py");
    ck_assert_msg(strstr(r.out, "  own client: the bundle's tree carries its own repro package "
                                "(repro/__init__.py)"),
                  "%s", r.out);
    json_decref(rc);
}
END_TEST

/* A claim written by a client of protocol 99 cannot be re-run by this
 * repro's (protocol REPRO_CLIENT_PROTOCOL); a repro with no client beside
 * it cannot re-run any client's: exit 3, no receipt, saying why. */
START_TEST(test_client_this_host_cannot_reproduce_is_refused)
{
    NEED_PYTORCH_AND_BWRAP();
    char b[800], cmd[PATH_MAX + 100], want[PATH_MAX + 100];
    snprintf(b, sizeof b, "%s/proto99", base);
    sh("rm -rf '%s' && cp -r '%s' '%s' && /usr/bin/python3 -c '\n"
       "import json, sys\n"
       "p = sys.argv[1] + \"/trace.jsonl\"\n"
       "lines = open(p).readlines()\n"
       "h = json.loads(lines[0]); h[\"client\"][\"protocol\"] = 99\n"
       "lines[0] = json.dumps(h) + \"\\n\"\n"
       "open(p, \"w\").write(\"\".join(lines))\n' '%s'",
       b, bundle, b, b);
    ck_assert_msg(r.rc == 0, "%s", r.out);
    snprintf(cmd, sizeof cmd, "'%s'", bin);
    json_t *rc = verify(b, cmd, NULL);
    ck_assert_ptr_null(rc);
    snprintf(want, sizeof want, "client protocol 99; this repro's client (%s/python/repro",
             checkout);
    ck_assert_msg(r.rc == 3 && strstr(r.out, want), "exit %d\n%s", r.rc, r.out);
    snprintf(want, sizeof want, "speaks protocol %d", REPRO_CLIENT_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(r.out, want));

    /* The genuine bundle, verified by a repro installed without a client. */
    sh("mkdir -p '%s/bare/bin' && cp '%s' '%s/bare/bin/repro'", base, bin, base);
    snprintf(cmd, sizeof cmd, "'%s/bare/bin/repro'", base);
    rc = verify(bundle, cmd, NULL);
    ck_assert_ptr_null(rc);
    ck_assert_msg(r.rc == 3 && strstr(r.out, "this repro has no client of its own"),
                  "exit %d\n%s", r.rc, r.out);
}
END_TEST

/* --data: submitted on PUBLIC/ with its predictions as the declared output
 * and a claimed score, verified on HIDDEN/ with the host's evaluator: the
 * trace reproduces (the program trains on its own seeded data), the host
 * score is the evaluator's on the predictions for HIDDEN (as the program
 * makes them when run on HIDDEN directly), not the ones for PUBLIC (the
 * control), the claim is reported, not required, and the receipt records
 * both directories' digests: SHA-256 of the sha256sum listing of their
 * files, which the shell computes the same. A bundle made with --data is
 * refused without it (exit 2), and a symbolic link in the data too. */
START_TEST(test_data_outputs_are_scored_on_the_hosts_data)
{
    NEED_PYTORCH_AND_BWRAP();
    char data_repo[700], b[700], score[700];
    snprintf(data_repo, sizeof data_repo, "%s/datarepo", base);
    snprintf(b, sizeof b, "%s/data-bundle", base);
    snprintf(score, sizeof score, "%s/score.sh", base);
    make_repo(data_repo, NULL);
    tu_git_write(base, "PUBLIC/test.txt", "w", "0.1\n0.2\n0.3\n");
    tu_git_write(base, "HIDDEN/test.txt", "w", "0.7\n0.9\n");
    tu_git_write(base, "HIDDEN/more/readme", "w", "the host's own files count too\n");
    tu_git_write(base, "labels.txt", "w", "2.6\n3.2\n");
    /* The host's evaluator: squared error of the predictions against the
     * labels it keeps outside the data the program sees. */
    tu_git_write(base, "score.sh", "w",
                 "#!/bin/sh\npaste \"$1\" \"$(dirname \"$0\")/labels.txt\" | awk "
                 "'{d = $1 - $2; s += d * d} END {printf \"%.6f\\n\", s}'\n");
    sh("chmod +x '%s' && cd '%s' && PYTHONPATH='%s/python' '%s' submit -o '%s' --data ../PUBLIC "
       "--program-output preds.txt --claim-score 0.5 -- python3 fit.py",
       score, data_repo, checkout, bin, b);
    ck_assert_msg(r.rc == 0, "submit: exit %d\n%s", r.rc, r.out);
    char pub[65], hid[65], want_host[64], public_score[64];
    tu_git_capture(pub, sizeof pub,
                   "cd '%s/PUBLIC' && find . -type f | sed 's|^\\./||' | LC_ALL=C sort | "
                   "while read f; do sha256sum \"$f\"; done | sha256sum | cut -c1-64",
                   base);
    tu_git_capture(hid, sizeof hid,
                   "cd '%s/HIDDEN' && find . -type f | sed 's|^\\./||' | LC_ALL=C sort | "
                   "while read f; do sha256sum \"$f\"; done | sha256sum | cut -c1-64",
                   base);
    /* What the program predicts for HIDDEN, and the evaluator on it. */
    tu_git_capture(want_host, sizeof want_host,
                   "export PATH=/usr/bin:$PATH; cd '%s' && mkdir -p direct && cd direct && "
                   "cp ../fit.py . && REPRO_DATA='%s/HIDDEN' REPRO_LIB='%s/build/librepro.so' "
                   "PYTHONPATH='%s/python' python3 fit.py && '%s' preds.txt",
                   data_repo, base, checkout, checkout, score);
    tu_git_capture(public_score, sizeof public_score, "'%s' '%s/outputs/preds.txt'", score, b);
    ck_assert_str_ne(want_host, public_score);

    char extra[1400], cmd[PATH_MAX + 8];
    snprintf(cmd, sizeof cmd, "'%s'", bin);
    snprintf(extra, sizeof extra, "--data '%s/HIDDEN' --score '%s'", base, score);
    json_t *rc = verify(b, cmd, extra);
    ck_assert_msg(r.rc == 0 && strstr(r.out, ": reproduced\n"), "exit %d\n%s", r.rc, r.out);
    ck_assert_str_eq(str_at(rc, "score", "host"), want_host);
    ck_assert_str_eq(str_at(rc, "score", "claimed"), "0.5");
    json_t *prog = json_object_get(rc, "program"), *d = json_object_get(prog, "data");
    ck_assert_str_eq(str_at(d, "sha256", NULL), hid);
    ck_assert_str_eq(str_at(d, "submitted_sha256", NULL), pub);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "files")), 2);
    ck_assert(json_is_false(json_object_get(prog, "outputs_compared")));
    ck_assert_ptr_nonnull(strstr(r.out, "(from the host's data: scored, not compared)"));
    json_decref(rc);

    /* Without --data the bundle cannot be verified; nor with a link in it. */
    rc = verify(b, cmd, NULL);
    ck_assert_ptr_null(rc);
    ck_assert_msg(r.rc == 2 && strstr(r.out, "was submitted with --data"), "exit %d\n%s", r.rc,
                  r.out);
    sh("ln -s /etc/hostname '%s/HIDDEN/link'", base);
    rc = verify(b, cmd, extra);
    ck_assert_ptr_null(rc);
    ck_assert_msg(r.rc == 2 && strstr(r.out, "HIDDEN/link: not a regular file or directory"),
                  "exit %d\n%s", r.rc, r.out);
}
END_TEST

Suite *pysubmit_suite(void)
{
    Suite *s = suite_create("pysubmit");
    TCase *tc = tcase_create("pysubmit");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_install_puts_the_client_where_python_looks);
    tcase_add_test(tc, test_pip_client_finds_the_default_library);
    tcase_add_test(tc, test_default_install_reproduces);
    tcase_add_test(tc, test_custom_prefix_reproduces_without_pythonpath);
    tcase_add_test(tc, test_halved_loss_value_is_refused);
    tcase_add_test(tc, test_own_repro_package_is_noted);
    tcase_add_test(tc, test_client_this_host_cannot_reproduce_is_refused);
    tcase_add_test(tc, test_data_outputs_are_scored_on_the_hosts_data);
    suite_add_tcase(s, tc);
    return s;
}
