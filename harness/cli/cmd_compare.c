/* `repro compare EXP --vary KEY=V1,V2,...`: the same experiment under each
 * value of one config key, side by side — is each value run-to-run
 * identical, how fast is it, where does it end up, which convolution
 * algorithms did it pick (and did they change between runs), and how far
 * does it drift from the first value. The headline use is
 * `--vary benchmark=on,off`: is autotuning worth its loss of determinism? */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/multirun.h"
#include "analysis/paramdist.h"
#include "cli/cli.h"
#include "analysis/compare.h"
#include "core/config.h"
#include "analysis/elemdiff.h"
#include "util/error.h"
#include "analysis/multirun.h"
#include "util/numparse.h"
#include "util/outpath.h"

static const char synopsis[] =
    "usage: repro compare EXP --vary KEY=V1,V2[,...] [options]\n"
    "       repro compare --vary KEY=V1,V2[,...] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs EXP N times (fresh processes) for each value of KEY and reports, per value:\n"
    "whether its runs are identical, the median step time, the final loss and held-out\n"
    "accuracy, the convolution algorithm chosen per call site (and whether it changed\n"
    "between runs), and its divergence from the first value: first divergent step,\n"
    "relative L2 difference of the parameters at the end, max ULP distance at the end.\n"
    "Any config key can vary: benchmark, deterministic, threads, num_workers,\n"
    "variant.*, lr, ... The run options (--steps, --seed, --set, ...) apply to every run.\n";

static const char epilogue[] = "Exit: 0 report written, 2 bad key or value, 3 environment.\n";

enum { O_VARY = 1, O_PLOT };

static const repro_cli_opt own_opts[] = {
    {"vary", 0, "KEY=V1,V2",
     "the key and its values (section.key or an unambiguous key);\na value may carry other keys "
     "with it: V+KEY2=W (e.g.\naccumulation_steps=1,2+batch_size=32: k micro-batches of b\n"
     "against one batch of k*b)",
     O_VARY},
    {"plot", 0, "FILE.svg", "divergence from the first value over the steps, one line each",
     O_PLOT},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_compare_spec = {"compare", REPRO_CLI_COMPARE, synopsis, own_opts,
                                           epilogue};

#define MAX_VALUES 8

typedef struct {
    char value[128];
    char set[256];
    /* "+KEY=V" companions of the value (e.g. accumulation_steps=2+batch_size=32:
     * k micro-batches of b against one batch of k*b needs two keys at once) */
    char also[4][256];
    int nalso;
    repro_multirun m;
    int identical;
    double step_ms;          /* median over runs */
    double final_loss, accuracy;
    json_t *algos;           /* run 1's choices */
    int algos_changed;       /* between this value's runs */
    repro_divergence div;    /* vs value 0, run 1 */
    int have_div;
    uint64_t max_ulp;        /* params at the end vs value 0 */
    double end_rel_l2;       /* the norm gap at the end (trace stats) */
    repro_param_distance dist; /* the true distance at the end (dumps) */
} value_result;

/* One comparison: its options, the values and their runs; owned by
 * repro_cmd_compare (heap: each value's multirun is large). */
typedef struct {
    const char *exp, *vary, *plot;
    char **program;      /* `-- PROGRAM ARGS...`, or NULL */
    char name[128];
    int runs, json;      /* from co: --runs (default 2), --json */
    repro_common co;     /* the common options (common_opts.h) */
    repro_config cfg;    /* the experiment with the pass-through options */
    char key[128];       /* the varied key, as given */
    int k;               /* its index in the key table */
    value_result v[MAX_VALUES];
    int nv;
    char laststep[32];   /* --dump of the last step, for ULP distances */
} compare_ctx;

/* The first trace line that has `key`, parsed (new reference), or NULL. */
static json_t *line_with(const char *path, const char *key, int last)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    json_t *found = NULL;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (j && json_object_get(j, key)) {
            json_decref(found);
            found = j;
            if (!last)
                break;
        } else {
            json_decref(j);
        }
    }
    free(line);
    fclose(f);
    return found;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Max ULP over the param.* dumps of the last step, a vs b. */
static uint64_t params_max_ulp(const repro_trace *ta, const repro_trace *tb, long step)
{
    const repro_trace_step *s = repro_trace_find_step(ta, step);
    uint64_t worst = 0;
    for (int i = 0; s && i < s->ntensors; i++) {
        if (strncmp(s->tensors[i].name, "param.", 6))
            continue;
        char fa[1400], fb[1400];
        const char *sa = strrchr(ta->path, '/'), *sb = strrchr(tb->path, '/');
        snprintf(fa, sizeof fa, "%.*s/dump/step-%06ld/%s.npy", (int)(sa - ta->path), ta->path,
                 step, s->tensors[i].name);
        snprintf(fb, sizeof fb, "%.*s/dump/step-%06ld/%s.npy", (int)(sb - tb->path), tb->path,
                 step, s->tensors[i].name);
        repro_element_diff e;
        if (repro_element_diff_files(fa, fb, 1, s->tensors[i].name, &e) == 0) {
            if (e.max_ulp > worst)
                worst = e.max_ulp;
        } else {
            repro_error_clear();
        }
    }
    return worst;
}

static const char *algo_summary(json_t *algos, char *buf, size_t len)
{
    size_t pos = 0;
    size_t i;
    json_t *c;
    buf[0] = '\0';
    json_array_foreach(algos, i, c) {
        pos += (size_t)snprintf(buf + pos, pos < len ? len - pos : 0, "%s%s",
                                i ? ", " : "",
                                json_string_value(json_object_get(c, "algo")));
    }
    if (!algos)
        snprintf(buf, len, "-");
    return buf;
}

/* ---- the plot ---------------------------------------------------------- */

typedef struct {
    double W, H, L, R, T, B, lo, hi;
    long maxstep;
    const char *measure; /* what the curves measure: parameters, or all tensors */
} plot_frame;

static double plot_y(const plot_frame *p, double rel)
{
    const double floor_v = 1e-12;
    double e = log10(rel > floor_v ? rel : floor_v);
    return p->H - p->B - (e - p->lo) / (p->hi - p->lo) * (p->H - p->B - p->T);
}

/* Title, axes, decades and labels. */
static void plot_axes(FILE *f, const plot_frame *p, const char *title, const char *first)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%g\" height=\"%g\" font-family=\"sans-serif\" font-size=\"12\">\n",
            p->W, p->H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%g\" y=\"22\" font-size=\"15\">", p->L);
    for (const char *c = title; *c; c++)
        fputs(*c == '<' ? "&lt;" : *c == '&' ? "&amp;" : (char[]){*c, 0}, f);
    fprintf(f, "</text>\n");
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", p->L,
            p->H - p->B, p->W - p->R, p->H - p->B);
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", p->L, p->T,
            p->L, p->H - p->B);
    for (double e = p->lo; e <= p->hi; e += 2) {
        double y = p->H - p->B - (e - p->lo) / (p->hi - p->lo) * (p->H - p->B - p->T);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s1e%g</text>\n", p->L - 6, y + 4,
                e == p->lo ? "0 / " : "", e);
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n", p->L, y,
                p->W - p->R, y);
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step (1..%ld)</text>\n",
            (p->L + p->W - p->R) / 2, p->H - 15, p->maxstep);
    fprintf(f, "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">"
               "norm gap of %s vs %s (log)</text>\n",
            (p->T + p->H - p->B) / 2, (p->T + p->H - p->B) / 2, p->measure, first);
}

/* One SVG line chart: rel_l2 vs value 0 over the steps, one series each. */
static int plot_multi(const char *path, const char *title, const value_result *v, int n)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                         "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};
    repro_outfile out; /* the output-path rule (util/outpath.h) */
    if (repro_outfile_open(&out, path, "plot"))
        return -1;
    FILE *f = out.f;
    /* The legend sits in a margin of its own, right of the plot, so it
     * never covers a curve. */
    plot_frame p = {920, 420, 70, 200, 40, 50, log10(1e-12), 0, 1, "parameters"};
    for (int i = 1; i < n; i++)
        if (v[i].have_div && v[i].div.curve_all_tensors)
            p.measure = "all recorded tensors"; /* the program records no param.* */
    double top = 1e-6;
    for (int i = 0; i < n; i++)
        for (long k = 0; v[i].have_div && k < v[i].div.ncurve; k++) {
            if (v[i].div.curve[k].step > p.maxstep)
                p.maxstep = v[i].div.curve[k].step;
            if (v[i].div.curve[k].rel_l2 > top)
                top = v[i].div.curve[k].rel_l2;
        }
    p.hi = ceil(log10(top));
    plot_axes(f, &p, title, v[0].value);
    for (int i = 0; i < n; i++) {
        /* a value whose own runs disagree: dashed, and said in the legend */
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                colors[i % 8], v[i].identical ? "" : " stroke-dasharray=\"6,4\"");
        for (long k = 0; v[i].have_div && k < v[i].div.ncurve; k++) {
            double x = p.L + (double)(v[i].div.curve[k].step - 1) /
                                 (double)(p.maxstep > 1 ? p.maxstep - 1 : 1) * (p.W - p.L - p.R);
            fprintf(f, "%.1f,%.1f ", x, plot_y(&p, v[i].div.curve[k].rel_l2));
        }
        fprintf(f, "\"/>\n<text x=\"%g\" y=\"%g\" fill=\"%s\">", p.W - p.R + 12,
                p.T + 16.0 * (i + 1), colors[i % 8]);
        for (const char *c = v[i].value; *c; c++)
            fputs(*c == '<' ? "&lt;" : *c == '&' ? "&amp;" : (char[]){*c, 0}, f);
        fprintf(f, "%s</text>\n", v[i].identical ? "" : " (runs disagree)");
    }
    fprintf(f, "</svg>\n");
    if (repro_outfile_commit(&out))
        return -1;
    return 0;
}

/* ---- options and values ------------------------------------------------- */

/* An own option: --vary or --plot. */
static int compare_option(void *ctx, int id, const char *v)
{
    compare_ctx *x = ctx;
    if (id == O_VARY)
        x->vary = v;
    else
        x->plot = v;
    return 0;
}

/* 0, 1 for --help (printed), or -1 (error slot). */
static int parse_args(int argc, char **argv, compare_ctx *x)
{
    if (repro_cli_split_program(&argc, argv, &x->program))
        return -1;
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_compare_spec, argc, argv, &x->co, compare_option, x);
    if (parsed)
        return parsed;
    if (x->co.nlists) /* a row's list form (common_opts.c) is planned by check only */
        return repro_error_set(REPRO_EINVAL, "compare: %s takes one value here",
                               x->co.lists[0].flag);
    x->runs = x->co.runs ? x->co.runs : 2;
    x->json = x->co.json;
    if (x->program) {
        /* A program's keys are its own: they reach it as REPRO_SET_<KEY>
         * (and threads, workers, benchmark, deterministic as the
         * protocol's variables); nothing to validate here. */
        if (p.nargs || !x->vary)
            return repro_error_set(REPRO_EINVAL, "compare: expected --vary KEY=V1,V2 -- PROGRAM");
        repro_program_name(x->program, x->name, sizeof x->name);
        x->exp = x->name;
        return 0;
    }
    if (p.nargs != 1 || !x->vary)
        return repro_error_set(REPRO_EINVAL, "compare: expected EXP and --vary KEY=V1,V2");
    x->exp = p.args[0];
    if (repro_config_load(&x->cfg, x->exp) ||
        repro_config_apply_run_options(&x->cfg, x->co.pass.argv, x->co.pass.n))
        return -1;
    snprintf(x->laststep, sizeof x->laststep, "%d", x->cfg.train_steps);
    return 0;
}

/* One value "V[+KEY2=W...]" (tok is modified): its --set and companions,
 * validated on a copy of the config like the file. */
static int parse_value(compare_ctx *x, char *tok)
{
    if (x->nv == MAX_VALUES)
        return repro_error_set(REPRO_EINVAL, "compare: at most %d values", MAX_VALUES);
    value_result *v = &x->v[x->nv];
    snprintf(v->value, sizeof v->value, "%s", tok);
    char *plus = strchr(tok, '+');
    if (plus)
        *plus = '\0';
    if (x->program) {
        if (plus)
            return repro_error_set(REPRO_EINVAL, "compare: +KEY=V is for experiments");
        snprintf(v->set, sizeof v->set, "%s=%s", x->key, tok);
        x->nv++;
        return 0;
    }
    snprintf(v->set, sizeof v->set, "%s.%s=%s", repro_config_key_section(x->k),
             repro_config_key_name(x->k), tok);
    repro_config probe = x->cfg;
    if (repro_config_set(&probe, v->set))
        return -1;
    for (char *a = plus ? plus + 1 : NULL; a && *a;) {
        char *next = strchr(a, '+');
        if (next)
            *next = '\0';
        if (v->nalso == 4)
            return repro_error_set(REPRO_EINVAL, "compare: at most 4 +KEY=V per value");
        snprintf(v->also[v->nalso], sizeof v->also[0], "%s", a);
        if (repro_config_set(&probe, v->also[v->nalso++]))
            return -1;
        a = next ? next + 1 : NULL;
    }
    if (repro_config_validate(&probe))
        return -1;
    x->nv++;
    return 0;
}

/* --vary KEY=V1,V2,...: the key and every value. */
static int parse_vary(compare_ctx *x)
{
    const char *eq = strchr(x->vary, '=');
    if (!eq || eq == x->vary || !eq[1] || (size_t)(eq - x->vary) >= sizeof x->key)
        return repro_error_set(REPRO_EINVAL, "compare: --vary %s: expected KEY=V1,V2", x->vary);
    snprintf(x->key, sizeof x->key, "%.*s", (int)(eq - x->vary), x->vary);
    x->k = x->program ? 0 : repro_config_find_key(x->key);
    if (x->k < 0)
        return repro_error_set(REPRO_EINVAL, "compare: --vary: %s key '%s' (see `repro help config`)",
                               x->k == -2 ? "ambiguous" : "unknown", x->key);
    char list[512];
    snprintf(list, sizeof list, "%s", eq + 1);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (parse_value(x, tok))
            return -1;
    return 0;
}

/* ---- the runs ----------------------------------------------------------------- */

/* Value i's runs: every pass-through option, its --set and companions, and
 * a dump of the last step. 0, a child's exit status, or -1 (error slot). */
static int run_value(compare_ctx *x, int i)
{
    value_result *v = &x->v[i];
    repro_multirun *m = &v->m;
    repro_multirun_init(m, x->exp, x->program ? x->name : x->cfg.name, "compare");
    repro_multirun_add_pass(m, &x->co.pass);
    m->pass[m->npass++] = "--set";
    m->pass[m->npass++] = v->set;
    for (int a = 0; a < v->nalso; a++) {
        m->pass[m->npass++] = "--set";
        m->pass[m->npass++] = v->also[a];
    }
    if (x->program) {
        m->cmd = x->program;
    } else {
        m->pass[m->npass++] = "--dump"; /* the end state, for ULP distances */
        m->pass[m->npass++] = x->laststep;
    }
    m->no_element_detail = 1;
    m->quiet = 1;
    snprintf(m->root + strlen(m->root), sizeof m->root - strlen(m->root), "-%d", i + 1);
    for (int r = 0; r < x->runs; r++) {
        char label[96];
        snprintf(label, sizeof label, "%.30s=%.20s run %d", x->key, v->value, r + 1);
        repro_multirun_add(m, label, "fresh-process run to run", NULL, NULL);
    }
    if (!x->json && !x->co.quiet)
        fprintf(stderr, "compare: %s=%s: %d run%s ...\n", x->key, v->value, x->runs,
                x->runs == 1 ? "" : "s");
    return repro_multirun_execute(m);
}

/* The conv algorithm choices of run r (a new reference to the array, or NULL). */
static json_t *algos_of(const repro_multirun *m, int r)
{
    json_t *al = line_with(m->traces[r].path, "algorithms", 0);
    json_t *arr = json_object_get(al, "algorithms");
    if (arr)
        json_incref(arr);
    json_decref(al);
    return arr;
}

/* Did any run pick another algorithm than run 1 somewhere? (Only "algo"
 * counts: the measured times always differ.) */
static int algos_changed(const value_result *v)
{
    int changed = 0;
    for (int r = 1; r < v->m.nplan && v->algos; r++) {
        json_t *arr = algos_of(&v->m, r);
        for (size_t s = 0; s < json_array_size(arr); s++)
            if (strcmp(json_string_value(json_object_get(json_array_get(arr, s), "algo")),
                       json_string_value(json_object_get(json_array_get(v->algos, s), "algo"))))
                changed = 1;
        json_decref(arr);
    }
    return changed;
}

/* Value i's numbers: median step time, held-out accuracy, algorithms,
 * final loss, and its distance from value 0. 0 or -1 (error slot). */
static int measure_value(compare_ctx *x, int i)
{
    value_result *v = &x->v[i];
    const repro_multirun *m = &v->m;
    double ms[16];
    v->identical = m->failed == 0;
    for (int r = 0; r < m->nplan; r++) {
        json_t *tr = line_with(m->traces[r].path, "train_seconds", 1);
        json_t *secs = json_object_get(tr, "train_seconds");
        /* A program need not say how long it trained: its wall time then. */
        double sec = secs ? json_real_value(secs) : m->plan[r].seconds;
        ms[r] = 1000.0 * sec / (m->traces[r].nsteps ? m->traces[r].nsteps : 1);
        if (r == 0) { /* a program that records none has none: NaN, shown as "-" */
            json_t *acc = json_object_get(tr, "eval_accuracy");
            v->accuracy = json_is_number(acc) ? json_number_value(acc) : NAN;
        }
        json_decref(tr);
    }
    v->algos = algos_of(m, 0);
    v->algos_changed = algos_changed(v);
    qsort(ms, (size_t)m->nplan, sizeof *ms, cmp_double);
    v->step_ms = ms[m->nplan / 2];
    const repro_trace *t0 = &x->v[0].m.traces[0], *t = &m->traces[0];
    const repro_trace_step *last = repro_trace_find_step(t, t->nsteps);
    v->final_loss = last ? last->loss_value : NAN;
    if (repro_compare_variants(t0, t, &v->div))
        return -1;
    v->have_div = 1;
    v->end_rel_l2 = v->div.ncurve ? v->div.curve[v->div.ncurve - 1].rel_l2 : 0;
    v->max_ulp = x->program ? 0 : params_max_ulp(t0, t, t->nsteps); /* no dumps from a program */
    if (!x->program && repro_param_distance_at(t0, t, t->nsteps, &v->dist))
        return -1;
    return 0;
}

/* ---- the report ---------------------------------------------------------------- */

/* The scope of the determinism contract a key varies, or NULL: a value
 * whose run departs from the first's breaks that scope. */
static const char *scope_of_key(const char *key)
{
    static const struct {
        const char *key, *scope;
    } scopes[] = {{"ranks", "world size"},       {"train.ranks", "world size"},
                  {"threads", "thread count"},   {"train.threads", "thread count"},
                  {"num_workers", "worker count"}, {"data.num_workers", "worker count"},
                  {"tp", "tensor-parallel size"}, {"parallel.tp", "tensor-parallel size"}};
    for (size_t i = 0; i < sizeof scopes / sizeof *scopes; i++)
        if (!strcmp(key, scopes[i].key))
            return scopes[i].scope;
    return NULL;
}

static void report_json(const compare_ctx *x)
{
    json_t *doc = json_object(), *arr = json_array();
    json_object_set_new(doc, "experiment", json_string(x->program ? x->name : x->cfg.name));
    json_object_set_new(doc, "key", json_string(x->key));
    const char *scope = scope_of_key(x->key);
    json_object_set_new(doc, "scope", scope ? json_string(scope) : json_null());
    json_object_set_new(doc, "runs_per_value", json_integer(x->runs));
    for (int i = 0; i < x->nv; i++) {
        const value_result *v = &x->v[i];
        json_t *o = json_pack("{s:s, s:b, s:f, s:f, s:b, s:f}", "value", v->value,
                              "identical", v->identical, "median_step_ms", v->step_ms,
                              "final_loss", v->final_loss,
                              "algorithms_changed_between_runs", v->algos_changed,
                              "final_rel_l2_vs_first", v->end_rel_l2);
        json_object_set_new(o, "accuracy",
                            isfinite(v->accuracy) ? json_real(v->accuracy) : json_null());
        json_object_set_new(o, "max_ulp_vs_first",
                            v->max_ulp == REPRO_ULP_NAN ? json_null() /* not comparable: NaN */
                                                        : json_integer((json_int_t)v->max_ulp));
        /* the norm gap above is kept under its real name too */
        json_object_set_new(o, "final_norm_gap_vs_first", json_real(v->end_rel_l2));
        if (v->dist.valid) {
            json_object_set_new(o, "final_rel_distance_vs_first",
                                isfinite(v->dist.rel_l2) ? json_real(v->dist.rel_l2) : json_null());
            json_object_set_new(o, "ulp_vs_first",
                                json_pack("{s:I, s:I, s:I, s:I, s:I}", "p50",
                                          (json_int_t)v->dist.ulp_p50, "p99",
                                          (json_int_t)v->dist.ulp_p99, "max",
                                          (json_int_t)v->dist.ulp_max, "sign_crossings",
                                          (json_int_t)v->dist.sign_crossings, "nan_pairs",
                                          (json_int_t)v->dist.nan_pairs));
        }
        json_object_set_new(o, "first_divergent_step_vs_first",
                            v->div.first_step ? json_integer(v->div.first_step) : json_null());
        json_object_set_new(o, "bitwise_equal_to_first", json_boolean(v->div.identical));
        json_object_set_new(o, "algorithms", v->algos ? json_incref(v->algos) : json_null());
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "values", arr);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(doc);
}

/* One row of the text table. */
static void report_row(const value_result *v, int first, int w)
{
    char algos[200], vs[32], ulp[24];
    if (first)
        snprintf(vs, sizeof vs, "-");
    else if (v->div.identical)
        snprintf(vs, sizeof vs, "same bits");
    else if (v->div.first_step)
        snprintf(vs, sizeof vs, "step %ld", v->div.first_step);
    else
        snprintf(vs, sizeof vs, "prefix");
    char dist[24] = "-", ulps[48] = "-";
    if (v->dist.valid) {
        snprintf(dist, sizeof dist, "%.3g", v->dist.rel_l2);
        snprintf(ulps, sizeof ulps, "%llu/%llu/%llu%s", (unsigned long long)v->dist.ulp_p50,
                 (unsigned long long)v->dist.ulp_p99, (unsigned long long)v->dist.ulp_max,
                 v->dist.nan_pairs ? " NaN" : "");
    } else if (v->max_ulp == REPRO_ULP_NAN) {
        snprintf(ulps, sizeof ulps, "NaN");
    }
    (void)ulp;
    char acc[16] = "-"; /* only what the run recorded */
    if (isfinite(v->accuracy))
        snprintf(acc, sizeof acc, "%.2f%%", 100 * v->accuracy);
    printf("%-*s %-10s %9.2f %11.6f %9s %12s %11s %18s %6ld %9.3g  %s%s\n", w, v->value,
           v->identical ? "yes" : "NO", v->step_ms, v->final_loss, acc, vs, dist,
           ulps, v->dist.sign_crossings, v->end_rel_l2,
           algo_summary(v->algos, algos, sizeof algos),
           v->algos_changed ? " (changed between runs)" : "");
}

static void report_text(const compare_ctx *x)
{
    printf("repro compare %s --vary %s (%d run%s per value, %ld steps)\n",
           x->program ? x->name : x->cfg.name, x->vary,
           x->runs, x->runs == 1 ? "" : "s", x->v[0].m.traces[0].nsteps);
    if (scope_of_key(x->key)) /* "vs first" then names where that scope broke */
        printf("scope: %s\n", scope_of_key(x->key));
    int w = (int)strlen(x->key);
    for (int i = 0; i < x->nv; i++)
        if ((int)strlen(x->v[i].value) > w)
            w = (int)strlen(x->v[i].value);
    printf("%-*s %-10s %9s %11s %9s %12s %11s %18s %6s %9s  %s\n", w, x->key, "identical",
           "step ms", "final loss", "accuracy", "vs first", "|A-B|/|A|", "ULP p50/p99/max",
           "sign", "norm gap", "conv algorithms per call site");
    for (int i = 0; i < x->nv; i++)
        report_row(&x->v[i], i == 0, w);
    printf("identical: all %d runs of the value agree bit for bit; vs first: where the value's "
           "run 1 departs from %s=%s's; |A-B|/|A|: the parameters' relative L2 distance at the "
           "end, and their float32 ULP distances (median/p99/max) with sign crossings counted "
           "apart (sign); norm gap: | ||A|| - ||B|| | / ||A|| from the trace stats (not a "
           "distance: different parameters can have equal norms)\n",
           x->runs, x->key, x->v[0].value);
}

/* Runs and measures every value, then reports: the exit code. */
static int compare(compare_ctx *x)
{
    for (int i = 0; i < x->nv; i++) {
        int rc = run_value(x, i);
        if (rc)
            return rc < 0 ? repro_report_error() : rc;
        if (measure_value(x, i))
            return repro_report_error();
    }
    if (x->json)
        report_json(x);
    else
        report_text(x);
    if (x->plot) {
        char title[300];
        snprintf(title, sizeof title, "repro compare %s --vary %s",
                 x->program ? x->name : x->cfg.name, x->vary);
        if (plot_multi(x->plot, title, x->v, x->nv))
            return repro_report_error();
    }
    return 0;
}

int repro_cmd_compare(int argc, char **argv)
{
    compare_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return repro_report_error();
    }
    int rc = parse_args(argc, argv, x);
    if (rc == 0 && parse_vary(x))
        rc = -1;
    if (rc == 1)
        rc = repro_finish_stdout(0);
    else if (rc)
        rc = repro_report_error();
    else
        rc = repro_finish_stdout(compare(x));
    for (int i = 0; i < x->nv; i++) {
        if (x->v[i].have_div)
            repro_divergence_release(&x->v[i].div);
        json_decref(x->v[i].algos);
        repro_multirun_release(&x->v[i].m);
    }
    free(x);
    return rc;
}
