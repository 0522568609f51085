/* The training step loop (see train.h): every kernel through the model's
 * backend table (kernels/backend.h). */
#include "core/train.h"
#include "core/train_replay.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "util/cpus.h"
#include "util/error.h"
#include "core/dist.h"
#include "core/train_dist.h"

/* The backend [train] backend names (the choice's text is its name), or
 * NULL with the error slot set: exit 3, saying what this build lacks. */
static const repro_backend *train_backend(const repro_config *c)
{
    const char *name = c->train_backend == REPRO_BACKEND_CUDA ? "cuda" : "cpu";
    const repro_backend *be = repro_backend_get(name);
    if (!be)
        repro_error_set(REPRO_EUNSUPPORTED, "%s: backend = %s: %s", c->path, name,
                        repro_backend_missing(name));
    return be;
}

/* The backend's idle kernel threads: the observer's work first (it is on
 * the step's path: the recorder's leaves), then the loader's rows. */
static int idle_work(void *arg)
{
    repro_trainer *t = arg;
    if (t->idle_first && t->idle_first(t->idle_first_arg))
        return 1;
    return t->loader_helped ? repro_loader_help(t->loader) : 0;
}

int repro_trainer_set_idle_first(repro_trainer *t, int (*fn)(void *arg), void *arg)
{
    const repro_backend *be = t->model.be;
    if (!be || !be->set_idle_work || t->cfg.train_threads < 2)
        return 0;
    be->set_idle_work(t->model.be_ctx, NULL, NULL); /* waits out calls in progress */
    t->idle_first = fn;
    t->idle_first_arg = arg;
    if (fn || t->loader_helped)
        be->set_idle_work(t->model.be_ctx, idle_work, t);
    return 1;
}

int repro_trainer_share_loader(repro_trainer *t, int extra_threads)
{
    const repro_config *c = &t->cfg;
    const repro_backend *be = t->model.be;
    /* A backend without idle work (a device one) keeps one host thread busy */
    int kernel_cpus = be && be->set_idle_work ? c->train_threads : 1;
    int busy = kernel_cpus + extra_threads;
    if (!t->loader || c->data_num_workers == 0 || busy < 2 || busy < repro_cpus_available() ||
        !repro_loader_set_cooperative(t->loader))
        return 0;
    if (!t->loader_helped && be && be->set_idle_work && c->train_threads > 1) {
        be->set_idle_work(t->model.be_ctx, NULL, NULL); /* idle_work reads the flag */
        t->loader_helped = 1;
        be->set_idle_work(t->model.be_ctx, idle_work, t);
    }
    t->loader_shared = 1;
    return 1;
}

static int load_data(repro_trainer *t)
{
    const repro_config *c = &t->cfg;
    if (c->data_dataset == REPRO_DATASET_SYNTHETIC) {
        if (repro_dataset_synthetic(&t->train_set, c->train_seed, REPRO_SPLIT_TRAIN,
                                    c->data_train_size) ||
            repro_dataset_synthetic(&t->test_set, c->train_seed, REPRO_SPLIT_TEST,
                                    c->data_test_size))
            return -1;
        return 0;
    }
    if (repro_dataset_load_idx(&t->train_set, c->data_train_images, c->data_train_labels))
        return -1;
    if (c->data_test_images[0])
        return repro_dataset_load_idx(&t->test_set, c->data_test_images, c->data_test_labels);
    /* No test files: hold out the last test_size training samples. */
    int hold = c->data_test_size;
    if (hold >= t->train_set.n)
        return repro_error_set(REPRO_EINVAL,
                               "%s: test_size %d leaves no training samples out of %d in %s",
                               c->path, hold, t->train_set.n, c->data_train_images);
    t->test_set.n = hold;
    t->test_set.images = malloc((size_t)hold * REPRO_IMG_PIXELS);
    t->test_set.labels = malloc((size_t)hold);
    if (!t->test_set.images || !t->test_set.labels)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    t->train_set.n -= hold;
    memcpy(t->test_set.images, t->train_set.images + (size_t)t->train_set.n * REPRO_IMG_PIXELS,
           (size_t)hold * REPRO_IMG_PIXELS);
    memcpy(t->test_set.labels, t->train_set.labels + t->train_set.n, (size_t)hold);
    return 0;
}

/* The step's own buffers, on the model's backend. */
static int alloc_step_buffers(repro_trainer *t)
{
    const repro_model *m = &t->model;
    size_t batch = (size_t)t->cfg.train_batch_size, nlog = batch * REPRO_CLASSES;
    size_t width = (size_t)m->layers[m->nlayers - 1].in_c;
    t->probs = m->be->alloc(m->be_ctx, nlog * sizeof(float));
    t->dlogits = m->be->alloc(m->be_ctx, nlog * sizeof(float));
    t->class_features = m->be->alloc(m->be_ctx, REPRO_CLASSES * width * sizeof(float));
    t->labels = m->be->alloc(m->be_ctx, batch * sizeof(int32_t));
    if (!t->probs || !t->dlogits || !t->class_features || !t->labels)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    return 0;
}

int repro_trainer_init(repro_trainer *t, const repro_config *cfg)
{
    return repro_trainer_init_ranked(t, cfg, NULL);
}

int repro_trainer_init_ranked(repro_trainer *t, const repro_config *cfg, struct repro_dist *dist)
{
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->dist = dist;
    t->rank = repro_dist_rank(dist);
    t->world = repro_dist_size(dist);
    const repro_config *c = &t->cfg;
    if (repro_config_validate(c) || repro_train_tp_groups(t, dist)) {
        repro_train_tp_free(t);
        return -1;
    }
    if (load_data(t))
        goto fail;
    if (c->train_batch_size > t->train_set.n) {
        repro_error_set(REPRO_EINVAL, "%s: batch_size %d is larger than the %d training samples",
                        c->path, c->train_batch_size, t->train_set.n);
        goto fail;
    }
    repro_loader_config lc = {
        .seed = c->train_seed,
        .batch_size = c->train_batch_size,
        .num_workers = c->data_num_workers,
        .prefetch = c->data_prefetch,
        .shuffle = c->data_shuffle,
        .augment_seed = c->data_augment_seed == 0 ? REPRO_AUGMENT_SEED_SAMPLE
                                                  : REPRO_AUGMENT_SEED_WORKER,
        .shift = c->data_shift,
        .flip = c->data_flip,
        .noise = (float)c->data_noise,
        .rank = t->rank,
        .world = t->world,
        .shard_size = c->train_shard_size,
    };
    if (repro_loader_new(&t->loader, &t->train_set, &lc))
        goto fail;
    const repro_backend *be = train_backend(c);
    if (!be || repro_model_init(&t->model, c, c->train_batch_size, be) ||
        repro_model_init_params(&t->model, c->train_seed) || alloc_step_buffers(t) ||
        repro_train_shards_setup(t) || repro_train_tp_attach(t))
        goto fail;
    repro_trainer_share_loader(t, 0);
    t->beta1_pow = 1.0;
    t->beta2_pow = 1.0;
    if (repro_scaler_init(&t->scaler, c))
        goto fail;
    return 0;
fail:
    repro_trainer_release(t);
    return -1;
}

static void optimizer_step(repro_trainer *t)
{
    const repro_config *c = &t->cfg;
    repro_model *m = &t->model;
    const repro_backend *be = m->be;
    if (c->train_optimizer == REPRO_OPT_ADAMW) {
        t->beta1_pow *= c->train_beta1;
        t->beta2_pow *= c->train_beta2;
    }
    for (int i = 0; i < m->nparams; i++) {
        repro_param *p = &m->params[i];
        if (c->train_optimizer == REPRO_OPT_SGD)
            be->sgd_step(m->be_ctx, p->data, p->grad, p->state1, p->numel, (float)c->train_lr,
                         (float)c->train_momentum, (float)c->train_weight_decay,
                         t->updates == 0);
        else
            be->adamw_step(m->be_ctx, p->data, p->grad, p->state1, p->state2, p->numel,
                           c->train_lr, c->train_beta1, c->train_beta2,
                           (float)c->train_eps, c->train_weight_decay,
                           1.0 - t->beta1_pow, 1.0 - t->beta2_pow);
    }
}

/* Per-class feature sums: the input of the last linear layer (the
 * network's penultimate features), scattered by label with an index-add —
 * the kernel whose atomic variant stands for GPU scatter-adds. Recorded in
 * the trace (metrics.class_features: class centroids up to a count);
 * training does not use it. */
static int class_features(repro_trainer *t, const repro_batch *b)
{
    repro_model *m = &t->model;
    const repro_layer *last = &m->layers[m->nlayers - 1];
    int width = last->in_c, rows;
    const float *src;
    const int32_t *labels;
    /* data parallel: rank 0 sums over the global batch it gathers */
    if (repro_train_gather_global(t, b, &src, &labels, &rows))
        return -1;
    if (t->rank != 0)
        return 0; /* only rank 0 records */
    m->be->zero(m->be_ctx, t->class_features,
                (size_t)REPRO_CLASSES * (size_t)width * sizeof(float));
    m->be->index_add(m->be_ctx, t->cfg.variant_index_add, t->class_features, REPRO_CLASSES,
                     labels, src, rows, width);
    long shape[2] = {REPRO_CLASSES, width};
    repro_model_report_op(m, "fwd.class_features", t->class_features, 2, shape);
    return 0;
}

/* zero_grad before the first micro-batch's backward. Both modes then let
 * that backward *write* the grads (accumulate = 0) and only later
 * micro-batches add: `zero` memsets first (PyTorch's zero_grad(): time and
 * a resident buffer), `none` does not (set_to_none: the buffer is dead
 * between steps). The memset is the only difference, so the bits cannot
 * differ — not even by the sign of a zero, which a "+0 then add" would
 * normalize (+0 + -0 = +0) and a plain write would not. */
static void zero_grad(repro_trainer *t)
{
    if (t->cfg.train_zero_grad != REPRO_ZERO_GRAD_ZERO)
        return;
    size_t bytes; /* the whole gradient arena: one call */
    void *grads = repro_model_arena(&t->model, REPRO_ARENA_GRADS, &bytes);
    if (bytes)
        t->model.be->zero(t->model.be_ctx, grads, bytes);
}

/* The forward and backward of batch b as micro-batch j: forward, loss,
 * class features, loss gradient (scaled), backward (accumulating unless
 * it is the first). hooks: the observer's (a replay has none: its
 * buffers hold the same values again). Returns the mean loss in *l; 0,
 * or -1 with the error slot set. */
static int forward_backward(repro_trainer *t, const repro_batch *b, int j, int hooks, double *l)
{
    const repro_train_observer_ops *obs = hooks ? t->observer.ops : NULL;
    repro_model *m = &t->model;
    int k = t->cfg.train_accumulation_steps;
    /* dropout stream: one per micro-batch (= the step when k = 1) */
    const float *logits =
        repro_model_forward(m, b->x, b->size, 1, t->cfg.train_seed, t->step * k + j);
    if (!logits)
        return -1;
    if (repro_train_loss(t, logits, b->size, l) || class_features(t, b))
        return -1;
    repro_train_loss_grad(t, b->size);
    repro_scale_loss_grad(&t->scaler, m, k, t->dlogits, (long)b->size * REPRO_CLASSES);
    if (j == 0) {
        /* The observer's hooks (the recorder, train_record.h): wait only
         * where a buffer it may still be hashing is about to be overwritten. */
        if (obs && obs->before_backward(t->observer.ctx))
            return -1;
        zero_grad(t);
    }
    repro_model_backward_acc(m, t->dlogits, b->size, j > 0);
    if (m->reduce_failed)
        return -1;
    /* --dump under accumulation: this micro-batch's inputs, before the
     * next one replaces them (reads only). */
    if (k > 1 && obs && obs->micro_batch(t->observer.ctx, j))
        return -1;
    return 0;
}

/* One micro-batch: the loader's next batch (into *bp), then its forward
 * and backward. */
static int micro_batch(repro_trainer *t, int j, const repro_batch **bp, double *l)
{
    if (repro_loader_next(t->loader, bp))
        return -1;
    const repro_batch *b = *bp;
    t->model.be->copy_h2d(t->model.be_ctx, t->labels, b->y, (size_t)b->size * sizeof(int32_t));
    return forward_backward(t, b, j, 1, l);
}

/* replay.every (train_replay.h): on every K-th step, the forward and
 * backward of its batch again from the same state, before the optimizer
 * commits; the two gradients must be the same bits. 0 or -1 (error slot;
 * REPRO_EMISMATCH when they differ). */
static int replay_step(repro_trainer *t, const repro_batch *b)
{
    long every = t->cfg.replay_every;
    if (every <= 0 || (t->step + 1) % every != 0)
        return 0;
    repro_replay first;
    if (repro_replay_save(&first, &t->model))
        return -1;
    double l;
    int rc = forward_backward(t, b, 0, 0, &l) ||
                     repro_replay_compare(&first, &t->model, &t->fault, t->step + 1, t->rank,
                                          t->replay_differs, sizeof t->replay_differs)
                 ? -1
                 : 0;
    repro_replay_release(&first);
    return rc;
}

int repro_trainer_step(repro_trainer *t)
{
    const repro_train_observer_ops *obs = t->observer.ops;
    int k = t->cfg.train_accumulation_steps;
    double loss_sum = 0;
    const repro_batch *b = NULL;
    for (int j = 0; j < k; j++) {
        double l;
        if (micro_batch(t, j, &b, &l))
            return -1;
        /* the step's loss: the mean over micro-batches, summed in order in double */
        loss_sum = j == 0 ? l : loss_sum + l;
    }
    t->loss = k == 1 ? loss_sum : loss_sum / k;
    if (replay_step(t, b))
        return -1;
    int skip = repro_scaler_unscale(&t->scaler, &t->model, t->step + 1);
    if (obs && (obs->after_backward(t->observer.ctx) || obs->before_update(t->observer.ctx)))
        return -1;
    if (!skip) {
        optimizer_step(t);
        t->updates++;
    }
    repro_scaler_update(&t->scaler);
    if (t->model.be->synchronize(t->model.be_ctx)) /* a device fault surfaces here */
        return repro_error_set(REPRO_EIO, "%s backend: %s", t->model.be->name,
                               t->model.be->last_error(t->model.be_ctx));
    if (repro_train_check_replicas(t, t->step + 1))
        return -1;
    t->step++;
    /* Eval before the recorder's P job, which writes this step's line (and
     * the eval into it); it reads the parameters only. */
    if (t->cfg.train_eval_every > 0 && t->step % t->cfg.train_eval_every == 0 && t->rank == 0) {
        repro_trainer_evaluate(t, &t->eval_loss, &t->eval_accuracy);
        t->eval_step = t->step;
    }
    if (obs && obs->after_update(t->observer.ctx))
        return -1;
    return 0;
}

/* Eval buffers: host x, y and logits; backend labels and probs. */
typedef struct {
    float *x, *logits, *probs;
    int32_t *y, *labels;
} eval_bufs;

static void eval_free(repro_model *m, eval_bufs *e)
{
    free(e->x);
    free(e->y);
    free(e->logits);
    m->be->free(m->be_ctx, e->probs);
    m->be->free(m->be_ctx, e->labels);
}

static int eval_alloc(repro_model *m, eval_bufs *e)
{
    size_t cap = (size_t)m->capacity;
    e->x = malloc(cap * REPRO_IMG_PIXELS * sizeof(float));
    e->y = malloc(cap * sizeof(int32_t));
    e->logits = malloc(cap * REPRO_CLASSES * sizeof(float));
    e->probs = m->be->alloc(m->be_ctx, cap * REPRO_CLASSES * sizeof(float));
    e->labels = m->be->alloc(m->be_ctx, cap * sizeof(int32_t));
    return e->x && e->y && e->logits && e->probs && e->labels ? 0 : -1;
}

/* One eval batch of B samples from `start`: adds its loss sum (mean * B)
 * to *total and its correct predictions to *correct. -1: forward failed. */
static int eval_batch(repro_trainer *t, eval_bufs *e, int start, int B, double *total,
                      long *correct)
{
    repro_model *m = &t->model;
    const repro_dataset *ds = &t->test_set;
    for (long i = 0; i < (long)B * REPRO_IMG_PIXELS; i++)
        e->x[i] = (float)ds->images[(size_t)start * REPRO_IMG_PIXELS + (size_t)i] / 255.0f;
    for (int i = 0; i < B; i++)
        e->y[i] = ds->labels[start + i];
    const float *logits = repro_model_forward(m, e->x, B, 0, 0, 0);
    if (!logits)
        return -1;
    m->be->copy_h2d(m->be_ctx, e->labels, e->y, (size_t)B * sizeof(int32_t));
    /* mean over this batch, weighted back to a sum: fixed order over batches */
    *total += m->be->softmax_xent_forward(m->be_ctx, logits, e->labels, e->probs, B,
                                          REPRO_CLASSES) * B;
    m->be->copy_d2h(m->be_ctx, e->logits, logits, (size_t)B * REPRO_CLASSES * sizeof(float));
    for (int i = 0; i < B; i++) {
        const float *z = e->logits + (size_t)i * REPRO_CLASSES;
        int best = 0;
        for (int j = 1; j < REPRO_CLASSES; j++)
            if (z[j] > z[best])
                best = j;
        *correct += best == e->y[i];
    }
    return 0;
}

void repro_trainer_evaluate(repro_trainer *t, double *loss, double *accuracy)
{
    const repro_dataset *ds = &t->test_set;
    int cap = t->model.capacity;
    eval_bufs e = {0};
    double total = 0;
    long correct = 0;
    /* Eval mode and no_grad: no dropout (train = 0), no backward after it,
     * and the op observer (trace level op, bisect taps) detached, since
     * eval outputs are not training ops. */
    void (*on_op)(void *, const char *, float *, int, const long *) = t->model.on_op;
    t->model.on_op = NULL;
    *loss = *accuracy = 0.0 / 0.0;
    if (eval_alloc(&t->model, &e) || ds->n == 0)
        goto done;
    for (int start = 0; start < ds->n; start += cap) {
        int B = ds->n - start < cap ? ds->n - start : cap;
        if (eval_batch(t, &e, start, B, &total, &correct))
            goto done;
    }
    *loss = total / ds->n;
    *accuracy = (double)correct / ds->n;
done:
    t->model.on_op = on_op;
    eval_free(&t->model, &e);
}

void repro_trainer_release(repro_trainer *t)
{
    if (t->observer.ops) /* first: the recorder's hasher thread reads the model */
        t->observer.ops->release(t->observer.ctx);
    if (t->loader_helped || t->idle_first) /* idle kernel threads stop before the loader goes */
        t->model.be->set_idle_work(t->model.be_ctx, NULL, NULL);
    repro_loader_free(t->loader);
    repro_train_shards_free(t);
    repro_train_tp_free(t);
    repro_model *m = &t->model;
    if (m->be) { /* the step buffers, before the model's backend context goes */
        m->be->free(m->be_ctx, t->probs);
        m->be->free(m->be_ctx, t->dlogits);
        m->be->free(m->be_ctx, t->class_features);
        m->be->free(m->be_ctx, t->labels);
    }
    repro_model_release(m);
    repro_dataset_release(&t->train_set);
    repro_dataset_release(&t->test_set);
    memset(t, 0, sizeof *t);
}
