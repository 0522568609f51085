/* The sandboxed build and re-run of a program bundle (verify_program.h). */
#include "verify/verify_program.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/multirun.h"
#include "record/trace.h"
#include "util/child.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/progress.h"
#include "verify/client.h"
#include "util/sandbox_disk.h"
#include "verify/pack.h"

#define ENV_MAX (REPRO_BUNDLE_ENV_MAX + 12)

int repro_program_sandbox_ready(const repro_sandbox_opts *o, char *why, size_t len)
{
    if (o->no_sandbox) {
        snprintf(why, len, "--no-sandbox");
        return 1;
    }
    return repro_sandbox_available(why, len);
}

/* The last bytes of a file, as one line of text (for a reason). */
static void tail(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return;
    char t[400];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof t - 1 ? end - (off_t)sizeof t + 1 : 0;
    ssize_t n = pread(fd, t, sizeof t - 1, from);
    close(fd);
    if (n <= 0)
        return;
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == ' '))
        n--;
    t[n] = '\0';
    for (char *c = t; *c; c++)
        if (*c == '\n')
            *c = '|';
    snprintf(buf, len, "%s", t);
}

/* This repro's installation, bound read-only: the binary's directory,
 * and the prefix above it when that is a bin/ (include/, lib/ beside). */
static int repro_dirs(char bindir[PATH_MAX], char prefix[PATH_MAX])
{
    if (repro_child_self_path(bindir, PATH_MAX))
        return -1;
    *strrchr(bindir, '/') = '\0';
    prefix[0] = '\0';
    size_t n = strlen(bindir);
    if (n > 4 && !strcmp(bindir + n - 4, "/bin"))
        snprintf(prefix, PATH_MAX, "%.*s", (int)(n - 4), bindir);
    return 0;
}

/* PYTHONPATH naming this repro's Python client (client.h), where the
 * program sees it: the sandbox's directory of it, or unsandboxed its own;
 * malloc'd. */
static char *client_path_var(const repro_program_run *pr)
{
    char buf[PATH_MAX + 16];
    snprintf(buf, sizeof buf, "PYTHONPATH=%s",
             pr->no_sandbox ? pr->client : REPRO_SANDBOX_CLIENT_DIR);
    return strdup(buf);
}

/* The thread count the submitted run declared (its REPRO_THREADS, else
 * REPRO_DEFAULT_THREADS, as every program run gets) for each variable of
 * it the bundle does not carry: a bundle submitted before every run was
 * pinned would otherwise re-run with OpenBLAS at one thread per core of
 * the verifier's machine. The number of strings added to store. */
static int pin_threads(const repro_bundle *b, char **store)
{
    static const char *const vars[] = {"REPRO_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                       "OPENBLAS_NUM_THREADS"};
    const char *threads = REPRO_DEFAULT_THREADS;
    int has[4] = {0}, n = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(b->program.env, i, v) {
        const char *kv = json_string_value(v);
        for (int k = 0; k < 4; k++) {
            size_t len = strlen(vars[k]);
            if (!strncmp(kv, vars[k], len) && kv[len] == '=') {
                has[k] = 1;
                if (k == 0)
                    threads = kv + len + 1;
            }
        }
    }
    for (int k = 0; k < 4; k++) {
        if (has[k])
            continue;
        char buf[128];
        snprintf(buf, sizeof buf, "%s=%.32s", vars[k], threads);
        store[n++] = strdup(buf);
    }
    return n;
}

/* The program's environment: the bundle's protocol variables, then the
 * host's own (which win): the seed, the trace, the library, a /tmp that
 * exists inside the sandbox. */
static int program_env(const repro_bundle *b, const repro_program_run *pr, const char *bindir,
                       const char *prefix, const char *data_dir, char *store[ENV_MAX + 1])
{
    int n = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(b->program.env, i, v) store[n++] = strdup(json_string_value(v));
    n += pin_threads(b, store + n);
    char buf[PATH_MAX + 64], lib[PATH_MAX + 16];
    snprintf(buf, sizeof buf, "REPRO_SEED=%s", b->seed);
    store[n++] = strdup(buf);
    snprintf(buf, sizeof buf, "REPRO_TRACE=%s", pr->trace);
    store[n++] = strdup(buf);
    store[n++] = strdup("TMPDIR=/tmp");
    snprintf(lib, sizeof lib, "%s/librepro.so", bindir);
    if (access(lib, R_OK) != 0 && prefix[0])
        snprintf(lib, sizeof lib, "%s/lib/librepro.so", prefix);
    if (access(lib, R_OK) == 0) {
        snprintf(buf, sizeof buf, "REPRO_LIB=%s", lib);
        store[n++] = strdup(buf);
    }
    if (pr->client[0])
        store[n++] = client_path_var(pr);
    if (data_dir) {
        snprintf(buf, sizeof buf, "REPRO_DATA=%s", data_dir);
        store[n++] = strdup(buf);
    }
    store[n] = NULL;
    int bad = 0;
    for (int k = 0; k < n; k++)
        bad |= !store[k];
    if (!bad)
        return 0;
    for (int k = 0; k < n; k++) { /* the caller frees up to the first NULL */
        free(store[k]);
        store[k] = NULL;
    }
    return repro_error_set(REPRO_ENOMEM, "out of memory");
}

/* How a sandboxed command ended, in the receipt's words (from the result's
 * fields, not its free text: "exited 0", "killed by signal 9", "timed
 * out"). */
static void status_text(const repro_sandbox_result *res, char *buf, size_t len)
{
    if (res->timed_out)
        snprintf(buf, len, "timed out");
    else if (res->exited)
        snprintf(buf, len, "exited %d", res->code);
    else
        snprintf(buf, len, "killed by signal %d", res->signal);
}

/* Why a sandboxed command did not succeed, or "" when it did. */
static void judge_run(const repro_sandbox_result *res, repro_program_run *pr, const char *what,
                      const char *err_path, repro_program_outcome fail)
{
    char t[420];
    tail(err_path, t, sizeof t);
    if (res->limit_hit || res->timed_out) {
        pr->outcome = REPRO_PROGRAM_LIMIT;
        snprintf(pr->text, sizeof pr->text, "%s was stopped by the sandbox's %s limit (%s)%s%s",
                 what, res->limit_name[0] ? res->limit_name : "time", res->what,
                 t[0] ? "; its stderr ends: " : "", t);
    } else if (!res->exited || res->code != 0) {
        pr->outcome = fail;
        char how[64];
        status_text(res, how, sizeof how);
        snprintf(pr->text, sizeof pr->text, "%s %s in the sandbox%s%s", what, how,
                 t[0] ? "; its stderr ends: " : "", t);
    }
}

static int unpack(const repro_bundle *b, uint64_t disk_bytes, repro_program_run *pr)
{
    const char *td = getenv("TMPDIR");
    snprintf(pr->scratch, sizeof pr->scratch, "%s/repro-verify-prog-XXXXXX",
             td && *td ? td : "/tmp");
    if (!mkdtemp(pr->scratch)) {
        pr->scratch[0] = '\0';
        return repro_error_set_errno(REPRO_EIO, "verify: cannot create a scratch directory");
    }
    /* Before anything is in it: the tree, the build and the run all count. */
    char why[200];
    pr->disk_capped = repro_sandbox_disk_cap(pr->scratch, disk_bytes, why, sizeof why) == 0;
    char tree[700];
    snprintf(tree, sizeof tree, "%s/tree", pr->scratch);
    snprintf(pr->workdir, sizeof pr->workdir, "%s%s%s", tree, b->program.cwd[0] ? "/" : "",
             b->program.cwd);
    snprintf(pr->trace, sizeof pr->trace, "%s/rerun.jsonl", pr->scratch);
    if (repro_pack_copy(b->program.tree_path, tree))
        return -1;
    if (repro_mkdirs(pr->workdir))
        return -1;
    return 0;
}

static int run_build(const repro_bundle *b, const repro_sandbox_opts *o,
                     const char *const *env, repro_program_run *pr)
{
    char out[700], err[700], tree[700];
    snprintf(out, sizeof out, "%s/build.out", pr->scratch);
    snprintf(err, sizeof err, "%s/build.err", pr->scratch);
    snprintf(tree, sizeof tree, "%s/tree", pr->scratch);
    char *argv[] = {"/bin/sh", "-c", "cd \"$1\" && exec /bin/sh -c \"$2\"", "sh", tree,
                    (char *)b->program.build, NULL};
    repro_sandbox_result res;
    double t0 = repro_now();
    if (repro_sandbox_run(o, argv, env, out, err, &res))
        return -1;
    pr->build_ms = (long)((repro_now() - t0) * 1000);
    status_text(&res, pr->build_status, sizeof pr->build_status);
    char what[REPRO_BUNDLE_CMD_MAX + 64];
    snprintf(what, sizeof what, "the build command `%.300s`", b->program.build);
    judge_run(&res, pr, what, err, REPRO_PROGRAM_BUILD_FAILED);
    return 0;
}

/* The trace the run left: a regular file (not a link the program
 * planted), read through, complete. */
static void check_trace(repro_program_run *pr)
{
    struct stat st;
    repro_trace t;
    if (lstat(pr->trace, &st) != 0 || !S_ISREG(st.st_mode)) {
        pr->outcome = REPRO_PROGRAM_RUN_FAILED;
        snprintf(pr->text, sizeof pr->text,
                 "the program wrote no trace in the sandbox (or not a regular file)");
        return;
    }
    if (repro_trace_read(&t, pr->trace)) {
        pr->outcome = REPRO_PROGRAM_RUN_FAILED;
        snprintf(pr->text, sizeof pr->text, "the re-run's trace: %s", repro_error_message());
        repro_error_clear();
        return;
    }
    if (!t.has_trailer) {
        pr->outcome = REPRO_PROGRAM_RUN_FAILED;
        snprintf(pr->text, sizeof pr->text,
                 "the re-run's trace was cut short after %ld steps (no trailer)", t.nsteps);
    }
    repro_trace_release(&t);
}

static int run_program(const repro_bundle *b, const repro_sandbox_opts *o,
                       const char *const *env, repro_program_run *pr)
{
    size_t n = json_array_size(b->program.argv);
    char **argv = calloc(n + 6, sizeof *argv);
    if (!argv)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = "cd \"$1\" && shift && exec \"$@\"";
    argv[3] = "sh";
    argv[4] = pr->workdir;
    for (size_t i = 0; i < n; i++)
        argv[5 + i] = (char *)json_string_value(json_array_get(b->program.argv, i));
    char out[700], err[700];
    snprintf(out, sizeof out, "%s/run.out", pr->scratch);
    snprintf(err, sizeof err, "%s/run.err", pr->scratch);
    repro_sandbox_result res;
    double t0 = repro_now();
    int rc = repro_sandbox_run(o, argv, env, out, err, &res);
    free(argv);
    if (rc)
        return -1;
    pr->run_ms = (long)((repro_now() - t0) * 1000);
    status_text(&res, pr->run_status, sizeof pr->run_status);
    judge_run(&res, pr, "the program", err, REPRO_PROGRAM_RUN_FAILED);
    if (pr->outcome == REPRO_PROGRAM_OK)
        check_trace(pr);
    return 0;
}

int repro_program_rerun(const repro_bundle *b, const repro_sandbox_opts *opts,
                        const char *data_dir, repro_program_run *pr)
{
    memset(pr, 0, sizeof *pr);
    snprintf(pr->build_status, sizeof pr->build_status, "none");
    snprintf(pr->run_status, sizeof pr->run_status, "not run");
    pr->no_sandbox = opts->no_sandbox;
    char bindir[PATH_MAX], prefix[PATH_MAX], bundle[PATH_MAX];
    if (repro_dirs(bindir, prefix) || !realpath(b->dir, bundle))
        return repro_error_set_errno(REPRO_EIO, "verify: cannot resolve the bundle or repro");
    repro_sandbox_opts o = *opts;
    o.disk_bytes = o.disk_bytes ? o.disk_bytes : REPRO_SANDBOX_DEFAULT_DISK;
    if (unpack(b, o.disk_bytes, pr))
        return -1;
    const char *ro[5] = {bundle, bindir};
    int nro = 2;
    if (prefix[0])
        ro[nro++] = prefix;
    if (data_dir) /* the host's data, read-only at its own path */
        ro[nro++] = data_dir;
    ro[nro] = NULL;
    o.scratch_dir = pr->scratch;
    o.ro_paths = ro;
    o.disk_capped = pr->disk_capped;
    if (repro_client_host_dir(pr->client, sizeof pr->client))
        o.python_client = pr->client;
    repro_sandbox_describe(&o, pr->sandbox, sizeof pr->sandbox);
    char *env[ENV_MAX + 1] = {0};
    int rc = program_env(b, pr, bindir, prefix, data_dir, env);
    if (!rc && b->program.build)
        rc = run_build(b, &o, (const char *const *)env, pr);
    if (!rc && pr->outcome == REPRO_PROGRAM_OK)
        rc = run_program(b, &o, (const char *const *)env, pr);
    for (int i = 0; env[i]; i++)
        free(env[i]);
    return rc;
}

json_t *repro_program_outputs(const repro_bundle *b, const repro_program_run *pr,
                              json_t *paths, const char **missing)
{
    json_t *out = json_array();
    char rscratch[PATH_MAX];
    *missing = NULL;
    if (!out || !realpath(pr->scratch, rscratch)) {
        json_decref(out);
        return NULL;
    }
    size_t i, n = strlen(rscratch);
    const json_t *d;
    json_array_foreach(b->program.outputs, i, d) {
        const char *rel = json_string_value(json_object_get(d, "path"));
        const char *claimed = json_string_value(json_object_get(d, "sha256"));
        char path[1500], real[PATH_MAX], hex[65];
        uint64_t bytes = 0;
        snprintf(path, sizeof path, "%s/%s", pr->workdir, rel);
        /* Inside the scratch directory after links, a regular file. */
        int ok = realpath(path, real) && !strncmp(real, rscratch, n) && real[n] == '/' &&
                 repro_pack_sha256_file(path, hex, &bytes) == 0;
        repro_error_clear();
        json_array_append_new(out, json_pack("{s:s, s:o, s:I, s:s, s:b}", "path", rel, "sha256",
                                             ok ? json_string(hex) : json_null(), "bytes",
                                             (json_int_t)bytes, "claimed_sha256", claimed,
                                             "identical", ok && !strcmp(hex, claimed)));
        if (!ok && !*missing)
            *missing = rel;
        if (ok && paths)
            json_array_append_new(paths, json_string(real));
    }
    return out;
}

void repro_program_cleanup(repro_program_run *pr)
{
    if (pr->scratch[0] && pr->disk_capped)
        repro_sandbox_disk_release(pr->scratch);
    pr->disk_capped = 0;
    if (pr->scratch[0])
        repro_pack_remove(pr->scratch);
    pr->scratch[0] = '\0';
}
