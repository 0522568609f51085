/* `make bench`: training speed of the shipped experiments, measured side by
 * side in one run (medians of several interleaved runs each), so the ratios
 * mean something on a shared, noisy machine:
 *   - repro vs PyTorch at its best and at its default settings
 *     (bench/torch_ref.py: the same architectures, batch size and optimizer
 *     in stock PyTorch), at 1 and 2 threads, for every vector path this CPU
 *     has (kernels/isa.h), hashing off and on;
 *   - what hashing costs per trace level (step, tensor, op);
 *   - `repro check` (2 runs) wall time over one `repro run`, its runs at once
 *     (the default where the CPUs hold them) and one after another;
 *   - convolution algorithms per shape; peak memory per precision.
 * The figures the performance goals bound are marked PASS or MISS beside
 * their goal (bench/goals.h) and summed up at the end.
 * Usage: bench_train [REPRO_BIN [PYTHON [TORCH_REF]]]; REPRO_BENCH_ONLY=ceiling
 * (or torch) prints that table alone. Not a test: a MISS
 * is reported, never an exit status (speed here is the machine's too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/memory.h"
#include "core/session.h"
#include "core/train.h"
#include "record/hash.h"
#include "kernels/cpu/conv_algos.h"
#include "kernels/isa.h"
#include "goals.h"
#include "torch_peer.h"
#include "util/child.h"
#include "util/error.h"
#include "util/progress.h"

#ifndef BENCH_REPEATS /* -DBENCH_REPEATS=1: a quick look that every line prints */
#define BENCH_REPEATS 7
#endif
enum { REPEATS = BENCH_REPEATS, NO_HASH = -1 };

/* The shipped experiments, with the issues' goals: hashed / unhashed at 1
 * and 2 threads, hashed / PyTorch at its best (same threads on both sides)
 * at 1 and 2 threads. */
static const struct {
    const char *arch, *path;
    long steps;
    double goal_onoff[2], goal_pt[2];
} exps[] = {{"mlp", "experiments/mlp.ini", 200, {0.90, 0.75}, {1.5, 1.3}},
            {"cnn", "experiments/cnn.ini", 60, {0.95, 0.85}, {2.5, 2.5}}};
#define NEXPS (int)(sizeof exps / sizeof *exps)

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

/* The median of num[r] / den[r] over the repeats (den NULL: of num[r]). */
static double median_ratio(const double *num, const double *den)
{
    double v[REPEATS];
    for (int r = 0; r < REPEATS; r++)
        v[r] = den ? num[r] / den[r] : num[r];
    return median(v, REPEATS);
}

static void die(void)
{
    fprintf(stderr, "bench: %s\n", repro_error_message());
    exit(3);
}

static void load(repro_config *cfg, const char *path, int threads)
{
    char set[64];
    snprintf(set, sizeof set, "threads=%d", threads);
    if (repro_config_load(cfg, path) || repro_config_set(cfg, set))
        die();
}

/* Steps/s of one run of `steps` steps (setup and first step excluded), as
 * `repro run` records: level NO_HASH (no recorder), or a trace level with
 * the config's trace.every, written to a trace file. A training session
 * (core/session.h) of steps + 1 steps, without the held-out eval. */
static double one_run(const repro_config *cfg, long steps, int level)
{
    static repro_config c; /* large: off the stack */
    c = *cfg;
    c.train_steps = steps + 1;
    if (level != NO_HASH)
        c.trace_level = level;
    char path[64];
    snprintf(path, sizeof path, "/tmp/repro-bench-%ld.jsonl", (long)getpid());
    repro_session_opts o = {.no_recorder = level == NO_HASH, .output = path, .no_eval = 1};
    repro_session *s;
    if (repro_session_open(&s, &c, &o))
        die();
    if (repro_session_step(s)) /* warm-up: first touch of every buffer */
        die();
    double t0 = repro_now();
    for (long i = 0; i < steps; i++)
        if (repro_session_step(s))
            die();
    if (repro_session_finish(s)) /* hashing is only done once finished */
        die();
    double rate = steps / (repro_now() - t0);
    repro_session_close(s);
    remove(path);
    return rate;
}

/* What two cores give here: the summed steps/s of two 1-thread runs at
 * once, in two processes (nothing shared but the machine). Over one run
 * alone, measured in the same repeat, it is the most that 2 threads over 1
 * could reach on this machine (on a VM the second vCPU is often worth less
 * than the first, and varies with the host's load). */
static double pair_rate(const repro_config *cfg, long steps)
{
    int fds[2][2];
    pid_t pid[2];
    double sum = 0;
    for (int k = 0; k < 2; k++) {
        if (pipe(fds[k]))
            return 0;
        fflush(stdout);
        pid[k] = fork();
        if (pid[k] == 0) {
            double r = one_run(cfg, steps, NO_HASH);
            _exit(write(fds[k][1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
        }
        close(fds[k][1]);
    }
    for (int k = 0; k < 2; k++) {
        double r = 0;
        if (pid[k] > 0 && read(fds[k][0], &r, sizeof r) == (ssize_t)sizeof r)
            sum += r;
        close(fds[k][0]);
        if (pid[k] > 0)
            waitpid(pid[k], NULL, 0);
    }
    return sum;
}

#include "ceiling.h"

/* ---- repro vs PyTorch, per vector path ----------------------------------- */

static int supported_isas(repro_isa *out)
{
    int n = 0;
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        if (repro_isa_supported((repro_isa)i))
            out[n++] = (repro_isa)i;
    return n;
}

/* The path the goals are measured on: the widest this CPU has (avx512,
 * else avx2), even where another is the default (Zen 4); an index into
 * isas. */
static int goal_path(const repro_isa *isas, int nisa)
{
    int g = 0;
    for (int i = 0; i < nisa; i++)
        if (isas[i] == REPRO_ISA_AVX512 ||
            (isas[i] == REPRO_ISA_AVX2 && isas[g] != REPRO_ISA_AVX512))
            g = i;
    return g;
}

/* Every figure of one experiment, per repeat: [threads - 1][path][repeat]. */
typedef struct {
    double off[2][REPRO_ISA_COUNT][REPEATS], on[2][REPRO_ISA_COUNT][REPEATS];
    double pt[2][REPEATS], pd[2][REPEATS]; /* PyTorch best, default */
    double pair[REPEATS], alone[REPEATS];  /* two 1-thread runs at once, one */
} exp_figures;

typedef struct {
    torch_peer best[2], dflt[2];
    int have;
} torch_peers;

static double peer_rate(torch_peer *p, int have, int e)
{
    return have ? torch_peer_rate(p, exps[e].arch, exps[e].steps) : 0;
}

/* Interleaved across thread counts, paths and PyTorch alike: the machine's
 * speed drifts, and a ratio of two figures measured minutes apart would
 * measure the drift. */
static void measure(int e, torch_peers *tp, const repro_isa *isas, int nisa, exp_figures *f)
{
    static repro_config cfg[2];
    for (int t = 0; t < 2; t++)
        load(&cfg[t], exps[e].path, t + 1);
    for (int r = 0; r < REPEATS; r++) {
        repro_isa_select(repro_isa_best());
        f->alone[r] = one_run(&cfg[0], exps[e].steps, NO_HASH);
        f->pair[r] = pair_rate(&cfg[0], exps[e].steps);
        for (int t = 0; t < 2; t++) {
            f->pt[t][r] = peer_rate(&tp->best[t], tp->have, e);
            f->pd[t][r] = peer_rate(&tp->dflt[t], tp->have, e);
            for (int i = 0; i < nisa; i++) {
                repro_isa_select(isas[i]);
                f->off[t][i][r] = one_run(&cfg[t], exps[e].steps, NO_HASH);
                f->on[t][i][r] = one_run(&cfg[t], exps[e].steps, cfg[t].trace_level);
            }
        }
    }
    repro_isa_select(repro_isa_best());
}

/* The goal rows, on the goal path g: unhashed, hashed, their ratio, PyTorch
 * best and default, hashed over PyTorch at its best (the faster of its two
 * settings), each ratio with its goal.
 * Every ratio is the median of the ratios within a repeat (runs seconds
 * apart), every figure the median over the repeats. */
static void goal_rows(int e, exp_figures *f, int g, int have_torch)
{
    char what[96];
    for (int t = 0; t < 2; t++) {
        double onoff = median_ratio(f->on[t][g], f->off[t][g]);
        snprintf(what, sizeof what, "%s hashed / unhashed, %d thread%s", exps[e].arch, t + 1,
                 t ? "s" : "");
        printf("%-4s %3d %10.1f %10.1f %7.3fx %-12s", exps[e].arch, t + 1,
               median_ratio(f->off[t][g], NULL), median_ratio(f->on[t][g], NULL), onoff,
               goal_note(what, onoff, exps[e].goal_onoff[t], 0));
        /* PyTorch at its best: its best settings, unless its defaults were
         * the faster here (in 1-thread runs they can be, within noise). */
        double pb = median_ratio(f->pt[t], NULL), pdm = median_ratio(f->pd[t], NULL);
        int dflt_faster = pdm > pb;
        double onpt = have_torch ? median_ratio(f->on[t][g], dflt_faster ? f->pd[t] : f->pt[t]) : 0;
        snprintf(what, sizeof what, "%s hashed / PyTorch at its best, %d thread%s",
                 exps[e].arch, t + 1, t ? "s" : "");
        const char *mark = goal_note(what, onpt, exps[e].goal_pt[t], 0);
        if (have_torch)
            printf(" %9.1f %9.1f %7.2fx%s%s\n", pb, pdm, onpt, dflt_faster ? "*" : " ", mark);
        else
            printf(" %9s %9s %8s %s\n", "-", "-", "-", mark);
    }
}

/* 2 threads over 1, hashed and unhashed, and what two cores are worth
 * here. The hashed mlp at 2 threads must not be slower than at 1. */
static void thread_lines(int e, exp_figures *f, int g)
{
    double on21 = median_ratio(f->on[1][g], f->on[0][g]);
    printf("%-4s 2 threads / 1: hashed %.2fx", exps[e].arch, on21);
    if (strcmp(exps[e].arch, "mlp") == 0)
        printf(" %s", goal_note("mlp hashed 2 threads / hashed 1 thread", on21, 1.0, 0));
    printf(", unhashed %.2fx\n%-4s two 1-thread runs at once (%s): %.1f steps/s summed, %.2fx\n"
           "%-4s one alone (the machine's ceiling for 2 threads / 1 in these repeats)\n",
           median_ratio(f->off[1][g], f->off[0][g]), "", repro_isa_name(repro_isa_best()),
           median_ratio(f->pair, NULL), median_ratio(f->pair, f->alone), "");
}

/* The other vector paths, unhashed and hashed (no goal: the bits are the
 * same on every path, the speed is the widest path's to meet). */
static void other_paths(int e, exp_figures *f, const repro_isa *isas, int nisa, int g)
{
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < nisa; i++)
            if (i != g)
                printf("%-4s %3d %10.1f %10.1f %7.3fx   (path %s)\n", exps[e].arch, t + 1,
                       median_ratio(f->off[t][i], NULL), median_ratio(f->on[t][i], NULL),
                       median_ratio(f->on[t][i], f->off[t][i]), repro_isa_name(isas[i]));
}

static void torch_start(torch_peers *tp, const char *python, const char *script)
{
    memset(tp, 0, sizeof *tp);
    tp->have = 1;
    for (int t = 0; t < 2; t++)
        if (torch_peer_start(&tp->best[t], python, script, t + 1, "best") ||
            torch_peer_start(&tp->dflt[t], python, script, t + 1, "default"))
            tp->have = 0;
    if (!tp->have) {
        printf("PyTorch was not found (%s %s): repro's figures only\n", python, script);
        return;
    }
    for (int t = 0; t < 2; t++) /* "ready torch V, N thread(s), BLAS: ..., settings" */
        printf("PyTorch (%s): %s\n  default line: %s\n", script, tp->best[t].banner + 6,
               tp->dflt[t].banner + 6);
}

static void versus_torch(const char *python, const char *script)
{
    repro_isa isas[REPRO_ISA_COUNT];
    int nisa = supported_isas(isas), g = goal_path(isas, nisa);
    static torch_peers tp;
    torch_start(&tp, python, script);
    printf("\nsteps/s on path %s (the widest this CPU has), median of %d interleaved repeats\n"
           "%-4s %3s %10s %10s %8s %-12s %9s %9s %8s\n",
           repro_isa_name(isas[g]), REPEATS, "exp", "thr", "unhashed", "hashed", "hash/un",
           " goal", "pt-best", "pt-dflt", "hash/pt");
    for (int e = 0; e < NEXPS; e++) {
        static exp_figures f;
        measure(e, &tp, isas, nisa, &f);
        goal_rows(e, &f, g, tp.have);
        other_paths(e, &f, isas, nisa, g);
        thread_lines(e, &f, g);
    }
    for (int t = 0; t < 2; t++) {
        torch_peer_stop(&tp.best[t]);
        torch_peer_stop(&tp.dflt[t]);
    }
    printf("(mlp %ld, cnn %ld steps a run) hashed = a trace at the experiment's level and\n"
           "every, as `repro run` writes it; unhashed = no recorder; pt-best = PyTorch, the\n"
           "same model, batch and optimizer on in-memory batches, at its best settings here\n"
           "(bench/torch_ref.py --settings best), pt-dflt = at its default settings;\n"
           "hash/pt = hashed over the faster of the two (*: pt-dflt); every ratio is the\n"
           "median of the ratios within each repeat\n",
           exps[0].steps, exps[1].steps);
}

/* ---- hashing per trace level ------------------------------------------------ */

/* The tree hash's speed on one thread (GB/s) and the bytes a step hashes
 * (gradients, parameters, optimizer state, the batch): their ratio bounds
 * a recorded run's speed, since one hasher thread hashes every step. */
static double hash_gbps(void)
{
    size_t n = (size_t)4 << 20;
    unsigned char *d = malloc(n);
    if (!d)
        return 0;
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)(i * 131);
    long shape[1] = {(long)(n / 4)};
    repro_tensor_view v = {"x", "f32", 1, shape, d, n, REPRO_DIGEST_XXH3};
    repro_digest out;
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = repro_now();
        repro_tensor_digest(&v, &out, NULL);
        t[r] = repro_now() - t0;
    }
    free(d);
    return n / median(t, 5) * 1e-9;
}

static double step_bytes(const repro_config *cfg)
{
    repro_trainer t;
    if (repro_trainer_init(&t, cfg))
        die();
    double states = cfg->train_optimizer == REPRO_OPT_ADAMW ? 2 : 1;
    double b = 4.0 * (double)repro_model_param_count(&t.model) * (2 + states) +
               4.0 * cfg->train_batch_size * (REPRO_IMG_PIXELS + 3 + REPRO_CLASSES);
    repro_trainer_release(&t);
    return b;
}

static void hashing_levels(void)
{
    static const char *const names[] = {"step", "tensor", "op"};
    printf("\n%-4s %-7s %10s %10s %10s %10s   (1 thread, path %s, trace.every as the file)\n",
           "exp", "", "off", names[0], names[1], names[2], repro_isa_name(repro_isa_current()));
    for (int e = 0; e < NEXPS; e++) {
        static repro_config cfg;
        load(&cfg, exps[e].path, 1);
        double v[4][REPEATS];
        for (int r = 0; r < REPEATS; r++)
            for (int l = 0; l < 4; l++)
                v[l][r] = one_run(&cfg, exps[e].steps, l == 0 ? NO_HASH : l - 1);
        double m[4];
        for (int l = 0; l < 4; l++)
            m[l] = median(v[l], REPEATS);
        printf("%-4s %-7s %10.1f %10.1f %10.1f %10.1f\n", exps[e].arch, "st/s", m[0], m[1], m[2],
               m[3]);
        printf("%-4s %-7s %10s %9.3fx %9.3fx %9.3fx\n", "", "vs off", "", m[1] / m[0],
               m[2] / m[0], m[3] / m[0]);
        double bytes = step_bytes(&cfg), gbps = hash_gbps();
        printf("%-4s hashes ~%.0f KiB a step; the tensor digest %.2f GB/s on one thread here:\n"
               "%-4s the hasher thread alone allows at most ~%.0f steps/s\n", "",
               bytes / 1024, gbps, "", gbps * 1e9 / bytes);
    }
}

/* ---- repro check (2 runs) over one repro run ---------------------------------- */

static double wall_of(const char *repro, char *const *args)
{
    char *argv[12];
    int n = 0;
    argv[n++] = (char *)repro;
    for (int i = 0; args[i] && n < 11; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    repro_child c;
    memset(&c, 0, sizeof c);
    c.path = repro;
    c.argv = argv;
    repro_child_status st;
    double t0 = repro_now();
    if (repro_child_run(&c, &st))
        die();
    return repro_now() - t0;
}

/* check / run, the ratio of each repeat (interleaved: the machine's speed
 * drifts over minutes), with the runs at once as check starts them by
 * default and one after another (--jobs 1). */
static void check_over_run(const char *repro)
{
    enum { REPEATS = 5 };
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/repro-bench-run-%ld.jsonl", (long)getpid());
    char *run[] = {"run", "experiments/mlp.ini", "-o", trace, NULL};
    char *check[] = {"check", "experiments/mlp.ini", "--runs", "2", NULL};
    char *serial[] = {"check", "experiments/mlp.ini", "--runs", "2", "--jobs", "1", NULL};
    double a[REPEATS], b[REPEATS], c[REPEATS], rb[REPEATS], rc[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        a[r] = wall_of(repro, run);
        b[r] = wall_of(repro, check);
        c[r] = wall_of(repro, serial);
        rb[r] = b[r] / a[r];
        rc[r] = c[r] / a[r];
    }
    remove(trace);
    double ratio = median(rb, REPEATS);
    printf("\nrepro check experiments/mlp.ini --runs 2: %.2f s (its runs at once where the CPUs\n"
           "hold them, the default), %.2f s with --jobs 1; one repro run: %.2f s\n"
           "check / run %.2fx %s, with --jobs 1 %.2fx (medians of %d interleaved, %s)\n",
           median(b, REPEATS), median(c, REPEATS), median(a, REPEATS), ratio,
           goal_note("repro check / one repro run, mlp", ratio, 2.1, 1), median(rc, REPEATS),
           REPEATS, repro);
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
                double rate = z ? 0 : one_run(&cfg, 20, NO_HASH);
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

/* replay.every = K (core/train_replay.h): the cost of recomputing every
 * K-th step's forward and backward before the update, over the run
 * without it (hashing off, so the figure is the replay's alone). The goal:
 * at most 1/K of a step, plus 5% for the copies and the compare. */
static void replay_cost(void)
{
    enum { K = 10 };
    static repro_config off, on;
    load(&off, "experiments/mlp.ini", 1);
    load(&on, "experiments/mlp.ini", 1);
    on.replay_every = K;
    double a[REPEATS], b[REPEATS];
    for (int r = 0; r < REPEATS; r++) { /* interleaved: the machine's drift hits both */
        a[r] = one_run(&off, 60, NO_HASH);
        b[r] = one_run(&on, 60, NO_HASH);
    }
    double r_off = median(a, REPEATS), r_on = median(b, REPEATS);
    double cost = r_off / r_on - 1; /* extra time per step, in steps */
    printf("\nreplay.every = %d, mlp, 1 thread: %.1f st/s off, %.1f st/s on: %+.1f%% per step "
           "%s\n",
           K, r_off, r_on, 100 * cost,
           goal_add("replay.every=10 cost per step (1/10 + 5%)", cost > 0 ? cost : 1e-9,
                    1.0 / K + 0.05, 1, 1));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows as it comes */
    const char *repro = argc > 1 ? argv[1] : "build/repro";
    const char *python = argc > 2 ? argv[2] : "python3";
    const char *script = argc > 3 ? argv[3] : "bench/torch_ref.py";
    char isa[256];
    repro_isa_describe(isa, sizeof isa);
    printf("vector paths: %s\n", isa);
    /* REPRO_BENCH_ONLY=ceiling or torch: that table alone (a kernel's
     * before and after in a minute, not the whole bench's ten) */
    const char *only = getenv("REPRO_BENCH_ONLY");
    if (!only || strcmp(only, "torch") != 0)
        ceiling_section();
    if (only && strcmp(only, "ceiling") == 0)
        return 0;
    versus_torch(python, script);
    if (only && strcmp(only, "torch") == 0) {
        goals_summary();
        return 0;
    }
    hashing_levels();
    check_over_run(repro);
    replay_cost();
    printf("\n");
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
    double a[REPEATS], b[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        a[r] = one_run(&off, 40, NO_HASH);
        b[r] = one_run(&on, 40, NO_HASH);
    }
    double r_off = median(a, REPEATS), r_on = median(b, REPEATS);
    printf("\nexperiments/cnn.ini benchmark off %.1f st/s, on %.1f st/s: on / off %.2fx\n", r_off,
           r_on, r_on / r_off);
    memory_table();
    goals_summary();
    return 0;
}
