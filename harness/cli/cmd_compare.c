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

#include "cli/cli.h"
#include "analysis/compare.h"
#include "core/config.h"
#include "analysis/elemdiff.h"
#include "util/error.h"
#include "analysis/multirun.h"

const char repro_compare_usage[] =
    "usage: repro compare EXP --vary KEY=V1,V2[,...] [options]\n"
    "\n"
    "Runs EXP N times (fresh processes) for each value of KEY and reports, per value:\n"
    "whether its runs are identical, the median step time, the final loss and held-out\n"
    "accuracy, the convolution algorithm chosen per call site (and whether it changed\n"
    "between runs), and its divergence from the first value: first divergent step,\n"
    "relative L2 difference of the parameters at the end, max ULP distance at the end.\n"
    "Any config key can vary: benchmark, deterministic, threads, num_workers,\n"
    "variant.*, lr, ...\n"
    "\n"
    "  --vary KEY=V1,V2  the key and its values (section.key or an unambiguous key);\n"
    "                    a value may carry other keys with it: V+KEY2=W (e.g.\n"
    "                    accumulation_steps=1,2+batch_size=32: k micro-batches of b\n"
    "                    against one batch of k*b)\n"
    "  --runs N          runs per value (default 2)\n"
    "  --json            the report as JSON\n"
    "  --plot FILE.svg   divergence from the first value over the steps, one line each\n"
    "  --steps N, --seed S, --set KEY=VALUE   as for `repro run`, for every run\n"
    "Exit: 0 report written, 2 bad key or value, 3 environment.\n";

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
    double end_rel_l2;
} value_result;

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

/* One SVG line chart: rel_l2 vs value 0 over the steps, one series each. */
static int plot_multi(const char *path, const char *title, value_result *v, int n)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                         "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};
    FILE *f = fopen(path, "w");
    if (!f)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create", path);
    const double W = 760, H = 420, L = 70, R = 20, T = 40, B = 50, floor_v = 1e-12;
    long maxstep = 1;
    double top = 1e-6;
    for (int i = 0; i < n; i++)
        for (long k = 0; v[i].have_div && k < v[i].div.ncurve; k++) {
            if (v[i].div.curve[k].step > maxstep)
                maxstep = v[i].div.curve[k].step;
            if (v[i].div.curve[k].rel_l2 > top)
                top = v[i].div.curve[k].rel_l2;
        }
    double lo = log10(floor_v), hi = ceil(log10(top));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%g\" height=\"%g\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%g\" y=\"22\" font-size=\"15\">", L);
    for (const char *p = title; *p; p++)
        fputs(*p == '<' ? "&lt;" : *p == '&' ? "&amp;" : (char[]){*p, 0}, f);
    fprintf(f, "</text>\n");
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, H - B,
            W - R, H - B);
    fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", L, T, L, H - B);
    for (double e = lo; e <= hi; e += 2) {
        double y = H - B - (e - lo) / (hi - lo) * (H - B - T);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s1e%g</text>\n", L - 6, y + 4,
                e == lo ? "0 / " : "", e);
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n", L, y,
                W - R, y);
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step (1..%ld)</text>\n",
            (L + W - R) / 2, H - 15, maxstep);
    fprintf(f, "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">"
               "relative L2 difference of parameters vs %s (log)</text>\n",
            (T + H - B) / 2, (T + H - B) / 2, v[0].value);
    for (int i = 0; i < n; i++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                colors[i % 8]);
        for (long k = 0; v[i].have_div && k < v[i].div.ncurve; k++) {
            double r = v[i].div.curve[k].rel_l2;
            double e = log10(r > floor_v ? r : floor_v);
            double x = L + (double)(v[i].div.curve[k].step - 1) / (double)(maxstep > 1 ? maxstep - 1 : 1) * (W - L - R);
            double y = H - B - (e - lo) / (hi - lo) * (H - B - T);
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fprintf(f, "\"/>\n<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", W - R - 150,
                T + 16.0 * (i + 1), colors[i % 8], v[i].value);
    }
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0)
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", path);
    return 0;
}

int repro_cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"vary", required_argument, 0, 'v'},  {"runs", required_argument, 0, 'r'},
        {"json", no_argument, 0, 'j'},        {"plot", required_argument, 0, 'p'},
        {"steps", required_argument, 0, 's'}, {"seed", required_argument, 0, 'S'},
        {"set", required_argument, 0, 'k'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *vary = NULL, *plot = NULL;
    int runs = 2, json = 0, c;
    char *pass[REPRO_MULTIRUN_MAX_PASS];
    int npass = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'v': vary = optarg; break;
        case 'r':
            runs = (int)strtol(optarg, &end, 10);
            if (*end || runs < 1 || runs > 16) {
                repro_error_set(REPRO_EINVAL, "compare: --runs %s: expected 1..16", optarg);
                return repro_report_error();
            }
            break;
        case 'j': json = 1; break;
        case 'p': plot = optarg; break;
        case 's':
        case 'S':
        case 'k':
            if (npass + 2 > REPRO_MULTIRUN_MAX_PASS - 8) {
                repro_error_set(REPRO_EINVAL, "compare: too many options");
                return repro_report_error();
            }
            pass[npass++] = c == 's' ? "--steps" : c == 'S' ? "--seed" : "--set";
            pass[npass++] = optarg;
            break;
        case 'h': fputs(repro_compare_usage, stdout); return repro_finish_stdout(0);
        default:
            repro_error_set(REPRO_EINVAL, "compare: bad option '%s' (see `repro help compare`)",
                            argv[optind - 1]);
            return repro_report_error();
        }
    }
    if (optind + 1 != argc || !vary) {
        repro_error_set(REPRO_EINVAL, "compare: expected EXP and --vary KEY=V1,V2");
        return repro_report_error();
    }
    const char *exp = argv[optind];
    static repro_config cfg;
    if (repro_config_load(&cfg, exp))
        return repro_report_error();
    if (repro_config_apply_run_options(&cfg, pass, npass))
        return repro_report_error();
    /* The key and every value, validated like the file. */
    const char *eq = strchr(vary, '=');
    char key[128];
    if (!eq || eq == vary || !eq[1] || (size_t)(eq - vary) >= sizeof key) {
        repro_error_set(REPRO_EINVAL, "compare: --vary %s: expected KEY=V1,V2", vary);
        return repro_report_error();
    }
    snprintf(key, sizeof key, "%.*s", (int)(eq - vary), vary);
    int k = repro_config_find_key(key);
    if (k < 0) {
        repro_error_set(REPRO_EINVAL, "compare: --vary: %s key '%s' (see `repro help config`)",
                        k == -2 ? "ambiguous" : "unknown", key);
        return repro_report_error();
    }
    static value_result v[MAX_VALUES];
    int nv = 0;
    char list[512];
    snprintf(list, sizeof list, "%s", eq + 1);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (nv == MAX_VALUES) {
            repro_error_set(REPRO_EINVAL, "compare: at most %d values", MAX_VALUES);
            return repro_report_error();
        }
        memset(&v[nv], 0, sizeof v[nv]);
        snprintf(v[nv].value, sizeof v[nv].value, "%s", tok);
        char *plus = strchr(tok, '+');
        if (plus)
            *plus = '\0';
        snprintf(v[nv].set, sizeof v[nv].set, "%s.%s=%s", repro_config_key_section(k),
                 repro_config_key_name(k), tok);
        static repro_config probe;
        probe = cfg;
        if (repro_config_set(&probe, v[nv].set))
            return repro_report_error();
        for (char *a = plus ? plus + 1 : NULL; a && *a;) {
            char *next = strchr(a, '+');
            if (next)
                *next = '\0';
            if (v[nv].nalso == 4) {
                repro_error_set(REPRO_EINVAL, "compare: at most 4 +KEY=V per value");
                return repro_report_error();
            }
            snprintf(v[nv].also[v[nv].nalso], sizeof v[nv].also[0], "%s", a);
            if (repro_config_set(&probe, v[nv].also[v[nv].nalso++]))
                return repro_report_error();
            a = next ? next + 1 : NULL;
        }
        if (repro_config_validate(&probe))
            return repro_report_error();
        nv++;
    }
    char laststep[32];
    snprintf(laststep, sizeof laststep, "%d", cfg.train_steps);

    /* The runs, value by value. */
    int rc = 0;
    for (int i = 0; i < nv; i++) {
        repro_multirun *m = &v[i].m;
        repro_multirun_init(m, exp, cfg.name, "compare");
        memcpy(m->pass, pass, sizeof(char *) * (size_t)npass);
        m->npass = npass;
        m->pass[m->npass++] = "--set";
        m->pass[m->npass++] = v[i].set;
        for (int a = 0; a < v[i].nalso; a++) {
            m->pass[m->npass++] = "--set";
            m->pass[m->npass++] = v[i].also[a];
        }
        m->pass[m->npass++] = "--dump"; /* the end state, for ULP distances */
        m->pass[m->npass++] = laststep;
        m->no_element_detail = 1;
        m->quiet = 1;
        snprintf(m->root + strlen(m->root), sizeof m->root - strlen(m->root), "-%d", i + 1);
        for (int r = 0; r < runs; r++) {
            char label[96];
            snprintf(label, sizeof label, "%.30s=%.20s run %d", key, v[i].value, r + 1);
            repro_multirun_add(m, label, "fresh-process run to run", NULL, NULL);
        }
        if (!json)
            fprintf(stderr, "compare: %s=%s: %d run%s ...\n", key, v[i].value, runs,
                    runs == 1 ? "" : "s");
        rc = repro_multirun_execute(m);
        if (rc) {
            rc = rc < 0 ? repro_report_error() : rc;
            goto done;
        }
        v[i].identical = m->failed == 0;
        double ms[16];
        for (int r = 0; r < m->nplan; r++) {
            json_t *tr = line_with(m->traces[r].path, "train_seconds", 1);
            double sec = json_real_value(json_object_get(tr, "train_seconds"));
            ms[r] = 1000.0 * sec / (m->traces[r].nsteps ? m->traces[r].nsteps : 1);
            if (r == 0)
                v[i].accuracy = json_real_value(json_object_get(tr, "eval_accuracy"));
            json_decref(tr);
            json_t *al = line_with(m->traces[r].path, "algorithms", 0);
            json_t *arr = json_object_get(al, "algorithms");
            if (r == 0)
                v[i].algos = arr ? json_incref(arr) : NULL;
            else if (arr && v[i].algos && !json_equal(arr, v[i].algos))
                v[i].algos_changed = 1; /* refined below: times always differ */
            json_decref(al);
        }
        /* algorithm choices differ only in "algo"; times always differ */
        if (v[i].algos_changed) {
            v[i].algos_changed = 0;
            for (int r = 1; r < m->nplan; r++) {
                json_t *al = line_with(m->traces[r].path, "algorithms", 0);
                json_t *arr = json_object_get(al, "algorithms");
                for (size_t s = 0; s < json_array_size(arr); s++)
                    if (strcmp(json_string_value(json_object_get(json_array_get(arr, s), "algo")),
                               json_string_value(json_object_get(
                                   json_array_get(v[i].algos, s), "algo"))))
                        v[i].algos_changed = 1;
                json_decref(al);
            }
        }
        qsort(ms, (size_t)m->nplan, sizeof *ms, cmp_double);
        v[i].step_ms = ms[m->nplan / 2];
        const repro_trace_step *last = repro_trace_find_step(&m->traces[0], m->traces[0].nsteps);
        v[i].final_loss = last ? last->loss_value : NAN;
        if (repro_compare_variants(&v[0].m.traces[0], &m->traces[0], &v[i].div)) {
            rc = repro_report_error();
            goto done;
        }
        v[i].have_div = 1;
        v[i].end_rel_l2 = v[i].div.ncurve ? v[i].div.curve[v[i].div.ncurve - 1].rel_l2 : 0;
        v[i].max_ulp = params_max_ulp(&v[0].m.traces[0], &m->traces[0], m->traces[0].nsteps);
    }

    /* The report. */
    if (json) {
        json_t *doc = json_object(), *arr = json_array();
        json_object_set_new(doc, "experiment", json_string(cfg.name));
        json_object_set_new(doc, "key", json_string(key));
        json_object_set_new(doc, "runs_per_value", json_integer(runs));
        for (int i = 0; i < nv; i++) {
            json_t *o = json_pack("{s:s, s:b, s:f, s:f, s:f, s:b, s:f, s:I}", "value", v[i].value,
                                  "identical", v[i].identical, "median_step_ms", v[i].step_ms,
                                  "final_loss", v[i].final_loss, "accuracy", v[i].accuracy,
                                  "algorithms_changed_between_runs", v[i].algos_changed,
                                  "final_rel_l2_vs_first", v[i].end_rel_l2,
                                  "max_ulp_vs_first", (json_int_t)v[i].max_ulp);
            json_object_set_new(o, "first_divergent_step_vs_first",
                                v[i].div.first_step ? json_integer(v[i].div.first_step)
                                                    : json_null());
            json_object_set_new(o, "bitwise_equal_to_first", json_boolean(v[i].div.identical));
            json_object_set_new(o, "algorithms", v[i].algos ? json_incref(v[i].algos) : json_null());
            json_array_append_new(arr, o);
        }
        json_object_set_new(doc, "values", arr);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        printf("repro compare %s --vary %s (%d run%s per value, %ld steps)\n", cfg.name, vary,
               runs, runs == 1 ? "" : "s", v[0].m.traces[0].nsteps);
        int w = (int)strlen(key);
        for (int i = 0; i < nv; i++)
            if ((int)strlen(v[i].value) > w)
                w = (int)strlen(v[i].value);
        printf("%-*s %-10s %9s %11s %9s %12s %11s %9s  %s\n", w, key, "identical", "step ms",
               "final loss", "accuracy", "vs first", "rel L2 end", "max ULP",
               "conv algorithms per call site");
        for (int i = 0; i < nv; i++) {
            char algos[200], vs[32];
            if (i == 0)
                snprintf(vs, sizeof vs, "-");
            else if (v[i].div.identical)
                snprintf(vs, sizeof vs, "same bits");
            else if (v[i].div.first_step)
                snprintf(vs, sizeof vs, "step %ld", v[i].div.first_step);
            else
                snprintf(vs, sizeof vs, "prefix");
            printf("%-*s %-10s %9.2f %11.6f %8.2f%% %12s %11.3g %9llu  %s%s\n", w, v[i].value,
                   v[i].identical ? "yes" : "NO", v[i].step_ms, v[i].final_loss,
                   100 * v[i].accuracy, vs, v[i].end_rel_l2, (unsigned long long)v[i].max_ulp,
                   algo_summary(v[i].algos, algos, sizeof algos),
                   v[i].algos_changed ? " (changed between runs)" : "");
        }
        printf("identical: all %d runs of the value agree bit for bit; vs first: where the value's "
               "run 1 departs from %s=%s's\n",
               runs, key, v[0].value);
    }
    if (plot) {
        char title[300];
        snprintf(title, sizeof title, "repro compare %s --vary %s", cfg.name, vary);
        if (plot_multi(plot, title, v, nv))
            rc = repro_report_error();
    }
done:
    for (int i = 0; i < nv; i++) {
        if (v[i].have_div)
            repro_divergence_release(&v[i].div);
        json_decref(v[i].algos);
        repro_multirun_release(&v[i].m);
    }
    return repro_finish_stdout(rc);
}
