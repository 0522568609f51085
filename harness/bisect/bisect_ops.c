/* Op-level bisect (see bisect_ops.h): locate the first divergent op, then
 * delta-debug the nondeterministic variants in use down to the culprits. */
#include "bisect/bisect_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/variants.h"
#include "util/error.h"
#include "util/opnames.h"

/* Every culprit test adds at most this many options to the pass-through
 * ones: --steps, trace.level and one --set per candidate and quarantine. */
_Static_assert(REPRO_RUN_PASS_MAX + 2 * (REPRO_BISECT_OPS_MAX_CAND + 1) + 4 <=
                   REPRO_MULTIRUN_MAX_PASS,
               "a culprit test's options must fit a multirun");

/* A scope bisect's two settings, each checked against the experiment;
 * r->cfg is B's (the wider side: a world size above 1 makes gradients the
 * all-reduce's outputs). */
static int scope_config(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r)
{
    repro_config *a = malloc(sizeof *a);
    if (!a)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    *a = r->cfg;
    char *pa[2] = {(char *)o->scope_flag, (char *)o->scope_a};
    char *pb[2] = {(char *)o->scope_flag, (char *)o->scope_b};
    int rc = repro_config_apply_run_options(a, pa, 2) || repro_config_validate(a) ||
             repro_config_apply_run_options(&r->cfg, pb, 2) || repro_config_validate(&r->cfg);
    if (rc == 0 && a->train_ranks > r->cfg.train_ranks)
        r->cfg.train_ranks = a->train_ranks;
    free(a);
    return rc ? repro_error_wrap(REPRO_EINVAL, "bisect: %s %s,%s", o->scope_flag, o->scope_a,
                                 o->scope_b)
              : 0;
}

int repro_bisect_ops_prepare(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r)
{
    memset(r, 0, sizeof *r);
    if (repro_config_load(&r->cfg, o->exp) ||
        repro_config_apply_run_options(&r->cfg, o->pass.argv, o->pass.n) ||
        repro_config_validate(&r->cfg))
        return -1;
    if (o->scope_flag && scope_config(o, r))
        return -1;
    /* The candidates: nondeterministic variants in use, minus the quarantined. */
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const repro_variant_info *vi = repro_config_variant_in_use(&r->cfg, k);
        if (!vi || vi->deterministic)
            continue;
        if (o->quarantine && !strcmp(o->quarantine, repro_config_key_name(k)))
            continue;
        if (r->ncand < REPRO_BISECT_OPS_MAX_CAND)
            r->cand[r->ncand++] = k;
    }
    return 0;
}

/* Sets up a multirun with the pass-through options plus extra ones. */
static void setup(const repro_bisect_ops_opts *o, const repro_bisect_ops_result *r,
                  repro_multirun *m, const char *kind, char **extra, int nextra)
{
    repro_multirun_init(m, o->exp, r->cfg.name, kind);
    repro_multirun_add_pass(m, &o->pass);
    for (int i = 0; i < nextra; i++)
        m->pass[m->npass++] = extra[i];
    m->quiet = 1;
    m->no_element_detail = 1; /* bisect wants where and which, not the element range */
}

/* ---- (a) the first divergent op ------------------------------------------ */

/* The op output (or tensor) where the runs first part, and its variant. */
static void name_first(repro_bisect_ops_result *r, const repro_divergence *d)
{
    const repro_tensor_diff *first = d->nops > 0 ? &d->ops[0]
                                     : d->ntensors > 0 ? &d->tensors[0] : NULL;
    char out[32] = "";
    r->diverged = 1;
    r->first_step = d->first_step;
    r->no_op_differs = d->nops == 0;
    /* The first divergent step's predecessor agrees (the chain says so),
     * and so does every op output recorded before this one; only the
     * batch could still differ. */
    r->inputs_identical = d->nops > 0;
    for (int i = 0; i < d->ntensors; i++)
        if (!strncmp(d->tensors[i].name, "batch.", 6))
            r->inputs_identical = 0;
    snprintf(r->name, sizeof r->name, "%s", first ? first->name : "?");
    repro_op_split(r->name, r->phase, r->layer, out, sizeof r->phase);
    const char *vop = repro_op_variant(r->name);
    /* Data parallel: a gradient is the all-reduce's output, the first
     * tensor where a difference in it can show (no op outputs recorded). */
    if (!vop && r->cfg.train_ranks > 1 && !strncmp(r->name, "grad.", 5))
        vop = "allreduce";
    /* Tensor parallel: the row-parallel layer's (the mlp's fc2, core/tp.h)
     * forward sum is the tensor-parallel reduce's. */
    if (vop && !strcmp(vop, "linear.fwd") && !strcmp(r->layer, "fc2") &&
        (r->cfg.variant_linear_tp_reduce != 0 || r->cfg.parallel_tp > 1))
        vop = "linear.tp_reduce";
    snprintf(r->op, sizeof r->op, "%s", vop ? vop : "");
    int vk = vop ? repro_config_find_key(vop) : -1;
    const repro_variant_info *vi = NULL;
    if (vk >= 0 && repro_config_key_is_variant(vk)) {
        repro_config_variant_name(&r->cfg, vk, r->variant, sizeof r->variant);
        vi = repro_variant_find(vop, r->variant);
    } else if (vop) {
        /* ops with one implementation: the registry's only entry */
        for (const repro_variant_info *v = repro_variants; v->op && !vi; v++)
            if (!strcmp(v->op, vop)) {
                vi = v;
                snprintf(r->variant, sizeof r->variant, "%s", v->variant);
            }
    }
    r->has_info = vi != NULL;
    r->deterministic = vi && vi->deterministic;
}

/* No batch tensor among the differing ones. */
static int batch_agrees(const repro_tensor_diff *t, int n)
{
    for (int i = 0; i < n; i++)
        if (!strncmp(t[i].name, "batch.", 6))
            return 0;
    return 1;
}

/* The two runs at trace level op, the second quarantined if asked. */
static void plan_locate(const repro_bisect_ops_opts *o, const repro_bisect_ops_result *r,
                        repro_multirun *m)
{
    /* Data parallel runs record no op outputs (no rank holds the whole
     * batch's): the first divergent tensor, then the culprit variants. */
    char *extra[] = {"--set", r->cfg.train_ranks > 1 ? "trace.level=tensor" : "trace.level=op",
                     "--set", "trace.every=1"}; /* detail at whichever step parts */
    setup(o, r, m, "bisect", extra, 4);
    m->quiet = o->quiet;
    if (o->scope_flag) {
        char label[3][64];
        snprintf(label[0], sizeof label[0], "%s=%s", o->scope_flag + 2, o->scope_a);
        snprintf(label[1], sizeof label[1], "%s=%s again", o->scope_flag + 2, o->scope_a);
        snprintf(label[2], sizeof label[2], "%s=%s", o->scope_flag + 2, o->scope_b);
        repro_multirun_add(m, label[0], "fresh-process run to run", o->scope_flag, o->scope_a);
        repro_multirun_add(m, label[1], "fresh-process run to run", o->scope_flag, o->scope_a);
        repro_multirun_add(m, label[2], "scope", o->scope_flag, o->scope_b);
        return;
    }
    repro_multirun_add(m, "reference", "fresh-process run to run", NULL, NULL);
    repro_multirun_add(m, "run 2", "fresh-process run to run", NULL, NULL);
    if (!o->quarantine)
        return;
    snprintf(m->plan[0].extra[0], sizeof m->plan[0].extra[0], "--tap-write");
    snprintf(m->plan[0].extra[1], sizeof m->plan[0].extra[1], "%s=%s/quarantine.tap",
             o->quarantine, m->root);
    snprintf(m->plan[1].extra[0], sizeof m->plan[1].extra[0], "--tap-read");
    snprintf(m->plan[1].extra[1], sizeof m->plan[1].extra[1], "%s=%s/quarantine.tap",
             o->quarantine, m->root);
}

int repro_bisect_ops_locate(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r)
{
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    plan_locate(o, r, m);
    int rc = repro_multirun_execute(m);
    if (rc == 0) {
        r->runs += m->nplan;
        r->steps = m->traces[0].trailer_steps;
        /* A scope bisect: runs A and A again first, then A and B. */
        r->repeat_differs = o->scope_flag && !m->divs[1].identical;
        const repro_divergence *d = !m->divs[1].identical || !o->scope_flag ? &m->divs[1]
                                                                             : &m->divs[2];
        if (!d->identical)
            name_first(r, d);
        /* At tensor level (a world size above 1 records no op outputs)
         * the step's inputs are its batch: the earlier tensors agree. */
        if (o->scope_flag && r->diverged && r->no_op_differs)
            r->inputs_identical = batch_agrees(d->tensors, d->ntensors);
    }
    repro_multirun_release(m);
    free(m);
    return rc;
}

/* ---- (b) the culprits --------------------------------------------------------- */

/* One culprit search: its state, owned by repro_bisect_ops_culprits. */
typedef struct {
    const repro_bisect_ops_opts *o;
    repro_bisect_ops_result *r;
    repro_multirun *m; /* reused by every test */
    char steps[32];    /* --steps of every test */
    /* "variant.<op>=<its deterministic default>" per candidate, and last
     * for the quarantined variant (empty when there is none) */
    char defaults[REPRO_BISECT_OPS_MAX_CAND + 1][96];
} culprit_search;

/* "variant.<op>=<its deterministic default>" for key k. */
static void default_set(int k, char *buf, size_t len)
{
    repro_config d;
    repro_config_defaults(&d);
    char v[64];
    repro_config_variant_name(&d, k, v, sizeof v);
    snprintf(buf, len, "variant.%s=%s", repro_config_key_name(k), v);
}

static void search_init(culprit_search *b)
{
    const repro_bisect_ops_result *r = b->r;
    snprintf(b->steps, sizeof b->steps, "%ld", r->test_steps);
    for (int i = 0; i < r->ncand; i++)
        default_set(r->cand[i], b->defaults[i], sizeof b->defaults[i]);
    /* a quarantined variant is replaced too: known, not a suspect */
    int k = b->o->quarantine ? repro_config_find_key(b->o->quarantine) : -1;
    if (k >= 0 && repro_config_key_is_variant(k))
        default_set(k, b->defaults[REPRO_BISECT_OPS_MAX_CAND], sizeof b->defaults[0]);
}

static void progress(const culprit_search *b, const int *keep, int nkeep, int fails)
{
    if (b->o->quiet)
        return;
    fprintf(stderr, "bisect: nondeterministic {");
    for (int j = 0; j < nkeep; j++)
        fprintf(stderr, "%s%s", j ? ", " : "", repro_config_key_name(keep[j]));
    fprintf(stderr, "}: %s\n", fails < 0 ? "error" : fails ? "differs" : "reproduces");
}

/* Does the run still differ with only the candidates in `keep` left
 * nondeterministic (the others replaced by their defaults)? -1 on error. */
static int still_fails(culprit_search *b, const int *keep, int nkeep)
{
    const repro_bisect_ops_result *r = b->r;
    char *extra[2 * (REPRO_BISECT_OPS_MAX_CAND + 1) + 4];
    int ne = 0;
    extra[ne++] = "--steps";
    extra[ne++] = b->steps;
    extra[ne++] = "--set";
    extra[ne++] = "trace.level=step";
    for (int i = 0; i < r->ncand; i++) {
        int kept = 0;
        for (int j = 0; j < nkeep; j++)
            kept |= keep[j] == r->cand[i];
        if (!kept) {
            extra[ne++] = "--set";
            extra[ne++] = b->defaults[i];
        }
    }
    if (b->defaults[REPRO_BISECT_OPS_MAX_CAND][0]) {
        extra[ne++] = "--set";
        extra[ne++] = b->defaults[REPRO_BISECT_OPS_MAX_CAND];
    }
    setup(b->o, r, b->m, "bisect-test", extra, ne);
    for (int i = 0; i < b->o->repeat; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        repro_multirun_add(b->m, label, "fresh-process run to run", NULL, NULL);
    }
    int rc = repro_multirun_execute(b->m);
    b->r->runs += b->m->nplan;
    int fails = rc ? -1 : b->m->failed > 0;
    progress(b, keep, nkeep, fails);
    repro_multirun_release(b->m);
    return fails;
}

/* Zeller's ddmin: a 1-minimal subset of `set` that still fails. */
static int ddmin(culprit_search *b, int *set, int n, int *out)
{
    int gran = 2;
    int cur[REPRO_BISECT_OPS_MAX_CAND], ncur = n;
    memcpy(cur, set, sizeof(int) * (size_t)n);
    while (ncur >= 2) {
        int found = 0;
        int chunk = (ncur + gran - 1) / gran;
        for (int start = 0; start < ncur && !found; start += chunk) {
            int sub[REPRO_BISECT_OPS_MAX_CAND], ns = 0, comp[REPRO_BISECT_OPS_MAX_CAND], nc = 0;
            for (int i = 0; i < ncur; i++) {
                if (i >= start && i < start + chunk)
                    sub[ns++] = cur[i];
                else
                    comp[nc++] = cur[i];
            }
            int f = still_fails(b, sub, ns);
            if (f < 0)
                return -1;
            if (f) {
                memcpy(cur, sub, sizeof(int) * (size_t)ns);
                ncur = ns;
                gran = 2;
                found = 1;
                break;
            }
            if (gran > 2 || ns * 2 < ncur) { /* complements only add information then */
                f = still_fails(b, comp, nc);
                if (f < 0)
                    return -1;
                if (f) {
                    memcpy(cur, comp, sizeof(int) * (size_t)nc);
                    ncur = nc;
                    gran = gran - 1 > 2 ? gran - 1 : 2;
                    found = 1;
                }
            }
        }
        if (found)
            continue;
        if (gran >= ncur)
            break;
        gran = gran * 2 < ncur ? gran * 2 : ncur;
    }
    memcpy(out, cur, sizeof(int) * (size_t)ncur);
    return ncur;
}

/* (b): every culprit, as the union of successive minimal sets. */
static int find_culprits(culprit_search *b, int *culprits)
{
    int rest[REPRO_BISECT_OPS_MAX_CAND], nrest = b->r->ncand, nc = 0;
    memcpy(rest, b->r->cand, sizeof(int) * (size_t)nrest);
    while (nrest > 0) {
        int f = still_fails(b, rest, nrest);
        if (f <= 0)
            return f < 0 ? -1 : nc;
        int min[REPRO_BISECT_OPS_MAX_CAND];
        int nm = nrest == 1 ? (min[0] = rest[0], 1) : ddmin(b, rest, nrest, min);
        if (nm < 0)
            return -1;
        for (int i = 0; i < nm; i++) {
            culprits[nc++] = min[i];
            for (int j = 0; j < nrest; j++)
                if (rest[j] == min[i]) {
                    rest[j] = rest[--nrest];
                    break;
                }
        }
    }
    return nc;
}

int repro_bisect_ops_culprits(const repro_bisect_ops_opts *o, repro_bisect_ops_result *r)
{
    /* Atomic-add nondeterminism shows only when threads contend, which a
     * small reduction may not do at every step: test over enough steps. */
    r->test_steps = r->first_step * 2 + 4 > 20 ? r->first_step * 2 + 4 : 20;
    if (r->test_steps > r->cfg.train_steps)
        r->test_steps = r->cfg.train_steps;
    culprit_search *b = calloc(1, sizeof *b);
    repro_multirun *m = calloc(1, sizeof *m);
    if (!b || !m) {
        free(b);
        free(m);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    b->o = o;
    b->r = r;
    b->m = m;
    search_init(b);
    int nc = find_culprits(b, r->culprits);
    r->nculprits = nc > 0 ? nc : 0;
    free(m);
    free(b);
    return nc < 0 ? -1 : 0;
}
