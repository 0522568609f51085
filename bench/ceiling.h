/* `make bench`'s first table: how close the training step runs to one
 * core's arithmetic ceiling. Per vector path with a goal (avx2, avx512:
 * where the CPU has them), one thread:
 *   - the multiply+add peak and the FMA peak (bench/peak.h);
 *   - every product of the mlp and cnn steps (bench/shapes.h), GFLOP/s
 *     and % of the path's mul+add peak, a GEMM's beside its goal;
 *   - the whole unhashed step, GFLOP/s (the products' FLOPs over the
 *     step's time) and %, and the share of the step's time outside the
 *     products (bias, ReLU, pooling, loss, optimizer, dropout's Philox,
 *     the loader's hand-off: the "rest").
 * Side by side in one run, every figure the best of REPEATS interleaved
 * repeats (each repeat runs every path, the steps and the products seconds
 * apart): on a shared machine a slower run is someone else's time, and
 * the ceiling is what the core gives when it is ours. Header-only, after
 * the bench's one_run and load (bench/train.c). */
#ifndef REPRO_BENCH_CEILING_H
#define REPRO_BENCH_CEILING_H

#include "goals.h"
#include "peak.h"
#include "shapes.h"

enum { CEIL_REPEATS = 7 };
#define GOAL_SHAPE_PCT 0.75 /* each GEMM shape */
#define GOAL_MLP_STEP_PCT 0.65 /* the whole unhashed mlp step */

typedef struct {
    repro_isa isa[REPRO_ISA_COUNT];
    int n;
    double muladd[REPRO_ISA_COUNT], fma[REPRO_ISA_COUNT];
} ceil_paths;

/* Per experiment: its products, their best seconds per path, the best
 * step rate per path. */
typedef struct {
    bench_shape shape[SHAPES_MAX];
    int nshape;
    double secs[REPRO_ISA_COUNT][SHAPES_MAX];
    double rate[REPRO_ISA_COUNT];
} ceil_exp;

/* Every figure, interleaved: each repeat runs, per path, the peak loops,
 * then each experiment's steps and products, so the peak and the work it
 * bounds are measured seconds apart, and each keeps its best. */
static void ceil_measure(ceil_paths *p, int repeats, ceil_exp *x)
{
    static repro_config cfg[NEXPS];
    static repro_trainer t[NEXPS]; /* large: off the stack */
    for (int e = 0; e < NEXPS; e++) {
        load(&cfg[e], exps[e].path, 1);
        if (repro_trainer_init(&t[e], &cfg[e]) || repro_trainer_step(&t[e])) /* buffers hold a
                                                                               * step's values */
            die();
        x[e].nshape = bench_shapes(&t[e].model, cfg[e].train_batch_size, x[e].shape);
        for (int i = 0; i < p->n; i++) {
            x[e].rate[i] = 0;
            for (int s = 0; s < x[e].nshape; s++)
                x[e].secs[i][s] = 1e30;
        }
    }
    for (int i = 0; i < p->n; i++)
        p->muladd[i] = p->fma[i] = 0;
    for (int r = 0; r < repeats; r++)
        for (int i = 0; i < p->n; i++) {
            /* many short runs, as short as one product: a run that spans
             * a time slice of someone else's counts their time too */
            double gf = peak_gflops(p->isa[i], 0, 20, 0.002);
            p->muladd[i] = gf > p->muladd[i] ? gf : p->muladd[i];
            gf = peak_gflops(p->isa[i], 1, 20, 0.002);
            p->fma[i] = gf > p->fma[i] ? gf : p->fma[i];
            repro_isa_select(p->isa[i]);
            for (int e = 0; e < NEXPS; e++) {
                double rate = one_run(&cfg[e], exps[e].steps / 2, NO_HASH);
                if (rate > x[e].rate[i])
                    x[e].rate[i] = rate;
                for (int s = 0; s < x[e].nshape; s++) {
                    double sec = shape_seconds(&t[e].model, &x[e].shape[s],
                                               cfg[e].train_batch_size, 0.02);
                    if (sec < x[e].secs[i][s])
                        x[e].secs[i][s] = sec;
                }
            }
        }
    for (int e = 0; e < NEXPS; e++)
        repro_trainer_release(&t[e]);
    repro_isa_select(repro_isa_best());
}

static void ceil_print_exp(const char *arch, const ceil_exp *x, const ceil_paths *p)
{
    char what[96];
    for (int s = 0; s < x->nshape; s++) {
        const bench_shape *sh = &x->shape[s];
        printf("%-4s %-30s %6.2f", arch, sh->what, sh->flops * 1e-6);
        for (int i = 0; i < p->n; i++) {
            double gf = sh->flops / x->secs[i][s] * 1e-9, pct = gf / p->muladd[i];
            printf(" %7.1f %5.1f%%", gf, 100 * pct);
            if (sh->gemm) {
                snprintf(what, sizeof what, "%s %s of the %s mul+add peak", arch, sh->what,
                         repro_isa_name(p->isa[i]));
                printf(" %-12s", goal_note_pct(what, pct, GOAL_SHAPE_PCT));
            } else {
                printf(" %-12s", "(no goal)");
            }
        }
        printf("\n");
    }
    double flops = shapes_flops(x->shape, x->nshape);
    printf("%-4s %-30s %6.2f", arch, "whole step, unhashed", flops * 1e-6);
    for (int i = 0; i < p->n; i++) {
        double gf = flops * x->rate[i] * 1e-9, pct = gf / p->muladd[i];
        printf(" %7.1f %5.1f%%", gf, 100 * pct);
        if (strcmp(arch, "mlp") == 0) {
            snprintf(what, sizeof what, "mlp whole unhashed step of the %s mul+add peak",
                     repro_isa_name(p->isa[i]));
            printf(" %-12s", goal_note_pct(what, pct, GOAL_MLP_STEP_PCT));
        } else {
            printf(" %-12s", "(no goal)");
        }
    }
    printf("\n%-4s %-37s", arch, "steps/s; share of the step:");
    for (int i = 0; i < p->n; i++)
        printf(" %7.1f %18s", x->rate[i], "");
    printf("\n%-4s %-37s", "", "  in the products above");
    for (int i = 0; i < p->n; i++) {
        double in = 0;
        for (int s = 0; s < x->nshape; s++)
            in += x->secs[i][s];
        in *= x->rate[i];
        printf(" %13.1f%% %12s", 100 * in, "");
    }
    printf("\n%-4s %-37s", "", "  the rest (not a product)");
    for (int i = 0; i < p->n; i++) {
        double in = 0;
        for (int s = 0; s < x->nshape; s++)
            in += x->secs[i][s];
        printf(" %13.1f%% %12s", 100 * (1 - in * x->rate[i]), "");
    }
    printf("\n");
}

/* 1 when a product of path i ran faster than the peak measured for it
 * (2% of slack): impossible with the core alone, so the peak's runs were
 * all disturbed. */
static int above_peak(const ceil_exp *x, int i, double peak)
{
    for (int e = 0; e < NEXPS; e++)
        for (int s = 0; s < x[e].nshape; s++)
            if (x[e].shape[s].flops / x[e].secs[i][s] * 1e-9 > 1.02 * peak)
                return 1;
    return 0;
}

/* The ceiling table for the experiments of exps[] (bench/train.c). */
static void ceiling_section(void)
{
    ceil_paths p = {.n = 0};
    for (int i = REPRO_ISA_AVX2; i < REPRO_ISA_COUNT; i++)
        if (repro_isa_supported((repro_isa)i) && peak_loop((repro_isa)i, 0))
            p.isa[p.n++] = (repro_isa)i;
    if (!p.n) {
        printf("\none core's ceiling: no avx2 or avx512 path on this CPU (no goal on sse2)\n");
        return;
    }
    static ceil_exp x[NEXPS];
    ceil_measure(&p, CEIL_REPEATS, x);
    printf("\none core's ceiling, register-resident (bench/peak.h), best of %d x 20 runs of"
           " 2 ms:\n", CEIL_REPEATS);
    for (int i = 0; i < p.n; i++)
        printf("  %-6s mul+add %6.1f GFLOP/s (repro's arithmetic: no FMA), FMA %6.1f GFLOP/s,"
               " mul+add / FMA %.2f\n",
               repro_isa_name(p.isa[i]), p.muladd[i], p.fma[i], p.muladd[i] / p.fma[i]);
    printf("\nproducts of a step, 1 thread, best of %d interleaved repeats; %% of the path's "
           "mul+add peak\n%-4s %-30s %6s",
           CEIL_REPEATS, "exp", "product (M x N x K)", "MFLOP");
    for (int i = 0; i < p.n; i++)
        printf(" %7s %6s %-12s", "GFLOP/s", repro_isa_name(p.isa[i]), " goal");
    printf("\n");
    for (int e = 0; e < NEXPS; e++)
        ceil_print_exp(exps[e].arch, &x[e], &p);
    for (int i = 0; i < p.n; i++)
        if (above_peak(x, i, p.muladd[i]))
            printf("NOTE: a product ran above the %s peak measured: the peak loops never had "
                   "the core\n      alone here; its percentages (and PASSes) are too high: "
                   "rerun when the machine is quieter\n",
                   repro_isa_name(p.isa[i]));
}

#endif
