/* Whether a --threads, --workers or (a program's) --ranks scope was
 * exercised (see multirun.h): runs that all used the same count, or that
 * do not say what they used, compare nothing about that count. A PyTorch
 * script that never reads REPRO_THREADS used to pass `--threads 1,2`
 * without a word. */
#include <stdio.h>
#include <string.h>

#include "analysis/multirun.h"

enum { SCOPE_THREADS, SCOPE_WORKERS, SCOPE_WORLD };

/* The count run i says it used for this scope, or -1 if it does not say. */
static int used(const repro_trace *t, int kind)
{
    int v = kind == SCOPE_THREADS ? t->threads_used
            : kind == SCOPE_WORKERS ? t->workers_used : t->world_size_used;
    return kind != SCOPE_WORKERS ? (v >= 1 ? v : -1) : (v >= 0 ? v : -1);
}

/* The scope's runs and run 1 (the one they are compared with): the first
 * run that does not say (or -1), and whether two said different counts. */
static int examine(const repro_multirun *m, const char *scope, int kind, int *silent,
                   int *first_count)
{
    int nruns = 0, differ = 0;
    *silent = -1;
    *first_count = -1;
    for (int i = 0; i < m->nplan && i < m->ntraces; i++) {
        if (i > 0 && strcmp(m->plan[i].scope, scope))
            continue;
        nruns += i > 0;
        int v = used(&m->traces[i], kind);
        if (v < 0 && *silent < 0)
            *silent = i;
        else if (v >= 0 && *first_count < 0)
            *first_count = v;
        else if (v >= 0 && v != *first_count)
            differ = 1;
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
    };
    int n = 0;
    size_t o = 0;
    msg[0] = '\0';
    for (size_t s = 0; s < sizeof scopes / sizeof *scopes; s++) {
        int silent, count;
        if ((scopes[s].kind == SCOPE_WORLD && !m->cmd) ||
            !examine(m, scopes[s].scope, scopes[s].kind, &silent, &count))
            continue;
        char why[320];
        if (silent >= 0)
            snprintf(why, sizeof why,
                     "%s does not record how many %s it used (\"%s\" in its trace: "
                     "repro_recorder_set_threads, or the Python client)",
                     m->plan[silent].label, scopes[s].noun, scopes[s].key);
        else if (scopes[s].kind == SCOPE_WORLD)
            snprintf(why, sizeof why, "every run formed a world of %d %s (does the program "
                     "form its process group from %s, RANK, MASTER_ADDR and MASTER_PORT?)",
                     count, count == 1 ? scopes[s].one : scopes[s].noun, scopes[s].var);
        else
            snprintf(why, sizeof why, "every run used %d %s (does the program ignore %s?)",
                     count, count == 1 ? scopes[s].one : scopes[s].noun, scopes[s].var);
        int w = snprintf(msg + o, o < len ? len - o : 0, "%s%s scope not exercised: %s, so "
                         "the runs may not differ in it", n ? "\n" : "", scopes[s].flag, why);
        o += w > 0 ? (size_t)w : 0;
        n++;
    }
    return n;
}
