/* Fresh-process runs and their comparison (see multirun.h): the plan, the
 * comparisons of the traces, re-runs for element detail and the reports.
 * The runs themselves: multirun_jobs.c (in plan order, several at once)
 * over multirun_one.c (one run). */
#include "analysis/multirun.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/elemdiff.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/junit.h"
#include "util/numparse.h"

/* The pass-through options: the flag, the config key it sets (NULL for
 * --set, whose value is KEY=VALUE), and how its value is checked. */
enum { PASS_COUNT1, PASS_COUNT0, PASS_SEED, PASS_FREE };
static const struct {
    const char *flag, *key;
    int check;
} pass_options[] = {
    {"--steps", "train.steps", PASS_COUNT1},     {"--seed", "train.seed", PASS_SEED},
    {"--threads", "train.threads", PASS_COUNT1}, {"--workers", "data.num_workers", PASS_COUNT0},
    {"--ranks", "train.ranks", PASS_COUNT1},     {"--tp", "parallel.tp", PASS_COUNT1},
    {"--set", NULL, PASS_FREE},
};
#define NPASS_OPTIONS (sizeof pass_options / sizeof pass_options[0])

int repro_run_pass_takes(const char *name)
{
    for (size_t i = 0; i < NPASS_OPTIONS; i++)
        if (!strcmp(pass_options[i].flag + 2, name))
            return 1;
    return 0;
}

int repro_run_pass_add(repro_run_pass *p, const char *cmd, const char *name, const char *value)
{
    size_t i = 0;
    while (i < NPASS_OPTIONS && strcmp(pass_options[i].flag + 2, name))
        i++;
    if (i == NPASS_OPTIONS)
        return 0;
    char what[96];
    snprintf(what, sizeof what, "%s: %s", cmd, pass_options[i].flag);
    long count;
    uint64_t seed;
    int check = pass_options[i].check;
    if (check == PASS_COUNT1 || check == PASS_COUNT0) {
        if (repro_parse_count(what, value, check == PASS_COUNT1, INT_MAX, &count))
            return -1;
    } else if (check == PASS_SEED && repro_parse_seed(what, value, &seed)) {
        return -1;
    }
    if (p->n + 2 > REPRO_RUN_PASS_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: too many options", cmd);
    p->argv[p->n++] = (char *)pass_options[i].flag;
    p->argv[p->n++] = (char *)value;
    p->overridden |= check == PASS_SEED || check == PASS_FREE;
    return 1;
}

int repro_config_apply_run_options(repro_config *cfg, char *const *pass, int npass)
{
    for (int i = 0; i + 1 < npass; i += 2) {
        char set[REPRO_CONFIG_PATH_MAX + 64];
        const char *key = NULL;
        for (size_t k = 0; k < NPASS_OPTIONS; k++)
            if (!strcmp(pass[i], pass_options[k].flag))
                key = pass_options[k].key;
        snprintf(set, sizeof set, "%s%s%s", key ? key : "", key ? "=" : "", pass[i + 1]);
        if (repro_config_set(cfg, set))
            return -1;
    }
    return 0;
}

void repro_multirun_init(repro_multirun *m, const char *exp, const char *name, const char *kind)
{
    memset(m, 0, sizeof *m);
    m->exp = exp;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(m->root, sizeof m->root, "runs/%s/%s-%s-%ld", name, kind, stamp, (long)getpid());
}

void repro_multirun_add_pass(repro_multirun *m, const repro_run_pass *p)
{
    for (int i = 0; i < p->n && m->npass < REPRO_MULTIRUN_MAX_PASS; i++)
        m->pass[m->npass++] = p->argv[i];
}

int repro_multirun_add(repro_multirun *m, const char *label, const char *scope, const char *flag,
                       const char *value)
{
    if (m->nplan == REPRO_MULTIRUN_MAX)
        return repro_error_set(REPRO_EINVAL, "more than %d runs", REPRO_MULTIRUN_MAX);
    repro_run_plan *p = &m->plan[m->nplan++];
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->scope = scope;
    if (flag) {
        snprintf(p->extra[0], sizeof p->extra[0], "%s", flag);
        snprintf(p->extra[1], sizeof p->extra[1], "%s", value);
    }
    return 0;
}

int repro_multirun_add_runs(repro_multirun *m, int n)
{
    for (int i = 0; i < n; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        if (repro_multirun_add(m, label, "fresh-process run to run", NULL, NULL))
            return -1;
    }
    return 0;
}

int repro_multirun_add_list(repro_multirun *m, const char *flag, const char *list,
                            const char *scope, const char *what)
{
    long v[REPRO_MULTIRUN_MAX];
    int n;
    /* Checked before any run starts: a thread count or world size of 0
     * used to be refused by the run that got it, after the others. */
    long least = strcmp(flag, "--workers") ? 1 : 0;
    if (repro_parse_count_list(flag, list, least, 256, v, REPRO_MULTIRUN_MAX, &n))
        return -1;
    for (int i = 0; i < n; i++) {
        char label[64], value[24];
        snprintf(label, sizeof label, "%s=%ld", what, v[i]);
        snprintf(value, sizeof value, "%ld", v[i]); /* as read: "03" runs as 3 */
        if (repro_multirun_add(m, label, scope, flag, value))
            return -1;
    }
    return 0;
}

/* One re-run to the divergent step (a thread's work when they go at once). */
typedef struct {
    repro_multirun *m;
    int idx;
    const char *dir;
    long step;
    int rc;
} rerun_job;

static void *rerun(void *arg)
{
    rerun_job *j = arg;
    j->rc = repro_multirun_run_one(j->m, j->idx, j->dir, j->step);
    return NULL;
}

/* Run 1's and run idx's re-runs, at once when the check runs its runs at
 * once (m->jobs): 0 when both succeeded. */
static int rerun_both(repro_multirun *m, int idx, const char *dir_a, const char *dir_b,
                      long step)
{
    rerun_job a = {m, 0, dir_a, step, 0}, b = {m, idx, dir_b, step, 0};
    pthread_t th;
    int threaded = m->jobs > 1 && pthread_create(&th, NULL, rerun, &b) == 0;
    rerun(&a);
    if (threaded)
        pthread_join(th, NULL);
    else if (a.rc == 0)
        rerun(&b);
    return a.rc || b.rc;
}

/* The element diff of tensor t at `step` between the two re-runs' dumps:
 * 0, or -1 (error slot). */
static int element_diff_at(const char *dir_a, const char *dir_b, long step,
                           const repro_tensor_diff *t, repro_element_diff *out)
{
    char fa[1500], fb[1500];
    snprintf(fa, sizeof fa, "%s/dump/step-%06ld/%s.npy", dir_a, step, t->name);
    snprintf(fb, sizeof fb, "%s/dump/step-%06ld/%s.npy", dir_b, step, t->name);
    return repro_element_diff_files(fa, fb, !strcmp(t->a.dtype, "f32"), t->name, out);
}

/* Re-runs run 1 and run idx to the divergent step with dumps, and compares
 * the first differing tensor element by element. When the traces have no
 * detail at that step (`[trace] every`), the tensors that differ at the
 * nearest detail step after it are tried in step-digest order, and the
 * first whose dumps differ at the divergent step is the one reported: the
 * origin, which the later step cannot tell. */
static void element_detail(repro_multirun *m, int idx, repro_divergence *d)
{
    if (d->ntensors == 0 || d->first_step <= 0 || m->cmd)
        return; /* an external program has no --dump: its trace says what it can */
    const repro_tensor_diff *t = &d->tensors[0];
    if (!t->in_a || !t->in_b || m->plan[idx].resume_at >= d->first_step)
        return;
    char dir_a[1200], dir_b[1200];
    snprintf(dir_a, sizeof dir_a, "%s/rerun-%d-base", m->root, idx + 1);
    snprintf(dir_b, sizeof dir_b, "%s/rerun-%d", m->root, idx + 1);
    if (!m->quiet)
        fprintf(stderr, "repro: re-running both sides to step %ld for element detail\n",
                d->first_step);
    if (rerun_both(m, idx, dir_a, dir_b, d->first_step))
        return;
    if (element_diff_at(dir_a, dir_b, d->first_step, t, &d->element)) {
        fprintf(stderr, "repro: no element detail: %s\n", repro_error_message());
        return;
    }
    if (d->detail_step == d->first_step)
        return;
    for (int i = 1; i < d->ntensors && d->element.count == 0; i++) {
        repro_element_diff e;
        if (d->tensors[i].in_a && d->tensors[i].in_b &&
            !element_diff_at(dir_a, dir_b, d->first_step, &d->tensors[i], &e) && e.count > 0)
            d->element = e;
    }
}

/* Reading the traces (JSON parsing: most of what a check does besides its
 * runs) on one thread per trace: each read fills only its own slot and its
 * own error (the error slot is per thread), reported in run order. */
typedef struct repro_trace_read_job {
    repro_trace *trace;
    char path[1200];
    int stream;         /* header and trailer only (m->stream) */
    pthread_t thread;
    int started, rc, code;
    char msg[1024];
} trace_read_job;

static void *read_one(void *arg)
{
    trace_read_job *j = arg;
    j->rc = j->stream ? repro_trace_scan(j->trace, j->path) : repro_trace_read(j->trace, j->path);
    if (j->rc) {
        j->code = repro_error_code();
        snprintf(j->msg, sizeof j->msg, "%s", repro_error_message());
    }
    return NULL;
}

static int read_traces(repro_multirun *m)
{
    m->reads = calloc((size_t)m->nplan, sizeof *m->reads);
    if (!m->reads)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int i = 0; i < m->nplan; i++) {
        trace_read_job *j = &m->reads[i];
        j->trace = &m->traces[i];
        j->stream = m->stream;
        snprintf(j->path, sizeof j->path, "%s/trace.jsonl", m->plan[i].dir);
        j->started = i > 0 && pthread_create(&j->thread, NULL, read_one, j) == 0;
    }
    for (int i = 0; i < m->nplan; i++) /* run 1, and any whose thread did not start */
        if (!m->reads[i].started)
            read_one(&m->reads[i]);
    for (int i = 0; i < m->nplan; i++)
        if (m->reads[i].started)
            pthread_join(m->reads[i].thread, NULL);
    return 0;
}

/* The traces after `i` that were read although i failed (release frees
 * only the first ntraces). */
static void release_reads_after(repro_multirun *m, int i)
{
    for (int k = i + 1; k < m->nplan; k++)
        if (!m->reads[k].rc)
            repro_trace_release(&m->traces[k]);
}

/* Run 1 against run i into m->divs[i]: the traces in memory, or the files
 * streamed again (m->stream; the scan checked them already). */
static int compare_runs(repro_multirun *m, int i)
{
    if (!m->stream)
        return repro_compare_traces(&m->traces[0], &m->traces[i], &m->divs[i]);
    repro_trace ha, hb;
    int rc = repro_compare_files(m->traces[0].path, m->traces[i].path, &ha, &hb, 1, 0,
                                 &m->divs[i]);
    repro_trace_release(&ha);
    repro_trace_release(&hb);
    return rc;
}

/* The scope of run i's comparison with run 1: its plan's, unless the
 * thread counts both runs recorded agree in full, which no thread count
 * can explain (multirun_scopes.c says so in the note). A program's tensor
 * order is its own: the first differing tensor is not the origin. */
static void scope_of(const repro_multirun *m, int i, repro_divergence *d)
{
    const char *scope = m->plan[i].scope;
    d->order_unknown = m->cmd != NULL;
    if (!strcmp(scope, "thread count") &&
        repro_multirun_thread_note(m, i, d->scope_note, sizeof d->scope_note))
        scope = "fresh-process run to run";
    snprintf(d->scope, sizeof d->scope, "%s", scope);
}

int repro_multirun_execute(repro_multirun *m)
{
    int rc = repro_multirun_run_planned(m);
    if (rc)
        return rc;
    m->traces = calloc((size_t)m->nplan, sizeof *m->traces);
    m->divs = calloc((size_t)m->nplan, sizeof *m->divs);
    if (!m->traces || !m->divs)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (read_traces(m))
        return -1;
    for (; m->ntraces < m->nplan; m->ntraces++) {
        if (m->reads[m->ntraces].rc) {
            release_reads_after(m, m->ntraces);
            repro_error_set(m->reads[m->ntraces].code, "%s", m->reads[m->ntraces].msg);
            if (m->cmd) /* the program's fault, not the user's input */
                return repro_error_wrap(REPRO_EIO, "%s of `%s` could not be tested: its trace "
                                                   "is not a valid repro trace",
                                        m->plan[m->ntraces].label, m->cmd[0]);
            return -1;
        }
        if (m->cmd && repro_multirun_check_external_trace(m, m->ntraces,
                                                          &m->traces[m->ntraces])) {
            release_reads_after(m, m->ntraces);
            m->ntraces++; /* read: release frees it */
            return -1;
        }
    }
    for (int i = 1; i < m->nplan; i++) {
        if (compare_runs(m, i))
            return -1;
        scope_of(m, i, &m->divs[i]);
        if (!m->divs[i].identical) {
            m->failed++;
            if (!m->no_element_detail)
                element_detail(m, i, &m->divs[i]);
        }
    }
    return 0;
}

char *repro_divergence_text(const repro_trace *a, const repro_trace *b, const repro_divergence *d)
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

json_t *repro_divergence_json(const repro_trace *a, const repro_trace *b, const repro_divergence *d)
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

void repro_multirun_print(const repro_multirun *m, FILE *out)
{
    for (int i = 1; i < m->nplan; i++) {
        if (m->divs[i].identical)
            continue;
        fprintf(out, "== %s vs %s (scope: %s) ==\n", m->plan[0].label, m->plan[i].label,
                m->divs[i].scope);
        repro_report_text(out, &m->traces[0], &m->traces[i], &m->divs[i]);
        repro_multirun_op_hint(m, i, out);
    }
}

json_t *repro_multirun_json(const repro_multirun *m)
{
    json_t *runs = json_array(), *cmp = json_array();
    for (int i = 0; i < m->nplan; i++) {
        json_t *r = json_object();
        char h[65];
        repro_digest_hex(&m->traces[i].trailer_chain, h);
        json_object_set_new(r, "label", json_string(m->plan[i].label));
        json_object_set_new(r, "trace", json_string(m->traces[i].path));
        json_object_set_new(r, "chain", json_string(h));
        json_object_set_new(r, "seconds", json_real(m->plan[i].seconds));
        json_object_set_new(r, "started", json_real(m->plan[i].started));
        json_array_append_new(runs, r);
    }
    for (int i = 1; i < m->nplan; i++) {
        json_t *r = repro_divergence_json(&m->traces[0], &m->traces[i], &m->divs[i]);
        json_t *o = json_object();
        json_object_set_new(o, "runs", json_pack("[ss]", m->plan[0].label, m->plan[i].label));
        json_object_set_new(o, "scope", json_string(m->divs[i].scope));
        json_object_set_new(o, "identical", json_boolean(m->divs[i].identical));
        char cmd[4096];
        if (repro_multirun_op_command(m, i, cmd, sizeof cmd))
            json_object_set_new(o, "op_level_command", json_string(cmd));
        json_object_set_new(o, "report", r ? r : json_null());
        json_array_append_new(cmp, o);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "runs", runs);
    json_object_set_new(doc, "comparisons", cmp);
    return doc;
}

/* The JUnit cases' texts, owned here for the call (not static: two
 * reports in one process must not share them). */
typedef struct {
    repro_junit_case cases[REPRO_MULTIRUN_MAX + 1];
    char names[REPRO_MULTIRUN_MAX][320], msgs[REPRO_MULTIRUN_MAX][200];
    char *details[REPRO_MULTIRUN_MAX];
} junit_texts;

int repro_multirun_junit(const repro_multirun *m, const char *path)
{
    return repro_multirun_junit_with(m, path, NULL);
}

int repro_multirun_junit_with(const repro_multirun *m, const char *path,
                              const repro_junit_case *extra)
{
    junit_texts *t = calloc(1, sizeof *t);
    if (!t)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int i = 1; i < m->nplan; i++) {
        repro_junit_case *jc = &t->cases[i - 1];
        snprintf(t->names[i], sizeof t->names[i], "%s: %s vs %s (%s)", m->traces[0].experiment,
                 m->plan[0].label, m->plan[i].label, m->divs[i].scope);
        jc->name = t->names[i];
        jc->failed = !m->divs[i].identical;
        jc->seconds = m->plan[i].seconds;
        if (jc->failed) {
            snprintf(t->msgs[i], sizeof t->msgs[i], "diverged at step %ld (%s)",
                     m->divs[i].first_step, m->divs[i].scope);
            t->details[i] = repro_divergence_text(&m->traces[0], &m->traces[i], &m->divs[i]);
        }
        jc->message = t->msgs[i];
        jc->details = t->details[i];
    }
    int n = m->nplan - 1;
    if (extra)
        t->cases[n++] = *extra;
    int rc = repro_junit_write(path, "repro check", t->cases, n);
    for (int i = 0; i < REPRO_MULTIRUN_MAX; i++)
        free(t->details[i]);
    free(t);
    return rc;
}

void repro_multirun_release(repro_multirun *m)
{
    for (int i = 1; m->divs && i < m->nplan; i++)
        repro_divergence_release(&m->divs[i]);
    for (int i = 0; i < m->ntraces; i++)
        repro_trace_release(&m->traces[i]);
    free(m->traces);
    free(m->divs);
    m->traces = NULL;
    m->divs = NULL;
    m->ntraces = 0;
    free(m->reads);
    m->reads = NULL;
}
