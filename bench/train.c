/* `make bench`: training speed of the shipped experiments, measured side by
 * side in one run (median of several runs each), so the ratios mean
 * something on a shared, noisy machine:
 *   - 1 vs 2 kernel threads;
 *   - per-step hashing off vs on (every tensor of every step SHA-256'd into
 *     a tensor-level trace, as `repro run` does).
 * Not a test: nothing here passes or fails on time. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "progress.h"
#include "record.h"
#include "train.h"

enum { REPEATS = 5 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(void)
{
    fprintf(stderr, "bench: %s\n", repro_error_message());
    exit(repro_error_exit_code());
}

/* Steps/s of one run of `steps` steps (setup and first step excluded). */
static double one_run(const repro_config *cfg, long steps, int hashing)
{
    repro_trainer t;
    repro_recorder *rec = NULL;
    char path[64];
    snprintf(path, sizeof path, "/tmp/repro-bench-%ld.jsonl", (long)getpid());
    if (repro_trainer_init(&t, cfg))
        die();
    repro_recorder_opts ro = {.trace_path = path, .level = 1, .every = 1,
                              .total_steps = steps + 1};
    if (hashing && repro_recorder_new(&rec, &t, &ro))
        die();
    if (repro_trainer_step(&t)) /* warm-up: first touch of every buffer */
        die();
    double t0 = repro_now();
    for (long s = 0; s < steps; s++)
        if (repro_trainer_step(&t))
            die();
    repro_digest chain;
    if (rec && repro_recorder_finish(rec, &chain, NULL)) /* hashing is only done once finished */
        die();
    double rate = steps / (repro_now() - t0);
    repro_trainer_release(&t);
    remove(path);
    return rate;
}

/* Medians of REPEATS runs, the variants interleaved run by run so that
 * machine noise hits them alike. */
static void measure(const char *path, int threads, long steps, double *plain, double *hashed)
{
    static repro_config cfg;
    char set[64];
    if (repro_config_load(&cfg, path))
        die();
    snprintf(set, sizeof set, "threads=%d", threads);
    if (repro_config_set(&cfg, set))
        die();
    double a[REPEATS], b[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        a[r] = one_run(&cfg, steps, 0);
        b[r] = one_run(&cfg, steps, 1);
    }
    qsort(a, REPEATS, sizeof *a, cmp_double);
    qsort(b, REPEATS, sizeof *b, cmp_double);
    *plain = a[REPEATS / 2];
    *hashed = b[REPEATS / 2];
}

int main(void)
{
    static const struct {
        const char *path;
        long steps;
    } exps[] = {{"experiments/mlp.ini", 60}, {"experiments/cnn.ini", 40}};
    printf("%-20s %7s %14s %14s %10s\n", "experiment", "threads", "no hashing", "hashing on",
           "on / off");
    for (size_t i = 0; i < sizeof exps / sizeof *exps; i++) {
        double base1 = 0;
        for (int threads = 1; threads <= 2; threads++) {
            double plain, hashed;
            measure(exps[i].path, threads, exps[i].steps, &plain, &hashed);
            if (threads == 1)
                base1 = plain;
            printf("%-20s %7d %9.1f st/s %9.1f st/s %9.3fx\n", exps[i].path, threads, plain,
                   hashed, hashed / plain);
            if (threads == 2)
                printf("%-20s %7s %14s %14s %9.2fx  (2 threads / 1, no hashing)\n", "", "", "",
                       "", plain / base1);
        }
    }
    printf("median of %d runs each; hashing on = every tensor of every step SHA-256'd\n"
           "and written to a tensor-level trace; workers as in the experiment file\n",
           REPEATS);
    return 0;
}
