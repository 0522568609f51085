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
#include "golden/git.h"
#include "golden/golden.h"
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

/* The commits since the golden's that touched the numerics paths. */
static void report_changes(repro_git *git, const repro_trace *golden, FILE *out, json_t *json)
{
    const char *since = golden_commit(golden, "id");
    if (!git || !since)
        return;
    const char *prefixes[8];
    size_t np = 0;
    for (int i = 0; i < repro_numerics_npaths; i++)
        prefixes[np++] = repro_numerics_paths[i];
    json_t *gj = json_object_get(golden->header_json, "golden");
    const char *exp_file = json_string_value(json_object_get(gj, "experiment_file"));
    if (exp_file)
        prefixes[np++] = exp_file;
    repro_git_changes *ch = NULL;
    if (repro_git_changes_since(git, since, prefixes, np, &ch)) {
        if (out)
            fprintf(out, "  (cannot list changes since %.7s: %s)\n", repro_esc(since),
                    repro_esc(repro_error_message()));
        return;
    }
    json_t *paths = json_array();
    if (out) {
        if (ch->npaths == 0)
            fprintf(out, "  no commit since %.7s touched the numerics paths (kernels/, harness/, "
                         "Makefile, the experiment): the environment or uncommitted changes "
                         "differ\n",
                    repro_esc(since));
        else
            fprintf(out, "  numerics paths changed since the golden was blessed at %.7s:\n",
                    repro_esc(since));
    }
    for (size_t i = 0; i < ch->npaths; i++) {
        const repro_git_path_changes *p = &ch->paths[i];
        json_t *commits = json_array();
        if (out)
            fprintf(out, "    %s changed in %zu commit%s since %.7s:", repro_esc(p->path),
                    p->ncommits, p->ncommits == 1 ? "" : "s", repro_esc(since));
        for (size_t k = 0; k < p->ncommits; k++) {
            const repro_git_commit *c = &ch->commits[p->commits[k]].commit;
            if (out)
                fprintf(out, "%s %s %s", k ? "," : "", c->short_id, repro_esc(c->summary));
            json_array_append_new(commits, json_pack("{s:s, s:s}", "id", c->id, "summary",
                                                     c->summary));
        }
        if (out)
            fputc('\n', out);
        json_array_append_new(paths, json_pack("{s:s, s:o}", "path", p->path, "commits", commits));
    }
    if (ch->incomplete && out)
        fprintf(out, "  (%s)\n", ch->note ? ch->note : "history incomplete");
    if (json) {
        json_object_set_new(json, "changed_paths", paths);
        json_object_set_new(json, "history_incomplete", json_boolean(ch->incomplete));
    } else {
        json_decref(paths);
    }
    repro_git_changes_free(ch);
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
static int compare_other_classes(const repro_trace *run, const char *root, const char *experiment,
                                 const char *cls, int require, FILE *out, json_t *json)
{
    char **classes = NULL;
    int n = repro_golden_classes(root, experiment, &classes);
    json_t *others = json_array();
    int best = -1;
    double best_d = INFINITY;
    if (out)
        fprintf(out, "golden: none for environment class %s%s", repro_esc(cls),
                n ? "; goldens exist for: " : " (and none for any other class)");
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
        repro_trace g;
        repro_divergence d;
        if (repro_trace_read(&g, path)) {
            repro_error_clear();
            continue;
        }
        if (repro_compare_traces(&g, run, &d) == 0) {
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
    }
    if (best >= 0 && out)
        fprintf(out,
                "golden: closest class %s: max relative difference of ||params|| %.3g over the "
                "common steps (a tolerance view; bitwise identity is promised only within a "
                "class)\n",
                repro_esc(classes[best]), best_d);
    if (json) {
        json_object_set_new(json, "status", json_string("none"));
        json_object_set_new(json, "classes", others);
        if (best >= 0) {
            json_object_set_new(json, "closest_class", json_string(classes[best]));
            json_object_set_new(json, "closest_max_rel_l2", json_real(best_d));
        }
    } else {
        json_decref(others);
    }
    if (require && out)
        fprintf(out, "golden: required (--require-golden) but missing: bless it with "
                     "`repro bless %s`\n",
                repro_esc(run->experiment_path));
    repro_golden_classes_free(classes, n);
    return require ? REPRO_GOLDEN_DIFFERS : 0;
}

int repro_check_golden(const repro_trace *run, const char *experiment, int overridden, int require,
                       FILE *out, json_t *json)
{
    repro_env env;
    if (repro_env_get(&env))
        return -1;
    /* The run's own class when its trace names one (a cuda run is checked
     * against the cuda golden of its GPU class), else this machine's cpu. */
    if (run->env_class[0])
        snprintf(env.class_id, sizeof env.class_id, "%s", run->env_class);
    /* Goldens live in the work tree; outside a repository, relative to the
     * current directory (and without the history report). */
    repro_git *git = NULL;
    const char *root = "";
    if (repro_git_open(&git, NULL) == 0)
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
    if (access(path, F_OK) != 0) {
        rc = compare_other_classes(run, root, experiment, env.class_id, require, out, json);
        repro_git_free(git);
        return rc;
    }
    repro_trace g;
    if (repro_trace_read(&g, path)) {
        repro_git_free(git);
        return repro_error_set(REPRO_EINVAL, "golden %s is unreadable: %s", path,
                               repro_error_message());
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
        report_changes(git, &g, out, json);
        rc = REPRO_GOLDEN_DIFFERS;
        goto done;
    }
    if (repro_compare_traces(&g, run, &d)) {
        rc = repro_error_set(REPRO_EINVAL, "golden %s: %s", path, repro_error_message());
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
        report_changes(git, &g, out, json);
        rc = REPRO_GOLDEN_DIFFERS;
    }
done:
    repro_divergence_release(&d);
    repro_trace_release(&g);
    repro_git_free(git);
    return rc;
}
