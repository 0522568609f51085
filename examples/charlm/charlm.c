/* charlm: a small character-level language model that records its training
 * through librepro — an example of a program repro did not write.
 *
 * Model: an Elman recurrent network over windows of T characters,
 *   e_t = E[c_t]                      (embedding, V x D)
 *   h_t = tanh(Wx e_t + Wh h_{t-1} + b)   (D -> H, h_0 = 0)
 *   p_t = softmax(Wo h_t + bo)        (predicts c_{t+1})
 * trained with plain SGD on the mean cross-entropy, full backpropagation
 * through the window. The corpus is generated from the seed (a tiny
 * grammar of words), so the program needs no files.
 *
 * Determinism: each batch is cut into fixed shards of SHARD windows; a
 * shard's gradient is computed by one thread in sample order, and the
 * shard gradients are added in shard order — so the thread count
 * (REPRO_THREADS or --threads) never changes a bit.
 *
 * The loader follows PyTorch's DataLoader contract: the sampler (which
 * windows make batch k) draws from a seeded generator on the main thread;
 * batch k is loaded by worker k % W, whose RNG is seeded base_seed + w
 * (repro_worker_seed), and augmented (2% of characters replaced). By
 * default augmentation is keyed by (base_seed, sample), so the worker count
 * (REPRO_WORKERS) never matters; `--set augment=worker` draws it from the
 * worker's RNG instead, as a plain PyTorch loader would, and then the
 * worker count changes the bits.
 *
 * The negative control: CHARLM_UNORDERED=1 adds shard gradients in the
 * order the threads finish (an "atomic" reduction), so with 2+ threads the
 * bits change from run to run — `repro check` must fail on it, and the op
 * it names is the gradient reduction.
 *
 * Usage: charlm [--steps N] [--threads N] [--trace PATH]
 * Environment (set by `repro check -- CMD`, read with repro_run_env_read):
 * REPRO_TRACE, REPRO_SEED, REPRO_THREADS, REPRO_WORKERS, REPRO_TRACE_LEVEL,
 * REPRO_SET_UNORDERED (`--set unordered=1`). Only <repro/repro.h> is used. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charlm.h"

enum { CORPUS = 20000, PURPOSE_CORPUS = 100, PURPOSE_LOADER = 101, PURPOSE_INIT = 102,
       PURPOSE_AUGMENT = 103 };

typedef struct {
    const unsigned char *windows; /* BATCH windows of T + 1 characters */
    const params *p;
    params *grads;     /* NSHARD gradient buffers */
    double *losses;    /* NSHARD loss sums */
} batch_job;

/* Exit 2 for a bad setting, 3 for anything else (repro's own codes). */
void die(const char *what)
{
    fprintf(stderr, "charlm: %s: %s\n", what, repro_error_last());
    exit(repro_error_last_code() == REPRO_EINVAL ? 2 : 3);
}

/* ---- data -------------------------------------------------------------- */

static void make_corpus(unsigned char *text, uint64_t seed)
{
    static const char *const words[] = {"the", "cat", "sat", "on", "mat", "a", "dog",
                                        "ran", "to", "park", "and", "saw", "bird", "flew"};
    repro_generator g;
    repro_generator_init(&g, repro_seed_derive(seed, PURPOSE_CORPUS, 0, 0, 0, 0));
    int n = 0;
    while (n < CORPUS) {
        const char *w = words[repro_generator_below(&g, sizeof words / sizeof *words)];
        for (const char *c = w; *c && n < CORPUS; c++)
            text[n++] = (unsigned char)(*c - 'a' + 1);
        if (n < CORPUS)
            text[n++] = 0; /* space */
    }
}

/* Batch k: the sampler's window starts (main thread, in batch order),
 * then the owning worker's loading and augmentation into `windows`. */
static void load_batch(unsigned char *windows, int32_t *starts, const unsigned char *corpus,
                       uint64_t seed, long k, int workers, int augment_by_worker)
{
    repro_generator sampler;
    repro_generator_init(&sampler, repro_seed_derive(seed, PURPOSE_LOADER, 0, 0, 0, (uint64_t)k));
    for (int i = 0; i < BATCH; i++)
        starts[i] = (int32_t)repro_generator_below(&sampler, CORPUS - T - 1);
    uint64_t base = repro_seed_derive(seed, PURPOSE_LOADER, 1, 0, 0, 0);
    int w = (int)(k % (workers > 0 ? workers : 1));
    repro_generator worker; /* the worker's RNG at its (k / W)-th batch */
    repro_generator_init(&worker, repro_seed_derive(repro_worker_seed(base, w), PURPOSE_LOADER, 2,
                                                    0, 0, (uint64_t)(k / (workers > 0 ? workers : 1))));
    for (int i = 0; i < BATCH; i++) {
        repro_generator by_sample;
        repro_generator_init(&by_sample, repro_seed_derive(base, PURPOSE_AUGMENT, 0, 0, 0,
                                                           (uint64_t)k * BATCH + (uint64_t)i));
        repro_generator *g = augment_by_worker ? &worker : &by_sample;
        unsigned char *win = windows + (size_t)i * (T + 1);
        memcpy(win, corpus + starts[i], T + 1);
        for (int t = 0; t < T; t++) /* the targets' last character stays exact */
            if (repro_generator_below(g, 50) == 0)
                win[t] = (unsigned char)repro_generator_below(g, V);
    }
}

/* ---- the model ------------------------------------------------------------ */

static void init_params(params *p, uint64_t seed)
{
    repro_generator g;
    repro_generator_init(&g, repro_seed_derive(seed, PURPOSE_INIT, 0, 0, 0, 0));
    float *f = (float *)p;
    for (size_t i = 0; i < sizeof *p / sizeof(float); i++)
        f[i] = (repro_generator_unit(&g) - 0.5f) * 0.2f;
}

/* One position of the trainer's forward: the state after character ch
 * from the state before it, and the logits that predict the next
 * character (before the softmax). Every sum starts from the bias and adds
 * its terms in index order. */
void charlm_cell(const params *p, int ch, const float *h_prev, float *h_next, float *logits)
{
    const float *e = &p->E[ch * D];
    for (int j = 0; j < H; j++) {
        float a = p->b[j];
        for (int k = 0; k < D; k++)
            a += p->Wx[j * D + k] * e[k];
        for (int k = 0; k < H; k++)
            a += p->Wh[j * H + k] * h_prev[k];
        h_next[j] = tanhf(a);
    }
    for (int v = 0; v < V; v++) {
        float a = p->bo[v];
        for (int k = 0; k < H; k++)
            a += p->Wo[v * H + k] * h_next[k];
        logits[v] = a;
    }
}

/* Forward and backward of one window, gradients added into g (in the
 * window's order); returns the window's summed cross-entropy. */
static double window_grad(const params *p, const unsigned char *c, params *g)
{
    float h[T + 1][H], pr[T][V];
    double loss = 0;
    memset(h[0], 0, sizeof h[0]);
    for (int t = 0; t < T; t++) {
        charlm_cell(p, c[t], h[t], h[t + 1], pr[t]);
        float mx = -1e30f, sum = 0;
        for (int v = 0; v < V; v++)
            mx = pr[t][v] > mx ? pr[t][v] : mx;
        for (int v = 0; v < V; v++)
            sum += (pr[t][v] = expf(pr[t][v] - mx));
        for (int v = 0; v < V; v++)
            pr[t][v] /= sum;
        loss -= log((double)pr[t][c[t + 1]]);
    }
    float dh[H] = {0};
    for (int t = T - 1; t >= 0; t--) {
        float dl[V], da[H];
        for (int v = 0; v < V; v++)
            dl[v] = pr[t][v] - (v == c[t + 1]);
        for (int v = 0; v < V; v++) {
            g->bo[v] += dl[v];
            for (int k = 0; k < H; k++)
                g->Wo[v * H + k] += dl[v] * h[t + 1][k];
        }
        for (int k = 0; k < H; k++) {
            float s = dh[k];
            for (int v = 0; v < V; v++)
                s += p->Wo[v * H + k] * dl[v];
            da[k] = s * (1.0f - h[t + 1][k] * h[t + 1][k]);
        }
        const float *e = &p->E[c[t] * D];
        for (int j = 0; j < H; j++) {
            g->b[j] += da[j];
            for (int k = 0; k < D; k++) {
                g->Wx[j * D + k] += da[j] * e[k];
                g->E[c[t] * D + k] += p->Wx[j * D + k] * da[j];
            }
            for (int k = 0; k < H; k++)
                g->Wh[j * H + k] += da[j] * h[t][k];
        }
        for (int k = 0; k < H; k++) {
            float s = 0;
            for (int j = 0; j < H; j++)
                s += p->Wh[j * H + k] * da[j];
            dh[k] = s;
        }
    }
    return loss;
}

/* ---- threads: shards in, shard gradients out ------------------------------ */

typedef struct {
    batch_job *job;
    int first, stride; /* this thread's shards: first, first + stride, ... */
    params *sum;       /* unordered mode: the shared sum */
    pthread_mutex_t *mu;
} worker_arg;

static void *run_shards(void *arg)
{
    worker_arg *w = arg;
    batch_job *j = w->job;
    for (int s = w->first; s < NSHARD; s += w->stride) {
        memset(&j->grads[s], 0, sizeof(params));
        j->losses[s] = 0;
        for (int i = s * SHARD; i < (s + 1) * SHARD; i++)
            j->losses[s] += window_grad(j->p, j->windows + (size_t)i * (T + 1), &j->grads[s]);
        if (w->sum) { /* the negative control: add as soon as done */
            pthread_mutex_lock(w->mu);
            float *dst = (float *)w->sum, *src = (float *)&j->grads[s];
            for (size_t k = 0; k < sizeof(params) / sizeof(float); k++)
                dst[k] += src[k];
            pthread_mutex_unlock(w->mu);
        }
    }
    return NULL;
}

/* The batch gradient into *g (mean over windows and positions); returns
 * the mean loss. Shard sums are added in shard order unless unordered. */
static double batch_grad(batch_job *j, int threads, int unordered, params *g)
{
    pthread_t tid[64];
    worker_arg args[64];
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    memset(g, 0, sizeof *g);
    for (int t = 0; t < threads; t++) {
        args[t] = (worker_arg){j, t, threads, unordered ? g : NULL, &mu};
        if (t > 0 && pthread_create(&tid[t], NULL, run_shards, &args[t]) != 0) {
            fprintf(stderr, "charlm: cannot start a thread\n");
            exit(3);
        }
    }
    run_shards(&args[0]);
    for (int t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
    float *dst = (float *)g;
    size_t n = sizeof(params) / sizeof(float);
    for (int s = 0; !unordered && s < NSHARD; s++) {
        const float *src = (const float *)&j->grads[s];
        for (size_t k = 0; k < n; k++)
            dst[k] += src[k];
    }
    double loss = 0;
    for (int s = 0; s < NSHARD; s++)
        loss += j->losses[s];
    for (size_t k = 0; k < n; k++)
        dst[k] /= (float)(BATCH * T);
    return loss / (BATCH * T);
}

/* ---- recording ------------------------------------------------------------ */

/* The parameters as tensors named prefix + name, or (prefix NULL) as the
 * starting state: input.state.<name> (repro_recorder_state). */
static void record(repro_recorder *r, const char *prefix, const params *p)
{
    static const struct {
        const char *name;
        size_t off;
        int ndim;
        int64_t shape[2];
    } t[] = {
        {"embed.weight", offsetof(params, E), 2, {V, D}},
        {"rnn.weight_ih", offsetof(params, Wx), 2, {H, D}},
        {"rnn.weight_hh", offsetof(params, Wh), 2, {H, H}},
        {"rnn.bias", offsetof(params, b), 1, {H}},
        {"head.weight", offsetof(params, Wo), 2, {V, H}},
        {"head.bias", offsetof(params, bo), 1, {V}},
    };
    char name[64];
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        const void *data = (const char *)p + t[i].off;
        snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t[i].name);
        if (prefix ? repro_recorder_tensor(r, name, REPRO_F32, t[i].ndim, t[i].shape, data)
                   : repro_recorder_state(r, name, REPRO_F32, t[i].ndim, t[i].shape, data))
            die("recording");
    }
}

int main(int argc, char **argv)
{
    /* The runner protocol: seed, threads, workers, trace level from repro
     * (defaults outside it). A malformed value stops the program. */
    charlm_parity_serve_if_asked(); /* REPRO_PARITY=infer: serve, then exit */
    repro_run_env env;
    if (repro_run_env_read(&env, 1234))
        die("reading the REPRO_* environment");
    long steps = 150, threads = env.threads, workers = env.workers;
    const char *steps_set = repro_run_env_setting("steps"); /* repro ... --steps N */
    if (steps_set)
        steps = strtol(steps_set, NULL, 10);
    const char *trace = NULL; /* NULL: $REPRO_TRACE */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace = argv[++i];
        else {
            fprintf(stderr, "usage: charlm [--steps N] [--threads N] [--trace PATH]\n");
            return 2;
        }
    }
    if (steps < 1 || threads < 1 || threads > 64 || workers < 0) {
        fprintf(stderr, "charlm: steps >= 1, threads 1..64, workers >= 0\n");
        return 2;
    }
    uint64_t seed = env.seed;
    /* The negative control: from the environment or `--set unordered=1`. */
    const char *un = repro_run_env_setting("unordered");
    int unordered = (un && !strcmp(un, "1")) ||
                    (getenv("CHARLM_UNORDERED") && !strcmp(getenv("CHARLM_UNORDERED"), "1"));
    const char *aug = repro_run_env_setting("augment");
    int augment_by_worker = aug && !strcmp(aug, "worker");
    if (aug && !augment_by_worker && strcmp(aug, "sample")) {
        fprintf(stderr, "charlm: --set augment=%s: expected sample or worker\n", aug);
        return 2;
    }


    static unsigned char corpus[CORPUS];
    static params p, g, shard_grads[NSHARD];
    double losses[NSHARD];
    int32_t starts[BATCH];
    static unsigned char windows[BATCH * (T + 1)];
    make_corpus(corpus, seed);
    init_params(&p, seed);

    char config[320];
    snprintf(config, sizeof config,
             "{\"model\": \"rnn\", \"vocab\": %d, \"embed\": %d, \"hidden\": %d, \"window\": %d, "
             "\"batch\": %d, \"lr\": 0.5, \"unordered\": %s, \"augment\": \"%s\"}",
             V, D, H, T, BATCH, unordered ? "true" : "false",
             augment_by_worker ? "worker" : "sample");
    repro_run_info info = {"charlm", seed, config};
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    repro_recorder_options_from_env(&o, &env);
    o.threads = (int)threads;
    o.total_steps = steps;
    repro_recorder *r;
    if (repro_recorder_open_ex(&r, trace, &info, &o))
        die("opening the trace");
    /* What this run really uses, so `repro check --threads 1,2` can tell
     * that the scope was exercised. */
    if (repro_recorder_set_threads(r, (int)threads, (int)workers))
        die("recording the thread count");

    /* The weights step 1 starts from: `repro bisect` can then tell an op
     * that is nondeterministic from one given another initialization. */
    record(r, NULL, &p);

    batch_job job = {windows, &p, shard_grads, losses};
    for (long step = 1; step <= steps; step++) {
        load_batch(windows, starts, corpus, seed, step - 1, (int)workers, augment_by_worker);
        double loss = batch_grad(&job, (int)threads, unordered, &g);
        /* At REPRO_TRACE_LEVEL=op (repro bisect): the op outputs in order —
         * each shard's loss and gradient, then their reduction. */
        int64_t lshape[1] = {NSHARD}, gshape[2] = {NSHARD, (int64_t)(sizeof(params) / sizeof(float))};
        int64_t rshape[1] = {(int64_t)(sizeof(params) / sizeof(float))};
        if (repro_recorder_op(r, "fwd.shard_loss", REPRO_F64, 1, lshape, losses) ||
            repro_recorder_op(r, "bwd.shard_grad", REPRO_F32, 2, gshape, shard_grads) ||
            repro_recorder_op(r, "reduce.grad", REPRO_F32, 1, rshape, &g))
            die("recording an op");
        int64_t sshape[1] = {BATCH};
        int64_t wshape[2] = {BATCH, T + 1};
        if (repro_recorder_tensor(r, "batch.starts", REPRO_I32, 1, sshape, starts) ||
            repro_recorder_tensor(r, "batch.windows", REPRO_U8, 2, wshape, windows))
            die("recording");
        record(r, "grad.", &g);
        float *pf = (float *)&p, *gf = (float *)&g;
        for (size_t k = 0; k < sizeof p / sizeof(float); k++)
            pf[k] -= 0.5f * gf[k];
        record(r, "param.", &p);
        if (step == steps) /* REPRO_PARITY=train: checkpoint and probe outputs */
            charlm_parity_after_training(r, &p);
        if (repro_recorder_step(r, step, loss))
            die("ending the step");
        if (step == 1 || step == steps)
            fprintf(stderr, "charlm: step %ld loss %.4f\n", step, loss);
    }
    char chain[65];
    if (repro_recorder_close(r, chain))
        die("closing the trace");
    printf("charlm: %ld steps, chain %s\n", steps, chain);
    return 0;
}
