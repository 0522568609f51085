/* GPU step times for tests/gpu/run.sh: each shipped experiment on the cuda
 * backend, steps/s (median of 3 runs, first step excluded) with per-step
 * hashing off and on (every tensor fetched from the device and SHA-256'd
 * into a tensor-level trace, as `repro run` does), and deterministic (the
 * ordered kernels) against nondeterministic (deterministic = off, every
 * atomic variant). Informational: nothing passes or fails on time.
 * Usage: step_time EXP... ; exit 3 without a usable GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/config.h"
#include "core/train.h"
#include "core/train_record.h"
#include "util/error.h"
#include "util/progress.h"

enum { REPEATS = 3, STEPS = 100 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Steps/s of one run, or -1 (the error slot says why). */
static double one_run(const repro_config *cfg, int hashing)
{
    repro_trainer t;
    repro_train_recorder *rec = NULL;
    char path[64];
    snprintf(path, sizeof path, "/tmp/repro-gpu-steptime-%ld.jsonl", (long)getpid());
    if (repro_trainer_init(&t, cfg))
        return -1;
    /* As `repro run` records: every tensor of every step, through the
     * trainer's recorder (installed as t.rec, freed by the trainer). */
    repro_train_recorder_opts ro = {.trace_path = path, .level = REPRO_TRACE_TENSOR, .every = 1,
                                    .total_steps = STEPS + 1};
    double rate = -1;
    if ((hashing && repro_train_recorder_new(&rec, &t, &ro, NULL)) || repro_trainer_step(&t))
        goto done;
    double t0 = repro_now();
    for (long s = 0; s < STEPS; s++)
        if (repro_trainer_step(&t))
            goto done;
    repro_digest chain;
    if (rec && repro_train_recorder_finish(rec, &chain, NULL))
        goto done;
    rate = STEPS / (repro_now() - t0);
done:
    repro_trainer_release(&t);
    remove(path);
    return rate;
}

static double median(const repro_config *cfg, int hashing)
{
    double r[REPEATS];
    for (int i = 0; i < REPEATS; i++)
        if ((r[i] = one_run(cfg, hashing)) < 0)
            return -1;
    qsort(r, REPEATS, sizeof *r, cmp_double);
    return r[REPEATS / 2];
}

int main(int argc, char **argv)
{
    static const char *const nondet[] = {"deterministic=off", "linear.bwd_weight=atomic",
                                         "linear.bwd_bias=atomic", "conv2d.bwd_filter=atomic",
                                         "index_add=atomic"};
    printf("%-24s %14s %14s %14s\n", "steps/s on cuda", "unhashed", "hashed", "nondet.");
    for (int i = 1; i < argc; i++) {
        static repro_config det, nd;
        if (repro_config_load(&det, argv[i]) || repro_config_set(&det, "train.backend=cuda"))
            goto fail;
        nd = det;
        for (size_t k = 0; k < sizeof nondet / sizeof *nondet; k++)
            if (repro_config_set(&nd, nondet[k]))
                goto fail;
        double u = median(&det, 0), h = u < 0 ? -1 : median(&det, 1);
        double n = h < 0 ? -1 : median(&nd, 0);
        if (u < 0 || h < 0 || n < 0)
            goto fail;
        printf("%-24s %14.1f %14.1f %14.1f   (hashing costs %.0f%%)\n", argv[i], u, h, n,
               100.0 * (u / h - 1.0));
    }
    return 0;
fail:
    fprintf(stderr, "step_time: %s\n", repro_error_message());
    return repro_error_code() == REPRO_EUNSUPPORTED || repro_error_code() == REPRO_EIO ? 3 : 1;
}
