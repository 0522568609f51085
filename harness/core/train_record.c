/* The built-in workload's recording (see train_record.h for the pipeline,
 * trace.h for what is recorded and in which order): every digest, chain and
 * trace line comes from the public recorder (repro/repro.h). */
#include "core/train_record.h"

#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record/leaf_queue.h"
#include "record/leaf_share.h"
#include "record/recorder.h"
#include "record/stats.h"
#include "repro/repro.h"
#include "util/cpus.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/npy.h"
#include "util/opnames.h"
#include "util/suggest.h"

enum { PHASE_G = 0, PHASE_P = 1 };
/* What the training thread may wait for (wait_done): a job finished
 * (PHASE_G, PHASE_P) or, before the optimizer, a P job's tensors read. */
enum { P_READ = 2 };

/* Tensors of at least this many bytes have their leaves shared with a
 * waiting training thread (record/leaf_share.h); smaller ones are not worth
 * the hand-off. */
enum { SPLIT_BYTES = 64 * 1024 };

/* One recorded tensor. `data` is either live model memory (grads, params,
 * optimizer state) or one of the two parity buffers (small copies). */
typedef struct {
    char name[64];
    const char *dtype;
    repro_dtype type;
    int ndim;
    long shape[4];
    int64_t shape64[4];
    size_t nbytes;
    int phase;
    const void *live;     /* live buffer, or NULL if copied */
    void *copy[2];        /* parity copies (batch, logits, loss, rng; and the live
                             buffers of a device backend, fetched at the hooks) */
    int device;           /* live is device memory: hashed from copy[] */
    long stats_step;      /* the step whose stats are in `stats` (0: none): computed
                             beside another tensor's (compute_stats) */
    repro_tensor_stats stats;
    repro_digest *leaves; /* a large tensor's leaf digests, queued (inline jobs) */
} entry;

typedef struct {
    int phase;
    long step;
} job;

/* Everything about one step that the hasher fills, by step parity. */
typedef struct {
    int epoch;
    uint32_t loss_bits;
    double loss_value;
    int has_eval;             /* train.eval_every: this step's held-out eval */
    double eval_loss, eval_accuracy;
} step_slot;

struct repro_train_recorder {
    repro_trainer *t;
    repro_train_recorder_opts o;
    char dump_dir[1024];
    repro_recorder *pub;     /* the public recorder: digests, chain, trace */
    repro_leaf_share share;  /* large tensors' leaves, shared with a waiting
                                training thread; uses mu and cv below */
    repro_digest *leaves;    /* room for the largest shared tensor's leaves
                                (NULL: no tensor is large enough to share) */
    repro_leaf_queue lq;     /* inline jobs: large tensors' leaves, queued for
                                idle kernel threads; uses mu and cv below */
    repro_leaf_batch batch[2]; /* by phase: the queued job's large tensors */
    repro_leaf_batch stats_batch; /* inline, detail steps: the job's large
                                     tensors' stats, as tasks of two threads */
    struct stats_task { entry *a, *b; } *tasks; /* room for nentries */
    long tasks_step;
    repro_fault fault;
    FILE *tap;
    int nentries;
    entry *entries;
    int rng_entry;           /* rng.state: hashed last (trace.h), copied in G */
    step_slot slots[2];

    pthread_t thread;
    int thread_started;
    int inline_jobs;         /* no hasher thread: the training thread runs each job
                                where it must be done, its leaves hashed meanwhile
                                by idle kernel threads (leaf_queue.h) */
    int help_loader;         /* the hasher fills loader rows when idle (set before it starts) */
    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t cv;
    job queue[4];
    int qhead, qlen;
    long g_done, p_done;     /* last step whose G / P job finished */
    long p_hashed;           /* last step whose P job has read every tensor (its
                                trace line may still be in the writing) */
    int stop;
    int failed;              /* set by either thread, under mu */
    int fail_code;
    char fail_msg[1024];
    void *op_host;           /* device backends: an op output fetched for hashing */
    size_t op_host_bytes;
};

/* ---- the tensor list ------------------------------------------------------ */

static repro_dtype dtype_of(const char *name)
{
    repro_dtype d = REPRO_F32;
    repro_dtype_from_name(&d, name);
    return d;
}

static entry *add_entry(repro_train_recorder *r, const char *name, const char *dtype, int phase,
                        const void *live, int ndim, const long *shape)
{
    entry *e = &r->entries[r->nentries++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dtype = dtype;
    e->type = dtype_of(dtype);
    e->phase = phase;
    e->ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        e->shape64[i] = shape[i];
        n *= (size_t)shape[i];
    }
    e->nbytes = n * 4;
    e->live = live;
    return e;
}

static int add_copied(repro_train_recorder *r, const char *name, const char *dtype, int ndim,
                      const long *shape)
{
    entry *e = add_entry(r, name, dtype, PHASE_G, NULL, ndim, shape);
    for (int p = 0; p < 2; p++)
        if (!(e->copy[p] = calloc(1, e->nbytes ? e->nbytes : 4)))
            return -1;
    return 0;
}

static void param_shape(const repro_param *p, long *shape)
{
    for (int d = 0; d < p->ndim; d++)
        shape[d] = p->shape[d];
}

/* The batch, outputs and metrics: small, copied by parity (phase G). The
 * input's per-sample shape is the dataset's (one grey channel of
 * REPRO_IMG_ROWS x REPRO_IMG_COLS), the classes the model's outputs. */
static int add_batch_entries(repro_train_recorder *r)
{
    const repro_model *m = &r->t->model;
    const repro_layer *last = &m->layers[m->nlayers - 1];
    long B = r->t->cfg.train_batch_size, classes = repro_model_out_features(m);
    long sb[1] = {B}, sx[4] = {B, 1, REPRO_IMG_ROWS, REPRO_IMG_COLS}, sl[2] = {B, classes};
    long scf[2] = {classes, last->in_c};
    return add_copied(r, "batch.ids", "u32", 1, sb) || add_copied(r, "batch.x", "f32", 4, sx) ||
                   add_copied(r, "batch.y", "i32", 1, sb) ||
                   add_copied(r, "logits", "f32", 2, sl) || add_copied(r, "loss", "f32", 0, NULL) ||
                   add_copied(r, "metrics.class_features", "f32", 2, scf)
               ? -1
               : 0;
}

static int build_entries(repro_train_recorder *r)
{
    repro_model *m = &r->t->model;
    int cap = 11 + 4 * m->nparams; /* 7 small copies + 2 scaler (fp16) + 4 per param */
    r->entries = calloc((size_t)cap, sizeof *r->entries);
    if (!r->entries || add_batch_entries(r))
        return -1;
    char name[64];
    long shape[4];
    for (int i = m->nparams - 1; i >= 0; i--) { /* backward order: last layer first */
        const repro_param *p = &m->params[i];
        param_shape(p, shape);
        snprintf(name, sizeof name, "grad.%s", p->name);
        add_entry(r, name, "f32", PHASE_G, p->grad, p->ndim, shape);
    }
    /* fp16 only (so other traces keep their step digests): the loss
     * scaler's state, after the grads and before the parameters. */
    if (r->t->cfg.train_precision == REPRO_PRECISION_FP16 &&
        (add_copied(r, "scaler.scale", "f32", 0, NULL) ||
         add_copied(r, "scaler.skipped", "u32", 0, NULL)))
        return -1;
    long srng[1] = {8};
    r->rng_entry = r->nentries;
    if (add_copied(r, "rng.state", "u32", 1, srng))
        return -1;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        param_shape(p, shape);
        snprintf(name, sizeof name, "param.%s", p->name);
        add_entry(r, name, "f32", PHASE_P, p->data, p->ndim, shape);
    }
    int adam = m->optimizer == REPRO_OPT_ADAMW;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        param_shape(p, shape);
        snprintf(name, sizeof name, "%s.%s", adam ? "adamw.exp_avg" : "sgd.momentum", p->name);
        add_entry(r, name, "f32", PHASE_P, p->state1, p->ndim, shape);
        if (adam) {
            snprintf(name, sizeof name, "adamw.exp_avg_sq.%s", p->name);
            add_entry(r, name, "f32", PHASE_P, p->state2, p->ndim, shape);
        }
    }
    /* A device backend's live buffers cannot be read by the hasher thread:
     * each gets parity copies, fetched on the training thread at the hook
     * that hands the step to the hasher (after_backward, after_update). */
    for (int i = 0; !m->be->host_memory && i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (!e->live)
            continue;
        e->device = 1;
        for (int p = 0; p < 2; p++)
            if (!(e->copy[p] = calloc(1, e->nbytes ? e->nbytes : 4)))
                return -1;
    }
    return 0;
}

/* Backend memory to the host: memcpy for a host-memory backend, the
 * backend's copy (which waits for the work that writes it) otherwise. */
static void fetch(const repro_train_recorder *r, void *dst, const void *src, size_t n)
{
    const repro_model *m = &r->t->model;
    if (m->be->host_memory)
        memcpy(dst, src, n);
    else
        m->be->copy_d2h(m->be_ctx, dst, src, n);
}

/* A live device entry's bytes into this step's copy, the fault applied
 * there and, when it flipped a bit, written back so training sees it. */
static void fetch_live(repro_train_recorder *r, entry *e, long step, int par)
{
    const repro_model *m = &r->t->model;
    m->be->copy_d2h(m->be_ctx, e->copy[par], e->live, e->nbytes);
    if (repro_fault_apply(&r->fault, step, e->name, e->copy[par], e->nbytes))
        m->be->copy_h2d(m->be_ctx, (void *)e->live, e->copy[par], e->nbytes);
}

/* ---- hashing (the hasher thread) ------------------------------------------ */

static int dump_step(const repro_train_recorder *r, long step)
{
    for (int i = 0; i < r->o.ndump; i++)
        if (r->o.dump_steps[i] == step)
            return 1;
    return 0;
}

static int dump_tensor(const repro_train_recorder *r, long step, const char *name,
                       const char *dtype, int ndim, const long *shape, const void *data,
                       size_t nbytes)
{
    if (!dump_step(r, step) || (r->o.dump_only && fnmatch(r->o.dump_only, name, 0) != 0))
        return 0;
    char dir[1200], path[1400];
    snprintf(dir, sizeof dir, "%s/step-%06ld", r->dump_dir, step);
    if (mkdir(r->dump_dir, 0777) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create dump directory", r->dump_dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create dump directory", dir);
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    return repro_npy_write(path, dtype, ndim, shape, data, nbytes);
}

/* Backend memory (host or device) dumped through a host copy. */
static int dump_backend(const repro_train_recorder *r, long step, const char *name,
                        const char *dtype, int ndim, const long *shape, const void *data,
                        size_t nbytes)
{
    if (!dump_step(r, step))
        return 0;
    void *host = malloc(nbytes ? nbytes : 1);
    if (!host)
        return repro_error_set(REPRO_ENOMEM, "out of memory dumping %s", name);
    fetch(r, host, data, nbytes);
    int rc = dump_tensor(r, step, name, dtype, ndim, shape, host, nbytes);
    free(host);
    return rc;
}

/* Step 0 (--dump 0): the initial parameters and optimizer state, before
 * any update (after a resume: the checkpoint's). */
static int dump_initial(const repro_train_recorder *r)
{
    long step = r->o.start_step;
    for (int i = 0; i < r->nentries; i++) {
        const entry *e = &r->entries[i];
        if (e->phase == PHASE_P && e->live &&
            dump_backend(r, step, e->name, e->dtype, e->ndim, e->shape, e->live, e->nbytes))
            return -1;
    }
    return 0;
}

/* On a dumped step, what the trace does not hash but a reader rebuilding
 * the step needs: each dropout layer's mask (after the forward, before
 * the next) ... */
static int dump_masks(const repro_train_recorder *r, long step, const char *suffix)
{
    const repro_model *m = &r->t->model;
    int B = r->t->batch ? r->t->batch->size : 0;
    /* Data parallel: rank 0 holds its own rows' masks only (the masks are
     * the same bits as a ranks = 1 run's, which dumps them). */
    if (r->t->world > 1)
        return 0;
    for (int i = 0; dump_step(r, step) && i < m->nlayers; i++) {
        const repro_layer *l = &m->layers[i];
        if (l->kind != REPRO_LAYER_DROPOUT || !l->mask)
            continue;
        char name[64];
        long shape[4] = {B, l->out_c, l->out_h, l->out_w};
        snprintf(name, sizeof name, "mask.%s%s", l->name, suffix);
        if (dump_backend(r, step, name, "u8", l->out_h * l->out_w > 1 ? 4 : 2, shape, l->mask,
                         (size_t)B * (size_t)l->out_c * (size_t)l->out_h * (size_t)l->out_w))
            return -1;
    }
    return 0;
}

/* ... each micro-batch's inputs and masks under accumulation (the
 * entries above hold only the last micro-batch's) ... */
static int micro_batch(repro_train_recorder *r, int j)
{
    const repro_trainer *t = r->t;
    long step = t->step + 1;
    const repro_batch *b = t->batch;
    if (t->cfg.train_accumulation_steps < 2 || !dump_step(r, step) || !b)
        return 0;
    long B = b->size, sb[1] = {B}, sx[4] = {B, 1, REPRO_IMG_ROWS, REPRO_IMG_COLS};
    size_t n = (size_t)B;
    char ids[64], x[64], y[64], suffix[16];
    snprintf(suffix, sizeof suffix, ".mb%d", j);
    snprintf(ids, sizeof ids, "batch.ids%s", suffix);
    snprintf(x, sizeof x, "batch.x%s", suffix);
    snprintf(y, sizeof y, "batch.y%s", suffix);
    return dump_tensor(r, step, ids, "u32", 1, sb, b->ids, n * sizeof(uint32_t)) ||
                   dump_tensor(r, step, x, "f32", 4, sx, b->x,
                               n * REPRO_IMG_PIXELS * sizeof(float)) ||
                   dump_tensor(r, step, y, "i32", 1, sb, b->y, n * sizeof(int32_t)) ||
                   dump_masks(r, step, suffix)
               ? -1
               : 0;
}

/* ... and the optimizer's scalars after the update (step count, updates
 * applied, and AdamW's beta powers). */
static int dump_optim(const repro_train_recorder *r, long step)
{
    const repro_trainer *t = r->t;
    if (!dump_step(r, step))
        return 0;
    int64_t counts[2] = {t->step, t->updates};
    double pows[2] = {t->beta1_pow, t->beta2_pow};
    long s2[1] = {2};
    if (dump_tensor(r, step, "optim.step_updates", "i64", 1, s2, counts, sizeof counts))
        return -1;
    if (t->model.optimizer == REPRO_OPT_ADAMW &&
        dump_tensor(r, step, "optim.beta_pows", "f64", 1, s2, pows, sizeof pows))
        return -1;
    return 0;
}

/* Whether the public recorder keeps step n's tensor detail (its rule for
 * the built-in experiments, repro_recorder_no_first_detail: level above
 * step, and every K-th step or the last). */
static int detail_step(const repro_train_recorder *r, long step)
{
    return r->o.level != REPRO_TRACE_STEP &&
           (step % r->o.every == 0 || step == r->o.total_steps);
}

/* The bytes the hasher reads for entry e at step n: the live buffer, or
 * this step's parity copy. */
static const void *entry_data(const entry *e, long step)
{
    return e->live && !e->device ? e->live : e->copy[step & 1];
}

/* A large tensor's stats, computed on the hasher thread while a waiting
 * training thread hashes its leaves (leaf_share.h's while_shared), with a
 * later large tensor's of the same job when there is one (`partner`): the
 * two interleaved take little more time than one (stats.h), and the
 * partner's wait in its entry for its turn. */
typedef struct {
    const entry *e;
    const void *data;
    entry *partner;
    long step;
    repro_tensor_stats st;
} stats_job;

static void compute_stats(void *arg)
{
    stats_job *j = arg;
    if (j->partner) {
        repro_tensor_stats_f32_pair(j->data, j->e->nbytes / 4, &j->st,
                                    entry_data(j->partner, j->step), j->partner->nbytes / 4,
                                    &j->partner->stats);
        j->partner->stats_step = j->step;
        return;
    }
    long nf = 0;
    repro_tensor_stats_compute(j->e->dtype, j->data, j->e->nbytes, &j->st.l2, &j->st.sum,
                               &j->st.max_abs, &nf);
    j->st.nonfinite = nf;
}

static int pairable(const entry *e)
{
    return e->nbytes >= SPLIT_BYTES && e->type == REPRO_F32;
}

/* The largest large float32 tensor after entry i in the same job whose
 * stats are still to compute at this step, or NULL. */
static entry *stats_partner(repro_train_recorder *r, int i, long step)
{
    entry *best = NULL;
    for (int k = i + 1; k < r->nentries; k++) {
        entry *c = &r->entries[k];
        if (c->phase == r->entries[i].phase && pairable(c) && c->stats_step != step &&
            (!best || c->nbytes > best->nbytes))
            best = c;
    }
    return best;
}

/* Inline jobs, a stats task: entry a's stats, with b's interleaved. */
static void stats_task(void *arg, int k)
{
    repro_train_recorder *r = arg;
    struct stats_task *t = &r->tasks[k];
    long step = r->tasks_step;
    if (t->b) {
        repro_tensor_stats_f32_pair(entry_data(t->a, step), t->a->nbytes / 4, &t->a->stats,
                                    entry_data(t->b, step), t->b->nbytes / 4, &t->b->stats);
        t->b->stats_step = step;
    } else {
        long nf = 0;
        repro_tensor_stats_compute(t->a->dtype, entry_data(t->a, step), t->a->nbytes,
                                   &t->a->stats.l2, &t->a->stats.sum, &t->a->stats.max_abs,
                                   &nf);
        t->a->stats.nonfinite = nf;
    }
    t->a->stats_step = step;
}

/* Inline jobs on a detail step: the large tensors' stats, in pairs as
 * stats_partner pairs them, computed by this thread and an idle kernel
 * thread (which would only spin while the job runs): record_entry then
 * finds them ready. A pair's stats are each tensor's alone, bit for bit
 * (stats.h), so who pairs with whom changes nothing. */
static int stats_tasks(repro_train_recorder *r, job j)
{
    int n = 0;
    for (int i = 0; i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (e->phase != j.phase || !e->leaves || e->stats_step == j.step)
            continue;
        entry *partner = pairable(e) ? stats_partner(r, i, j.step) : NULL;
        r->tasks[n++] = (struct stats_task){e, partner};
        e->stats_step = j.step; /* taken: stats_partner skips it and its partner */
        if (partner)
            partner->stats_step = j.step;
    }
    repro_leaf_batch_clear(&r->stats_batch);
    repro_leaf_batch_tasks(&r->stats_batch, stats_task, r, n);
    r->tasks_step = j.step;
    if (n == 0)
        return 0;
    return repro_leaf_queue_post_first(&r->lq, &r->stats_batch) ||
                   repro_leaf_queue_finish(&r->lq, &r->stats_batch)
               ? -1
               : 0;
}

/* Entry i into the public recorder (and its dump). A large tensor goes in
 * as its leaf digests, hashed by this thread and a waiting training thread,
 * with the stats the recorder would have computed on a detail step: the
 * same digest and the same line. */
static int record_entry(repro_train_recorder *r, int i, long step)
{
    entry *e = &r->entries[i];
    const void *data = entry_data(e, step);
    if (dump_tensor(r, step, e->name, e->dtype, e->ndim, e->shape, data, e->nbytes))
        return -1;
    if (!r->leaves || e->nbytes < SPLIT_BYTES)
        return repro_recorder_tensor(r->pub, e->name, e->type, e->ndim, e->shape64, data) ? -1
                                                                                         : 0;
    int detail = detail_step(r, step), ready = e->stats_step == step;
    stats_job sj = {e, data, NULL, step, e->stats};
    if (detail && !ready && pairable(e))
        sj.partner = stats_partner(r, i, step);
    const repro_digest *leaves = e->leaves; /* inline: queued, and hashed by now */
    if (!r->inline_jobs) {
        if (repro_leaf_share_run(&r->share, data, e->nbytes, r->leaves,
                                 detail && !ready ? compute_stats : NULL, &sj))
            return -1;
        leaves = r->leaves;
    } else if (detail && !ready) {
        compute_stats(&sj);
    }
    return repro_recorder_tensor_leaves(r->pub, e->name, e->type, e->ndim, e->shape64,
                                        e->nbytes, leaves, detail ? &sj.st : NULL)
               ? -1
               : 0;
}

/* The leaf buffer, when some tensor is large enough to share. */
static int start_leaf_share(repro_train_recorder *r)
{
    size_t most = 0;
    for (int i = 0; i < r->nentries; i++)
        if (r->entries[i].nbytes >= SPLIT_BYTES && r->entries[i].nbytes > most)
            most = r->entries[i].nbytes;
    repro_leaf_share_init(&r->share, &r->mu, &r->cv);
    r->share.fn = (repro_digest_fn)r->o.digest;
    repro_leaf_queue_init(&r->lq, &r->mu, &r->cv, (repro_digest_fn)r->o.digest);
    if (repro_leaf_batch_init(&r->batch[PHASE_G], r->nentries) ||
        repro_leaf_batch_init(&r->batch[PHASE_P], r->nentries) ||
        repro_leaf_batch_init(&r->stats_batch, 0))
        return -1;
    if (!(r->tasks = calloc((size_t)r->nentries, sizeof *r->tasks)))
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (most == 0)
        return 0;
    r->leaves = malloc(repro_leaf_count(most) * sizeof *r->leaves);
    for (int i = 0; r->leaves && i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (e->nbytes >= SPLIT_BYTES &&
            !(e->leaves = malloc(repro_leaf_count(e->nbytes) * sizeof *e->leaves)))
            return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    return r->leaves ? 0 : repro_error_set(REPRO_ENOMEM, "out of memory");
}

/* Informational keys of step n's line (trace.h): step 1's algorithm
 * choices (the lock --algo-lock replays; the training thread made them
 * during step 1's forward) and a held-out eval. Not hashed. */
static char *line_extra(repro_train_recorder *r, long step, step_slot *s)
{
    json_t *extra = json_object();
    if (step == 1 && r->t->model.algo.nchoices > 0)
        json_object_set_new(extra, "algorithms", repro_algo_choices_json(&r->t->model.algo));
    if (s->has_eval) {
        /* The exact double bits say more than the decimal. */
        char bits[24];
        uint64_t u;
        memcpy(&u, &s->eval_loss, 8);
        snprintf(bits, sizeof bits, "0x%016llx", (unsigned long long)u);
        json_object_set_new(extra, "eval_loss",
                            isfinite(s->eval_loss) ? json_real(s->eval_loss) : json_null());
        json_object_set_new(extra, "eval_loss_bits", json_string(bits));
        json_object_set_new(extra, "eval_accuracy", isfinite(s->eval_accuracy)
                                                        ? json_real(s->eval_accuracy)
                                                        : json_null());
        s->has_eval = 0;
    }
    char *text = json_object_size(extra) ? json_dumps(extra, JSON_COMPACT) : NULL;
    json_decref(extra);
    return text;
}

/* G(n): the batch, outputs and gradients, in the step-digest order of
 * trace.h. P(n): parameters and optimizer state, then rng.state (listed
 * last), then the step ends: digest, chain, trace line. */
static int run_job(repro_train_recorder *r, job j)
{
    if (r->inline_jobs && (repro_leaf_queue_finish(&r->lq, &r->batch[j.phase]) ||
                           (detail_step(r, j.step) && stats_tasks(r, j))))
        return -1;
    for (int i = 0; i < r->nentries; i++)
        if (r->entries[i].phase == j.phase && i != r->rng_entry && record_entry(r, i, j.step))
            return -1;
    if (j.phase != PHASE_P)
        return 0;
    if (record_entry(r, r->rng_entry, j.step))
        return -1;
    /* Every tensor of the step is read: the optimizer may overwrite them
     * while the line is built and written. */
    pthread_mutex_lock(&r->mu);
    r->p_hashed = j.step;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    step_slot *s = &r->slots[j.step & 1];
    float loss;
    memcpy(&loss, &s->loss_bits, 4);
    char *extra = line_extra(r, j.step, s);
    repro_step_info info = {j.step, s->epoch, s->loss_value, &loss, extra};
    int rc = repro_recorder_step_ex(r->pub, &info) ? -1 : 0;
    free(extra);
    return rc;
}

static void fail_locked(repro_train_recorder *r, int code, const char *msg)
{
    if (r->failed)
        return;
    r->failed = 1;
    r->fail_code = code;
    snprintf(r->fail_msg, sizeof r->fail_msg, "%.1000s", msg);
}

static void *hasher_main(void *arg)
{
    repro_train_recorder *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->qlen == 0) {
            if (r->help_loader) { /* rows of the loader's next batches, while there are */
                pthread_mutex_unlock(&r->mu);
                int did = repro_loader_help(r->t->loader);
                pthread_mutex_lock(&r->mu);
                if (did || r->stop || r->qlen > 0)
                    continue; /* re-check: a job or stop may have come while unlocked */
            }
            pthread_cond_wait(&r->cv, &r->mu);
        }
        if (r->qlen == 0)
            break; /* stop requested and nothing left */
        job j = r->queue[r->qhead];
        int skip = r->failed;
        pthread_mutex_unlock(&r->mu);
        int rc = skip ? 0 : run_job(r, j);
        pthread_mutex_lock(&r->mu);
        if (rc)
            fail_locked(r, repro_error_code(), repro_error_message());
        r->qhead = (r->qhead + 1) % 4;
        r->qlen--;
        if (j.phase == PHASE_G)
            r->g_done = j.step;
        else
            r->p_done = j.step;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the training thread's side -------------------------------------------- */

/* Every read and write of the failure state takes the mutex: the hasher
 * sets it from its thread. */
static void fail_now(repro_train_recorder *r, int code, const char *msg)
{
    pthread_mutex_lock(&r->mu);
    fail_locked(r, code, msg);
    pthread_mutex_unlock(&r->mu);
}

static int check_failed(repro_train_recorder *r)
{
    pthread_mutex_lock(&r->mu);
    int failed = r->failed, code = r->fail_code;
    char msg[sizeof r->fail_msg];
    memcpy(msg, r->fail_msg, sizeof msg);
    pthread_mutex_unlock(&r->mu);
    return failed ? repro_error_set(code, "%s", msg) : 0;
}

/* The last step done as `what` (PHASE_G, PHASE_P, P_READ), under mu. A P
 * job that failed before reading everything still ends (p_done). */
static long done_step(const repro_train_recorder *r, int what)
{
    if (what == P_READ)
        return r->p_hashed > r->p_done ? r->p_hashed : r->p_done;
    return what == PHASE_G ? r->g_done : r->p_done;
}

/* Inline jobs: runs the oldest queued job on this thread (its leaves
 * finished first, with whatever the idle kernel threads left). A failed
 * recorder still finishes the job's leaves: they read the tensors. */
static void run_queued(repro_train_recorder *r)
{
    job j = r->queue[r->qhead];
    int rc = 0;
    if (check_failed(r))
        repro_leaf_queue_finish(&r->lq, &r->batch[j.phase]);
    else
        rc = run_job(r, j);
    pthread_mutex_lock(&r->mu);
    if (rc)
        fail_locked(r, repro_error_code(), repro_error_message());
    r->qhead = (r->qhead + 1) % 4;
    r->qlen--;
    if (j.phase == PHASE_G)
        r->g_done = j.step;
    else
        r->p_done = j.step;
    pthread_mutex_unlock(&r->mu);
}

/* Waits for the hasher to finish job (what, step), hashing leaves of the
 * tensor it is on meanwhile: the training thread would idle here anyway. */
static int wait_done(repro_train_recorder *r, int what, long step)
{
    if (r->inline_jobs) {
        while (r->qlen > 0 && done_step(r, what) < step)
            run_queued(r);
        return check_failed(r);
    }
    pthread_mutex_lock(&r->mu);
    while (done_step(r, what) < step)
        if (!repro_leaf_share_help(&r->share))
            pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return check_failed(r);
}

static void enqueue(repro_train_recorder *r, int phase, long step)
{
    if (r->inline_jobs) {
        /* Its large tensors' leaves go to the idle kernel threads; the
         * rest waits for the point where the job must be done (wait_done). */
        repro_leaf_batch *b = &r->batch[phase];
        repro_leaf_batch_clear(b);
        int rc = 0;
        for (int i = 0; !rc && i < r->nentries; i++) {
            const entry *e = &r->entries[i];
            if (e->phase == phase && e->leaves)
                rc = repro_leaf_batch_add(b, entry_data(e, step), e->nbytes, e->leaves);
        }
        if (rc || repro_leaf_queue_post(&r->lq, b)) {
            fail_now(r, repro_error_code(), repro_error_message());
            repro_leaf_batch_clear(b); /* posted nothing: finish has nothing to wait for */
            repro_leaf_queue_post(&r->lq, b);
        }
    }
    pthread_mutex_lock(&r->mu);
    r->queue[(r->qhead + r->qlen) % 4] = (job){phase, step};
    r->qlen++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* The quarantine tap (train_record.h): record or substitute this op output. */
static void tap_op(repro_train_recorder *r, const char *name, float *data, size_t nbytes)
{
    if (!r->tap || !repro_op_matches(r->o.tap_op, name))
        return;
    char msg[1400];
    if (r->o.tap_mode == REPRO_TAP_WRITE) {
        if (fwrite(data, 1, nbytes, r->tap) != nbytes) {
            snprintf(msg, sizeof msg, "%s: cannot write quarantine tap", r->o.tap_path);
            fail_now(r, REPRO_EIO, msg);
        }
    } else if (fread(data, 1, nbytes, r->tap) != nbytes) {
        snprintf(msg, sizeof msg,
                 "%s: quarantine tap ended early at step %ld, %s (a run of another length or "
                 "config?)",
                 r->o.tap_path, r->t->step + 1, name);
        fail_now(r, REPRO_EINVAL, msg);
    }
}

/* An op output of step n, on the training thread. At level op it goes to
 * the public recorder, which the hasher thread owns while it finishes step
 * n-1: so wait for P(n-1) first (level op is for bisecting, where
 * completeness matters more than speed; G(n) is queued only after the
 * backward, when every op of step n has been recorded). */
static void on_op(void *ctx, const char *name, float *data, int ndim, const long *shape)
{
    repro_train_recorder *r = ctx;
    long step = r->t->step + 1;
    size_t n = 4;
    int64_t shape64[8];
    for (int i = 0; i < ndim; i++) {
        n *= (size_t)shape[i];
        shape64[i] = shape[i];
    }
    float *live = data; /* backend memory */
    const repro_model *m = &r->t->model;
    if (!m->be->host_memory) { /* a device backend: tap and hash a host copy */
        if (n > r->op_host_bytes) {
            void *h = realloc(r->op_host, n);
            if (!h) {
                fail_now(r, REPRO_ENOMEM, "out of memory recording ops");
                return;
            }
            r->op_host = h;
            r->op_host_bytes = n;
        }
        data = r->op_host;
        m->be->copy_d2h(m->be_ctx, data, live, n);
    }
    /* A gradient reported as an op output (bwd.fc1.dw) is also a recorded
     * tensor (grad.fc1.weight): dumped once, under the tensor's name. */
    int is_grad = 0;
    for (int i = 0; i < m->nparams; i++)
        is_grad |= live == m->params[i].grad;
    tap_op(r, name, data, n);
    if (data != live && r->o.tap_mode == REPRO_TAP_READ && r->tap &&
        repro_op_matches(r->o.tap_op, name))
        m->be->copy_h2d(m->be_ctx, live, data, n); /* the substitute goes back */
    if (r->o.level != REPRO_TRACE_OP || wait_done(r, PHASE_P, step - 1))
        return; /* installed only for the tap, or already failed */
    if ((!is_grad && dump_tensor(r, step, name, "f32", ndim, shape, data, n)) ||
        repro_recorder_op(r->pub, name, REPRO_F32, ndim, shape64, data))
        fail_now(r, repro_error_code(), repro_error_message());
}

static int before_backward(repro_train_recorder *r)
{
    return wait_done(r, PHASE_G, r->t->step); /* G(n-1) still reads the grads */
}

/* The small tensors of step n, copied into this step's parity buffers.
 * *on_backend: the source is backend memory (fetch it, don't memcpy). */
static const void *small_source(repro_train_recorder *r, const char *name, const float *loss,
                                const uint32_t *rng, const uint32_t *skipped, int *on_backend)
{
    repro_trainer *t = r->t;
    const repro_batch *b = t->batch;
    *on_backend = !strcmp(name, "logits") || !strcmp(name, "metrics.class_features");
    if (!strcmp(name, "batch.ids"))
        return b->ids;
    if (!strcmp(name, "batch.x"))
        return b->x;
    if (!strcmp(name, "batch.y"))
        return b->y;
    if (!strcmp(name, "logits")) /* data parallel: rank 0's global view */
        return t->logits_view ? t->logits_view : t->model.act[t->model.nlayers];
    if (!strcmp(name, "loss"))
        return loss;
    if (!strcmp(name, "metrics.class_features"))
        return t->class_features;
    if (!strcmp(name, "rng.state"))
        return rng;
    if (!strcmp(name, "scaler.scale"))
        return &t->scaler.last_scale;
    if (!strcmp(name, "scaler.skipped"))
        return skipped;
    return NULL;
}

static int after_backward(repro_train_recorder *r)
{
    repro_trainer *t = r->t;
    long step = t->step + 1;
    int par = (int)(step & 1);
    step_slot *s = &r->slots[par];
    float loss = (float)t->loss;
    memcpy(&s->loss_bits, &loss, 4);
    s->loss_value = t->loss;
    s->epoch = t->batch->epoch;
    uint32_t skipped = (uint32_t)t->scaler.last_skipped;
    repro_loader_position pos;
    repro_loader_get_position(t->loader, &pos);
    uint32_t rng[8] = {(uint32_t)pos.gen_block, (uint32_t)(pos.gen_block >> 32),
                       (uint32_t)pos.gen_used,  (uint32_t)pos.epoch,
                       (uint32_t)pos.base_seed, (uint32_t)(pos.base_seed >> 32),
                       (uint32_t)pos.index,     (uint32_t)(pos.index >> 32)};
    for (int i = 0; i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (e->phase != PHASE_G)
            continue;
        int on_backend;
        const void *src = small_source(r, e->name, &loss, rng, &skipped, &on_backend);
        if (src && on_backend)
            fetch(r, e->copy[par], src, e->nbytes);
        else if (src)
            memcpy(e->copy[par], src, e->nbytes);
        /* The negative control's one call (fault.h): before the hash, in the
         * live buffer for gradients, so the optimizer uses the flipped value. */
        if (e->device)
            fetch_live(r, e, step, par);
        else
            repro_fault_apply(&r->fault, step, e->name,
                              e->live ? (void *)e->live : e->copy[par], e->nbytes);
    }
    if (dump_masks(r, step, ""))
        fail_now(r, repro_error_code(), repro_error_message());
    enqueue(r, PHASE_G, step);
    if (r->o.synchronous)
        return wait_done(r, PHASE_G, step);
    return check_failed(r);
}

static int before_update(repro_train_recorder *r)
{
    return wait_done(r, P_READ, r->t->step); /* P(n-1) may still read the params */
}

static int after_update(repro_train_recorder *r)
{
    long step = r->t->step; /* the trainer has counted the step already */
    step_slot *slot = &r->slots[step & 1];
    slot->has_eval = r->t->eval_step == step && step > 0;
    slot->eval_loss = r->t->eval_loss;
    slot->eval_accuracy = r->t->eval_accuracy;
    for (int i = 0; i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (e->phase == PHASE_P && e->device)
            fetch_live(r, e, step, (int)(step & 1));
        else if (e->phase == PHASE_P)
            repro_fault_apply(&r->fault, step, e->name, (void *)e->live, e->nbytes);
    }
    if (dump_optim(r, step))
        fail_now(r, repro_error_code(), repro_error_message());
    enqueue(r, PHASE_P, step);
    if (r->o.synchronous)
        return wait_done(r, PHASE_P, step);
    return check_failed(r);
}

/* ---- opening and closing ----------------------------------------------------- */

/* The network, so a reader can rebuild it without model.c: its layers in
 * order with their per-sample shapes (NCHW; a linear layer's features as
 * C x 1 x 1) and each parameter's name, shape and layout. */
static json_t *model_json(const repro_model *m)
{
    static const char *const kinds[] = {"linear", "conv2d", "relu", "maxpool2d", "dropout"};
    json_t *layers = json_array(), *params = json_array();
    for (int i = 0; i < m->nlayers; i++) {
        const repro_layer *l = &m->layers[i];
        json_t *o = json_pack("{s:s, s:s, s:[i,i,i], s:[i,i,i]}", "name", l->name, "kind",
                              kinds[l->kind], "in", l->in_c, l->in_h, l->in_w, "out", l->out_c,
                              l->out_h, l->out_w);
        if (l->kind == REPRO_LAYER_CONV || l->kind == REPRO_LAYER_MAXPOOL)
            json_object_set_new(o, "kernel", json_integer(l->k));
        if (l->kind == REPRO_LAYER_CONV)
            json_object_set_new(o, "padding", json_integer(l->pad));
        if (l->kind == REPRO_LAYER_DROPOUT)
            json_object_set_new(o, "p", json_real(l->p));
        json_array_append_new(layers, o);
    }
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        json_t *shape = json_array();
        for (int d = 0; d < p->ndim; d++)
            json_array_append_new(shape, json_integer(p->shape[d]));
        const char *layout = p->ndim == 4 ? "[out,in,kh,kw]" : p->ndim == 2 ? "[out,in]" : "[out]";
        json_array_append_new(params, json_pack("{s:s, s:o, s:s}", "name", p->name, "shape", shape,
                                                "layout", layout));
    }
    return json_pack("{s:s, s:o, s:o}", "activations", "NCHW", "layers", layers, "params",
                     params);
}

/* The trainer's header keys on top of the public recorder's: its config
 * with both digests, and where a resumed run resumed from. */
static char *header_json(const repro_train_recorder *r, const repro_digest *start_chain)
{
    const repro_config *cfg = &r->t->cfg;
    repro_digest all, numerics;
    if (repro_config_digests(cfg, &all, &numerics))
        return NULL;
    char ahex[65], nhex[65];
    repro_digest_hex(&all, ahex);
    repro_digest_hex(&numerics, nhex);
    json_t *h = json_object();
    json_object_set_new(h, "config", repro_config_to_json(cfg));
    json_object_set_new(h, "config_digest", json_string(ahex));
    json_object_set_new(h, "numerics_digest", json_string(nhex));
    json_object_set_new(h, "model", model_json(&r->t->model));
    /* The kernel pool and the loader are built from these counts: what the
     * run asked for is what it used (a --threads scope is exercised). */
    json_object_set_new(h, "threads_used", json_integer(cfg->train_threads));
    json_object_set_new(h, "workers_used", json_integer(cfg->data_num_workers));
    if (r->o.fault_spec)
        json_object_set_new(h, "fault", json_string(r->o.fault_spec));
    if (r->o.start_step > 0 && r->o.resumed_from) {
        char hex[65];
        repro_digest_hex(start_chain, hex);
        json_object_set_new(h, "resumed_from",
                            json_pack("{s:s, s:I, s:s}", "path", r->o.resumed_from, "step",
                                      (json_int_t)r->o.start_step, "chain", hex));
    }
    char *text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    if (!text)
        repro_error_set(REPRO_ENOMEM, "out of memory");
    return text;
}

static int open_public(repro_train_recorder *r)
{
    const repro_config *cfg = &r->t->cfg;
    repro_digest zero = {{0}};
    const repro_digest *start = r->o.start_chain ? r->o.start_chain : &zero;
    char *hjson = header_json(r, start);
    if (!hjson)
        return -1;
    repro_run_info info = {cfg->name, cfg->train_seed, NULL};
    repro_recorder_options ro;
    repro_recorder_options_init(&ro);
    ro.level = (repro_level)r->o.level;
    ro.every = r->o.every;
    ro.digest = (repro_digest_fn)r->o.digest;
    ro.total_steps = r->o.total_steps;
    ro.threads = cfg->train_threads;
    ro.workers = cfg->data_num_workers;
    ro.experiment_path = cfg->path;
    ro.backend = cfg->train_backend == REPRO_BACKEND_CUDA ? "cuda" : "cpu";
    ro.header_json = hjson;
    ro.start_step = r->o.start_step;
    ro.start_chain = start;
    /* No trace path: digests only (the public recorder reads $REPRO_TRACE
     * for NULL, which the built-in workload must not). */
    int rc = repro_recorder_open_ex(&r->pub, r->o.trace_path ? r->o.trace_path : "", &info, &ro);
    free(hjson);
    if (rc)
        return -1;
    repro_recorder_no_first_detail(r->pub);
    return 0;
}

/* A fault whose tensor this run does not record would flip nothing, and a
 * negative control that cannot fail proves nothing: refuse it, naming the
 * closest recorded tensor (`fc1.weight` for `param.fc1.weight`). */
static int check_fault_tensor(const repro_train_recorder *r)
{
    const char *want = r->fault.tensor;
    if (!want[0])
        return 0;
    const char *names[64];
    size_t n = 0;
    for (int i = 0; i < r->nentries; i++) {
        if (!strcmp(r->entries[i].name, want))
            return 0;
        if (n < sizeof names / sizeof *names)
            names[n++] = r->entries[i].name;
    }
    const char *close = NULL;
    for (int i = 0; i < r->nentries && !close; i++) { /* a missing prefix: "fc1.weight" */
        const char *dot = strchr(r->entries[i].name, '.');
        if (dot && !strcmp(dot + 1, want))
            close = r->entries[i].name;
    }
    char hint[160];
    if (close)
        snprintf(hint, sizeof hint, " (did you mean '%s'?)", close);
    else
        repro_suggest_phrase(hint, sizeof hint, want, names, n);
    return repro_error_set(REPRO_EINVAL,
                           "REPRO_FAULT: this run records no tensor '%s'%s, so the fault "
                           "would flip nothing; the names are those of the trace's tensor "
                           "lines (grad.*, param.*, batch.x, logits, ...)",
                           want, hint);
}

/* A hasher thread pays where it has a CPU to itself: it overlaps the
 * jobs with training. Where the kernel threads fill every CPU it could
 * only run by preempting one of them mid-chunk, stalling the others at
 * the job's end (mlp, 2 threads on 2 CPUs, hashed over unhashed: 0.67x
 * with a thread, 0.70x inline; 0.77x and 0.79x on a quieter host; medians
 * of 15 interleaved runs); inline, the same work runs
 * where the step can wait for it, and idle kernel threads share the
 * leaves. A device backend leaves the host CPUs free: always a thread. */
static int choose_inline(const repro_train_recorder *r)
{
    const repro_trainer *t = r->t;
    if (r->o.hasher != REPRO_HASHER_AUTO)
        return r->o.hasher == REPRO_HASHER_INLINE;
    return t->model.be->host_memory && t->cfg.train_threads + 1 > repro_cpus_available();
}

/* The kernel threads' idle work (train.h): a chunk of the posted leaves. */
static int idle_leaves(void *arg)
{
    repro_train_recorder *r = arg;
    return repro_leaf_queue_unit(&r->lq);
}

int repro_train_recorder_inline(const repro_train_recorder *r)
{
    return r->inline_jobs;
}

static int start(repro_train_recorder *r, const repro_train_recorder_opts *opts)
{
    repro_trainer *t = r->t;
    if (build_entries(r))
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    if (check_fault_tensor(r))
        return -1;
    snprintf(r->dump_dir, sizeof r->dump_dir, "%s", opts->dump_dir ? opts->dump_dir : "dump");
    /* Resumed: the hasher's progress starts where the checkpoint left off
     * (the waits compare with step numbers). */
    r->g_done = r->p_done = r->p_hashed = opts->start_step;
    if (open_public(r) || start_leaf_share(r))
        return -1;
    r->inline_jobs = choose_inline(r);
    if (r->inline_jobs) {
        /* The kernel threads hash leaves between their jobs; with every
         * CPU theirs, the loader's workers are streams they fill too. */
        repro_trainer_share_loader(t, 0);
        repro_trainer_set_idle_first(t, idle_leaves, r);
    } else {
        /* The hasher and the kernel threads filling every CPU: the loader's
         * workers become streams that the hasher fills when it has nothing
         * to hash (train.h: repro_trainer_share_loader). */
        r->help_loader = repro_trainer_share_loader(t, 1);
        if (pthread_create(&r->thread, NULL, hasher_main, r) != 0)
            return repro_error_set(REPRO_EIO, "cannot start the hasher thread");
        r->thread_started = 1;
    }
    if (opts->tap_mode && opts->tap_op && opts->tap_path) {
        r->tap = fopen(opts->tap_path, opts->tap_mode == REPRO_TAP_WRITE ? "wb" : "rb");
        if (!r->tap)
            return repro_error_set_errno(REPRO_EINVAL, "%s: cannot open quarantine tap",
                                         opts->tap_path);
    }
    if (opts->level == REPRO_TRACE_OP || r->tap) {
        t->model.on_op = on_op;
        t->model.on_op_ctx = r;
    }
    return dump_initial(r);
}

/* The trainer's observer (train.h): the hooks above, and the chain. */
static int hook_before_backward(void *r) { return before_backward(r); }
static int hook_micro_batch(void *r, int j) { return micro_batch(r, j); }
static int hook_after_backward(void *r) { return after_backward(r); }
static int hook_before_update(void *r) { return before_update(r); }
static int hook_after_update(void *r) { return after_update(r); }

static long hook_chain(void *r, repro_digest *chain)
{
    if (repro_train_recorder_sync(r))
        return -1;
    return repro_train_recorder_chain(r, chain);
}

static void hook_release(void *r)
{
    repro_train_recorder_free(r);
}

static const repro_train_observer_ops recorder_ops = {
    hook_before_backward, hook_micro_batch, hook_after_backward, hook_before_update,
    hook_after_update,    hook_chain,       hook_release,
};

int repro_train_recorder_new(repro_train_recorder **out, repro_trainer *t,
                             const repro_train_recorder_opts *opts, const repro_fault *fault)
{
    *out = NULL;
    repro_train_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    r->t = t;
    r->o = *opts;
    if (r->o.every < 1)
        r->o.every = 1;
    if (fault)
        r->fault = *fault;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (start(r, &r->o)) {
        repro_train_recorder_free(r);
        return -1;
    }
    t->observer = (repro_train_observer){&recorder_ops, r};
    *out = r;
    return 0;
}

int repro_train_recorder_sync(repro_train_recorder *r)
{
    return wait_done(r, PHASE_P, r->t->step);
}

/* The final parameters, bound cryptographically whatever the per-step
 * digest function: SHA-256 over the SHA-256 tree digests (repro-tensor/v1)
 * of every param.* tensor after the last step, in forward order. Once per
 * run, so its cost does not count; the per-step digests may be XXH3-128,
 * which catches accidental divergence but not a crafted collision. */
static int final_params_sha256(const repro_train_recorder *r, long step, repro_digest *out)
{
    repro_digest *d = malloc(sizeof *d * (size_t)(r->nentries ? r->nentries : 1));
    if (!d)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    size_t n = 0;
    for (int i = 0; i < r->nentries; i++) {
        const entry *e = &r->entries[i];
        if (e->phase != PHASE_P || strncmp(e->name, "param.", 6) != 0)
            continue;
        if (repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, &d[n++], e->name, e->dtype,
                                         e->ndim, e->shape64, entry_data(e, step), e->nbytes)) {
            free(d);
            return -1;
        }
    }
    int rc = repro_sha256_digests(d, n, out) ? repro_error_set(REPRO_EIO, "SHA-256 failed") : 0;
    free(d);
    return rc;
}

int repro_train_recorder_finish(repro_train_recorder *r, repro_digest *chain, void *trailer_extra)
{
    if (wait_done(r, PHASE_P, r->t->step))
        return -1;
    repro_recorder_chain(r->pub, chain);
    json_t *trailer = trailer_extra ? json_incref((json_t *)trailer_extra) : json_object();
    repro_digest fin;
    if (r->t->step > r->o.start_step) {
        if (final_params_sha256(r, r->t->step, &fin)) {
            json_decref(trailer);
            return -1;
        }
        char hex[65];
        repro_digest_hex(&fin, hex);
        json_object_set_new(trailer, "final_params_sha256", json_string(hex));
    }
    char *text = json_object_size(trailer) ? json_dumps(trailer, JSON_COMPACT) : NULL;
    json_decref(trailer);
    repro_recorder *pub = r->pub;
    r->pub = NULL;
    int rc = repro_recorder_close_ex(pub, NULL, text) ? -1 : 0;
    free(text);
    return rc;
}

long repro_train_recorder_chain(const repro_train_recorder *r, repro_digest *chain)
{
    return (long)repro_recorder_chain(r->pub, chain);
}

void repro_train_recorder_free(repro_train_recorder *r)
{
    if (!r)
        return;
    if (r->thread_started) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    if (r->inline_jobs && r->t && r->t->idle_first_arg == r)
        repro_trainer_set_idle_first(r->t, NULL, NULL);
    /* Inline jobs still queued: their leaves are posted (no kernel thread
     * hashes them now); take them out before the tensors can go. */
    for (; r->inline_jobs && r->qlen > 0; r->qlen--, r->qhead = (r->qhead + 1) % 4)
        repro_leaf_queue_finish(&r->lq, &r->batch[r->queue[r->qhead].phase]);
    repro_leaf_batch_release(&r->batch[PHASE_G]);
    repro_leaf_batch_release(&r->batch[PHASE_P]);
    repro_leaf_batch_release(&r->stats_batch);
    free(r->tasks);
    repro_recorder_abort(r->pub);
    free(r->leaves);
    if (r->tap)
        fclose(r->tap);
    if (r->t && r->t->observer.ctx == r) {
        r->t->observer = (repro_train_observer){NULL, NULL};
        r->t->model.on_op = NULL;
    }
    for (int i = 0; r->entries && i < r->nentries; i++) {
        for (int p = 0; p < 2; p++)
            free(r->entries[i].copy[p]);
        free(r->entries[i].leaves);
    }
    free(r->entries);
    free(r->op_host);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
