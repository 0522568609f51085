/* `repro screen`'s report (screen_print.h). */
#include "cli/screen_print.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/escape.h"
#include "util/junit.h"
#include "util/ulp.h"

int repro_screen_exit_code(const repro_screen_result *r)
{
    int untested = 0;
    for (int i = 0; i < r->nranks; i++) {
        if (r->ranks[i].failures)
            return REPRO_EXIT_MISMATCH;
        untested |= r->ranks[i].untested > 0;
    }
    if (r->no_majority)
        return REPRO_EXIT_MISMATCH;
    return untested ? REPRO_EXIT_ENV : REPRO_EXIT_OK;
}

/* "diverged", "intermittent", "could not test", "match". */
static const char *verdict_word(const repro_screen_tally *t)
{
    if (t->failures && t->failures < t->runs - t->untested)
        return "intermittent";
    if (t->failures)
        return "diverged";
    if (t->untested)
        return "could not test";
    return "match";
}

/* Where a rank first diverged: "step 41, tensor grad.fc1.weight (3
 * tensors differ; vs rank 0)". */
static void where(const repro_screen_tally *t, char *buf, size_t len)
{
    const repro_screen_verdict *v = &t->first_failure;
    char vs[96];
    if (!strcmp(v->against, "ranks") && v->ref_rank >= 0)
        snprintf(vs, sizeof vs, "vs rank %d", v->ref_rank);
    else if (!strcmp(v->against, "ranks"))
        snprintf(vs, sizeof vs, "ranks disagree, no majority");
    else if (!strcmp(v->against, "replay"))
        snprintf(vs, sizeof vs, "replay: its own two computations differ");
    else
        snprintf(vs, sizeof vs, "vs the golden");
    char elems[80] = "";
    if (v->has_elements && v->max_ulp == REPRO_ULP_NAN)
        snprintf(elems, sizeof elems, ", %ld element%s, NaN", v->elements,
                 v->elements == 1 ? "" : "s");
    else if (v->has_elements)
        snprintf(elems, sizeof elems, ", %ld element%s, max %llu ULP", v->elements,
                 v->elements == 1 ? "" : "s", v->max_ulp);
    if (!v->step)
        snprintf(buf, len, "(%s)", vs);
    else
        snprintf(buf, len, "step %ld, tensor %s%s (%d tensor%s differ%s; %s)", v->step,
                 v->tensor[0] ? repro_esc(v->tensor) : "?", elems, v->ntensors,
                 v->ntensors == 1 ? "" : "s", v->ntensors == 1 ? "s" : "", vs);
}

/* The golden's word on a rank: "golden match", "no golden for class X". */
static const char *golden_word(const repro_screen_rank *i)
{
    switch (i->golden) {
    case REPRO_SCREEN_GOLDEN_MATCH: return "golden: match";
    case REPRO_SCREEN_GOLDEN_DIFFERS: return "golden: differs";
    default: return i->golden_note;
    }
}

static void rank_line(FILE *out, const repro_screen_tally *t, int repeats)
{
    const repro_screen_rank *i = &t->info;
    fprintf(out, "rank %-3d host %s  core %s  %s", i->rank, repro_esc(i->host),
            i->cores[0] ? i->cores : "?", verdict_word(t));
    if (t->failures) {
        char w[256];
        where(t, w, sizeof w);
        if (repeats > 1)
            fprintf(out, " in %d of %d repeats (first: repeat %d)", t->failures, repeats,
                    t->first_failure_repeat + 1);
        fprintf(out, " at %s", w);
    } else if (t->untested) {
        fprintf(out, ": %s", repro_esc(t->error));
    }
    if (!t->untested || t->untested < t->runs)
        fprintf(out, "  [%s; class %s]", repro_esc(golden_word(i)), repro_esc(i->env_class));
    fputc('\n', out);
}

/* "31 of 32 ranks match the golden" or, without one, "... agree". */
static void summary(FILE *out, const repro_screen_result *r)
{
    int ok = 0, golden = 0;
    for (int i = 0; i < r->nranks; i++) {
        const repro_screen_tally *t = &r->ranks[i];
        ok += !t->failures && !t->untested;
        golden += t->info.golden == REPRO_SCREEN_GOLDEN_MATCH && !t->failures;
    }
    fprintf(out, "%d of %d ranks %s", ok, r->nranks,
            golden ? "match the golden" : "agree with each other (no golden compared)");
    for (int i = 0; i < r->nranks; i++) {
        const repro_screen_tally *t = &r->ranks[i];
        char w[256];
        if (t->failures) {
            where(t, w, sizeof w);
            fprintf(out, "; rank %d on host %s core %s %s", t->info.rank, repro_esc(t->info.host),
                    t->info.cores, verdict_word(t));
            if (r->repeats > 1)
                fprintf(out, " (%d of %d repeats)", t->failures, r->repeats);
            fprintf(out, " at %s", w);
        } else if (t->untested) {
            fprintf(out, "; rank %d on host %s could not be tested", t->info.rank,
                    repro_esc(t->info.host));
        }
    }
    fputc('\n', out);
}

void repro_screen_print_text(FILE *out, const repro_config *cfg, const repro_screen_result *r)
{
    fprintf(out, "screen %s: %d rank%s x %d repeat%s, %d steps each\n", repro_esc(cfg->name),
            r->nranks, r->nranks == 1 ? "" : "s", r->repeats, r->repeats == 1 ? "" : "s",
            cfg->train_steps);
    for (int i = 0; i < r->nranks; i++)
        rank_line(out, &r->ranks[i], r->repeats);
    if (r->no_majority)
        fprintf(out, "ranks disagree and no group of them is larger: the golden of their class "
                     "(`repro bless`) would say which is right\n");
    summary(out, r);
}

static const char *const golden_status[] = {"none", "match", "differs", "skipped"};

static json_t *rank_json(const repro_screen_tally *t)
{
    const repro_screen_rank *i = &t->info;
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:s}", "rank", i->rank,
                          "host", i->host, "cores", i->cores, "class", i->env_class, "verdict",
                          verdict_word(t), "runs", t->runs, "failures", t->failures, "untested",
                          t->untested, "golden", golden_status[i->golden & 3]);
    if (i->golden_note[0])
        json_object_set_new(o, "golden_note", json_string(i->golden_note));
    if (t->failures) {
        const repro_screen_verdict *v = &t->first_failure;
        json_object_set_new(o, "first_divergence",
                            json_pack("{s:i, s:I, s:s, s:i, s:s, s:i}", "repeat",
                                      t->first_failure_repeat, "step", (json_int_t)v->step,
                                      "tensor", v->tensor, "tensors_differing", v->ntensors,
                                      "against", v->against, "reference_rank", v->ref_rank));
        if (v->has_elements) {
            json_t *fd = json_object_get(o, "first_divergence");
            json_object_set_new(fd, "elements", json_integer(v->elements));
            json_object_set_new(fd, "max_ulp", v->max_ulp == REPRO_ULP_NAN
                                                   ? json_string("NaN")
                                                   : json_integer((json_int_t)v->max_ulp));
        }
    }
    if (t->untested)
        json_object_set_new(o, "error", json_string(t->error));
    return o;
}

void repro_screen_print_json(FILE *out, const repro_config *cfg, const repro_screen_result *r,
                             int exit_code)
{
    json_t *ranks = json_array();
    for (int i = 0; i < r->nranks; i++)
        json_array_append_new(ranks, rank_json(&r->ranks[i]));
    json_t *doc = json_pack("{s:s, s:i, s:i, s:i, s:b, s:o, s:i}", "experiment", cfg->name,
                            "steps", cfg->train_steps, "repeats", r->repeats, "ranks_total",
                            r->nranks, "no_majority", r->no_majority, "ranks", ranks, "exit",
                            exit_code);
    json_dumpf(doc, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(doc);
}

int repro_screen_junit(const char *path, const repro_config *cfg, const repro_screen_result *r)
{
    repro_junit_case *cases = calloc((size_t)r->nranks, sizeof *cases);
    char (*names)[400] = calloc((size_t)r->nranks, sizeof *names);
    char (*msgs)[400] = calloc((size_t)r->nranks, sizeof *msgs);
    int rc = -1;
    if (cases && names && msgs) {
        for (int i = 0; i < r->nranks; i++) {
            const repro_screen_tally *t = &r->ranks[i];
            snprintf(names[i], sizeof names[i], "%s: rank %d (host %s, core %s)", cfg->name,
                     t->info.rank, t->info.host, t->info.cores);
            char w[256] = "";
            if (t->failures)
                where(t, w, sizeof w);
            snprintf(msgs[i], sizeof msgs[i], "%s%s%s", verdict_word(t),
                     t->failures ? " at " : t->untested ? ": " : "",
                     t->failures ? w : t->untested ? t->error : "");
            cases[i] = (repro_junit_case){names[i], t->failures > 0, t->untested > 0, msgs[i],
                                          msgs[i], 0};
        }
        rc = repro_junit_write(path, "repro screen", cases, r->nranks);
    }
    free(cases);
    free(names);
    free(msgs);
    return rc;
}
