/* `make bench`'s goals: each figure the performance issue sets a bound on
 * is printed beside its bound and PASS or MISS, where it is measured, and
 * once more in a summary at the end, so one look at the output says which
 * goals hold on this machine today. A figure that could not be measured
 * (no PyTorch here) is "n/a", neither passed nor missed. Header-only: each
 * bench/NAME.c is its own program. */
#ifndef REPRO_BENCH_GOALS_H
#define REPRO_BENCH_GOALS_H

#include <stdio.h>

enum { GOALS_MAX = 64 };

typedef struct {
    char what[96];
    double value, bound;
    int at_most; /* the bound is a ceiling (else a floor) */
    int percent; /* value and bound are fractions, shown as percentages (else ratios) */
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
static const char *goal_add(const char *what, double value, double bound, int at_most,
                            int percent)
{
    static char mark[32];
    bench_goal g = {"", value, bound, at_most, percent};
    snprintf(g.what, sizeof g.what, "%s", what);
    if (ngoals < GOALS_MAX)
        goals[ngoals++] = g;
    if (percent)
        snprintf(mark, sizeof mark, "%s%.0f%% %s", at_most ? "<=" : ">=", 100 * bound,
                 goal_verdict(&g));
    else
        snprintf(mark, sizeof mark, "%s%.2f %s", at_most ? "<=" : ">=", bound, goal_verdict(&g));
    return mark;
}

static const char *goal_note(const char *what, double value, double bound, int at_most)
{
    return goal_add(what, value, bound, at_most, 0);
}

/* A floor on a fraction (of a peak), e.g. ">=75% PASS" for 0.75. */
static const char *goal_note_pct(const char *what, double value, double bound)
{
    return goal_add(what, value, bound, 0, 1);
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
        char value[16] = "-", bound[16];
        if (g->value > 0)
            snprintf(value, sizeof value, g->percent ? "%.1f%%" : "%.2fx",
                     g->percent ? 100 * g->value : g->value);
        snprintf(bound, sizeof bound, g->percent ? "%.0f%%" : "%.2fx",
                 g->percent ? 100 * g->bound : g->bound);
        printf("  %-4s %-58s %8s  goal %s%s\n", v, g->what, value, g->at_most ? "<=" : ">=",
               bound);
    }
    printf("  %d PASS, %d MISS, %d not measured\n", pass, miss, ngoals - pass - miss);
}

#endif
