/* `make bench`'s goals: each figure the performance issue sets a bound on
 * is printed beside its bound and PASS or MISS, where it is measured, and
 * once more in a summary at the end, so one look at the output says which
 * goals hold on this machine today. A figure that could not be measured
 * (no PyTorch here) is "n/a", neither passed nor missed. Header-only: each
 * bench/NAME.c is its own program. */
#ifndef REPRO_BENCH_GOALS_H
#define REPRO_BENCH_GOALS_H

#include <stdio.h>

enum { GOALS_MAX = 32 };

typedef struct {
    char what[96];
    double value, bound;
    int at_most; /* the bound is a ceiling (else a floor) */
} bench_goal;

static bench_goal goals[GOALS_MAX];
static int ngoals;

/* "PASS", "MISS" or "n/a" (value <= 0: not measured). */
static const char *goal_verdict(const bench_goal *g)
{
    if (!(g->value > 0))
        return "n/a";
    return (g->at_most ? g->value <= g->bound : g->value >= g->bound) ? "PASS" : "MISS";
}

/* Records a goal for the summary; returns its mark for the row that
 * measured it, e.g. ">=0.90 PASS". The string lives until the next call. */
static const char *goal_note(const char *what, double value, double bound, int at_most)
{
    static char mark[32];
    bench_goal g = {"", value, bound, at_most};
    snprintf(g.what, sizeof g.what, "%s", what);
    if (ngoals < GOALS_MAX)
        goals[ngoals++] = g;
    snprintf(mark, sizeof mark, "%s%.2f %s", at_most ? "<=" : ">=", bound, goal_verdict(&g));
    return mark;
}

static void goals_summary(void)
{
    int pass = 0, miss = 0;
    printf("\ngoals (docs/performance.md says how each is measured):\n");
    for (int i = 0; i < ngoals; i++) {
        const bench_goal *g = &goals[i];
        const char *v = goal_verdict(g);
        pass += v[0] == 'P';
        miss += v[0] == 'M';
        char value[16] = "-";
        if (g->value > 0)
            snprintf(value, sizeof value, "%.2fx", g->value);
        printf("  %-4s %-58s %8s  goal %s%.2fx\n", v, g->what, value, g->at_most ? "<=" : ">=",
               g->bound);
    }
    printf("  %d PASS, %d MISS, %d not measured\n", pass, miss, ngoals - pass - miss);
}

#endif
