/* The scope bisect (`repro bisect --threads A,B`, `--workers A,B`,
 * `--ranks A,B`, see bisect_ops.h): the two settings at trace level op,
 * and A twice, so that a difference between A and B is the scope's and
 * not run to run. The first op output that differs while every op before
 * it, the previous step and the step's batch agree is a kernel whose bits
 * depend on the setting, and the report says so in words: for a program,
 * with the module's class and the thread pool that differed (from the
 * trace headers); for the built-in workload, with the kernel variant and
 * the registry's reason. */
#include "bisect/bisect_ops.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loader.h"
#include "kernels/variants.h"
#include "util/error.h"

typedef struct {
    const char *flag, *noun, *adjective;
} scope_words;

static const scope_words *words_for(const char *flag)
{
    static const scope_words words[] = {
        {"--threads", "thread count", "thread-count-dependent"},
        {"--workers", "worker count", "worker-count-dependent"},
        {"--ranks", "world size", "world-size-dependent"},
        {"--tp", "tensor-parallel size", "tensor-parallel-size-dependent"},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcmp(words[i].flag, flag))
            return &words[i];
    return &words[0];
}

/* ---- a program ------------------------------------------------------------------- */

int repro_bisect_scope_plan_program(repro_multirun *m, const char *flag, const char *a,
                                    const char *b)
{
    static char *const level[] = {"--set", "trace.level=op", "--set", "trace.every=1"};
    for (int i = 0; i < 4 && m->npass < REPRO_MULTIRUN_MAX_PASS; i++)
        m->pass[m->npass++] = level[i];
    char label[3][64];
    snprintf(label[0], sizeof label[0], "%s=%s", flag + 2, a);
    snprintf(label[1], sizeof label[1], "%s=%s again", flag + 2, a);
    snprintf(label[2], sizeof label[2], "%s=%s", flag + 2, b);
    const char *scope = words_for(flag)->noun;
    if (repro_multirun_add(m, label[0], "fresh-process run to run", flag, a) ||
        repro_multirun_add(m, label[1], "fresh-process run to run", flag, a) ||
        repro_multirun_add(m, label[2], scope, flag, b))
        return -1;
    return 0;
}

/* The class of the module whose op `op` is ("fwd.2" -> "Linear"), from
 * the header's "modules" (the Python client's): the longest module path
 * the name starts with. NULL when the trace does not say. */
static const char *module_kind(const repro_trace *t, const char *op)
{
    json_t *mods = t->header_json ? json_object_get(t->header_json, "modules") : NULL;
    const char *dot = strchr(op, '.');
    if (!json_is_object(mods) || !dot)
        return NULL;
    char path[64];
    snprintf(path, sizeof path, "%s", dot + 1);
    path[strcspn(path, "#")] = '\0';
    for (;;) {
        const char *kind = json_string_value(json_object_get(mods, path));
        char *last = strrchr(path, '.');
        if (kind || !last)
            return kind;
        *last = '\0';
    }
}

/* The pools that differ between a and b ("blas.openblas 1 vs 2"), the
 * BLAS libraries' (a "blas" in the name) into blas, the others into rest. */
static void pools_text(const repro_trace *a, const repro_trace *b, char *blas, char *rest,
                       size_t len)
{
    blas[0] = rest[0] = '\0';
    for (int i = 0; i < a->npools; i++)
        for (int k = 0; k < b->npools; k++) {
            if (strcmp(a->pools[i].name, b->pools[k].name) ||
                a->pools[i].threads == b->pools[k].threads)
                continue;
            char *buf = strstr(a->pools[i].name, "blas") ? blas : rest;
            size_t o = strlen(buf);
            snprintf(buf + o, len - o, "%s%s %d vs %d", o ? ", " : "", a->pools[i].name,
                     a->pools[i].threads, b->pools[k].threads);
        }
}

/* A batch or input tensor that differs, or NULL. */
static const char *input_differs(const repro_divergence *d)
{
    for (int i = 0; i < d->ntensors; i++)
        if (!strncmp(d->tensors[i].name, "batch.", 6) || !strncmp(d->tensors[i].name, "input", 5))
            return d->tensors[i].name;
    return NULL;
}

/* "fwd.2 (Linear) gives different bits at thread count 1 and 2 from
 * identical inputs: ..." for a program's first divergent op. */
static void program_verdict(FILE *out, const repro_multirun *m, const scope_words *w,
                            const char *a, const char *b, json_t *doc)
{
    const repro_divergence *d = &m->divs[2];
    const char *op = d->ops[0].name, *kind = module_kind(&m->traces[0], op);
    const char *input = input_differs(d);
    int nops, pos = repro_trace_op_position(&m->traces[0], d->first_step, op, &nops);
    char blas[320] = "", pools[320] = "", kindtext[96] = "";
    if (!strcmp(w->flag, "--threads"))
        pools_text(&m->traces[0], &m->traces[2], blas, pools, sizeof pools);
    if (kind)
        snprintf(kindtext, sizeof kindtext, " (%s)", kind);
    json_t *fo = json_pack("{s:s, s:i, s:i, s:b}", "name", op, "position", pos, "ops", nops,
                           "inputs_identical", input == NULL);
    if (kind)
        json_object_set_new(fo, "module", json_string(kind));
    json_object_set_new(doc, "first_divergent_op", fo);
    if (blas[0] || pools[0])
        json_object_set_new(doc, "pools_that_differed",
                            json_pack("{s:s, s:s}", "blas", blas, "other", pools));
    if (input)
        json_object_set_new(doc, "input_that_differs", json_string(input));
    if (!out)
        return;
    fprintf(out, "first divergent op: %s%s%s (op %d of %d recorded at step %ld)\n", op,
            kind ? ", a " : "", kind ? kind : "", pos, nops, d->first_step);
    if (input) {
        fprintf(out, "its inputs differ: %s already differs at step %ld between %s %s and %s, so "
                     "the difference comes from the data (loader, augmentation, seeding) that "
                     "the %s changes, not from %s\n",
                input, d->first_step, w->noun, a, b, w->noun, op);
        return;
    }
    fprintf(out, "%s%s gives different bits at %s %s and %s from identical inputs: a %s kernel",
            op, kindtext, w->noun, a, b, w->adjective);
    if (blas[0])
        fprintf(out, " (here the BLAS pool: %s%s%s)", blas, pools[0] ? "; also differed: " : "",
                pools);
    else if (pools[0])
        fprintf(out, " (the pools that differed: %s)", pools);
    fprintf(out, ".\nits inputs were identical: step %ld's state and the %d op%s before it agree "
                 "bit for bit, and no batch tensor differs; the two runs at %s %s agree with "
                 "each other, so the difference is the %s's, not run to run.\n",
            d->first_step - 1, pos > 0 ? pos - 1 : 0, pos == 2 ? "" : "s", w->noun, a, w->noun);
}

int repro_bisect_scope_report_program(FILE *out, const repro_multirun *m, const char *flag,
                                      const char *a, const char *b, json_t *doc)
{
    const scope_words *w = words_for(flag);
    json_object_set_new(doc, "scope", json_string(w->noun));
    json_object_set_new(doc, "settings", json_pack("[s, s]", a, b));
    json_object_set_new(doc, "repeat_differs", json_boolean(!m->divs[1].identical));
    if (!m->divs[1].identical) {
        /* run to run already: the op-level report of runs 1 and 2 */
        int rc = repro_bisect_program_ops_report(out, m, json_is_object(doc) ? doc : NULL);
        if (out && !json_is_object(doc))
            fprintf(out, "(both runs were at %s %s: the runs differ run to run, before any "
                         "%s could)\n", w->noun, a, w->noun);
        return rc;
    }
    const repro_divergence *d = &m->divs[2];
    json_object_set_new(doc, "diverged", json_boolean(!d->identical));
    json_object_set_new(doc, "steps", json_integer(m->traces[0].trailer_steps));
    if (d->identical) {
        if (out)
            fprintf(out, "identical at %s %s and %s over %ld steps at level op: nothing to "
                         "bisect\n", w->noun, a, b, m->traces[0].trailer_steps);
        return 0;
    }
    json_object_set_new(doc, "first_step", json_integer(d->first_step));
    if (out)
        fprintf(out, "%s %s and %s differ: first at step %ld\n", w->noun, a, b, d->first_step);
    if (d->nops == 0 || d->detail_step != d->first_step) {
        const char *first = d->ntensors ? d->tensors[0].name : "?";
        json_object_set_new(doc, "first_tensor", json_string(first));
        if (out)
            fprintf(out, "no op output differs there (did the program record ops at "
                         "REPRO_TRACE_LEVEL=op?); the first differing tensor in digest order "
                         "is %s\n", first);
        return 1;
    }
    program_verdict(out, m, w, a, b, doc);
    return 1;
}

/* ---- the built-in workload --------------------------------------------------------- */

void repro_bisect_scope_report_builtin(FILE *out, const repro_bisect_ops_opts *o,
                                       const repro_bisect_ops_result *r, json_t *doc)
{
    const scope_words *w = words_for(o->scope_flag);
    json_object_set_new(doc, "scope", json_string(w->noun));
    json_object_set_new(doc, "settings", json_pack("[s, s]", o->scope_a, o->scope_b));
    json_object_set_new(doc, "repeat_differs", json_boolean(r->repeat_differs));
    repro_bisect_ops_report_first(NULL, r, doc);
    if (!out)
        return;
    repro_bisect_ops_print_first(out, r);
    if (r->repeat_differs) {
        fprintf(out, "the two runs at %s %s already differ there: %s is nondeterministic run to "
                     "run, before any %s could change it (`repro bisect %s` names the culprit "
                     "variants)\n", w->noun, o->scope_a, r->op[0] ? r->op : r->name, w->noun,
                o->exp);
        return;
    }
    if (!r->inputs_identical) {
        fprintf(out, "%s differs at %s %s and %s because its inputs do: the step's batch "
                     "already differs, so the difference comes from the data: the loader gives "
                     "other batches at another %s",
                r->name, w->noun, o->scope_a, o->scope_b, w->noun);
        if (r->cfg.data_augment_seed == REPRO_AUGMENT_SEED_WORKER)
            fprintf(out, " (data.augment_seed = worker: augmentation draws from each loader "
                         "worker's RNG; augment_seed = sample keys it by the sample and makes "
                         "the worker count irrelevant)");
        fprintf(out, "\n");
        return;
    }
    const repro_variant_info *vi = repro_variant_find(r->op, r->variant);
    fprintf(out, "%s (%s, variant %s) gives different bits at %s %s and %s from identical "
                 "inputs: a %s kernel (variant %s = %s%s%s)\n",
            r->name, r->op[0] ? r->op : "?", r->variant[0] ? r->variant : "?", w->noun,
            o->scope_a, o->scope_b, w->adjective, r->op[0] ? r->op : "?",
            r->variant[0] ? r->variant : "?", vi ? ": " : "", vi ? vi->why : "");
    fprintf(out, "the two runs at %s %s agree with each other, so the difference is the %s's, "
                 "not run to run\n", w->noun, o->scope_a, w->noun);
}
