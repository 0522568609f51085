/* `make bench`: training speed of the shipped experiments, measured side by
 * side in one run (median of several runs each), so the ratios mean
 * something on a shared, noisy machine:
 *   - 1 vs 2 kernel threads;
 *   - per-step hashing off vs on (every tensor of every step SHA-256'd into
 *     a tensor-level trace, as `repro run` does);
 *   - peak memory and speed per precision (fp32, bf16, fp16) and zeroing
 *     mode (memory.h: reduced-precision buffers counted at 2 bytes; the CPU
 *     emulation of bf16/fp16 is no faster than fp32: it only adds rounding).
 * Not a test: nothing here passes or fails on time. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/config.h"
#include "kernels/cpu/conv_algos.h"
#include "util/error.h"
#include "core/memory.h"
#include "util/progress.h"
#include "core/train_record.h"
#include "core/train.h"

enum { REPEATS = 5 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(void)
{
    fprintf(stderr, "bench: %s\n", repro_error_message());
    exit(3);
}

/* Steps/s of one run of `steps` steps (setup and first step excluded). */
static double one_run(const repro_config *cfg, long steps, int hashing)
{
    repro_trainer t;
    repro_train_recorder *rec = NULL;
    char path[64];
    snprintf(path, sizeof path, "/tmp/repro-bench-%ld.jsonl", (long)getpid());
    if (repro_trainer_init(&t, cfg))
        die();
    repro_train_recorder_opts ro = {.trace_path = path, .level = 1, .every = 1,
                              .total_steps = steps + 1};
    if (hashing && repro_train_recorder_new(&rec, &t, &ro, NULL))
        die();
    if (repro_trainer_step(&t)) /* warm-up: first touch of every buffer */
        die();
    double t0 = repro_now();
    for (long s = 0; s < steps; s++)
        if (repro_trainer_step(&t))
            die();
    repro_digest chain;
    if (rec && repro_train_recorder_finish(rec, &chain, NULL)) /* hashing is only done once finished */
        die();
    double rate = steps / (repro_now() - t0);
    repro_trainer_release(&t);
    remove(path);
    return rate;
}

/* Medians of REPEATS runs of two configs (or of hashing off/on), the two
 * interleaved run by run so that machine noise hits them alike. */
static void measure_pair(const repro_config *ca, const repro_config *cb, long steps, int hash_b,
                         double *ra, double *rb)
{
    double a[REPEATS], b[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        a[r] = one_run(ca, steps, 0);
        b[r] = one_run(cb, steps, hash_b);
    }
    qsort(a, REPEATS, sizeof *a, cmp_double);
    qsort(b, REPEATS, sizeof *b, cmp_double);
    *ra = a[REPEATS / 2];
    *rb = b[REPEATS / 2];
}

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

/* Peak memory by category per precision and zeroing mode (bytes a real
 * implementation would hold: see memory.h), and the emulated speed. */
static void memory_table(void)
{
    static const char *const exps[] = {"experiments/mlp.ini", "experiments/cnn.ini"};
    static const char *const precs[] = {"fp32", "bf16", "fp16"};
    printf("\n%-20s %-6s %-5s %9s %9s %9s %9s %9s %9s %9s %8s\n", "peak memory (KiB)", "prec",
           "zero", "params", "working", "grads", "optim", "activ", "act.grad", "total",
           "st/s");
    for (int e = 0; e < 2; e++)
        for (int p = 0; p < 3; p++)
            for (int z = 0; z < 2; z++) {
                static repro_config cfg;
                char set[64];
                if (repro_config_load(&cfg, exps[e]))
                    die();
                snprintf(set, sizeof set, "precision=%s", precs[p]);
                if (repro_config_set(&cfg, set) ||
                    repro_config_set(&cfg, z ? "zero_grad=none" : "zero_grad=zero"))
                    die();
                repro_trainer t;
                if (repro_trainer_init(&t, &cfg))
                    die();
                repro_memory m;
                repro_memory_account(&t.model, cfg.train_zero_grad, &m);
                repro_trainer_release(&t);
                double rate = z ? 0 : one_run(&cfg, 20, 0);
                char rs[16] = "";
                if (!z)
                    snprintf(rs, sizeof rs, "%.1f", rate);
                printf("%-20s %-6s %-5s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8s\n", exps[e],
                       precs[p], z ? "none" : "zero", m.params / 1024.0,
                       m.working_weights / 1024.0, m.grads / 1024.0, m.optimizer / 1024.0,
                       m.activations / 1024.0, m.activation_grads / 1024.0, m.peak / 1024.0, rs);
                if (z)
                    printf("%-20s %-6s %-5s   between steps %.1f KiB (gradients released)\n", "",
                           "", "", (m.peak - m.grads_released) / 1024.0);
            }
    printf("total = peak, every buffer resident at once (workspace included); bf16/fp16 buffers\n"
           "counted at 2 bytes each (a real implementation), st/s = the CPU emulation's speed\n");
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
           "and written to a tensor-level trace; workers as in the experiment file\n\n",
           REPEATS);

    /* Convolution algorithms per shape (the CNN's two call sites), 1 thread. */
    static const repro_conv_shape shapes[] = {{64, 1, 28, 28, 8, 3, 0}, {64, 8, 13, 13, 16, 3, 0}};
    printf("%-34s %10s %10s %10s\n", "conv forward, 1 thread (median us)", "direct", "im2col",
           "winograd");
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const repro_conv_shape *sh = &shapes[i];
        size_t nx = (size_t)sh->B * sh->C * sh->H * sh->W, nw = (size_t)sh->K * sh->C * 9;
        size_t ny = (size_t)sh->B * sh->K * repro_conv_oh(sh) * repro_conv_ow(sh), ws = 1;
        for (int a = 0; a < REPRO_CONV_NALGOS; a++)
            if (repro_conv_algo_eligible((repro_conv_algo)a, sh) &&
                repro_conv_workspace_floats((repro_conv_algo)a, sh) > ws)
                ws = repro_conv_workspace_floats((repro_conv_algo)a, sh);
        float *x = calloc(nx, 4), *w = calloc(nw, 4), *b = calloc((size_t)sh->K, 4),
              *y = malloc(ny * 4), *wsp = malloc(ws * 4);
        for (size_t j = 0; j < nx; j++)
            x[j] = (float)(j % 17) * 0.05f;
        for (size_t j = 0; j < nw; j++)
            w[j] = (float)(j % 7) * 0.1f - 0.3f;
        char label[64];
        snprintf(label, sizeof label, "B%d C%d %dx%d -> K%d, 3x3", sh->B, sh->C, sh->H, sh->W,
                 sh->K);
        printf("%-34s", label);
        for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
            double t[REPEATS * 2];
            for (int r = 0; r < REPEATS * 2; r++) {
                double t0 = repro_now();
                repro_conv2d_forward_algo(NULL, (repro_conv_algo)a, sh, x, w, b, y, wsp);
                t[r] = (repro_now() - t0) * 1e6;
            }
            qsort(t, REPEATS * 2, sizeof *t, cmp_double);
            printf(" %10.0f", t[REPEATS]);
        }
        printf("\n");
        free(x), free(w), free(b), free(y), free(wsp);
    }

    /* benchmark = on (fastest algorithm per call site) vs off (the rule). */
    static repro_config off, on;
    if (repro_config_load(&off, "experiments/cnn.ini") || repro_config_load(&on, "experiments/cnn.ini") ||
        repro_config_set(&on, "benchmark=on"))
        die();
    double r_off, r_on;
    measure_pair(&off, &on, 40, 0, &r_off, &r_on);
    printf("\nexperiments/cnn.ini benchmark off %.1f st/s, on %.1f st/s: on / off %.2fx\n", r_off,
           r_on, r_on / r_off);
    memory_table();
    return 0;
}
