/* Comparison with golden records (see check_golden.h). */
#include "golden/check_golden.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "record/env.h"
#include "util/error.h"
#include "util/escape.h"
#include "history/git.h"
#include "golden/golden.h"
#include "golden/golden_program.h"
#include "analysis/multirun.h"

/* "matches" when identical, or when one trace is a prefix of the other
 * (check --steps 30 against a 300-step golden): every common step agrees. */
static int matches(const repro_divergence *d)
{
    return d->identical || (d->first_step == 0 && d->common_steps > 0);
}

static const char *golden_commit(const repro_trace *g, const char *key)
{
    json_t *gj = json_object_get(g->header_json, "golden");
    return json_string_value(json_object_get(json_object_get(gj, "commit"), key));
}

/* How close a changed path is to the numerics, for ranking the report:
 * kernels first, then the trainer, then the experiment, then the rest. */
static int closeness(const char *path, const char *exp_file)
{
    if (!strncmp(path, "kernels/", 8))
        return 0;
    if (!strncmp(path, "harness/core/", 13))
        return 1;
    if (exp_file && !strcmp(path, exp_file))
        return 2;
    return 3;
}

/* Uncommitted changes to the numerics paths: the likeliest cause when a
 * developer runs check locally, so they come first. */
static void report_uncommitted(repro_git *git, const char *const *prefixes, size_t np, FILE *out,
                               json_t *json)
{
    repro_git_dirty *d = NULL;
    if (repro_git_dirty_list(git, prefixes, np, &d)) {
        repro_error_clear();
        return;
    }
    json_t *arr = json_array();
    if (out && d->n > 0)
        fprintf(out, "  uncommitted changes to the numerics paths (the likeliest cause):\n");
    /* closest to the numerics first, as for commits (a stable order) */
    for (int rank = 0, shown = 0; rank <= 3; rank++)
        for (size_t i = 0; i < d->n; i++) {
            if (closeness(d->entries[i].path, NULL) != rank)
                continue;
            if (out && shown++ < 10)
                fprintf(out, "    %c %s\n", d->entries[i].status, repro_esc(d->entries[i].path));
            json_array_append_new(arr, json_string(d->entries[i].path));
        }
    if (out && d->n > 10)
        fprintf(out, "    ... and %zu more\n", d->n - 10);
    if (json)
        json_object_set_new(json, "uncommitted_paths", arr);
    else
        json_decref(arr);
    repro_git_dirty_free(d);
}

typedef struct {
    const repro_git_path_changes *p;
    int rank;
} ranked_path;

static int by_rank(const void *x, const void *y)
{
    const ranked_path *a = x, *b = y;
    return a->rank != b->rank ? a->rank - b->rank : strcmp(a->p->path, b->p->path);
}

enum { SCREENFUL = 12 };

static void print_path(FILE *out, const repro_git_changes *ch, const repro_git_path_changes *p,
                       const char *since)
{
    /* One line a path: the newest commit with its subject (cut), the
     * others by id. */
    const repro_git_commit *c0 = &ch->commits[p->commits[0]].commit;
    char path[512];
    snprintf(path, sizeof path, "%s", repro_esc(p->path));
    fprintf(out, "    %s (%zu commit%s): %s %.50s%s", path, p->ncommits,
            p->ncommits == 1 ? "" : "s", c0->short_id, repro_esc(c0->summary),
            strlen(c0->summary) > 50 ? "..." : "");
    for (size_t k = 1; k < p->ncommits && k < 4; k++)
        fprintf(out, ", %s", ch->commits[p->commits[k]].commit.short_id);
    fprintf(out, "%s\n", p->ncommits > 4 ? ", ..." : "");
    (void)since;
}

/* Committed changes since the golden, closest to the numerics first, a
 * screenful at most, then the command that finds the commit. */
static void report_committed(repro_git *git, const repro_trace *golden, const char *since,
                             const char *const *prefixes, size_t np, const char *exp_file,
                             FILE *out, json_t *json)
{
    repro_git_changes *ch = NULL;
    if (repro_git_changes_since(git, since, prefixes, np, &ch)) {
        if (out)
            fprintf(out, "  (cannot list changes since %.7s: %s)\n", repro_esc(since),
                    repro_esc(repro_error_message()));
        return;
    }
    ranked_path *r = calloc(ch->npaths ? ch->npaths : 1, sizeof *r);
    for (size_t i = 0; r && i < ch->npaths; i++)
        r[i] = (ranked_path){&ch->paths[i], closeness(ch->paths[i].path, exp_file)};
    if (r)
        qsort(r, ch->npaths, sizeof *r, by_rank);
    json_t *paths = json_array();
    if (out && ch->npaths == 0)
        fprintf(out, "  no commit since %.7s touched the numerics paths (kernels/, harness/, "
                     "Makefile, the experiment): the environment or uncommitted changes differ\n",
                since);
    else if (out)
        fprintf(out, "  committed changes since the golden was blessed at %.7s, closest to the "
                     "numerics first (kernels, trainer, experiment, the rest):\n",
                since);
    for (size_t i = 0; r && i < ch->npaths; i++) {
        const repro_git_path_changes *p = r[i].p;
        if (out && i < SCREENFUL)
            print_path(out, ch, p, since);
        json_t *commits = json_array();
        for (size_t k = 0; k < p->ncommits; k++) {
            const repro_git_commit *c = &ch->commits[p->commits[k]].commit;
            json_array_append_new(commits, json_pack("{s:s, s:s}", "id", c->id, "summary",
                                                     c->summary));
        }
        json_array_append_new(paths, json_pack("{s:s, s:o}", "path", p->path, "commits", commits));
    }
    if (out && ch->npaths > SCREENFUL)
        fprintf(out, "    ... and %zu more paths (--json lists them all)\n",
                ch->npaths - SCREENFUL);
    if (ch->incomplete && out)
        fprintf(out, "  (%s)\n", ch->note ? ch->note : "history incomplete");
    if (out && ch->npaths > 0)
        fprintf(out, "  to find the commit: repro bisect --commits %.12s..HEAD %s\n",
                repro_esc(since),
                golden->experiment_path[0] ? repro_esc(golden->experiment_path) : "EXP");
    if (json) {
        json_object_set_new(json, "changed_paths", paths);
        json_object_set_new(json, "history_incomplete", json_boolean(ch->incomplete));
    } else {
        json_decref(paths);
    }
    free(r);
    repro_git_changes_free(ch);
}

/* What changed since the golden was blessed: uncommitted edits first, then
 * commits, ranked. */
static void report_changes(repro_git *git, const repro_trace *golden, char *const *program,
                           FILE *out, json_t *json)
{
    const char *since = golden_commit(golden, "id");
    if (!git || !since)
        return;
    if (program) { /* the program's own repository, not repro's paths */
        repro_golden_program_changes(git, since, program, out, json);
        return;
    }
    const char *prefixes[8];
    size_t np = 0;
    for (int i = 0; i < repro_numerics_npaths; i++)
        prefixes[np++] = repro_numerics_paths[i];
    json_t *gj = json_object_get(golden->header_json, "golden");
    const char *exp_file = json_string_value(json_object_get(gj, "experiment_file"));
    if (exp_file)
        prefixes[np++] = exp_file;
    report_uncommitted(git, prefixes, np, out, json);
    report_committed(git, golden, since, prefixes, np, exp_file, out, json);
}

/* Largest rel_l2 of the divergence curve: how far apart, by the stats. */
static double max_rel_l2(const repro_divergence *d)
{
    double m = 0;
    for (long i = 0; i < d->ncurve; i++)
        if (d->curve[i].rel_l2 > m || isnan(d->curve[i].rel_l2))
            m = d->curve[i].rel_l2;
    return m;
}

/* No golden for this class: report the classes there are and the closest. */
/* The bless command that makes the missing golden. */
static void print_bless_hint(FILE *out, const repro_trace *run, const char *experiment,
                             char *const *program)
{
    fprintf(out, "golden: required (--require-golden) but missing: bless it with `repro bless ");
    if (!program) {
        fprintf(out, "%s`\n", repro_esc(run->experiment_path));
        return;
    }
    if (strcmp(experiment, run->experiment)) /* named by --name, not by the program */
        fprintf(out, "--name %s ", repro_esc(experiment));
    fprintf(out, "-- %s%s`\n", repro_esc(program[0]), program[1] ? " ..." : "");
}

/* The golden at `path` against the run's trace, both streamed from their
 * files (memory independent of the number of steps); their headers land in
 * *g and *r (the caller releases both, also on error). */
static int compare_with_golden(const char *path, const repro_trace *run, repro_trace *g,
                               repro_trace *r, repro_divergence *d)
{
    return repro_compare_files(path, run->path, g, r, 1, 0, d);
}

static int compare_other_classes(const repro_trace *run, const char *root, const char *experiment,
                                 char *const *program, const char *cls, int require, FILE *out,
                                 json_t *json)
{
    /* The directory searched, absolute: a CI log must say where it looked. */
    char dir[1400], cwd[1024] = ".";
    if (!root[0] && !getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
    snprintf(dir, sizeof dir, "%s/golden/%s/", root[0] ? root : cwd, experiment);
    char **classes = NULL;
    int n = repro_golden_classes(root, experiment, &classes);
    json_t *others = json_array();
    int best = -1;
    double best_d = INFINITY;
    if (out)
        fprintf(out, "golden: none for environment class %s in %s%s", repro_esc(cls),
                repro_esc(dir), n ? "; goldens exist for: " : " (and none for any other class)");
    for (int i = 0; i < n; i++) {
        if (out)
            fprintf(out, "%s%s", i ? ", " : "", repro_esc(classes[i]));
        json_array_append_new(others, json_string(classes[i]));
    }
    if (out)
        fputc('\n', out);
    for (int i = 0; i < n; i++) {
        char path[1400];
        repro_golden_path(root, experiment, classes[i], path, sizeof path);
        repro_trace g, r;
        repro_divergence d;
        if (compare_with_golden(path, run, &g, &r, &d) == 0) {
            double dist = matches(&d) ? 0 : max_rel_l2(&d);
            if (dist < best_d) {
                best_d = dist;
                best = i;
            }
            repro_divergence_release(&d);
        } else {
            repro_error_clear();
        }
        repro_trace_release(&g);
        repro_trace_release(&r);
    }
    if (best >= 0 && out)
        fprintf(out,
                "golden: closest class %s: max relative difference of ||params|| %.3g over the "
                "common steps (a tolerance view; bitwise identity is promised only within a "
                "class)\n",
                repro_esc(classes[best]), best_d);
    if (json) {
        json_object_set_new(json, "status", json_string("none"));
        json_object_set_new(json, "searched", json_string(dir));
        json_object_set_new(json, "classes", others);
        if (best >= 0) {
            json_object_set_new(json, "closest_class", json_string(classes[best]));
            json_object_set_new(json, "closest_max_rel_l2", json_real(best_d));
        }
    } else {
        json_decref(others);
    }
    if (require && out)
        print_bless_hint(out, run, experiment, program);
    repro_golden_classes_free(classes, n);
    return require ? REPRO_GOLDEN_DIFFERS : 0;
}

/* A golden filed under this class's repro-env-class/v1 id (blessed before
 * the digest function left the class): its path into `path` when the file
 * exists. The class is the run's (its header's "env"), else this
 * machine's. */
static int find_v1_golden(const repro_trace *run, const repro_env *here, const char *root,
                          const char *experiment, char *path, size_t len)
{
    repro_env e = *here;
    json_t *env = json_object_get((json_t *)run->header_json, "env");
    if (env && repro_env_from_json(env, &e))
        e = *here;
    char v1[REPRO_ENV_CLASS_MAX];
    if (repro_env_class_id_v1(&e, v1, sizeof v1)) {
        repro_error_clear();
        return 0;
    }
    repro_golden_path(root, experiment, v1, path, len);
    return access(path, F_OK) == 0;
}

/* The golden's digests are of another function than the run's: not a
 * mismatch (nothing can be compared), a golden to re-bless. */
static int report_other_digest(const repro_trace *g, const repro_trace *run, const char *shown,
                               const char *blessed, FILE *out, json_t *json)
{
    if (out)
        fprintf(out,
                "golden: different digest function: %s was blessed (at %s) with %s, this run "
                "digests with %s; its digests cannot be compared: re-bless it (`repro bless %s`)"
                "%s\n",
                repro_esc(shown), blessed ? repro_esc(blessed) : "?", repro_esc(g->tensor_hash),
                repro_esc(run->tensor_hash),
                run->experiment_path[0] ? repro_esc(run->experiment_path) : "EXP",
                run->digest_fn == REPRO_DIGEST_XXH3 && g->digest_fn == REPRO_DIGEST_SHA256
                    ? ", or run with --set trace.digest=sha256 to compare with it"
                    : "");
    if (json) {
        json_object_set_new(json, "status", json_string("digest-function-changed"));
        json_object_set_new(json, "golden_tensor_hash", json_string(g->tensor_hash));
        json_object_set_new(json, "run_tensor_hash", json_string(run->tensor_hash));
    }
    return REPRO_GOLDEN_DIFFERS;
}

int repro_check_golden(const repro_trace *run, const char *experiment, const char *exp_file,
                       char *const *program, int overridden, int require, FILE *out,
                       json_t *json)
{
    repro_env env;
    if (repro_env_get(&env))
        return -1;
    /* The run's own class when its trace names one (a cuda run is checked
     * against the cuda golden of its GPU class), else this machine's cpu. */
    if (run->env_class[0])
        snprintf(env.class_id, sizeof env.class_id, "%s", run->env_class);
    /* Goldens live in the work tree of the experiment's or the program's
     * repository, wherever repro runs from (CI jobs run from elsewhere);
     * outside a repository, relative to the current directory (and without
     * the history report). */
    repro_git *git = NULL;
    const char *root = "";
    if (repro_golden_open_repo(&git, exp_file, program) == 0)
        root = repro_git_workdir(git);
    else
        repro_error_clear();
    char path[1400], shown[1400];
    repro_golden_path(root, experiment, env.class_id, path, sizeof path);
    repro_golden_path("", experiment, env.class_id, shown, sizeof shown); /* for messages */
    if (json) {
        json_object_set_new(json, "class", json_string(env.class_id));
        json_object_set_new(json, "path", json_string(path));
    }
    int rc = 0;
    if (access(path, F_OK) != 0 && find_v1_golden(run, &env, root, experiment, path, sizeof path)) {
        /* found under its old name: messages and JSON name that file */
        snprintf(shown, sizeof shown, "%s", path + (root[0] ? strlen(root) + 1 : 0));
        if (json)
            json_object_set_new(json, "path", json_string(path));
    }
    if (access(path, F_OK) != 0) {
        rc = compare_other_classes(run, root, experiment, program, env.class_id, require, out,
                                   json);
        repro_git_free(git);
        return rc;
    }
    repro_trace g; /* header and trailer: the comparison streams the steps */
    if (repro_trace_scan(&g, path)) {
        repro_git_free(git);
        return repro_error_wrap(REPRO_EINVAL, "golden %s is unreadable", path);
    }
    repro_divergence d;
    memset(&d, 0, sizeof d);
    const char *blessed = golden_commit(&g, "short");
    if (strcmp(g.experiment, run->experiment)) {
        rc = repro_error_set(REPRO_EINVAL, "golden %s is of experiment '%s', not '%s'", path,
                             g.experiment, run->experiment);
        goto done;
    }
    if (!g.has_trailer) {
        rc = repro_error_set(REPRO_EINVAL, "golden %s is truncated (no trailer)", path);
        goto done;
    }
    if (strcmp(g.tensor_hash, run->tensor_hash) != 0) {
        rc = report_other_digest(&g, run, shown, blessed, out, json);
        goto done;
    }
    if (!repro_digest_eq(&g.numerics_digest, &run->numerics_digest)) {
        if (overridden) {
            if (out)
                fprintf(out, "golden: not compared: the check overrides the config (--set/--seed), "
                             "and %s is for the committed config\n",
                        repro_esc(path));
            if (json)
                json_object_set_new(json, "status", json_string("skipped"));
            goto done;
        }
        if (out)
            fprintf(out,
                    "golden: MISMATCH: %s was blessed (at %s) with a different config of %s; "
                    "the experiment changed since: re-bless it\n",
                    repro_esc(shown), blessed ? repro_esc(blessed) : "?", repro_esc(experiment));
        if (json)
            json_object_set_new(json, "status", json_string("config-changed"));
        report_changes(git, &g, program, out, json);
        rc = REPRO_GOLDEN_DIFFERS;
        goto done;
    }
    repro_trace gs, rs; /* the headers again: the steps are streamed */
    int crc = compare_with_golden(path, run, &gs, &rs, &d);
    repro_trace_release(&gs);
    repro_trace_release(&rs);
    if (crc) {
        rc = repro_error_wrap(REPRO_EINVAL, "golden %s", path);
        goto done;
    }
    snprintf(d.scope, sizeof d.scope, "golden (blessed at %s)", blessed ? blessed : "?");
    if (matches(&d)) {
        if (out)
            fprintf(out, "golden: matches %s (blessed at %s) over %ld steps\n", repro_esc(shown),
                    blessed ? repro_esc(blessed) : "?", d.common_steps);
        if (json)
            json_object_set_new(json, "status", json_string("match"));
    } else {
        if (out) {
            fprintf(out, "== golden %s vs run 1 ==\n", repro_esc(shown));
            repro_report_text(out, &g, run, &d);
            fprintf(out, "golden: MISMATCH with %s (blessed at %s)\n", repro_esc(shown),
                    blessed ? repro_esc(blessed) : "?");
        }
        if (json) {
            json_object_set_new(json, "status", json_string("mismatch"));
            json_t *r = repro_divergence_json(&g, run, &d);
            json_object_set_new(json, "report", r ? r : json_null());
        }
        report_changes(git, &g, program, out, json);
        rc = REPRO_GOLDEN_DIFFERS;
    }
done:
    repro_divergence_release(&d);
    repro_trace_release(&g);
    repro_git_free(git);
    return rc;
}
