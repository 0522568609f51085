/* The Python client as users get it (issue 34): installed by `make install`
 * and imported from the install prefix alone; repro.torch's module hooks
 * (op names by module path, in execution order); `repro bisect -- python3`
 * naming the module made nondeterministic on purpose, and nothing when it
 * is seeded (the negative control); and examples/torch/mnist.py passing
 * `repro check`. The scripts are in tests/python/. Skipped, saying so,
 * without /usr/bin/python3 (or PyTorch, for the torch tests) and in
 * sanitizer builds, whose librepro python3 cannot load (REPRO_LIB empty). */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/version.h"

/* Runs cmd through /bin/sh, stdout and stderr together into out; returns
 * the exit status (128 + signal). */
static int sh(const char *cmd, char *out, size_t len)
{
    char full[4096];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) /* the rest, unread: the program must not block */
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Why python3 cannot run the client here ("" when it can); `module` is
 * also required to import ("numpy", "torch"). */
static const char *no_python(const char *module)
{
    static char why[200];
    const char *lib = getenv("REPRO_LIB");
    if (lib && !*lib)
        return "a sanitizer build (python3 cannot load its librepro)";
    if (access("/usr/bin/python3", X_OK) != 0)
        return "no /usr/bin/python3";
    char cmd[200], out[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import %s'", module);
    if (sh(cmd, out, sizeof out) != 0) {
        snprintf(why, sizeof why, "no %s for /usr/bin/python3", module);
        return why;
    }
    return "";
}

/* The checkout's python/ (absolute: programs may run elsewhere). */
static void client_dir(char *buf, size_t len)
{
    ck_assert_ptr_nonnull(getcwd(buf, len - sizeof "/python"));
    strcat(buf, "/python");
}

/* Where `make install PREFIX=P` put the package: P/<the line of
 * P/share/repro/python-site> (scripts/install-client.sh). */
static void site_of(const char *prefix, char *buf, size_t len)
{
    char marker[PATH_MAX + 64], rel[1024];
    snprintf(marker, sizeof marker, "%s/share/repro/python-site", prefix);
    tu_slurp(marker, rel, sizeof rel);
    rel[strcspn(rel, "\n")] = '\0';
    ck_assert_msg(rel[0] && rel[0] != '/', "%s: '%s'", marker, rel);
    snprintf(buf, len, "%s/%s", prefix, rel);
}

/* `make install PREFIX=$REPRO_STAGE` (the Makefile stages exactly that,
 * DESTDIR-free) put the package where python3 would look for that prefix
 * (P/lib/python3.X/site-packages: a prefix it does not search) and said
 * where in P/share/repro/python-site; with only that on PYTHONPATH, no
 * REPRO_LIB and another working directory, python3 imports it, loads the
 * installed librepro.so (not the build's) and records a trace that repro
 * reads, whose header names the client and its protocol. REPRO_LIB still
 * overrides. */
START_TEST(test_installed_client_imports_and_records)
{
    const char *why = no_python("numpy");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    const char *stage = getenv("REPRO_STAGE");
    ck_assert_msg(stage && *stage, "REPRO_STAGE is not set: run the suite through `make check`");
    char dir[TU_TMP_LEN], cmd[8192], out[8192], trace[200], site[2048];
    tu_tmp_template(dir, sizeof dir, "pyinst");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    site_of(stage, site, sizeof site);
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && env -u REPRO_LIB -u LD_LIBRARY_PATH "
             "PYTHONPATH='%s' /usr/bin/python3 -c '"
             "import numpy as np, repro\n"
             "print(\"module\", repro.__file__)\n"
             "print(\"library\", repro.LIBRARY)\n"
             "with repro.Recorder(\"installed\", 5, trace_path=\"%s\") as rec:\n"
             "    rec.tensor(\"w\", np.arange(4, dtype=np.float32))\n"
             "    rec.step(1, 0.5)\n'",
             dir, site, trace);
    int rc = sh(cmd, out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "module %s/repro/__init__.py", site);
    ck_assert_msg(strstr(out, want), "not the installed package:\n%s", out);
    snprintf(want, sizeof want, "library %s/lib/librepro.so\n", stage);
    ck_assert_msg(strstr(out, want), "not the installed library:\n%s", out);
    char args[600], err[4096];
    snprintf(args, sizeof args, "diff '%s' '%s'", trace, trace);
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "identical"), "exit %d\n%s%s", rc, out, err);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json; print(json.loads(open(\"%s\").readline())"
             "[\"client\"])'",
             trace);
    rc = sh(cmd, out, sizeof out);
    snprintf(want, sizeof want, "{'name': 'repro-python', 'version': '%s', 'protocol': %d}\n",
             REPRO_VERSION, REPRO_CLIENT_PROTOCOL);
    ck_assert_msg(rc == 0 && !strcmp(out, want), "header client: want %s, got %s", want, out);

    /* REPRO_LIB wins over the installed library. */
    const char *lib = getenv("REPRO_LIB");
    if (!lib)
        return;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && REPRO_LIB='%s' PYTHONPATH='%s' "
             "/usr/bin/python3 -c 'import repro; print(\"library\", repro.LIBRARY)'",
             dir, lib, site);
    rc = sh(cmd, out, sizeof out);
    snprintf(want, sizeof want, "library %s\n", lib);
    ck_assert_msg(rc == 0 && strstr(out, want), "exit %d, want %s:\n%s", rc, want, out);
}
END_TEST

/* `repro ... --set trace.every=K` and `--set trace.digest=F` reach a
 * Python recorder as they reach a C one (REPRO_SET_TRACE_EVERY and
 * _DIGEST, read by the library's repro_recorder_options_from_env): detail
 * on the first step, every K-th and the last, under that digest function;
 * an `every` the program passes wins. */
static int detail_lines(const char *trace, const char *every_arg, char *out, size_t len)
{
    char cmd[2 * PATH_MAX + 1024], py[PATH_MAX];
    client_dir(py, sizeof py);
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH='%s' REPRO_SET_TRACE_EVERY=3 REPRO_SET_TRACE_DIGEST=sha256 "
             "/usr/bin/python3 -c '"
             "import numpy as np, repro\n"
             "with repro.Recorder(\"e\", 5, trace_path=\"%s\", total_steps=7%s) as rec:\n"
             "    for s in range(1, 8):\n"
             "        rec.tensor(\"w\", np.arange(4, dtype=np.float32) * s)\n"
             "        rec.step(s, 0.5)\n' && grep -c tensors '%s' && head -n 1 '%s'",
             py, trace, every_arg, trace, trace);
    return sh(cmd, out, len);
}

START_TEST(test_set_trace_settings_reach_the_client)
{
    const char *why = no_python("numpy");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    char dir[TU_TMP_LEN], trace[300], out[8192];
    tu_tmp_template(dir, sizeof dir, "pyset");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    int rc = detail_lines(trace, "", out, sizeof out);
    ck_assert_msg(rc == 0 && !strncmp(out, "4\n", 2), "exit %d, want steps 1, 3, 6, 7:\n%s", rc,
                  out);
    ck_assert_msg(strstr(out, "\"tensor_hash\":\"repro-tensor/v1\""), "not sha256:\n%s", out);
    rc = detail_lines(trace, ", every=1", out, sizeof out);
    ck_assert_msg(rc == 0 && !strncmp(out, "7\n", 2), "exit %d, every=1 lost:\n%s", rc, out);
    unlink(trace);
    rmdir(dir);
}
END_TEST

/* python/pyproject.toml names the version repro is (a wheel built from it
 * must not claim another). */
START_TEST(test_pyproject_version_is_repros)
{
    FILE *f = fopen("python/pyproject.toml", "r");
    ck_assert_msg(f != NULL, "python/pyproject.toml: not found (run from the checkout)");
    char line[256], want[64];
    snprintf(want, sizeof want, "version = \"%s\"\n", REPRO_VERSION);
    int found = 0;
    while (fgets(line, sizeof line, f))
        found |= !strcmp(line, want);
    fclose(f);
    ck_assert_msg(found, "python/pyproject.toml has no line %s", want);
    /* The client says the same version, and the client protocol repro's
     * verify requires (REPRO_CLIENT_PROTOCOL). */
    char text[1 << 15], line2[64];
    tu_slurp("python/repro/__init__.py", text, sizeof text);
    snprintf(want, sizeof want, "\n__version__ = \"%s\"", REPRO_VERSION);
    snprintf(line2, sizeof line2, "\nPROTOCOL = %d ", REPRO_CLIENT_PROTOCOL);
    ck_assert_msg(strstr(text, want) && strstr(text, line2),
                  "python/repro/__init__.py lacks '%s' or '%s'", want + 1, line2 + 1);
}
END_TEST

/* record_modules: every submodule's output as fwd.<path> and its input
 * gradient as bwd.<path>.dx, in execution order (children before their
 * container; backward in autograd's order; a first layer's input has no
 * gradient); the model's state when hooked as the tensors input.state.*,
 * in the first step only; a second call in a step gets #2; no op at level
 * tensor;
 * names= selects; an unknown name is a KeyError naming it; evaluation
 * under no_grad only when asked; a long path keeps its end within 63
 * bytes; remove() stops it. */
START_TEST(test_module_hooks_name_ops_in_order)
{
    const char *why = no_python("torch");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    char py[PATH_MAX], cmd[PATH_MAX + 200], out[16384];
    client_dir(py, sizeof py);
    snprintf(cmd, sizeof cmd, "PYTHONPATH='%s' /usr/bin/python3 tests/python/module_names.py", py);
    int rc = sh(cmd, out, sizeof out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    static const char *const want[] = {
        "step1 ops: fwd.features.0 fwd.features.1 fwd.features fwd.head fwd.features.1#2 "
        "bwd.features.1.dx bwd.head.dx bwd.features.1.dx#2\n",
        "step2 same: True\n",
        "step1 tensors: input.state.features.0.weight input.state.features.0.bias "
        "input.state.head.weight input.state.head.bias batch.0 grad.features.0.weight",
        "step2 tensors: batch.0 grad.features.0.weight",
        "tensor level ops: [[], []]\n",
        "names=[head]: fwd.head bwd.head.dx\n",
        "no_grad=True: fwd.head bwd.head.dx fwd.head#2\n",
        "unknown: no submodule named nope (the model has: features, features.0, features.1, "
        "head)\n",
        "long: fwd.lin fwd.~me_a_rather_long_module_name_a_rather_long_module_name_end "
        "bwd.~a_rather_long_module_name_a_rather_long_module_name_end.dx\n",
        "removed: []\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(out, want[i]), "missing \"%s\" in:\n%s", want[i], out);
}
END_TEST

/* `repro bisect -- python3 planted_model.py`: features.2 sums feature
 * groups with index_add_ in an order drawn from os.urandom; bisect names
 * it as the first divergent op, with identical inputs. Seeded (shuffle=0),
 * the same model gives nothing to bisect; initialized from os.urandom, its
 * first module is named with different inputs, not as nondeterministic. */
START_TEST(test_bisect_names_the_planted_module)
{
    const char *why = no_python("torch");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    char py[PATH_MAX], args[PATH_MAX + 200], out[16384], err[16384];
    client_dir(py, sizeof py);
    ck_assert_int_eq(setenv("PYTHONPATH", py, 1), 0);
    int rc = tu_run_repro("bisect -- /usr/bin/python3 tests/python/planted_model.py", out,
                          sizeof out, err, sizeof err);
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: fwd.features.2 (op 3 of "), "%s", out);
    ck_assert_msg(strstr(out, "its inputs were identical in both runs"), "%s", out);
    ck_assert_msg(strstr(out, "fwd.features.2 produced different outputs from identical inputs"),
                  "%s", out);
    snprintf(args, sizeof args,
             "bisect --set shuffle=0 -- /usr/bin/python3 tests/python/planted_model.py");
    rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == 0 && strstr(out, "all 3 runs identical at level op over 3 steps"),
                  "exit %d\n%s%s", rc, out, err);
    /* An unseeded initialization is a difference of inputs (the state
     * record_modules recorded), not a nondeterministic module. */
    rc = tu_run_repro("bisect --set shuffle=0 --set init=unseeded -- /usr/bin/python3 "
                      "tests/python/planted_model.py",
                      out, sizeof out, err, sizeof err);
    unsetenv("PYTHONPATH");
    ck_assert_msg(rc == 1, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "first divergent op: fwd.features.0 (op 1 of "), "%s", out);
    ck_assert_msg(strstr(out, "its inputs differ: input.state.features.0.weight already differs"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "nondeterministic"), "%s", out);
}
END_TEST

/* examples/torch/mnist.py (the classic MNIST script plus the lines that
 * make it a repro program, docs/programs.md) reproduces under `repro
 * check` across thread and worker counts; a short run (2 steps). */
START_TEST(test_mnist_example_reproduces)
{
    const char *why = no_python("torch");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    char py[PATH_MAX], out[16384], err[16384];
    client_dir(py, sizeof py);
    ck_assert_int_eq(setenv("PYTHONPATH", py, 1), 0);
    int rc = tu_run_repro("check --no-golden --threads 1,2 --workers 0,2 -- /usr/bin/python3 "
                          "examples/torch/mnist.py --epochs 1 --train-size 128 --test-size 64",
                          out, sizeof out, err, sizeof err);
    unsetenv("PYTHONPATH");
    ck_assert_msg(rc == 0, "exit %d\n%s%s", rc, out, err);
    ck_assert_msg(strstr(out, "reproducible: 6 runs identical over 2 steps"), "%s", out);
}
END_TEST

/* repro.torch.seed, repro.loader_kwargs and repro.torch.start (the lines
 * examples/torch/mnist.py adds): the trace says the threads and loader
 * workers used by itself ("threads_used" from torch, "workers_used" from
 * the loaders the client configured), and it is finished at exit — with
 * its trailer after a normal end, without one after an uncaught exception
 * (so it reads as a run that did not finish). Negative control: no loader
 * through the client, no "workers_used". */
static void started_script(const char *mode, const char *trace, char *out, size_t len, int *rc)
{
    char py[PATH_MAX], cmd[2 * PATH_MAX + 400];
    client_dir(py, sizeof py);
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH='%s' REPRO_TRACE='%s' REPRO_SEED=11 REPRO_WORKERS=2 "
             "REPRO_THREADS=2 OMP_NUM_THREADS=2 /usr/bin/python3 tests/python/started.py %s "
             "&& /usr/bin/python3 -c \"import json,sys; ls=open('%s').read().splitlines(); "
             "h=json.loads(ls[0]); print('header', h.get('threads_used'), h.get('workers_used')); "
             "print('last', json.loads(ls[-1]).get('type'))\"",
             py, trace, mode, trace);
    *rc = sh(cmd, out, len);
}

START_TEST(test_started_recorder_says_threads_and_workers)
{
    const char *why = no_python("torch");
    if (*why) {
        tu_skip("pyclient", "%s", why);
        return;
    }
    char dir[256], trace[300], out[8192];
    tu_tmp_template(dir, sizeof dir, "pystart");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/t.jsonl", dir);
    int rc;
    started_script("ok", trace, out, sizeof out, &rc);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "seed 11\n") && strstr(out, "loader 2 Generator\n"), "%s", out);
    ck_assert_msg(strstr(out, "second start: repro.torch.start: a recorder is already open"),
                  "%s", out);
    ck_assert_msg(strstr(out, "header 2 2\n") && strstr(out, "last trailer\n"), "%s", out);
    ck_assert_msg(strstr(out, "in place True True\n"), "%s", out);
    started_script("noloader", trace, out, sizeof out, &rc);
    ck_assert_msg(rc == 0 && strstr(out, "header 2 None\n") && strstr(out, "last trailer\n"),
                  "exit %d:\n%s", rc, out);
    /* An uncaught exception: the script fails (so the checker line never
     * runs); the trace it left has a step and no trailer. */
    started_script("raise", trace, out, sizeof out, &rc);
    ck_assert_msg(rc == 1 && strstr(out, "planted failure after step 1"), "exit %d:\n%s", rc,
                  out);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -n 1 '%s'", trace);
    sh(cmd, out, sizeof out);
    ck_assert_msg(strstr(out, "\"step\":1") && !strstr(out, "trailer"), "%s", out);
    unlink(trace);
    rmdir(dir);
}
END_TEST

Suite *pyclient_suite(void)
{
    Suite *s = suite_create("pyclient");
    TCase *tc = tcase_create("pyclient");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_installed_client_imports_and_records);
    tcase_add_test(tc, test_pyproject_version_is_repros);
    tcase_add_test(tc, test_set_trace_settings_reach_the_client);
    tcase_add_test(tc, test_module_hooks_name_ops_in_order);
    tcase_add_test(tc, test_bisect_names_the_planted_module);
    tcase_add_test(tc, test_mnist_example_reproduces);
    tcase_add_test(tc, test_started_recorder_says_threads_and_workers);
    suite_add_tcase(s, tc);
    return s;
}
