/* `make bench`: training speed of the shipped experiments at 1 and 2 kernel
 * threads, measured side by side in one run (median of several runs), so the
 * ratios mean something on a shared, noisy machine. Not a test: nothing here
 * passes or fails on time. */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "error.h"
#include "progress.h"
#include "train.h"

enum { REPEATS = 5 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median steps/s over REPEATS runs of `steps` steps (setup excluded). */
static double steps_per_s(const char *path, int threads, long steps)
{
    static repro_config cfg;
    char set[64];
    double rate[REPEATS];
    if (repro_config_load(&cfg, path))
        goto fail;
    snprintf(set, sizeof set, "threads=%d", threads);
    if (repro_config_set(&cfg, set))
        goto fail;
    for (int r = 0; r < REPEATS; r++) {
        repro_trainer t;
        if (repro_trainer_init(&t, &cfg))
            goto fail;
        if (repro_trainer_step(&t)) /* warm-up: first touch of every buffer */
            goto fail;
        double t0 = repro_now();
        for (long s = 0; s < steps; s++)
            if (repro_trainer_step(&t))
                goto fail;
        rate[r] = steps / (repro_now() - t0);
        repro_trainer_release(&t);
    }
    qsort(rate, REPEATS, sizeof *rate, cmp_double);
    return rate[REPEATS / 2];
fail:
    fprintf(stderr, "bench: %s\n", repro_error_message());
    exit(repro_error_exit_code());
}

int main(void)
{
    static const struct {
        const char *path;
        long steps;
    } exps[] = {{"experiments/mlp.ini", 60}, {"experiments/cnn.ini", 60}};
    printf("%-22s %12s %12s %10s\n", "experiment", "1 thread", "2 threads", "2t / 1t");
    for (size_t i = 0; i < sizeof exps / sizeof *exps; i++) {
        double r1 = steps_per_s(exps[i].path, 1, exps[i].steps);
        double r2 = steps_per_s(exps[i].path, 2, exps[i].steps);
        printf("%-22s %8.1f st/s %8.1f st/s %9.2fx\n", exps[i].path, r1, r2, r2 / r1);
    }
    printf("(median of %d runs each; steps/s excludes setup; workers as in the file)\n", REPEATS);
    return 0;
}
