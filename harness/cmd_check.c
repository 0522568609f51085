/* `repro check EXP`: runs the experiment several times as fresh processes
 * (optionally across thread and worker counts), compares the traces, and
 * says whether the run is reproducible — and if not, where, and in which
 * scope of the determinism contract. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "compare.h"
#include "elemdiff.h"
#include "error.h"
#include "junit.h"
#include "progress.h"
#include "run_self.h"
#include "trace.h"

const char repro_check_usage[] =
    "usage: repro check EXP [options]\n"
    "\n"
    "Runs EXP several times, each in a fresh process, and compares the traces\n"
    "bit for bit. Exit 0 when all runs are identical (the shared chain digest is\n"
    "printed), 1 when they are not, with a report: the first divergent step, the\n"
    "tensors that differ there in forward/backward order (the first is the likely\n"
    "origin), the element range, max |a-b| and ULP distance (from tensor dumps of\n"
    "both sides, re-run to that step), and the scope of the mismatch: fresh-process\n"
    "run to run, thread count, or worker count.\n"
    "\n"
    "  --runs N           runs with the experiment's own settings (default 2)\n"
    "  --threads LIST     one more run per kernel thread count, e.g. 1,2,3\n"
    "  --workers LIST     one more run per loader worker count, e.g. 0,1,3\n"
    "  --json             the report as one JSON document on stdout\n"
    "  --junit FILE       also write a JUnit XML report for CI\n"
    "  --steps N, --seed S, --set KEY=VALUE\n"
    "                     as for `repro run`, applied to every run\n"
    "  -h, --help         this text\n"
    "\n"
    "Traces, logs and dumps are kept under runs/EXP/check-STAMP/.\n"
    "Exit: 0 reproducible, 1 not, 2 bad experiment or option, 3 environment.\n";

#define MAX_RUNS 64
#define MAX_PASS 128

typedef struct {
    char label[64];
    const char *scope; /* of a mismatch against run 0 */
    char extra[2][32]; /* extra argv pair, e.g. "--threads" "2" */
    char dir[1100];
    double seconds;
} run_plan;

typedef struct {
    const char *exp;
    int runs;
    int json;
    const char *junit;
    char *pass[MAX_PASS]; /* passed through to every `repro run` */
    int npass;
    run_plan plan[MAX_RUNS];
    int nplan;
    char root[1024];
} check_ctx;

static int add_run(check_ctx *c, const char *label, const char *scope, const char *flag,
                   const char *value)
{
    if (c->nplan == MAX_RUNS)
        return repro_error_set(REPRO_EXIT_USAGE, "check: more than %d runs", MAX_RUNS);
    run_plan *p = &c->plan[c->nplan++];
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->scope = scope;
    if (flag) {
        snprintf(p->extra[0], sizeof p->extra[0], "%s", flag);
        snprintf(p->extra[1], sizeof p->extra[1], "%s", value);
    }
    return 0;
}

static int add_list(check_ctx *c, const char *flag, const char *list, const char *scope,
                    const char *what)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return repro_error_set(REPRO_EXIT_USAGE, "check: %s list too long", flag);
    char *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
        char *end;
        long v = strtol(tok, &end, 10);
        if (*end || end == tok || v < 0 || v > 256)
            return repro_error_set(REPRO_EXIT_USAGE, "check: %s %s: '%s' is not a count", flag,
                                   list, tok);
        char label[64];
        snprintf(label, sizeof label, "%s=%ld", what, v);
        if (add_run(c, label, scope, flag, tok))
            return -1;
    }
    if (n == 0)
        return repro_error_set(REPRO_EXIT_USAGE, "check: %s needs a list like 1,2,3", flag);
    return 0;
}

static int parse_check_args(int argc, char **argv, check_ctx *c)
{
    static const struct option opts[] = {
        {"runs", required_argument, 0, 'r'},    {"threads", required_argument, 0, 't'},
        {"workers", required_argument, 0, 'w'}, {"json", no_argument, 0, 'j'},
        {"junit", required_argument, 0, 'J'},   {"steps", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},    {"set", required_argument, 0, 'k'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    const char *threads = NULL, *workers = NULL;
    c->runs = 2;
    optind = 1;
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case 'r': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 32)
                return repro_error_set(REPRO_EXIT_USAGE, "check: --runs %s: expected 1..32", optarg);
            c->runs = (int)v;
            break;
        }
        case 't': threads = optarg; break;
        case 'w': workers = optarg; break;
        case 'j': c->json = 1; break;
        case 'J': c->junit = optarg; break;
        case 's':
        case 'S':
        case 'k':
            if (c->npass + 2 > MAX_PASS)
                return repro_error_set(REPRO_EXIT_USAGE, "check: too many options");
            c->pass[c->npass++] = o == 's' ? "--steps" : o == 'S' ? "--seed" : "--set";
            c->pass[c->npass++] = optarg;
            break;
        case 'h':
            fputs(repro_check_usage, stdout);
            return 1;
        case ':':
            return repro_error_set(REPRO_EXIT_USAGE, "check: option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return repro_error_set(REPRO_EXIT_USAGE,
                                   "check: unknown option '%s' (see `repro help check`)",
                                   argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return repro_error_set(REPRO_EXIT_USAGE, "check: missing experiment file");
    if (optind + 1 < argc)
        return repro_error_set(REPRO_EXIT_USAGE, "check: more than one experiment ('%s', '%s')",
                               argv[optind], argv[optind + 1]);
    c->exp = argv[optind];

    /* Validate the experiment and overrides here, so errors name the file. */
    static repro_config cfg;
    if (repro_config_load(&cfg, c->exp))
        return -1;
    for (int i = 0; i < c->npass; i += 2) {
        char set[REPRO_CONFIG_PATH_MAX + 64];
        const char *p = c->pass[i];
        snprintf(set, sizeof set, "%s%s", !strcmp(p, "--steps") ? "train.steps="
                                          : !strcmp(p, "--seed") ? "train.seed=" : "",
                 c->pass[i + 1]);
        if (repro_config_set(&cfg, set))
            return -1;
    }
    if (repro_config_validate(&cfg))
        return -1;

    for (int i = 0; i < c->runs; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        if (add_run(c, label, "fresh-process run to run", NULL, NULL))
            return -1;
    }
    if (threads && add_list(c, "--threads", threads, "thread count", "threads"))
        return -1;
    if (workers && add_list(c, "--workers", workers, "worker count", "workers"))
        return -1;
    if (c->nplan < 2)
        return repro_error_set(REPRO_EXIT_USAGE,
                               "check: one run compares with nothing (use --runs 2 or more)");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(c->root, sizeof c->root, "runs/%s/check-%s-%ld", cfg.name, stamp, (long)getpid());
    return 0;
}

static int mkdirs(const char *path)
{
    char buf[1100];
    snprintf(buf, sizeof buf, "%s/", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return repro_error_set_errno(REPRO_EXIT_ENV, "%s: cannot create directory", buf);
        *p = '/';
    }
    return 0;
}

/* One `repro run` in a fresh process. steps > 0: re-run up to that step
 * with dumps of it (element detail). Returns 0, or the child's exit code
 * (>0), or -1. */
static int run_one(check_ctx *c, int idx, const char *dir, long dump_step)
{
    char trace[1200], out[1200], err[1200], dump[32], steps[32], env[64];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", dir);
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    snprintf(env, sizeof env, "REPRO_CHECK_RUN=%d", idx);
    if (mkdirs(dir))
        return -1;
    char *argv[MAX_PASS + 16];
    int n = 0;
    argv[n++] = "run";
    argv[n++] = (char *)c->exp;
    argv[n++] = "-q";
    argv[n++] = "-o";
    argv[n++] = trace;
    for (int i = 0; i < c->npass; i++)
        argv[n++] = c->pass[i];
    const run_plan *p = &c->plan[idx];
    if (p->extra[0][0]) {
        argv[n++] = (char *)p->extra[0];
        argv[n++] = (char *)p->extra[1];
    }
    if (dump_step > 0) { /* after the passed options: these win */
        snprintf(steps, sizeof steps, "%ld", dump_step);
        snprintf(dump, sizeof dump, "%ld", dump_step);
        argv[n++] = "--steps";
        argv[n++] = steps;
        argv[n++] = "--dump";
        argv[n++] = dump;
    }
    argv[n] = NULL;
    int rc = repro_spawn_self(argv, env, out, err);
    if (rc < 0)
        return -1;
    if (rc != 0) {
        /* Show what the child said; its exit code says what kind of failure. */
        FILE *f = fopen(err, "r");
        char line[1024];
        fprintf(stderr, "check: %s failed (exit %d):\n", p->label, rc);
        while (f && fgets(line, sizeof line, f))
            fprintf(stderr, "  %s", line);
        if (f)
            fclose(f);
        return rc;
    }
    return 0;
}

/* Re-runs run 0 and run `idx` to the divergent step with dumps, and
 * compares the first differing tensor element by element. */
static void element_detail(check_ctx *c, int idx, repro_divergence *d)
{
    if (d->ntensors == 0 || d->first_step <= 0)
        return;
    const repro_tensor_diff *t = &d->tensors[0];
    if (!t->in_a || !t->in_b)
        return;
    char dir_a[1200], dir_b[1200], fa[1500], fb[1500];
    snprintf(dir_a, sizeof dir_a, "%s/rerun-%d-base", c->root, idx);
    snprintf(dir_b, sizeof dir_b, "%s/rerun-%d", c->root, idx);
    if (!c->json)
        fprintf(stderr, "check: re-running both sides to step %ld for element detail\n",
                d->first_step);
    if (run_one(c, 0, dir_a, d->first_step) || run_one(c, idx, dir_b, d->first_step))
        return;
    snprintf(fa, sizeof fa, "%s/dump/step-%06ld/%s.npy", dir_a, d->first_step, t->name);
    snprintf(fb, sizeof fb, "%s/dump/step-%06ld/%s.npy", dir_b, d->first_step, t->name);
    if (repro_element_diff_files(fa, fb, !strcmp(t->a.dtype, "f32"), t->name, &d->element))
        fprintf(stderr, "check: no element detail: %s\n", repro_error_message());
}

static char *text_report(const repro_trace *a, const repro_trace *b, const repro_divergence *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    repro_report_text(f, a, b, d);
    fclose(f);
    return buf;
}

static json_t *json_report(const repro_trace *a, const repro_trace *b, const repro_divergence *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    repro_report_json(f, a, b, d);
    fclose(f);
    json_t *j = json_loads(buf, 0, NULL);
    free(buf);
    return j;
}

int repro_cmd_check(int argc, char **argv)
{
    static check_ctx c;
    memset(&c, 0, sizeof c);
    int rc = parse_check_args(argc, argv, &c);
    if (rc == 1)
        return repro_finish_stdout(0);
    if (rc)
        return repro_report_error();

    /* The runs, one fresh process each. */
    for (int i = 0; i < c.nplan; i++) {
        run_plan *p = &c.plan[i];
        snprintf(p->dir, sizeof p->dir, "%s/run-%d", c.root, i + 1);
        if (!c.json)
            fprintf(stderr, "check: %s (%d/%d) ...\n", p->label, i + 1, c.nplan);
        double t0 = repro_now();
        rc = run_one(&c, i, p->dir, 0);
        p->seconds = repro_now() - t0;
        if (rc < 0)
            return repro_report_error();
        if (rc > 0)
            return rc == REPRO_EXIT_USAGE || rc == REPRO_EXIT_ENV ? rc : REPRO_EXIT_ENV;
    }

    /* Compare every run with the first. */
    repro_trace *traces = calloc((size_t)c.nplan, sizeof *traces);
    repro_divergence *divs = calloc((size_t)c.nplan, sizeof *divs);
    if (!traces || !divs) {
        free(traces);
        free(divs);
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    int failed = 0, exit_code = 0;
    int loaded = 0;
    for (int i = 0; i < c.nplan; i++, loaded++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/trace.jsonl", c.plan[i].dir);
        if (repro_trace_read(&traces[i], path)) {
            exit_code = repro_report_error();
            goto done;
        }
    }
    for (int i = 1; i < c.nplan; i++) {
        if (repro_compare_traces(&traces[0], &traces[i], &divs[i])) {
            exit_code = repro_report_error();
            goto done;
        }
        snprintf(divs[i].scope, sizeof divs[i].scope, "%s", c.plan[i].scope);
        if (!divs[i].identical) {
            failed++;
            element_detail(&c, i, &divs[i]);
        }
    }

    char chain[65];
    repro_digest_hex(&traces[0].trailer_chain, chain);
    if (c.json) {
        json_t *doc = json_object(), *runs = json_array(), *cmp = json_array();
        json_object_set_new(doc, "experiment", json_string(traces[0].experiment));
        json_object_set_new(doc, "reproducible", json_boolean(failed == 0));
        json_object_set_new(doc, "chain", json_string(chain));
        json_object_set_new(doc, "directory", json_string(c.root));
        for (int i = 0; i < c.nplan; i++) {
            json_t *r = json_object();
            char h[65];
            repro_digest_hex(&traces[i].trailer_chain, h);
            json_object_set_new(r, "label", json_string(c.plan[i].label));
            json_object_set_new(r, "trace", json_string(traces[i].path));
            json_object_set_new(r, "chain", json_string(h));
            json_object_set_new(r, "seconds", json_real(c.plan[i].seconds));
            json_array_append_new(runs, r);
        }
        for (int i = 1; i < c.nplan; i++) {
            json_t *r = json_report(&traces[0], &traces[i], &divs[i]);
            json_t *o = json_object();
            json_object_set_new(o, "runs", json_pack("[ss]", c.plan[0].label, c.plan[i].label));
            json_object_set_new(o, "scope", json_string(c.plan[i].scope));
            json_object_set_new(o, "identical", json_boolean(divs[i].identical));
            json_object_set_new(o, "report", r ? r : json_null());
            json_array_append_new(cmp, o);
        }
        json_object_set_new(doc, "runs", runs);
        json_object_set_new(doc, "comparisons", cmp);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        for (int i = 1; i < c.nplan; i++) {
            if (divs[i].identical)
                continue;
            printf("== %s vs %s (scope: %s) ==\n", c.plan[0].label, c.plan[i].label,
                   c.plan[i].scope);
            repro_report_text(stdout, &traces[0], &traces[i], &divs[i]);
        }
        if (failed == 0)
            printf("reproducible: %d runs identical over %ld steps, chain %s\n", c.nplan,
                   traces[0].trailer_steps, chain);
        else
            printf("NOT reproducible: %d of %d runs differ from %s (traces in %s)\n", failed,
                   c.nplan - 1, c.plan[0].label, c.root);
    }

    if (c.junit) {
        repro_junit_case cases[MAX_RUNS];
        static char names[MAX_RUNS][320], msgs[MAX_RUNS][200];
        char *details[MAX_RUNS] = {0};
        for (int i = 1; i < c.nplan; i++) {
            repro_junit_case *jc = &cases[i - 1];
            snprintf(names[i], sizeof names[i], "%s: %s vs %s (%s)", traces[0].experiment,
                     c.plan[0].label, c.plan[i].label, c.plan[i].scope);
            jc->name = names[i];
            jc->failed = !divs[i].identical;
            jc->seconds = c.plan[i].seconds;
            if (jc->failed) {
                snprintf(msgs[i], sizeof msgs[i], "diverged at step %ld (%s)", divs[i].first_step,
                         c.plan[i].scope);
                details[i] = text_report(&traces[0], &traces[i], &divs[i]);
            }
            jc->message = msgs[i];
            jc->details = details[i];
        }
        int jrc = repro_junit_write(c.junit, "repro check", cases, c.nplan - 1);
        for (int i = 0; i < MAX_RUNS; i++)
            free(details[i]);
        if (jrc) {
            exit_code = repro_report_error();
            goto done;
        }
    }
    exit_code = failed ? REPRO_EXIT_MISMATCH : 0;
done:
    for (int i = 1; i < c.nplan; i++)
        repro_divergence_release(&divs[i]);
    for (int i = 0; i < loaded; i++)
        repro_trace_release(&traces[i]);
    free(traces);
    free(divs);
    return repro_finish_stdout(exit_code);
}
