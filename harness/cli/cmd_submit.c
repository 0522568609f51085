/* `repro submit EXP -o DIR`: runs the experiment once in a fresh process
 * and packs the run into a submission bundle (bundle.h) for a host to
 * check with `repro verify`: parse the options, (1) the effective config
 * from `repro run --print-config`, (2) the run itself, (3) the manifest,
 * checked as verify would check it, then written (signed with --key).
 * `repro submit -o DIR ... -- PROGRAM ARGS` makes a program bundle
 * instead (submit_program.c). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "verify/bundle.h"
#include "cli/cli.h"
#include "cli/submit_program.h"
#include "core/config.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/escape.h"
#include "history/git.h"
#include "analysis/multirun.h"
#include "util/child.h"
#include "verify/sign.h"
#include "record/trace.h"
#include "util/version.h"

static const char synopsis[] =
    "usage: repro submit EXP -o DIR [--key submitter.pem] [run options]\n"
    "       repro submit -o DIR [--build CMD] [--allow-dirty] [--program-output PATH]...\n"
    "                    [--data DIR] [--claim-score X] [--key submitter.pem]\n"
    "                    -- PROGRAM ARGS...\n"
    "\n"
    "Runs the experiment EXP once (a fresh `repro run` process) and writes a\n"
    "submission bundle to DIR: DIR/trace.jsonl (the claimed trace) and\n"
    "DIR/manifest.json (the effective config inline, seed, steps, the final\n"
    "chain digest, this environment's fingerprint and class, the commit),\n"
    "optionally signed with the submitter's Ed25519 key. A host checks it with\n"
    "`repro verify DIR`. Only synthetic-data experiments can be submitted: a\n"
    "host cannot re-run on files it does not have. The run options (--steps,\n"
    "--seed, --set, ...) are passed to `repro run`; -q prints no summary.\n"
    "\n"
    "With -- PROGRAM: a program bundle. The git tree of the program's\n"
    "repository at HEAD is packed into DIR/tree (a dirty tree is refused\n"
    "unless --allow-dirty, which packs the work tree as it is and says so),\n"
    "the build command is run in the repository's root, the program is run\n"
    "once as `repro run -- PROGRAM` runs it, and its declared outputs\n"
    "(--program-output, relative to the current directory) are hashed and\n"
    "copied to DIR/outputs/. A host re-builds and re-runs it in a sandbox\n"
    "with `repro verify DIR`, and scores the outputs with its own evaluator.\n"
    "With --data DIR the program reads its inputs from DIR (REPRO_DATA); the\n"
    "bundle records DIR's digest, not its files, and a host verifies it on\n"
    "data of its own (`repro verify --data`).\n";

static const char epilogue[] = "\nExit: 0 ok, 2 bad experiment or option, 3 environment.\n";

enum { O_OUTPUT = 1, O_KEY, O_BUILD, O_ALLOW_DIRTY, O_PROGRAM_OUTPUT, O_CLAIM_SCORE, O_DATA };

static const repro_cli_opt own_opts[] = {
    {"output", 'o', "DIR", "the bundle directory (created; must not hold a bundle)", O_OUTPUT},
    {"key", 0, "FILE",
     "sign the manifest with this Ed25519 private key (PEM;\n`repro keygen` or `openssl genpkey "
     "-algorithm ed25519`)",
     O_KEY},
    {"build", 0, "CMD", "-- PROGRAM only: the build command (`sh -c CMD` in the\nrepository's root; "
     "verify runs it in its sandbox)", O_BUILD},
    {"allow-dirty", 0, NULL,
     "-- PROGRAM only: pack a work tree with uncommitted\nchanges as it is (the bundle says dirty)",
     O_ALLOW_DIRTY},
    {"program-output", 0, "PATH",
     "-- PROGRAM only: a file the program writes that a host\nscores (relative to the current "
     "directory; repeatable)",
     O_PROGRAM_OUTPUT},
    {"data", 0, "DIR",
     "-- PROGRAM only: the program's input data, a directory\ngiven to it as REPRO_DATA; the "
     "bundle records its\ndigest, never its files",
     O_DATA},
    {"claim-score", 0, "X",
     "the score claimed (a decimal number): verify rejects it\nunless it is the host's score",
     O_CLAIM_SCORE},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_submit_spec = {"submit", REPRO_CLI_SUBMIT, synopsis, own_opts,
                                          epilogue};

typedef struct {
    const char *exp, *dir, *keypath;
    repro_common co; /* -q, --json and the run options (common_opts.h) */
    repro_submit_program_opts prog; /* -- PROGRAM and its options */
} submit_opts;

/* One submission's files and what it holds; owned by repro_cmd_submit. */
typedef struct {
    const submit_opts *o;
    char p_manifest[1200], p_cfg[1200], p_out[1200], p_err[1200], p_trace[1200];
    EVP_PKEY *key;
    repro_trace tr;
    char *cfg_text;
    json_t *doc;
} submit_ctx;

/* The text of a small file (a child's output), malloc'd; "" if unreadable. */
static char *slurp(const char *path)
{
    char *s;
    size_t n;
    if (repro_read_file_limited(path, REPRO_BUNDLE_CONFIG_MAX, &s, &n)) {
        repro_error_clear();
        return strdup("");
    }
    return s;
}

/* HEAD's id and whether the work tree has uncommitted changes (-1:
 * unknown, outside a checkout): a host should know the submitter's code
 * was not exactly that commit. */
static void commit_id(char *out, size_t len, int *dirty)
{
    repro_git *g = NULL;
    repro_git_commit c;
    repro_git_dirty *d = NULL;
    snprintf(out, len, "unknown");
    *dirty = -1;
    if (repro_git_open(&g, NULL) == 0 && repro_git_head(g, &c) == 0) {
        snprintf(out, len, "%s", c.id);
        repro_git_commit_release(&c);
        if (repro_git_dirty_list(g, NULL, 0, &d) == 0)
            *dirty = d->n > 0;
        repro_git_dirty_free(d);
    }
    repro_git_free(g);
    repro_error_clear(); /* outside a checkout the commit is just unknown */
}

/* An own option: -o or --key. */
static int submit_option(void *ctx, int id, const char *v)
{
    submit_opts *o = ctx;
    if (id == O_OUTPUT)
        o->dir = v;
    else if (id == O_KEY)
        o->keypath = v;
    else if (id == O_BUILD)
        o->prog.build = v;
    else if (id == O_ALLOW_DIRTY)
        o->prog.allow_dirty = 1;
    else if (id == O_DATA)
        o->prog.data = v;
    else if (id == O_CLAIM_SCORE) {
        char buf[32];
        double d;
        json_t *j = json_string(v);
        int bad = !j || repro_bundle_parse_score(j, "submit: --claim-score", buf, sizeof buf, &d);
        json_decref(j);
        if (bad)
            return -1;
        o->prog.score = v;
    } else if (o->prog.noutputs == REPRO_SUBMIT_OUTPUTS_MAX)
        return repro_error_set(REPRO_EINVAL, "submit: more than %d --program-output",
                               REPRO_SUBMIT_OUTPUTS_MAX);
    else
        o->prog.outputs[o->prog.noutputs++] = v;
    return 0;
}

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_args(int argc, char **argv, submit_opts *o)
{
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_submit_spec, argc, argv, &o->co, submit_option, o);
    if (parsed)
        return parsed;
    if (p.nargs > 1)
        return repro_error_set(REPRO_EINVAL, "submit: more than one experiment ('%s', '%s')",
                               p.args[0], p.args[1]);
    o->exp = p.nargs ? p.args[0] : NULL;
    if (o->prog.program) {
        if (o->exp)
            return repro_error_set(REPRO_EINVAL,
                                   "submit: an experiment ('%s') and a program after --: one "
                                   "or the other",
                                   o->exp);
        if (!o->dir)
            return repro_error_set(REPRO_EINVAL, "submit: need -o DIR (see `repro help submit`)");
        return 0;
    }
    if (o->prog.build || o->prog.allow_dirty || o->prog.noutputs || o->prog.data)
        return repro_error_set(REPRO_EINVAL,
                               "submit: --build, --allow-dirty, --program-output and --data are "
                               "for -- PROGRAM");
    if (!o->exp || !o->dir)
        return repro_error_set(REPRO_EINVAL,
                               "submit: need EXP and -o DIR (see `repro help submit`)");
    return 0;
}

/* `repro run EXP <pass-through> <tail...>` with stdout to out_path. A
 * failing run's stderr is shown; its exit status says whose fault it was
 * (2: the experiment or an option, else the environment). */
static int run_child(submit_ctx *s, char *const tail[], const char *out_path)
{
    const submit_opts *o = s->o;
    char *args[REPRO_RUN_PASS_MAX + 16];
    int n = 0;
    args[n++] = "run";
    args[n++] = (char *)o->exp;
    for (int i = 0; i < o->co.pass.n; i++)
        args[n++] = o->co.pass.argv[i];
    for (int i = 0; tail[i]; i++)
        args[n++] = tail[i];
    args[n] = NULL;
    int st = repro_child_run_self(args, NULL, out_path, s->p_err);
    if (st <= 0)
        return st;
    char *e = slurp(s->p_err), silence[1600];
    fputs(e, stderr);
    free(e);
    if (repro_child_explain_silence(s->p_err, silence, sizeof silence))
        return repro_error_set(st == 2 ? REPRO_EINVAL : REPRO_EIO,
                               "submit: `repro run %s` failed (exit %d) and said nothing: %s",
                               o->exp, st, silence);
    return repro_error_set(st == 2 ? REPRO_EINVAL : REPRO_EIO,
                           "submit: `repro run %s` failed (exit %d)", o->exp, st);
}

/* The bundle directory, which must not hold a bundle yet, and the key. */
static int prepare(submit_ctx *s)
{
    const submit_opts *o = s->o;
    if (o->keypath && repro_sign_load_private(&s->key, o->keypath))
        return -1;
    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EINVAL, "submit: cannot create %s", o->dir);
    if (access(s->p_manifest, F_OK) == 0)
        return repro_error_set(REPRO_EINVAL, "submit: %s already holds a bundle", o->dir);
    return 0;
}

/* 1. The effective config, as `repro run --print-config` dumps it: the
 *    manifest carries it inline, so the host needs no file of ours. */
static int effective_config(submit_ctx *s)
{
    char *tail[] = {"--print-config", NULL};
    if (run_child(s, tail, s->p_cfg))
        return -1;
    repro_config cfg;
    if (repro_config_load(&cfg, s->p_cfg))
        return -1;
    if (cfg.data_dataset != REPRO_DATASET_SYNTHETIC)
        return repro_error_set(REPRO_EINVAL,
                               "submit: %s: data.dataset = idx reads local files a host does not "
                               "have; only synthetic-data experiments can be submitted",
                               s->o->exp);
    s->cfg_text = slurp(s->p_cfg);
    return 0;
}

/* 2. The run itself, in a fresh process, its trace inside the bundle. */
static int run_once(submit_ctx *s)
{
    char *tail[] = {"-o", s->p_trace, "-q", NULL};
    if (run_child(s, tail, s->p_out) || repro_trace_read(&s->tr, s->p_trace))
        return -1;
    if (!s->tr.has_trailer)
        return repro_error_set(REPRO_EIO, "submit: %s: the run left no trailer", s->p_trace);
    return 0;
}

/* 3. The manifest, refused here if verify would refuse it, then written. */
static int write_manifest(submit_ctx *s)
{
    const repro_trace *tr = &s->tr;
    char chain[65], commit[65], created[32];
    int dirty;
    repro_digest_hex(&tr->trailer_chain, chain);
    commit_id(commit, sizeof commit, &dirty);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *env = json_object_get((json_t *)tr->header_json, "env");
    s->doc = json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:s, s:O, s:s, s:s, s:s, s:s}",
                       "repro_bundle", REPRO_BUNDLE_VERSION, "experiment", tr->experiment,
                       "config", s->cfg_text, "seed", tr->seed, "steps",
                       (json_int_t)tr->trailer_steps, "trace", "trace.jsonl", "chain", chain,
                       "env", env ? env : json_object(), "env_class", tr->env_class, "commit",
                       commit, "repro_version", REPRO_VERSION, "created", created);
    if (!s->doc)
        return repro_error_set(REPRO_EIO, "submit: cannot build the manifest");
    if (dirty >= 0)
        json_object_set_new(s->doc, "dirty", json_boolean(dirty));
    if (s->o->prog.score)
        json_object_set_new(s->doc, "score", json_string(s->o->prog.score));
    char *text = json_dumps(s->doc, JSON_COMPACT);
    repro_bundle check;
    memset(&check, 0, sizeof check);
    int bad = !text || repro_bundle_parse(&check, text, strlen(text), s->p_manifest);
    repro_bundle_release(&check);
    free(text);
    if (bad)
        return repro_error_wrap(REPRO_EINVAL, "submit");
    return repro_bundle_write_manifest(s->o->dir, s->doc, s->key);
}

static void print_summary(const submit_ctx *s)
{
    char chain[65];
    repro_digest_hex(&s->tr.trailer_chain, chain);
    json_t *sig = json_object_get(s->doc, "signature");
    if (s->o->co.json) {
        json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:b, s:s}", "bundle", s->o->dir,
                                "experiment", s->tr.experiment, "seed", s->tr.seed, "steps",
                                (json_int_t)s->tr.trailer_steps, "env_class", s->tr.env_class,
                                "signed", sig != NULL, "chain", chain);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
        return;
    }
    printf("bundle %s: %s, seed %s, %ld steps, environment class %s\n", repro_esc(s->o->dir),
           repro_esc(s->tr.experiment), repro_esc(s->tr.seed), s->tr.trailer_steps,
           repro_esc(s->tr.env_class));
    if (sig)
        printf("  signed, submitter key id %.16s\n",
               repro_esc(json_string_value(json_object_get(sig, "key_id"))));
    else
        printf("  not signed (use --key to sign)\n");
    printf("chain %s\n", chain);
}

int repro_cmd_submit(int argc, char **argv)
{
    submit_opts o;
    memset(&o, 0, sizeof o);
    int rc = repro_cli_split_program(&argc, argv, &o.prog.program);
    if (!rc)
        rc = parse_args(argc, argv, &o);
    if (!rc && repro_fault_training_spec())
        rc = repro_error_set(REPRO_EINVAL,
                             "submit: REPRO_FAULT=%s is set: a submission must not come from a "
                             "fault-injected run (unset it)",
                             repro_fault_training_spec());
    if (rc)
        return rc == 1 ? repro_finish_stdout(0) : repro_report_error();
    if (o.prog.program) {
        o.prog.dir = o.dir;
        o.prog.keypath = o.keypath;
        o.prog.co = &o.co;
        return repro_submit_program(&o.prog);
    }
    submit_ctx *s = calloc(1, sizeof *s);
    if (!s) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    s->o = &o;
    snprintf(s->p_manifest, sizeof s->p_manifest, "%s/%s", o.dir, REPRO_BUNDLE_MANIFEST);
    snprintf(s->p_cfg, sizeof s->p_cfg, "%s/.submit-config.ini", o.dir);
    snprintf(s->p_out, sizeof s->p_out, "%s/.submit-run.out", o.dir);
    snprintf(s->p_err, sizeof s->p_err, "%s/.submit-run.err", o.dir);
    snprintf(s->p_trace, sizeof s->p_trace, "%s/trace.jsonl", o.dir);
    rc = prepare(s) || effective_config(s) || run_once(s) || write_manifest(s) ? -1 : 0;
    if (rc == 0 && (!o.co.quiet || o.co.json))
        print_summary(s);
    unlink(s->p_cfg);
    unlink(s->p_out);
    unlink(s->p_err);
    EVP_PKEY_free(s->key);
    json_decref(s->doc);
    free(s->cfg_text);
    repro_trace_release(&s->tr);
    free(s);
    return rc ? repro_report_error() : repro_finish_stdout(0);
}
