/* Runs of a program repro did not write (`repro check -- CMD ARGS...`):
 * the runner protocol (repro/repro.h) in the environment of a fresh
 * process, and the verdict on what it left behind. A program that exits
 * non-zero, times out, writes no trace, a cut-short trace or a trace of
 * another seed could not be tested: that is an environment-class error
 * (exit 3) naming the run and quoting the program's stderr, never
 * "reproducible". */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/external_ranks.h"
#include "analysis/multirun.h"
#include "util/child.h"
#include "util/error.h"
#include "util/fsutil.h"

enum { MAX_ENV = 4 * REPRO_MULTIRUN_MAX_PASS + 16 }; /* REPRO_THREADS sets 4 */

/* The environment block of one run: "K=V" strings owned here. */
typedef struct {
    char *set[MAX_ENV + 1];
    int n;
} env_block;

/* KEY=VALUE, in place of an earlier value of KEY: a variable given twice
 * would reach the program twice, and which one it reads would be up to
 * its runtime (libc's getenv takes the first, Python's os.environ the
 * last). */
static int env_add_one(env_block *e, const char *key, const char *value)
{
    size_t klen = strlen(key), len = klen + strlen(value) + 2;
    int at = e->n;
    for (int i = 0; i < e->n; i++)
        if (!strncmp(e->set[i], key, klen) && e->set[i][klen] == '=')
            at = i;
    if (at == MAX_ENV)
        return repro_error_set(REPRO_EINVAL, "too many settings for one run");
    char *kv = malloc(len);
    if (!kv)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    snprintf(kv, len, "%s=%s", key, value);
    if (at < e->n) {
        free(e->set[at]);
    } else {
        e->n++;
        e->set[e->n] = NULL;
    }
    e->set[at] = kv;
    return 0;
}

/* A protocol variable. REPRO_THREADS also sets the thread counts the
 * common math runtimes read at start (OpenMP, MKL, OpenBLAS): PyTorch and
 * NumPy follow them, so a program that never reads REPRO_THREADS still
 * runs at the count the scope asks for. */
static int env_add(env_block *e, const char *key, const char *value)
{
    static const char *const runtimes[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                           "OPENBLAS_NUM_THREADS"};
    if (env_add_one(e, key, value))
        return -1;
    if (strcmp(key, "REPRO_THREADS"))
        return 0;
    for (size_t i = 0; i < sizeof runtimes / sizeof *runtimes; i++)
        if (env_add_one(e, runtimes[i], value))
            return -1;
    return 0;
}

static void env_free(env_block *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->set[i]);
    e->n = 0;
}

/* --set KEY=VALUE: REPRO_SET_<KEY> always; the protocol's own variables too
 * for the keys it names (so `--set threads=2` and `--threads 2` agree). */
static int env_add_setting(env_block *e, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return repro_error_set(REPRO_EINVAL, "--set %s: expected KEY=VALUE", kv);
    char var[160] = "REPRO_SET_", key[128];
    size_t klen = (size_t)(eq - kv) < sizeof key - 1 ? (size_t)(eq - kv) : sizeof key - 1;
    memcpy(key, kv, klen);
    key[klen] = '\0';
    size_t n = strlen(var);
    for (size_t i = 0; i < klen && n + 1 < sizeof var; i++)
        var[n++] = (key[i] == '.' || key[i] == '-') ? '_' : (char)toupper((unsigned char)key[i]);
    var[n] = '\0';
    if (env_add(e, var, eq + 1))
        return -1;
    static const struct {
        const char *key, *var;
    } proto[] = {{"threads", "REPRO_THREADS"},        {"train.threads", "REPRO_THREADS"},
                 {"workers", "REPRO_WORKERS"},        {"num_workers", "REPRO_WORKERS"},
                 {"data.num_workers", "REPRO_WORKERS"}, {"deterministic", "REPRO_DETERMINISTIC"},
                 {"benchmark", "REPRO_BENCHMARK"},    {"level", "REPRO_TRACE_LEVEL"},
                 {"trace.level", "REPRO_TRACE_LEVEL"}, {"batch_size", "REPRO_BATCH_SIZE"},
                 {"seed", "REPRO_SEED"},              {"train.seed", "REPRO_SEED"}};
    for (size_t i = 0; i < sizeof proto / sizeof *proto; i++)
        if (!strcmp(key, proto[i].key))
            return env_add(e, proto[i].var, eq + 1);
    return 0;
}

/* The librepro.so that belongs to this repro (beside the binary, as in a
 * build directory, or in ../lib, as installed), for clients that load it at
 * run time (the Python client reads REPRO_LIB). Unset if none is found or
 * the user set one. */
static int env_add_library(env_block *e)
{
    char self[1024], lib[1200];
    if (getenv("REPRO_LIB") || repro_child_self_path(self, sizeof self)) {
        repro_error_clear();
        return 0;
    }
    char *slash = strrchr(self, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    static const char *const where[] = {"%s/librepro.so", "%s/../lib/librepro.so"};
    for (size_t i = 0; i < sizeof where / sizeof *where; i++) {
        snprintf(lib, sizeof lib, where[i], self);
        if (access(lib, R_OK) == 0)
            return env_add(e, "REPRO_LIB", lib);
    }
    return 0;
}

/* One option of `repro run` as protocol variables. */
static int env_add_option(env_block *e, const char *flag, const char *value)
{
    if (!strcmp(flag, "--seed"))
        return env_add(e, "REPRO_SEED", value);
    if (!strcmp(flag, "--threads"))
        return env_add(e, "REPRO_THREADS", value);
    if (!strcmp(flag, "--workers"))
        return env_add(e, "REPRO_WORKERS", value);
    if (!strcmp(flag, "--steps"))
        return env_add(e, "REPRO_SET_STEPS", value);
    if (!strcmp(flag, "--set"))
        return env_add_setting(e, value);
    if (!strcmp(flag, "--ranks") || !strcmp(flag, "--tp"))
        return 0; /* ranks and tp: external_ranks.c starts them */
    return repro_error_set(REPRO_EINVAL, "%s does not apply to an external program", flag);
}

/* The declared thread count first (1, which the options below replace
 * when they give one), then the pass-through options, then this run's own
 * (so they win, as later options do for `repro run`). Every run runs at a
 * declared count, with the math runtimes' pools following it: left alone,
 * OpenBLAS starts one thread per core, so run 1 on a 2-core laptop and on
 * a 64-core server would differ, and a run at `--threads 1` would differ
 * from run 1 on the same machine. */
static int build_env(const repro_multirun *m, int idx, const char *trace, env_block *e)
{
    char index[16];
    snprintf(index, sizeof index, "%d", idx);
    if (env_add(e, "REPRO_THREADS", REPRO_DEFAULT_THREADS) ||
        env_add(e, "REPRO_TRACE", trace) || env_add(e, "REPRO_RUN_INDEX", index) ||
        env_add(e, "REPRO_CHECK_RUN", index))
        return -1;
    /* Python randomizes str hashes per process unless told not to. */
    if ((!getenv("PYTHONHASHSEED") && env_add(e, "PYTHONHASHSEED", "0")) || env_add_library(e))
        return -1;
    for (int i = 0; i + 1 < m->npass; i += 2)
        if (env_add_option(e, m->pass[i], m->pass[i + 1]))
            return -1;
    const repro_run_plan *p = &m->plan[idx];
    if (p->extra[0][0] && env_add_option(e, p->extra[0], p->extra[1]))
        return -1;
    /* ranks: the torch.distributed protocol (external_ranks.h) */
    repro_env_pair dist[REPRO_DIST_ENV_MAX];
    for (int i = 0, n = repro_external_dist_env(repro_external_ranks(m, idx),
                                                repro_external_tp(m, idx), dist);
         i < n; i++)
        if (env_add(e, dist[i].key, dist[i].value))
            return -1;
    return 0;
}

char **repro_multirun_external_env(const repro_multirun *m, int idx, const char *trace)
{
    env_block e = {{0}, 0};
    if (build_env(m, idx, trace, &e)) {
        env_free(&e);
        return NULL;
    }
    char **out = calloc((size_t)e.n + 1, sizeof *out);
    if (!out) {
        env_free(&e);
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(out, e.set, (size_t)e.n * sizeof *out);
    return out;
}

/* The last lines of the program's stderr for the message, each indented
 * two spaces (so none passes for repro's own) and cut to TAIL_LINE bytes,
 * as many of the last TAIL_LINES as fit TAIL_BYTES: the error slot holds
 * the message around them too. */
enum { TAIL_LINES = 8, TAIL_LINE = 160, TAIL_BYTES = 640 };

static void stderr_tail(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char all[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > (long)sizeof all - 1 ? size - (long)sizeof all + 1 : 0, SEEK_SET);
    size_t n = fread(all, 1, sizeof all - 1, f);
    fclose(f);
    while (n > 0 && (all[n - 1] == '\n' || all[n - 1] == '\r'))
        n--;
    all[n] = '\0';
    /* The starts of the last lines, newest first, while they fit. */
    const char *line[TAIL_LINES];
    int nl = 0;
    size_t used = 0;
    for (char *p = all + n; nl < TAIL_LINES && p > all;) {
        char *end = p;
        while (p > all && p[-1] != '\n')
            p--;
        size_t l = (size_t)(end - p) < TAIL_LINE ? (size_t)(end - p) : TAIL_LINE + 3;
        if (used + l + 3 > TAIL_BYTES)
            break;
        used += l + 3;
        line[nl++] = p;
        if (p > all)
            *--p = '\0'; /* ends the line before */
    }
    size_t o = 0;
    for (int i = nl - 1; i >= 0 && o < len; i--) {
        size_t l = strlen(line[i]);
        o += (size_t)snprintf(buf + o, len - o, "%s  %.*s%s", o ? "\n" : "",
                              (int)(l > TAIL_LINE ? TAIL_LINE : l), line[i],
                              l > TAIL_LINE ? "..." : "");
    }
}

static int could_not_test(const repro_multirun *m, int idx, const char *why, const char *err_path)
{
    char tail[4096];
    stderr_tail(err_path, tail, sizeof tail);
    return repro_error_set(REPRO_EIO,
                           "%s of `%s` could not be tested: %s%s%s\n  (the program's output: "
                           "%s/run-%d/)",
                           m->plan[idx].label, m->cmd[0], why, tail[0] ? "; its stderr ends:\n" : "",
                           tail, m->root, idx + 1);
}

/* A trace the program left: present and complete (a trailer). The seed
 * and the rest are checked when it is read. */
static int check_trace(const repro_multirun *m, int idx, const char *trace, const char *err)
{
    struct stat st;
    if (stat(trace, &st) != 0)
        return could_not_test(m, idx, "it wrote no trace (does it record through librepro and "
                                      "read REPRO_TRACE?)", err);
    return 0;
}

int repro_multirun_run_external(repro_multirun *m, int idx, const char *dir)
{
    char trace[1200], out[1200], err[1200];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", dir);
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    if (repro_mkdirs(dir))
        return -1;
    env_block e = {{0}, 0};
    if (build_env(m, idx, trace, &e)) {
        env_free(&e);
        return -1;
    }
    repro_child c = {0};
    c.argv = m->cmd;
    c.env_set = (const char *const *)e.set;
    c.out_path = out;
    c.err_path = err;
    c.timeout_s = m->timeout_s;
    c.cwd = m->cwd;
    c.env_unset = m->env_unset;
    c.interrupt = m->interrupt;
    c.capture_limit = repro_child_capture_limit(); /* head and tail of a flood */
    repro_child_status st;
    char rank_why[1024]; /* ranks: which failed, and err becomes its stderr */
    int rc = repro_external_launch(m, idx, dir, &c, &st, rank_why, sizeof rank_why, err,
                                   sizeof err);
    env_free(&e);
    if (rc) {
        char why[512]; /* the slot's own text cannot be formatted into the slot */
        snprintf(why, sizeof why, "%s", repro_error_message());
        return could_not_test(m, idx, why, err);
    }
    if (rank_why[0])
        return could_not_test(m, idx, rank_why, err);
    if (st.how != REPRO_CHILD_EXITED || st.code != 0) {
        char what[128], why[192];
        repro_child_status_text(&st, &c, what, sizeof what);
        /* "it exited 4", "it timed out after 2 s", "it was killed by signal 11" */
        snprintf(why, sizeof why, "it %s%s", st.how == REPRO_CHILD_SIGNALED ? "was " : "", what);
        return could_not_test(m, idx, why, err);
    }
    return check_trace(m, idx, trace, err);
}

int repro_multirun_check_external_trace(const repro_multirun *m, int idx, const repro_trace *t)
{
    char err[1200], why[256];
    snprintf(err, sizeof err, "%s/stderr.txt", m->plan[idx].dir);
    if (!t->has_trailer) {
        snprintf(why, sizeof why,
                 "its trace was cut short after %ld steps (no trailer: did it call "
                 "repro_recorder_close?)",
                 t->nsteps);
        return could_not_test(m, idx, why, err);
    }
    const char *seed = NULL; /* the last --seed given: what REPRO_SEED said */
    for (int i = 0; i + 1 < m->npass; i += 2)
        if (!strcmp(m->pass[i], "--seed"))
            seed = m->pass[i + 1];
    if (seed && strtoull(t->seed, NULL, 10) != strtoull(seed, NULL, 10)) {
        snprintf(why, sizeof why,
                 "it was given REPRO_SEED=%s but its trace says seed %.30s (it ignores "
                 "REPRO_SEED)",
                 seed, t->seed);
        return could_not_test(m, idx, why, err);
    }
    return 0;
}

void repro_program_name(char *const *cmd, char *buf, size_t len)
{
    static const char *const interpreters[] = {"python", "python3", "sh", "bash", "node",
                                               "perl", "ruby", "env", "Rscript"};
    const char *prog = cmd[0];
    const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    for (size_t i = 0; i < sizeof interpreters / sizeof *interpreters && cmd[1]; i++)
        if (!strncmp(base, interpreters[i], strlen(interpreters[i])) && cmd[1][0] != '-') {
            prog = cmd[1];
            base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
            break;
        }
    size_t n = 0;
    for (const char *p = base; *p && *p != '.' && n + 1 < len; p++)
        buf[n++] = isalnum((unsigned char)*p) || *p == '-' || *p == '_' ? *p : '_';
    if (n == 0 && len > 8)
        n = (size_t)snprintf(buf, len, "program");
    buf[n] = '\0';
}
