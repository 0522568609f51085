/* `repro bless EXP`: runs the experiment N times in fresh processes and, if
 * every run is identical, installs the trace as the golden record for this
 * environment class, tied to the commit it was blessed at. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/config.h"
#include "record/env.h"
#include "util/error.h"
#include "util/fault.h"
#include "history/git.h"
#include "golden/golden.h"
#include "golden/golden_program.h"
#include "analysis/multirun.h"
#include "util/numparse.h"

static const char synopsis[] =
    "usage: repro bless EXP [--runs N] [--every K] [--allow-dirty] [run options]\n"
    "       repro bless [--name NAME] [--timeout S] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs EXP N times (default 2), each in a fresh process; when all runs are\n"
    "identical, writes golden/EXP/CLASS.jsonl (CLASS: this machine's environment\n"
    "class, see `repro env`) atomically. Its header names the commit (HEAD), whether\n"
    "the tree was dirty, and the tree ids of the paths that can change numerics\n"
    "(kernels/, harness/, Makefile, the experiment file). Commit the golden so that\n"
    "`repro check` compares with it. Changes under golden/ do not count as dirty.\n"
    "A program's golden is golden/NAME/, NAME the experiment name it records (or\n"
    "--name), in the git repository of the experiment file or the program.\n"
    "Run options (--steps, --seed, --set, ...) go to every run and are recorded in\n"
    "the golden's header: a check must give the same options to match it.\n";

static const char epilogue[] =
    "\n"
    "Exit: 0 blessed, 1 runs differ (refused, with the check report), 2 dirty tree\n"
    "or bad experiment, 3 environment (not a git repository, lock held).\n";

enum { O_EVERY = 1, O_ALLOW_DIRTY };

static const repro_cli_opt own_opts[] = {
    {"every", 0, "K",
     "keep tensor detail every K-th step in the golden (default 100;\nevery step keeps its "
     "digest and loss); 1 keeps every step",
     O_EVERY},
    {"allow-dirty", 0, NULL, "bless on a tree with uncommitted changes (recorded)",
     O_ALLOW_DIRTY},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_bless_spec = {"bless", REPRO_CLI_BLESS, synopsis, own_opts, epilogue};

/* One bless: its options and what it holds, owned by repro_cmd_bless. */
typedef struct {
    repro_common co; /* -q, --json, --runs and the run options (common_opts.h) */
    const char *exp;
    char **program;  /* `-- PROGRAM ARGS...`, or NULL */
    char name[128];  /* the golden's name: the experiment's, or --name */
    int runs, every, allow_dirty;
    repro_config cfg;
    repro_git *g;
    repro_git_commit head;
    repro_git_dirty *dirty;
    char *exp_rel;
    repro_env env;
    repro_multirun *m;
    char every_set[64]; /* "trace.every=K", passed to every run */
} bless_ctx;

static json_t *commit_json(const repro_git_commit *c)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "id", c->id, "short", c->short_id, "summary",
                     c->summary, "time", c->time_iso);
}

/* An own option: 0 or -1 (error slot). */
static int bless_option(void *ctx, int id, const char *v)
{
    bless_ctx *b = ctx;
    switch (id) {
    case O_EVERY: return repro_parse_count_int("bless: --every", v, 1, INT_MAX, &b->every);
    case O_ALLOW_DIRTY: b->allow_dirty = 1; return 0;
    }
    return 0;
}

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_args(int argc, char **argv, bless_ctx *b)
{
    b->every = 100; /* ~190 B a step: a 30,000-step golden in under 6 MB */
    if (repro_cli_split_program(&argc, argv, &b->program))
        return -1;
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_bless_spec, argc, argv, &b->co, bless_option, b);
    if (parsed)
        return parsed;
    b->runs = b->co.runs ? b->co.runs : 2;
    snprintf(b->name, sizeof b->name, "%s", b->co.name);
    if (b->program) {
        if (p.nargs)
            return repro_error_set(REPRO_EINVAL,
                                   "bless: '%s' and a program after '--': give one or the other",
                                   p.args[0]);
        b->exp = b->program[0];
        return 0; /* no --name: the name the program records, once it has run */
    }
    if (p.nargs != 1)
        return repro_error_set(REPRO_EINVAL, "bless: expected one experiment file (or '-- "
                                             "PROGRAM ARGS...')");
    b->exp = p.args[0];
    if (repro_config_load(&b->cfg, b->exp) ||
        repro_config_apply_run_options(&b->cfg, b->co.pass.argv, b->co.pass.n) ||
        repro_config_validate(&b->cfg))
        return -1;
    if (!b->name[0])
        snprintf(b->name, sizeof b->name, "%s", b->cfg.name);
    return 0;
}

/* The repository, HEAD, the experiment's path in it, the dirty files (minus
 * goldens: they are outputs, not inputs, so blessing one experiment after
 * another must not count the first one's new golden as a dirty tree), and
 * the environment. 0 or -1 (error slot). */
/* An untracked file outside the numerics paths (and not the experiment)
 * cannot have changed the bits: a stray notes.txt must not block a bless.
 * A program's numerics are its whole repository: nothing is a bystander. */
static int untracked_bystander(const bless_ctx *b, const repro_git_dirty_entry *e)
{
    if (b->program || e->status != '?')
        return 0;
    if (b->exp_rel && !strcmp(e->path, b->exp_rel))
        return 0;
    for (int i = 0; i < repro_numerics_npaths; i++) {
        const char *p = repro_numerics_paths[i];
        size_t n = strlen(p);
        if (!strncmp(e->path, p, n) && (e->path[n] == '\0' || e->path[n] == '/' || p[n - 1] == '/'))
            return 0;
    }
    return 1;
}

static int read_state(bless_ctx *b)
{
    /* The repository of the experiment file or the program, wherever
     * bless runs from: check looks for the golden there too. */
    if (repro_golden_open_repo(&b->g, b->program ? NULL : b->exp, b->program) ||
        repro_git_head(b->g, &b->head) ||
        (!b->program && repro_git_relpath(b->g, b->exp, &b->exp_rel)) ||
        repro_git_dirty_list(b->g, NULL, 0, &b->dirty) ||
        repro_env_get_backend(&b->env, !b->program && b->cfg.train_backend == REPRO_BACKEND_CUDA
                                           ? "cuda"
                                           : "cpu"))
        return -1;
    repro_git_dirty *d = b->dirty;
    size_t kept = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (!strncmp(d->entries[i].path, "golden/", 7) || untracked_bystander(b, &d->entries[i])) {
            free(d->entries[i].path);
            free(d->entries[i].old_path);
            continue;
        }
        d->entries[kept++] = d->entries[i];
    }
    d->n = kept;
    return 0;
}

/* A dirty tree without --allow-dirty: says what is dirty, exit 2. */
static int refuse_dirty(const bless_ctx *b)
{
    const repro_git_dirty *d = b->dirty;
    fprintf(stderr, "repro: bless: the work tree has uncommitted changes; a golden must name "
                    "the commit it belongs to:\n");
    for (size_t i = 0; i < d->n && i < 20; i++)
        fprintf(stderr, "  %c %s\n", d->entries[i].status, d->entries[i].path);
    if (d->n > 20)
        fprintf(stderr, "  ... and %zu more\n", d->n - 20);
    fprintf(stderr, "repro: commit them, or bless anyway with --allow-dirty (recorded)\n");
    return REPRO_EXIT_USAGE;
}

/* The runs, which must agree before anything is written: 0 when they do,
 * else the exit code (1 with the report when they differ). */
static int run_all(bless_ctx *b)
{
    if (!(b->m = calloc(1, sizeof *b->m))) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    repro_multirun *m = b->m;
    char dir_name[128];
    if (b->program && !b->name[0])
        repro_program_name(b->program, dir_name, sizeof dir_name);
    else
        snprintf(dir_name, sizeof dir_name, "%s", b->name);
    repro_multirun_init(m, b->exp, dir_name, "bless");
    m->total_steps = b->program ? 0 : b->cfg.train_steps;
    if (b->program) { /* the program keeps its own detail setting */
        m->cmd = b->program;
        m->timeout_s = b->co.timeout_s;
        m->no_element_detail = 1;
    } else {
        snprintf(b->every_set, sizeof b->every_set, "trace.every=%d", b->every);
        m->pass[m->npass++] = "--set";
        m->pass[m->npass++] = b->every_set;
    }
    repro_multirun_add_pass(m, &b->co.pass);
    m->quiet = b->co.quiet || b->co.json;
    int rc = repro_multirun_add_runs(m, b->runs);
    if (!rc && !b->program) /* runs at once where the CPUs hold them (multirun.h) */
        m->jobs = repro_multirun_auto_jobs(m, b->cfg.train_threads, b->cfg.train_ranks);
    rc = rc ? -1 : repro_multirun_execute(m);
    if (rc)
        return rc < 0 ? repro_report_error() : rc;
    if (b->program && !b->name[0]) { /* the experiment name the program records */
        if (repro_golden_name_check(m->traces[0].experiment))
            return repro_report_error();
        snprintf(b->name, sizeof b->name, "%s", m->traces[0].experiment);
    }
    if (!m->failed)
        return 0;
    if (b->co.json) {
        json_t *doc = repro_multirun_json(m);
        json_object_set_new(doc, "blessed", json_false());
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
        return REPRO_EXIT_MISMATCH;
    }
    repro_multirun_print(m, stdout);
    printf("bless refused: %d of %d runs differ from run 1, so there is no one trajectory to "
           "bless (traces in %s)\n",
           m->failed, m->nplan - 1, m->root);
    return REPRO_EXIT_MISMATCH;
}

/* The tree ids of the numerics paths and the experiment at HEAD. */
static json_t *numerics_trees(const bless_ctx *b)
{
    json_t *trees = json_object();
    const char *paths[8];
    int np = 0;
    for (int i = 0; !b->program && i < repro_numerics_npaths; i++)
        paths[np++] = repro_numerics_paths[i];
    if (b->exp_rel)
        paths[np++] = b->exp_rel;
    for (int i = 0; i < np; i++) {
        char id[41];
        if (repro_git_tree_id(b->g, NULL, paths[i], id)) {
            json_decref(trees);
            return NULL;
        }
        json_object_set_new(trees, paths[i], json_string(id));
    }
    return trees;
}

/* The golden's provenance header; NULL with the error slot set. */
static json_t *provenance(const bless_ctx *b)
{
    json_t *trees = numerics_trees(b);
    if (!trees)
        return NULL;
    json_t *dirty_files = json_array();
    for (size_t i = 0; i < b->dirty->n; i++)
        json_array_append_new(dirty_files, json_string(b->dirty->entries[i].path));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *golden = json_object();
    json_object_set_new(golden, "commit", commit_json(&b->head));
    json_object_set_new(golden, "dirty", json_boolean(b->dirty->n > 0));
    json_object_set_new(golden, "dirty_files", dirty_files);
    json_object_set_new(golden, "allow_dirty", json_boolean(b->allow_dirty));
    json_object_set_new(golden, "numerics_trees", trees);
    if (b->program) { /* what was run, as given */
        json_t *argv = json_array();
        for (char **a = b->program; *a; a++)
            json_array_append_new(argv, json_string(*a));
        json_object_set_new(golden, "program", argv);
    } else {
        json_object_set_new(golden, "experiment_file", json_string(b->exp_rel));
    }
    json_object_set_new(golden, "runs", json_integer(b->runs));
    if (b->co.pass.n) { /* the run options every run was given */
        json_t *opts = json_array();
        for (int i = 0; i < b->co.pass.n; i++)
            json_array_append_new(opts, json_string(b->co.pass.argv[i]));
        json_object_set_new(golden, "run_options", opts);
    }
    json_object_set_new(golden, "env_class", json_string(b->env.class_id));
    json_object_set_new(golden, "blessed_at", json_string(stamp));
    json_object_set_new(golden, "shallow", json_boolean(repro_git_is_shallow(b->g)));
    return golden;
}

/* Installs run 1's trace as the golden and says so: 0 or an exit code. */
static int install(bless_ctx *b)
{
    const repro_trace *t = &b->m->traces[0];
    /* The class the run recorded (a program on a GPU says so itself). */
    if (t->env_class[0])
        snprintf(b->env.class_id, sizeof b->env.class_id, "%s", t->env_class);
    json_t *golden = provenance(b);
    if (!golden)
        return repro_report_error();
    char dest[1400], shown[1400], chain[65];
    repro_golden_path(repro_git_workdir(b->g), b->name, b->env.class_id, dest, sizeof dest);
    repro_golden_path("", b->name, b->env.class_id, shown, sizeof shown);
    int rc = repro_golden_install(t->path, dest, golden, 10);
    json_decref(golden);
    if (rc)
        return repro_report_error();
    repro_digest_hex(&t->trailer_chain, chain);
    if (b->co.json) {
        json_t *doc = json_pack("{s:b, s:s, s:i, s:I, s:o, s:b, s:s}", "blessed", 1, "golden",
                                shown, "runs", b->runs, "steps", (json_int_t)t->trailer_steps,
                                "commit", commit_json(&b->head), "dirty", b->dirty->n > 0,
                                "chain", chain);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
        return 0;
    }
    printf("blessed %s: %d identical runs of %ld steps at %s%s (%s), chain %s\n", shown, b->runs,
           t->trailer_steps, b->head.short_id, b->dirty->n ? " + uncommitted changes" : "",
           b->head.summary, chain);
    if (b->program && b->co.name[0])
        printf("commit it so that `repro check --name %s -- %s ...` compares with it\n", b->name,
               b->program[0]);
    else if (b->program) /* the name the program records finds it again */
        printf("commit it so that `repro check -- %s ...` compares with it\n", b->program[0]);
    else
        printf("commit it so that `repro check %s` compares with it\n", b->exp);
    return 0;
}

static void release(bless_ctx *b)
{
    if (b->m)
        repro_multirun_release(b->m);
    free(b->m);
    free(b->exp_rel);
    repro_git_dirty_free(b->dirty);
    repro_git_commit_release(&b->head);
    repro_git_free(b->g);
    free(b);
}

int repro_cmd_bless(int argc, char **argv)
{
    bless_ctx *b = calloc(1, sizeof *b);
    if (!b) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    int rc = parse_args(argc, argv, b);
    if (!rc && repro_fault_training_spec())
        rc = repro_error_set(REPRO_EINVAL,
                             "bless: REPRO_FAULT=%s is set: a golden must never come from a "
                             "fault-injected run (unset it)",
                             repro_fault_training_spec());
    if (rc) {
        free(b);
        return rc == 1 ? repro_finish_stdout(0) : repro_report_error();
    }
    if (read_state(b))
        rc = repro_report_error();
    else if (b->dirty->n > 0 && !b->allow_dirty)
        rc = refuse_dirty(b);
    else if ((rc = run_all(b)) == 0)
        rc = install(b);
    release(b);
    return repro_finish_stdout(rc);
}
