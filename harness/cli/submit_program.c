/* `repro submit [--build CMD] [--allow-dirty] [--program-output PATH]...
 * -- PROGRAM ARGS`: a program bundle (verify/bundle.h, "program"). In
 * order: (1) the program repository's tree at HEAD packed into
 * BUNDLE/tree (verify/pack.h; a dirty tree refused unless --allow-dirty),
 * (2) the build command run in the repository's root, as verify will run
 * it, (3) the program run once as `repro run -- PROGRAM` runs it (the
 * runner protocol, analysis/external.c), its trace BUNDLE/trace.jsonl,
 * (4) its declared outputs hashed and copied to BUNDLE/outputs/, (5) the
 * manifest, checked as verify checks it, then written (signed with
 * --key). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/multirun.h"
#include "cli/cli.h"
#include "cli/submit_program.h"
#include "record/trace.h"
#include "util/child.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/fsutil.h"
#include "util/version.h"
#include "verify/bundle.h"
#include "verify/datadir.h"
#include "verify/pack.h"
#include "verify/sign.h"

typedef struct {
    const repro_submit_program_opts *o;
    char cwd[PATH_MAX], rel_cwd[256], tree[1050], rundir[1050], trace[1050];
    repro_pack_info pack;
    repro_data_digest data; /* --data DIR's digest (files 0, sha256 "": none) */
    repro_multirun *m;
    repro_trace tr;
    json_t *env, *outputs, *doc;
    EVP_PKEY *key;
    int made_tree;
} program_ctx;

/* 0. The bundle directory (must not hold a bundle) and the key. */
static int prepare(program_ctx *s)
{
    const repro_submit_program_opts *o = s->o;
    char manifest[1200];
    snprintf(manifest, sizeof manifest, "%s/%s", o->dir, REPRO_BUNDLE_MANIFEST);
    if (o->keypath && repro_sign_load_private(&s->key, o->keypath))
        return -1;
    if (o->program[0][0] == '/')
        return repro_error_set(REPRO_EINVAL,
                               "submit: the program '%s' is an absolute path: name it relative "
                               "to the current directory inside its repository (./prog), or "
                               "a command on PATH",
                               o->program[0]);
    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EINVAL, "submit: cannot create %s", o->dir);
    if (access(manifest, F_OK) == 0)
        return repro_error_set(REPRO_EINVAL, "submit: %s already holds a bundle", o->dir);
    if (!getcwd(s->cwd, sizeof s->cwd))
        return repro_error_set_errno(REPRO_EIO, "submit: cannot read the current directory");
    snprintf(s->tree, sizeof s->tree, "%s/tree", o->dir);
    snprintf(s->rundir, sizeof s->rundir, "%s/.submit-run", o->dir);
    snprintf(s->trace, sizeof s->trace, "%s/trace.jsonl", o->dir);
    return 0;
}

/* 0b. --data DIR: its digest, and REPRO_DATA for the run (the run
 * inherits this environment); without it, no REPRO_DATA of the user's
 * reaches the program, as none reaches it at verify. */
static int data_dir(program_ctx *s)
{
    char real[PATH_MAX];
    if (!s->o->data)
        return unsetenv("REPRO_DATA") ? repro_error_set_errno(REPRO_EIO, "submit") : 0;
    if (!realpath(s->o->data, real))
        return repro_error_set_errno(REPRO_EINVAL, "submit: --data %s", s->o->data);
    if (repro_data_digest_dir(real, &s->data))
        return repro_error_wrap(repro_error_code(), "submit");
    if (setenv("REPRO_DATA", real, 1))
        return repro_error_set_errno(REPRO_EIO, "submit: REPRO_DATA");
    return 0;
}

/* 1. The tree, and where in it the program runs. */
static int pack(program_ctx *s)
{
    struct stat st;
    if (lstat(s->tree, &st) == 0)
        return repro_error_set(REPRO_EINVAL, "submit: %s already exists", s->tree);
    s->made_tree = 1; /* from here a failure removes it again */
    if (repro_pack_tree(".", s->o->allow_dirty, s->tree, &s->pack))
        return repro_error_wrap(repro_error_code(), "submit");
    char real[PATH_MAX];
    size_t n = strlen(s->pack.root);
    if (!realpath(s->cwd, real) || strncmp(real, s->pack.root, n) ||
        (real[n] && real[n] != '/'))
        return repro_error_set(REPRO_EIO, "submit: %s is not inside %s", s->cwd, s->pack.root);
    snprintf(s->rel_cwd, sizeof s->rel_cwd, "%s", real[n] ? real + n + 1 : "");
    if (s->rel_cwd[0] && !repro_pack_rel_ok(s->rel_cwd))
        return repro_error_set(REPRO_EINVAL, "submit: the directory '%s' cannot be named in a "
                                             "bundle ([A-Za-z0-9._/+-] only)",
                               s->rel_cwd);
    return 0;
}

/* 2. The build, in the repository's root, as verify runs it. */
static int build(program_ctx *s)
{
    if (!s->o->build)
        return 0;
    char log[1300];
    snprintf(log, sizeof log, "%s/.submit-build.log", s->o->dir);
    char *argv[] = {"/bin/sh", "-c", (char *)s->o->build, NULL};
    repro_child c = {0};
    c.argv = argv;
    c.cwd = s->pack.root;
    c.out_path = log;
    c.err_to_out = 1;
    repro_child_status st;
    if (repro_child_run(&c, &st))
        return -1;
    int code = repro_child_status_code(&st);
    if (code == 0) {
        unlink(log);
        return 0;
    }
    return repro_error_set(REPRO_EINVAL,
                           "submit: the build command `%s` failed (exit %d) in %s; its output: %s",
                           s->o->build, code, s->pack.root, log);
}

/* The protocol variables of the run, as a bundle may carry them. */
static int record_env(program_ctx *s)
{
    char **env = repro_multirun_external_env(s->m, 0, s->trace);
    if (!env)
        return -1;
    s->env = json_array();
    for (int i = 0; env[i]; i++) {
        if (repro_bundle_env_allowed(env[i]))
            json_array_append_new(s->env, json_string(env[i]));
        free(env[i]);
    }
    free(env);
    return 0;
}

/* 3. The run, as `repro run -- PROGRAM` runs it. */
static int run(program_ctx *s)
{
    s->m = repro_cli_program_runs(s->o->co, s->o->program, "", 0, "submit");
    if (!s->m)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (repro_multirun_add_runs(s->m, 1) || record_env(s))
        return -1;
    snprintf(s->m->plan[0].dir, sizeof s->m->plan[0].dir, "%s", s->rundir);
    char trace[1300];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", s->rundir);
    if (repro_multirun_run_external(s->m, 0, s->rundir) || repro_trace_read(&s->tr, trace) ||
        repro_multirun_check_external_trace(s->m, 0, &s->tr))
        return -1;
    if (rename(trace, s->trace) != 0)
        return repro_error_set_errno(REPRO_EIO, "submit: cannot move %s", trace);
    return 0;
}

/* 4. The declared outputs: hashed, copied into the bundle. */
static int outputs(program_ctx *s)
{
    s->outputs = json_array();
    for (int i = 0; i < s->o->noutputs; i++) {
        const char *rel = s->o->outputs[i];
        char hex[65], to[1400];
        uint64_t bytes;
        if (!repro_pack_rel_ok(rel))
            return repro_error_set(REPRO_EINVAL,
                                   "submit: --program-output %s: a path relative to the "
                                   "program's directory, [A-Za-z0-9._/+-], no '..'",
                                   rel);
        if (repro_pack_sha256_file(rel, hex, &bytes))
            return repro_error_wrap(REPRO_EINVAL,
                                    "submit: the program did not leave its output %s", rel);
        snprintf(to, sizeof to, "%s/outputs/%s", s->o->dir, rel);
        char *data;
        size_t len;
        if (repro_mkdirs_for(to) ||
            repro_read_file_limited(rel, (long)REPRO_PACK_BYTES_MAX, &data, &len))
            return -1;
        int rc = repro_write_file_atomic(to, data, len);
        free(data);
        if (rc)
            return -1;
        json_array_append_new(s->outputs, json_pack("{s:s, s:s, s:I}", "path", rel, "sha256",
                                                    hex, "bytes", (json_int_t)bytes));
    }
    return 0;
}

static json_t *program_json(const program_ctx *s)
{
    json_t *argv = json_array();
    for (int i = 0; s->o->program[i]; i++)
        json_array_append_new(argv, json_string(s->o->program[i]));
    json_t *p = json_pack("{s:s, s:s, s:b, s:s, s:o, s:O, s:O}", "tree", "tree", "commit",
                          s->pack.commit, "dirty", s->pack.dirty, "cwd", s->rel_cwd, "argv",
                          argv, "env", s->env, "outputs", s->outputs);
    if (p && s->o->build)
        json_object_set_new(p, "build", json_string(s->o->build));
    if (p && s->o->data)
        json_object_set_new(p, "data",
                            json_pack("{s:s, s:I, s:I}", "sha256", s->data.sha256, "files",
                                      (json_int_t)s->data.files, "bytes",
                                      (json_int_t)s->data.bytes));
    return p;
}

/* 5. The manifest, refused here if verify would refuse it. */
static int manifest(program_ctx *s)
{
    const repro_trace *tr = &s->tr;
    char chain[65], created[32];
    repro_digest_hex(&tr->trailer_chain, chain);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *env = json_object_get((json_t *)tr->header_json, "env");
    s->doc = json_pack("{s:i, s:s, s:o, s:s, s:I, s:s, s:s, s:O, s:s, s:s, s:b, s:s, s:s}",
                       "repro_bundle", REPRO_BUNDLE_VERSION, "experiment", tr->experiment,
                       "program", program_json(s), "seed", tr->seed, "steps",
                       (json_int_t)tr->trailer_steps, "trace", "trace.jsonl", "chain", chain,
                       "env", env ? env : json_object(), "env_class", tr->env_class, "commit",
                       s->pack.commit, "dirty", s->pack.dirty, "repro_version", REPRO_VERSION,
                       "created", created);
    if (!s->doc)
        return repro_error_set(REPRO_EIO, "submit: cannot build the manifest");
    if (s->o->score)
        json_object_set_new(s->doc, "score", json_string(s->o->score));
    char *text = json_dumps(s->doc, JSON_COMPACT);
    repro_bundle check;
    memset(&check, 0, sizeof check);
    int bad = !text || repro_bundle_parse(&check, text, strlen(text), "submit: the manifest");
    repro_bundle_release(&check);
    free(text);
    if (bad)
        return -1;
    return repro_bundle_write_manifest(s->o->dir, s->doc, s->key);
}

static void print_summary(const program_ctx *s)
{
    char chain[65];
    repro_digest_hex(&s->tr.trailer_chain, chain);
    json_t *sig = json_object_get(s->doc, "signature");
    if (s->o->co->json) {
        json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:b, s:s, s:s, s:b, s:I, s:I}",
                                "bundle", s->o->dir, "experiment", s->tr.experiment, "seed",
                                s->tr.seed, "steps", (json_int_t)s->tr.trailer_steps,
                                "env_class", s->tr.env_class, "signed", sig != NULL, "chain",
                                chain, "commit", s->pack.commit, "dirty", s->pack.dirty,
                                "tree_files", (json_int_t)s->pack.files, "outputs",
                                (json_int_t)json_array_size(s->outputs));
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
        return;
    }
    printf("bundle %s: program %s (%s), seed %s, %ld steps, environment class %s\n",
           repro_esc(s->o->dir), repro_esc(s->o->program[0]), repro_esc(s->tr.experiment),
           repro_esc(s->tr.seed), s->tr.trailer_steps, repro_esc(s->tr.env_class));
    printf("  tree: %ld files, %llu bytes at commit %.12s%s\n", s->pack.files,
           (unsigned long long)s->pack.bytes, s->pack.commit,
           s->pack.dirty ? " (DIRTY: packed as it is, --allow-dirty)" : "");
    if (s->o->build)
        printf("  build command '%s'\n", repro_esc(s->o->build));
    else
        printf("  no build command\n");
    for (size_t i = 0; i < json_array_size(s->outputs); i++) {
        json_t *e = json_array_get(s->outputs, i);
        printf("  output %s sha256 %s\n", repro_esc(json_string_value(json_object_get(e, "path"))),
               json_string_value(json_object_get(e, "sha256")));
    }
    if (s->o->data)
        printf("  data %s: %ld files, %llu bytes, sha256 %s (REPRO_DATA; not in the bundle)\n",
               repro_esc(s->o->data), s->data.files, (unsigned long long)s->data.bytes,
               s->data.sha256);
    if (s->o->score)
        printf("  claimed score %s\n", repro_esc(s->o->score));
    if (sig)
        printf("  signed, submitter key id %.16s\n",
               repro_esc(json_string_value(json_object_get(sig, "key_id"))));
    else
        printf("  not signed (use --key to sign)\n");
    printf("chain %s\n", chain);
}

int repro_submit_program(const repro_submit_program_opts *o)
{
    program_ctx *s = calloc(1, sizeof *s);
    if (!s) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    s->o = o;
    int rc = prepare(s) || data_dir(s) || pack(s) || build(s) || run(s) || outputs(s) ||
                     manifest(s)
                 ? -1
                 : 0;
    if (rc == 0 && (!o->co->quiet || o->co->json))
        print_summary(s);
    if (s->rundir[0])
        repro_pack_remove(s->rundir);
    if (rc && s->made_tree)
        repro_pack_remove(s->tree);
    if (s->m) {
        repro_multirun_release(s->m);
        free(s->m);
    }
    EVP_PKEY_free(s->key);
    json_decref(s->env);
    json_decref(s->outputs);
    json_decref(s->doc);
    repro_trace_release(&s->tr);
    free(s);
    return rc ? repro_report_error() : repro_finish_stdout(0);
}
