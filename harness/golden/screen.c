/* `repro screen`'s repeats across the ranks of an MPI job (screen.h):
 * every rank runs, the results and digest tables go to rank 0, and rank 0
 * judges and tallies each repeat. */
#include "golden/screen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dist.h"
#include "util/error.h"
#include "util/runs.h"

/* What one repeat moves between ranks. */
typedef struct {
    repro_screen_rank *ranks;  /* every rank's result (allgathered) */
    repro_digest *tables;      /* rank 0: every rank's table, stride digests each */
    long stride;
    int ntensors;
    char (*names)[64];         /* rank 0: the tensors' names, from its own trace or NULL */
} exchange;

static int gather_results(repro_dist *dist, const repro_screen_rank *mine, exchange *x)
{
    if (!dist) {
        x->ranks[0] = *mine;
        return 0;
    }
    return repro_dist_allgather(dist, mine, sizeof *mine, x->ranks);
}

/* Every table padded to the longest (MPI gathers equal sizes). */
static int gather_tables(repro_dist *dist, const repro_trace *t, exchange *x, int n)
{
    long steps = 0;
    x->ntensors = 0;
    for (int i = 0; i < n; i++) {
        if (x->ranks[i].nsteps > steps)
            steps = x->ranks[i].nsteps;
        if (x->ranks[i].ntensors > x->ntensors)
            x->ntensors = x->ranks[i].ntensors;
    }
    x->stride = steps * (1 + x->ntensors);
    size_t bytes = (size_t)(x->stride ? x->stride : 1) * sizeof(repro_digest);
    repro_digest *mine = calloc(1, bytes);
    int rank = repro_dist_rank(dist);
    x->tables = rank == 0 ? calloc((size_t)n, bytes) : NULL;
    if (!mine || (rank == 0 && !x->tables)) {
        free(mine);
        return repro_error_set(REPRO_ENOMEM, "screen: out of memory for %d digest tables", n);
    }
    repro_screen_table(t->steps ? t : NULL, steps, x->ntensors, mine);
    int rc = 0;
    if (dist)
        rc = repro_dist_gather(dist, mine, bytes, x->tables);
    else
        memcpy(x->tables, mine, bytes);
    free(mine);
    return rc;
}

/* Rank 0: the tensors' names from its own trace, when it has them. */
static void take_names(const repro_trace *t, exchange *x)
{
    if (!t->steps || !t->nsteps || t->steps[0].ntensors != x->ntensors || !x->ntensors)
        return;
    x->names = calloc((size_t)x->ntensors, sizeof *x->names);
    for (int k = 0; x->names && k < x->ntensors; k++)
        snprintf(x->names[k], sizeof x->names[k], "%s", t->steps[0].tensors[k].name);
}

/* Rank 0: one repeat's verdicts into the tally. */
static void tally(repro_screen_result *out, const exchange *x, const repro_screen_verdict *v,
                  int repeat)
{
    for (int i = 0; i < out->nranks; i++) {
        repro_screen_tally *r = &out->ranks[i];
        r->info = x->ranks[i];
        r->runs++;
        if (!v[i].tested) {
            if (!r->untested++)
                snprintf(r->error, sizeof r->error, "%s", x->ranks[i].error);
        } else if (v[i].diverged && !r->failures++) {
            r->first_failure = v[i];
            r->first_failure_repeat = repeat;
        }
    }
}

/* One repeat on every rank. keep_trace: this rank's trace diverged or
 * could not be read back, so it stays. */
static int one_repeat(const repro_config *cfg, const repro_screen_opts *o, repro_dist *dist,
                      repro_screen_result *out, int repeat, exchange *x)
{
    int rank = repro_dist_rank(dist), n = out->nranks;
    char path[1300];
    snprintf(path, sizeof path, "%s/repeat-%d/trace.jsonl", out->dir, repeat);
    repro_screen_rank mine;
    repro_trace t;
    repro_screen_rank_run(cfg, o, rank, repeat, path, &mine, &t);
    int rc = gather_results(dist, &mine, x) || gather_tables(dist, &t, x, n) ? -1 : 0;
    int exchanged = rc == 0;
    repro_screen_verdict *v = rank == 0 ? calloc((size_t)n, sizeof *v) : NULL;
    int *wanted = rank == 0 ? calloc((size_t)n, sizeof *wanted) : NULL;
    if (!rc && rank == 0 && (!v || !wanted))
        rc = repro_error_set(REPRO_ENOMEM, "screen: out of memory");
    if (!rc && rank == 0) {
        if (!x->names)
            take_names(&t, x);
        int tie = 0;
        repro_screen_judge(x->ranks, n, x->tables, x->stride, x->ntensors, x->names, v, &tie);
        out->no_majority |= tie;
        for (int i = 0; i < n; i++) /* the detail of each rank's first failure only */
            wanted[i] = out->ranks[i].failures == 0;
    }
    /* Every rank takes part (MPI) even when rank 0 failed above: its
     * empty plan ends the detail at once. */
    if (exchanged && repro_screen_detail(cfg, o, dist, repeat, out->dir,
                                         !rc && rank == 0 ? v : NULL, wanted, n))
        rc = -1;
    if (!rc && rank == 0)
        tally(out, x, v, repeat);
    free(v);
    free(wanted);
    repro_trace_release(&t);
    free(x->tables);
    x->tables = NULL;
    return rc;
}

int repro_screen_run(const repro_config *cfg, const repro_screen_opts *o, repro_dist *dist,
                     repro_screen_result *out)
{
    memset(out, 0, sizeof *out);
    out->nranks = repro_dist_size(dist);
    out->repeats = o->repeats;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(out->dir, sizeof out->dir, "runs/%s/screen-%s-%ld", cfg->name, host,
             (long)getpid());
    repro_config *run = malloc(sizeof *run);
    exchange x = {calloc((size_t)out->nranks, sizeof *x.ranks), NULL, 0, 0, NULL};
    if (repro_dist_rank(dist) == 0)
        out->ranks = calloc((size_t)out->nranks, sizeof *out->ranks);
    if (!run || !x.ranks || (repro_dist_rank(dist) == 0 && !out->ranks)) {
        free(run);
        free(x.ranks);
        return repro_error_set(REPRO_ENOMEM, "screen: out of memory");
    }
    /* Each rank is a whole single-process run, with every tensor of every
     * step recorded so that a divergence is located to the step. */
    *run = *cfg;
    run->train_ranks = 1;
    run->trace_every = 1;
    if (run->trace_level == REPRO_TRACE_STEP)
        run->trace_level = REPRO_TRACE_TENSOR;
    int rc = 0;
    for (int k = 0; k < o->repeats && !rc; k++)
        rc = one_repeat(run, o, dist, out, k, &x);
    free(run);
    free(x.ranks);
    free(x.names);
    return rc;
}

void repro_screen_result_release(repro_screen_result *r)
{
    free(r->ranks);
    r->ranks = NULL;
}
