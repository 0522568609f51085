/* A quick interleaved A/B of what recording costs, for work on the
 * recorder (docs/performance.md, "What hashing costs"): `make bench` runs
 * the whole suite; this runs one experiment's variants one after another,
 * repeat after repeat, and prints each variant's median steps/s and its
 * median ratio to the first variant's in the same repeat.
 *   bench_hash_ab EXP.ini THREADS STEPS REPEATS VARIANT...
 * VARIANT: off (no recorder), on (a trace at the experiment's level and
 * every, as `repro run` writes it), notrace (every step hashed, no file),
 * step, tensor, op (a trace at that level). Not a test: it prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/session.h"
#include "record/trace.h"
#include "util/error.h"
#include "util/progress.h"

enum { MAXV = 8, MAXR = 64 };

static void die(void)
{
    fprintf(stderr, "bench_hash_ab: %s\n", repro_error_message());
    exit(3);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Steps/s of `steps` steps after a warm-up step, as bench/train.c times. */
static double one_run(const repro_config *cfg, long steps, const char *variant)
{
    static repro_config c;
    c = *cfg;
    c.train_steps = steps + 1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/repro-hash-ab-%ld.jsonl", (long)getpid());
    repro_session_opts o = {.output = path, .no_eval = 1};
    if (!strcmp(variant, "off"))
        o.no_recorder = 1;
    else if (!strcmp(variant, "notrace"))
        o.no_trace = 1;
    else if (!strcmp(variant, "step"))
        c.trace_level = REPRO_TRACE_STEP;
    else if (!strcmp(variant, "tensor"))
        c.trace_level = REPRO_TRACE_TENSOR;
    else if (!strcmp(variant, "op"))
        c.trace_level = REPRO_TRACE_OP;
    else if (strcmp(variant, "on")) {
        fprintf(stderr, "bench_hash_ab: unknown variant %s\n", variant);
        exit(2);
    }
    repro_session *s;
    if (repro_session_open(&s, &c, &o) || repro_session_step(s))
        die();
    double t0 = repro_now();
    for (long i = 0; i < steps; i++)
        if (repro_session_step(s))
            die();
    if (repro_session_finish(s))
        die();
    double rate = steps / (repro_now() - t0);
    repro_session_close(s);
    remove(path);
    return rate;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench_hash_ab EXP.ini THREADS STEPS REPEATS VARIANT...\n");
        return 2;
    }
    int threads = atoi(argv[2]), reps = atoi(argv[4]), nv = argc - 5;
    long steps = atol(argv[3]);
    if (reps < 1 || reps > MAXR || nv > MAXV || steps < 1 || threads < 1) {
        fprintf(stderr, "bench_hash_ab: 1..%d repeats, at most %d variants\n", MAXR, MAXV);
        return 2;
    }
    static repro_config cfg;
    char set[64];
    snprintf(set, sizeof set, "threads=%d", threads);
    if (repro_config_load(&cfg, argv[1]) || repro_config_set(&cfg, set))
        die();
    double rate[MAXV][MAXR];
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < nv; k++) {
            int v = (k + r) % nv; /* rotate the order: no variant always runs first */
            rate[v][r] = one_run(&cfg, steps, argv[5 + v]);
        }
    printf("%s, %d thread%s, %ld steps, median of %d interleaved repeats\n", argv[1], threads,
           threads > 1 ? "s" : "", steps, reps);
    for (int v = 0; v < nv; v++) {
        double m[MAXR], q[MAXR];
        for (int r = 0; r < reps; r++)
            m[r] = rate[v][r], q[r] = rate[v][r] / rate[0][r];
        printf("%-8s %9.1f steps/s  %6.3fx of %s\n", argv[5 + v], median(m, reps),
               median(q, reps), argv[5]);
    }
    return 0;
}
