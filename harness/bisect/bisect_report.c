/* Commit bisection's reports (see bisect_commits.h): each probe's line as
 * it is decided, the closing summary, and the same as one JSON document.
 * They read only the result, so they live apart from the search. */
#include "bisect/bisect_commits.h"

#include <stdio.h>
#include <string.h>

#include "golden/golden.h"

const char *repro_bisect_verdict_name(int verdict)
{
    switch (verdict) {
    case REPRO_BISECT_GOOD: return "good";
    case REPRO_BISECT_BAD: return "bad";
    case REPRO_BISECT_SKIP: return "skip";
    default: return "untested";
    }
}

void repro_bisect_print_probe(FILE *out, const repro_bisect_cand *c, const char *role, int n,
                              int total)
{
    fprintf(out, "probe %d/%d: %s %s%s%s%s \xe2\x80\x94 %s (%s)\n", n, total, c->commit.short_id,
            c->commit.summary, role ? " (" : "", role ? role : "", role ? ")" : "",
            repro_bisect_verdict_name(c->verdict), c->reason);
}

static void print_commit_line(FILE *out, const repro_bisect_cand *c)
{
    fprintf(out, "  %s %s (%s: %s)\n", c->commit.short_id, c->commit.summary,
            repro_bisect_verdict_name(c->verdict), c->reason);
}

static void print_skipped(FILE *out, const repro_bisect_result *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->ncand; i++)
        n += r->cand[i].verdict == REPRO_BISECT_SKIP;
    if (!n)
        return;
    fprintf(out, "skipped (did not build or run): %zu commit%s\n", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < r->ncand; i++)
        if (r->cand[i].verdict == REPRO_BISECT_SKIP)
            print_commit_line(out, &r->cand[i]);
}

static void print_first_bad(FILE *out, const repro_bisect_result *r)
{
    const repro_bisect_cand *fb = &r->cand[r->first_bad];
    fprintf(out, "first bad commit: %s\n", fb->commit.id);
    fprintf(out, "  subject:     %s\n", fb->commit.summary);
    fprintf(out, "  author time: %s\n", fb->commit.time_iso);
    fprintf(out, "  verdict:     %s\n", fb->reason);
    if (r->npaths) {
        fprintf(out, "  %s it changed:\n", r->program ? "paths" : "numerics paths");
        for (size_t i = 0; i < r->npaths; i++)
            fprintf(out, "    %s\n", r->paths[i]);
    } else if (r->program) {
        fprintf(out, "  it changed no file (an empty commit: the cause is outside the "
                     "repository, or the program's runs are not stable)\n");
    } else {
        fprintf(out, "  it changed none of the numerics paths (");
        for (int i = 0; i < repro_numerics_npaths; i++)
            fprintf(out, "%s, ", repro_numerics_paths[i]);
        fprintf(out, "%s): look at what else it changed\n", r->exp_rel);
    }
}

void repro_bisect_print_summary(FILE *out, const repro_bisect_result *r)
{
    if (r->outcome == REPRO_BISECT_NOTHING) {
        const repro_bisect_cand *b = &r->cand[r->ncand - 1];
        fprintf(out, "BAD reproduces: nothing to bisect (%s %s: %s)\n", b->commit.short_id,
                b->commit.summary, b->reason);
    } else if (r->outcome == REPRO_BISECT_FOUND && r->first_bad >= 0) {
        print_first_bad(out, r);
    } else if (r->range_lo >= 0 && r->range_lo == (long)r->ncand - 1 &&
               r->cand[r->range_lo].verdict == REPRO_BISECT_SKIP) {
        const repro_bisect_cand *b = &r->cand[r->range_lo];
        fprintf(out, "cannot bisect: BAD %s %s cannot be tested (%s)\n", b->commit.short_id,
                b->commit.summary, b->reason);
    } else if (r->range_lo >= 0) {
        fprintf(out, "cannot name the first bad commit: only skipped commits are left between "
                     "the last good and the first bad one; it is one of:\n");
        for (long i = r->range_lo; i <= r->range_hi; i++)
            print_commit_line(out, &r->cand[i]);
    }
    if (r->outcome != REPRO_BISECT_NOTHING)
        print_skipped(out, r);
    fprintf(out, "%zu probe%s, %d build%s, %d run%s, %.1f s; reference: %s\n", r->nsteps,
            r->nsteps == 1 ? "" : "s", r->builds, r->builds == 1 ? "" : "s", r->runs,
            r->runs == 1 ? "" : "s", r->seconds, r->reference);
}

static json_t *commit_json(const repro_git_commit *c)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:s}", "commit", c->id, "short_id", c->short_id,
                     "summary", c->summary, "time", (json_int_t)c->time, "time_iso", c->time_iso);
}

static json_t *cand_json(const repro_bisect_cand *c)
{
    json_t *o = commit_json(&c->commit);
    json_object_set_new(o, "verdict", json_string(repro_bisect_verdict_name(c->verdict)));
    json_object_set_new(o, "reason", json_string(c->reason));
    json_object_set_new(o, "step", c->step ? json_integer(c->step) : json_null());
    return o;
}

static json_t *steps_json(const repro_bisect_result *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->nsteps; i++) {
        long idx = r->steps[i];
        json_t *o = cand_json(idx < 0 ? &r->good : &r->cand[idx]);
        const char *role = idx < 0 ? "GOOD" : idx == (long)r->ncand - 1 ? "BAD" : NULL;
        json_object_set_new(o, "probe", json_integer((json_int_t)i + 1));
        json_object_set_new(o, "role", role ? json_string(role) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *first_bad_json(const repro_bisect_result *r)
{
    if (r->outcome != REPRO_BISECT_FOUND || r->first_bad < 0)
        return json_null();
    json_t *o = cand_json(&r->cand[r->first_bad]);
    const repro_git_commit *parent =
        r->first_bad ? &r->cand[r->first_bad - 1].commit : &r->good.commit;
    json_object_set_new(o, "parent", json_string(parent->id));
    json_t *paths = json_array();
    for (size_t i = 0; i < r->npaths; i++)
        json_array_append_new(paths, json_string(r->paths[i]));
    json_object_set_new(o, r->program ? "paths" : "numerics_paths", paths);
    return o;
}

json_t *repro_bisect_json(const repro_bisect_result *r)
{
    static const char *const outcomes[] = {"found", "nothing", "unresolved"};
    int oi = r->outcome == REPRO_BISECT_FOUND ? 0 : r->outcome == REPRO_BISECT_NOTHING ? 1 : 2;
    json_t *skipped = json_array(), *unresolved = json_array();
    for (size_t i = 0; i < r->ncand; i++)
        if (r->cand[i].verdict == REPRO_BISECT_SKIP)
            json_array_append_new(skipped, cand_json(&r->cand[i]));
    if (r->outcome == REPRO_BISECT_UNRESOLVED)
        for (long i = r->range_lo; i >= 0 && i <= r->range_hi; i++)
            json_array_append_new(unresolved, cand_json(&r->cand[i]));
    json_t *doc = json_object();
    json_object_set_new(doc, "experiment", json_string(r->exp_rel ? r->exp_rel : r->exp_name));
    if (r->program) {
        json_t *argv = json_array();
        for (char *const *a = r->program; *a; a++)
            json_array_append_new(argv, json_string(*a));
        json_object_set_new(doc, "program", argv);
    }
    json_object_set_new(doc, "env_class", json_string(r->env_class));
    json_object_set_new(doc, "outcome", json_string(outcomes[oi]));
    json_object_set_new(doc, "exit", json_integer(r->outcome));
    json_object_set_new(doc, "good", commit_json(&r->good.commit));
    json_object_set_new(doc, "bad", r->ncand ? commit_json(&r->cand[r->ncand - 1].commit)
                                             : json_null());
    json_object_set_new(doc, "reference", json_string(r->reference));
    json_object_set_new(doc, "candidates", json_integer((json_int_t)r->ncand));
    json_object_set_new(doc, "steps", steps_json(r));
    json_object_set_new(doc, "first_bad", first_bad_json(r));
    json_object_set_new(doc, "skipped", skipped);
    json_object_set_new(doc, "unresolved", unresolved);
    json_object_set_new(doc, "builds", json_integer(r->builds));
    json_object_set_new(doc, "runs", json_integer(r->runs));
    json_object_set_new(doc, "seconds", json_real(r->seconds));
    return doc;
}
