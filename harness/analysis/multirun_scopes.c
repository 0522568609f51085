/* Whether a --threads, --workers or (a program's) --ranks scope was
 * exercised, and what the
 * thread counts the runs recorded say about a thread-count divergence
 * (see multirun.h). Runs that all used the same counts, or that do not say
 * what they used, compare nothing about that count: a PyTorch script that
 * never reads REPRO_THREADS used to pass `--threads 1,2` without a word.
 * The counts are the program's own ("threads_used") and its pools'
 * ("thread_pools": torch's, OpenBLAS's, OpenMP's): a report blamed the
 * thread count for runs whose pools were all equal, while the pool that
 * did differ (OpenBLAS's, at one thread per core in run 1) went unnamed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/multirun.h"

/* ---- the settings a run is given ------------------------------------------- */

const char *repro_run_option_setting(const char *f, const char *v, const char *what)
{
    static const struct {
        const char *what, *flag, *keys[3];
    } names[] = {
        {"threads", "--threads", {"threads", "train.threads", NULL}},
        {"workers", "--workers", {"workers", "num_workers", "data.num_workers"}},
        {"ranks", "--ranks", {"ranks", "train.ranks", NULL}},
        {"tp", "--tp", {"tp", "parallel.tp", NULL}},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(names[i].what, what))
            continue;
        if (!strcmp(f, names[i].flag))
            return v;
        if (strcmp(f, "--set"))
            return NULL;
        for (int k = 0; k < 3 && names[i].keys[k]; k++) {
            size_t n = strlen(names[i].keys[k]);
            if (!strncmp(v, names[i].keys[k], n) && v[n] == '=')
                return v + n + 1;
        }
    }
    return NULL;
}

const char *repro_multirun_setting(const repro_multirun *m, int idx, const char *what)
{
    const char *value = NULL, *v;
    for (int i = 0; i + 1 < m->npass; i += 2)
        if ((v = repro_run_option_setting(m->pass[i], m->pass[i + 1], what)))
            value = v;
    const repro_run_plan *p = &m->plan[idx];
    if (p->extra[0][0] && (v = repro_run_option_setting(p->extra[0], p->extra[1], what)))
        value = v;
    return value ? value : !strcmp(what, "threads") ? REPRO_DEFAULT_THREADS : NULL;
}

/* ---- the counts a run recorded ---------------------------------------------- */

/* Pool `name`'s threads in t, or -1. */
static int pool_of(const repro_trace *t, const char *name)
{
    for (int i = 0; i < t->npools; i++)
        if (!strcmp(t->pools[i].name, name))
            return t->pools[i].threads;
    return -1;
}

static int says_threads(const repro_trace *t)
{
    return t->threads_used >= 1 || t->npools > 0;
}

/* Do a and b differ in a count both recorded? */
static int threads_differ(const repro_trace *a, const repro_trace *b)
{
    if (a->threads_used >= 1 && b->threads_used >= 1 && a->threads_used != b->threads_used)
        return 1;
    for (int i = 0; i < a->npools; i++) {
        int other = pool_of(b, a->pools[i].name);
        if (other >= 1 && other != a->pools[i].threads)
            return 1;
    }
    return 0;
}

/* "4 threads (torch.intra_op 4, blas.openblas 4)": what t recorded. */
static void threads_text(const repro_trace *t, char *buf, size_t len)
{
    size_t o = 0;
    int w;
    if (t->threads_used >= 1)
        w = snprintf(buf, len, "%d thread%s", t->threads_used, t->threads_used == 1 ? "" : "s");
    else
        w = snprintf(buf, len, "thread pools");
    o += w > 0 ? (size_t)w : 0;
    for (int i = 0; i < t->npools && o < len; i++) {
        w = snprintf(buf + o, len - o, "%s%s %d", i ? ", " : " (", t->pools[i].name,
                     t->pools[i].threads);
        o += w > 0 ? (size_t)w : 0;
    }
    if (t->npools && o < len)
        snprintf(buf + o, len - o, ")");
}

/* ---- scopes not exercised ----------------------------------------------------- */

enum { SCOPE_THREADS, SCOPE_WORKERS, SCOPE_WORLD, SCOPE_TP };

/* Whether t says the count of this scope, and whether a and b (both
 * saying) differ in it. */
static int says(const repro_trace *t, int kind)
{
    return kind == SCOPE_THREADS   ? says_threads(t)
           : kind == SCOPE_WORKERS ? t->workers_used >= 0
           : kind == SCOPE_TP      ? t->tp_used >= 1
                                   : t->world_size_used >= 1;
}

static int differ_in(const repro_trace *a, const repro_trace *b, int kind)
{
    return kind == SCOPE_THREADS   ? threads_differ(a, b)
           : kind == SCOPE_WORKERS ? a->workers_used != b->workers_used
           : kind == SCOPE_TP      ? a->tp_used != b->tp_used
                                   : a->world_size_used != b->world_size_used;
}

/* The scope's runs and run 1 (the one they are compared with): the first
 * run that does not say (or -1), and whether two said different counts. */
static int examine(const repro_multirun *m, const char *scope, int kind, int *silent,
                   int *first)
{
    int nruns = 0, differ = 0;
    *silent = -1;
    *first = -1;
    for (int i = 0; i < m->nplan && i < m->ntraces; i++) {
        if (i > 0 && strcmp(m->plan[i].scope, scope))
            continue;
        nruns += i > 0;
        const repro_trace *t = &m->traces[i];
        if (!says(t, kind)) {
            if (*silent < 0)
                *silent = i;
        } else if (*first < 0) {
            *first = i;
        } else if (differ_in(&m->traces[*first], t, kind)) {
            differ = 1;
        }
    }
    return nruns > 0 && !differ ? 1 : 0;
}

int repro_multirun_unexercised(const repro_multirun *m, char *msg, size_t len)
{
    static const struct {
        const char *scope, *flag, *one, *noun, *var, *key;
        int kind;
    } scopes[] = {
        {"thread count", "--threads", "thread", "threads", "REPRO_THREADS", "threads_used",
         SCOPE_THREADS},
        {"worker count", "--workers", "loader worker", "loader workers", "REPRO_WORKERS",
         "workers_used", SCOPE_WORKERS},
        /* a program's ranks (external_ranks.c); repro's own runs always form their world */
        {"world size", "--ranks", "rank", "ranks", "WORLD_SIZE", "world_size_used", SCOPE_WORLD},
        /* a program's tensor-parallel size; repro's own runs always split their layers */
        {"tensor-parallel size", "--tp", "tensor-parallel rank", "tensor-parallel ranks",
         "REPRO_TP", "tp_used", SCOPE_TP},
    };
    int n = 0;
    size_t o = 0;
    msg[0] = '\0';
    for (size_t s = 0; s < sizeof scopes / sizeof *scopes; s++) {
        int silent, first;
        if (((scopes[s].kind == SCOPE_WORLD || scopes[s].kind == SCOPE_TP) && !m->cmd) ||
            !examine(m, scopes[s].scope, scopes[s].kind, &silent, &first))
            continue;
        char why[512], used[256];
        if (silent >= 0) {
            snprintf(why, sizeof why,
                     "%s does not record how many %s it used (\"%s\" in its trace: "
                     "%s)",
                     m->plan[silent].label, scopes[s].noun, scopes[s].key,
                     scopes[s].kind == SCOPE_TP ? "repro_recorder_set_tp"
                                                : "repro_recorder_set_threads, or the Python "
                                                  "client");
        } else {
            const repro_trace *t = &m->traces[first];
            int count = scopes[s].kind == SCOPE_WORKERS ? t->workers_used
                        : scopes[s].kind == SCOPE_TP    ? t->tp_used
                                                        : t->world_size_used;
            if (scopes[s].kind == SCOPE_THREADS)
                threads_text(t, used, sizeof used);
            else
                snprintf(used, sizeof used, "%d %s", count,
                         count == 1 ? scopes[s].one : scopes[s].noun);
            if (scopes[s].kind == SCOPE_WORLD)
                snprintf(why, sizeof why, "every run formed a world of %s (does the program "
                         "form its process group from %s, RANK, MASTER_ADDR and MASTER_PORT?)",
                         used, scopes[s].var);
            else
                snprintf(why, sizeof why, "every run used %s (does the program ignore %s?)",
                         used, scopes[s].var);
        }
        int w = snprintf(msg + o, o < len ? len - o : 0, "%s%s scope not exercised: %s, so "
                         "the runs may not differ in it", n ? "\n" : "", scopes[s].flag, why);
        o += w > 0 ? (size_t)w : 0;
        n++;
    }
    return n;
}

/* ---- a thread-count divergence -------------------------------------------------- */

int repro_multirun_thread_note(const repro_multirun *m, int idx, char *msg, size_t len)
{
    const repro_trace *a = &m->traces[0], *b = &m->traces[idx];
    msg[0] = '\0';
    if (!says_threads(a) || !says_threads(b))
        return 0;
    if (!threads_differ(a, b)) {
        char used[256];
        threads_text(a, used, sizeof used);
        snprintf(msg, len,
                 "both runs recorded the same thread counts (%s): the difference is not the "
                 "thread count's, it is run to run",
                 used);
        return 1;
    }
    size_t o = 0;
    int w;
    if (a->threads_used >= 1 && a->threads_used == b->threads_used)
        w = snprintf(msg, len, "the program's own count was %d in both runs, but ",
                     a->threads_used);
    else if (a->threads_used >= 1 && b->threads_used >= 1)
        w = snprintf(msg, len, "threads %d vs %d; ", a->threads_used, b->threads_used);
    else
        w = 0;
    o += w > 0 ? (size_t)w : 0;
    int named = 0;
    for (int i = 0; i < a->npools && o < len; i++) {
        int other = pool_of(b, a->pools[i].name);
        if (other < 1 || other == a->pools[i].threads)
            continue;
        w = snprintf(msg + o, len - o, "%s%s was %d vs %d", named++ ? ", " : "",
                     a->pools[i].name, a->pools[i].threads, other);
        o += w > 0 ? (size_t)w : 0;
    }
    if (!named && o >= 2 && o < len) /* only the program's own count differed */
        msg[o - 2] = '\0';
    return 0;
}
