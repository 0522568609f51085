/* Which ranks of one repeat of `repro screen` diverged, and where
 * (screen.h). Ranks are held only to ranks of their own environment class
 * (another CPU model or GPU may compute other bits, rightly). Within a
 * class the reference is what the golden vouches for: the ranks that
 * match it. Without a golden match, the largest group of ranks with the
 * same chain digest; a group no larger than another is no reference (two
 * ranks that disagree cannot say which one is wrong). */
#include "golden/screen.h"

#include <stdio.h>
#include <string.h>

/* A rank that finished its run in class cls (one stopped by its replay
 * has no chain to compare). */
static int in_class(const repro_screen_rank *r, const char *cls)
{
    return r->tested && !r->replay_step && !strcmp(r->env_class, cls);
}

/* The first rank of class cls's reference group, or -1. */
static int reference_rank(const repro_screen_rank *ranks, int n, const char *cls, int *tie)
{
    *tie = 0;
    for (int i = 0; i < n; i++)
        if (in_class(&ranks[i], cls) && ranks[i].golden == REPRO_SCREEN_GOLDEN_MATCH)
            return i;
    int best = -1, best_size = 0;
    for (int i = 0; i < n; i++) {
        if (!in_class(&ranks[i], cls))
            continue;
        int size = 0, first = 1;
        for (int j = 0; j < n; j++)
            if (in_class(&ranks[j], cls) && repro_digest_eq(&ranks[j].chain, &ranks[i].chain)) {
                size++;
                first &= j >= i; /* count each group once, at its first rank */
            }
        if (!first)
            continue;
        if (size > best_size)
            best = i, best_size = size, *tie = 0;
        else if (size == best_size)
            *tie = 1;
    }
    return *tie ? -1 : best;
}

/* Rank a against rank b's table: the first step whose digest differs, and
 * which tensors differ there. */
static void locate(const repro_digest *ta, const repro_digest *tb, long nsteps, int ntensors,
                   char (*names)[64], repro_screen_verdict *v)
{
    long per = 1 + ntensors;
    for (long s = 0; s < nsteps; s++) {
        if (repro_digest_eq(&ta[s * per], &tb[s * per]))
            continue;
        v->step = s + 1;
        for (int k = 0; k < ntensors; k++) {
            if (repro_digest_eq(&ta[s * per + 1 + k], &tb[s * per + 1 + k]))
                continue;
            if (!v->ntensors++) {
                if (names)
                    snprintf(v->tensor, sizeof v->tensor, "%s", names[k]);
                else
                    snprintf(v->tensor, sizeof v->tensor, "tensor #%d", k);
            }
        }
        return;
    }
}

void repro_screen_judge(const repro_screen_rank *ranks, int n, const repro_digest *tables,
                        long stride, int ntensors, char (*names)[64], repro_screen_verdict *out,
                        int *no_majority)
{
    *no_majority = 0;
    for (int i = 0; i < n; i++) {
        repro_screen_verdict *v = &out[i];
        memset(v, 0, sizeof *v);
        v->tested = ranks[i].tested;
        if (!v->tested)
            continue;
        int tie, ref = reference_rank(ranks, n, ranks[i].env_class, &tie);
        *no_majority |= tie;
        v->ref_rank = ref;
        if (ranks[i].replay_step) { /* its own two computations differed */
            v->diverged = 1;
            v->against = "replay";
            v->step = ranks[i].replay_step;
            v->ntensors = 1;
            snprintf(v->tensor, sizeof v->tensor, "%s", ranks[i].replay_tensor);
            continue;
        }
        int off_peers = tie || (ref >= 0 && !repro_digest_eq(&ranks[i].chain, &ranks[ref].chain));
        if (ranks[i].golden == REPRO_SCREEN_GOLDEN_DIFFERS) {
            v->diverged = 1;
            v->against = "golden";
            v->step = ranks[i].golden_step;
            v->ntensors = ranks[i].golden_ntensors;
            snprintf(v->tensor, sizeof v->tensor, "%s", ranks[i].golden_tensor);
        } else if (off_peers) {
            v->diverged = 1;
            v->against = "ranks";
        }
        /* Against a reference rank the tables name the exact step and
         * tensors (the golden records tensors only every few steps). */
        if (v->diverged && ref >= 0 && ref != i && ranks[i].nsteps == ranks[ref].nsteps &&
            ranks[i].ntensors == ranks[ref].ntensors) {
            repro_screen_verdict at = *v;
            at.step = 0, at.ntensors = 0, at.tensor[0] = '\0';
            locate(tables + i * stride, tables + ref * stride, ranks[i].nsteps, ntensors, names,
                   &at);
            if (at.step) {
                at.against = "ranks";
                *v = at;
            }
        }
    }
}
