/* The per-step recorder (see record.h for the pipeline, trace.h for what is
 * recorded and in which order). */
#include "record/record.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/fault.h"
#include "util/npy.h"
#include "util/opnames.h"

enum { PHASE_G = 0, PHASE_P = 1 };

/* One recorded tensor. `data` is either live model memory (grads, params,
 * optimizer state) or one of the two parity buffers (small copies). */
typedef struct {
    char name[64];
    const char *dtype;
    int ndim;
    long shape[4];
    size_t nbytes;
    int phase;
    const void *live;     /* live buffer, or NULL if copied */
    void *copy[2];        /* parity copies (batch, logits, loss, rng; and the live
                             buffers of a device backend, fetched at the hooks) */
    int device;           /* live is device memory: hashed from copy[] */
} entry;

typedef struct {
    int phase;
    long step;
} job;

/* Everything about one step that the hasher fills, by step parity. */
typedef struct {
    repro_trace_tensor *tensors; /* one per entry */
    int nops, cap_ops;
    repro_trace_tensor *ops;
    int epoch;
    uint32_t loss_bits;
    double loss_value;
    int has_eval;             /* train.eval_every: this step's held-out eval */
    double eval_loss, eval_accuracy;
} step_slot;

struct repro_recorder {
    repro_trainer *t;
    repro_recorder_opts o;
    char dump_dir[1024];
    repro_trace_writer *w;
    repro_fault fault;
    FILE *tap;
    int nentries;
    entry *entries;
    step_slot slots[2];
    repro_digest chain;
    long chained;            /* steps folded into the chain */

    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job queue[4];
    int qhead, qlen;
    long g_done, p_done;     /* last step whose G / P job finished */
    int stop;
    atomic_int failed;       /* set by either thread, read by both */
    int fail_code;
    char fail_msg[1024];
    void *op_host;           /* device backends: an op output fetched for hashing */
    size_t op_host_bytes;
};

/* ---- the tensor list ------------------------------------------------------ */

static entry *add_entry(repro_recorder *r, const char *name, const char *dtype, int phase,
                        const void *live, int ndim, const long *shape)
{
    entry *e = &r->entries[r->nentries++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dtype = dtype;
    e->phase = phase;
    e->ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    e->nbytes = n * 4;
    e->live = live;
    return e;
}

static int add_copied(repro_recorder *r, const char *name, const char *dtype, int ndim,
                      const long *shape)
{
    entry *e = add_entry(r, name, dtype, PHASE_G, NULL, ndim, shape);
    for (int p = 0; p < 2; p++)
        if (!(e->copy[p] = calloc(1, e->nbytes ? e->nbytes : 4)))
            return -1;
    return 0;
}

static int build_entries(repro_recorder *r)
{
    repro_model *m = &r->t->model;
    int B = r->t->cfg.train_batch_size;
    int cap = 11 + 4 * m->nparams; /* 7 small copies + 2 scaler (fp16) + 4 per param */
    r->entries = calloc((size_t)cap, sizeof *r->entries);
    if (!r->entries)
        return -1;
    long sb[1] = {B}, sx[4] = {B, 1, 28, 28}, sl[2] = {B, repro_model_out_features(m)};
    long srng[1] = {8};
    if (add_copied(r, "batch.ids", "u32", 1, sb) || add_copied(r, "batch.x", "f32", 4, sx) ||
        add_copied(r, "batch.y", "i32", 1, sb) || add_copied(r, "logits", "f32", 2, sl) ||
        add_copied(r, "loss", "f32", 0, NULL))
        return -1;
    long scf[2] = {10, m->layers[m->nlayers - 1].in_c};
    if (add_copied(r, "metrics.class_features", "f32", 2, scf))
        return -1;
    char name[64];
    for (int i = m->nparams - 1; i >= 0; i--) { /* backward order: last layer first */
        const repro_param *p = &m->params[i];
        long shape[4];
        for (int d = 0; d < p->ndim; d++)
            shape[d] = p->shape[d];
        snprintf(name, sizeof name, "grad.%s", p->name);
        add_entry(r, name, "f32", PHASE_G, p->grad, p->ndim, shape);
    }
    /* fp16 only (so other traces keep their step digests): the loss
     * scaler's state, after the grads and before the parameters. */
    if (r->t->cfg.train_precision == REPRO_PRECISION_FP16 &&
        (add_copied(r, "scaler.scale", "f32", 0, NULL) ||
         add_copied(r, "scaler.skipped", "u32", 0, NULL)))
        return -1;
    if (add_copied(r, "rng.state", "u32", 1, srng))
        return -1;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        long shape[4];
        for (int d = 0; d < p->ndim; d++)
            shape[d] = p->shape[d];
        snprintf(name, sizeof name, "param.%s", p->name);
        add_entry(r, name, "f32", PHASE_P, p->data, p->ndim, shape);
    }
    int adam = m->optimizer == REPRO_OPT_ADAMW;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        long shape[4];
        for (int d = 0; d < p->ndim; d++)
            shape[d] = p->shape[d];
        snprintf(name, sizeof name, "%s.%s", adam ? "adamw.exp_avg" : "sgd.momentum", p->name);
        add_entry(r, name, "f32", PHASE_P, p->state1, p->ndim, shape);
        if (adam) {
            snprintf(name, sizeof name, "adamw.exp_avg_sq.%s", p->name);
            add_entry(r, name, "f32", PHASE_P, p->state2, p->ndim, shape);
        }
    }
    for (int s = 0; s < 2; s++)
        if (!(r->slots[s].tensors = calloc((size_t)r->nentries, sizeof(repro_trace_tensor))))
            return -1;
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
static void fetch(const repro_recorder *r, void *dst, const void *src, size_t n)
{
    const repro_model *m = &r->t->model;
    if (m->be->host_memory)
        memcpy(dst, src, n);
    else
        m->be->copy_d2h(m->be_ctx, dst, src, n);
}

/* A live device entry's bytes into this step's copy, the fault applied
 * there and, when it flipped a bit, written back so training sees it. */
static void fetch_live(repro_recorder *r, entry *e, long step, int par)
{
    const repro_model *m = &r->t->model;
    m->be->copy_d2h(m->be_ctx, e->copy[par], e->live, e->nbytes);
    if (repro_fault_apply(&r->fault, step, e->name, e->copy[par], e->nbytes))
        m->be->copy_h2d(m->be_ctx, (void *)e->live, e->copy[par], e->nbytes);
}

/* The step-digest order of trace.h (batch, logits, loss, grads, rng, ...)
 * differs from the build order above only in where rng.state goes: it is
 * listed last. This maps digest position -> entry index. */
static int order_index(const repro_recorder *r, int pos)
{
    int rng = -1;
    for (int i = 0; i < r->nentries; i++)
        if (!strcmp(r->entries[i].name, "rng.state"))
            rng = i;
    if (pos == r->nentries - 1)
        return rng;
    return pos < rng ? pos : pos + 1;
}

/* ---- hashing ---------------------------------------------------------------- */

static int detail_step(const repro_recorder *r, long step)
{
    return r->o.level != REPRO_TRACE_STEP &&
           (step % r->o.every == 0 || step == r->o.total_steps);
}

static int dump_step(const repro_recorder *r, long step)
{
    for (int i = 0; i < r->o.ndump; i++)
        if (r->o.dump_steps[i] == step)
            return 1;
    return 0;
}

/* Stats in double over the finite elements, in a fixed order: element i
 * goes to accumulator lane i % 4, lanes are combined as (0+1)+(2+3). Four
 * independent chains instead of one make this several times faster (it runs
 * every step on the hasher thread) while the order stays written in the code.
 * A non-finite element adds 0 to its lane: the same as skipping it. */
typedef struct {
    double l2, sum, mx;
} lane_acc;

static inline void lane_add(lane_acc *a, float f, long *nonfinite)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    int finite = (bits & 0x7f800000u) != 0x7f800000u;
    double v = finite ? (double)f : 0.0;
    *nonfinite += !finite;
    a->l2 += v * v;
    a->sum += v;
    double m = fabs(v);
    a->mx = m > a->mx ? m : a->mx;
}

static void stats_f32(const float *x, size_t n, repro_trace_tensor *t)
{
    /* Four named lanes (registers, not an indexed array: the compiler keeps
     * them apart and the four chains overlap). */
    lane_acc a0 = {0, 0, 0}, a1 = {0, 0, 0}, a2 = {0, 0, 0}, a3 = {0, 0, 0};
    long nonfinite = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        lane_add(&a0, x[i], &nonfinite);
        lane_add(&a1, x[i + 1], &nonfinite);
        lane_add(&a2, x[i + 2], &nonfinite);
        lane_add(&a3, x[i + 3], &nonfinite);
    }
    lane_acc *tail[3] = {&a0, &a1, &a2};
    for (size_t j = 0; i < n; i++, j++)
        lane_add(tail[j], x[i], &nonfinite);
    t->l2 = sqrt((a0.l2 + a1.l2) + (a2.l2 + a3.l2));
    t->sum = (a0.sum + a1.sum) + (a2.sum + a3.sum);
    double m01 = a0.mx > a1.mx ? a0.mx : a1.mx, m23 = a2.mx > a3.mx ? a2.mx : a3.mx;
    t->max_abs = m01 > m23 ? m01 : m23;
    t->nonfinite = nonfinite;
}

/* Integer tensors (ids, labels, rng state) are small: one plain loop. */
static void stats_int(const void *data, int is_signed, size_t n, repro_trace_tensor *t)
{
    double l2 = 0, sum = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        double v = is_signed ? (double)((const int32_t *)data)[i]
                             : (double)((const uint32_t *)data)[i];
        l2 += v * v;
        sum += v;
        mx = fabs(v) > mx ? fabs(v) : mx;
    }
    t->l2 = sqrt(l2);
    t->sum = sum;
    t->max_abs = mx;
    t->nonfinite = 0;
}

static void tensor_stats(const char *dtype, const void *data, size_t nbytes, repro_trace_tensor *t)
{
    if (!strcmp(dtype, "f32"))
        stats_f32(data, nbytes / 4, t);
    else
        stats_int(data, !strcmp(dtype, "i32"), nbytes / 4, t);
}

static int dump_path(const repro_recorder *r, long step, const char *name, char *path, size_t len)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/step-%06ld", r->dump_dir, step);
    if (mkdir(r->dump_dir, 0777) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create dump directory", r->dump_dir);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create dump directory", dir);
    snprintf(path, len, "%s/%s.npy", dir, name);
    return 0;
}

/* Digest (+ stats, + dump) of one tensor into *t. */
static int record_tensor(const repro_recorder *r, long step, const char *name, const char *dtype,
                         int ndim, const long *shape, const void *data, size_t nbytes,
                         repro_trace_tensor *t)
{
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->dtype, sizeof t->dtype, "%s", dtype);
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    repro_tensor_view v = {name, dtype, ndim, shape, data, nbytes};
    if (repro_tensor_digest(&v, &t->digest, NULL))
        return -1;
    if (detail_step(r, step))
        tensor_stats(dtype, data, nbytes, t);
    if (dump_step(r, step)) {
        char path[1400];
        if (dump_path(r, step, name, path, sizeof path) ||
            repro_npy_write(path, dtype, ndim, shape, data, nbytes))
            return -1;
    }
    return 0;
}

static int run_job(repro_recorder *r, job j)
{
    step_slot *s = &r->slots[j.step & 1];
    for (int i = 0; i < r->nentries; i++) {
        entry *e = &r->entries[i];
        if (e->phase != j.phase)
            continue;
        const void *data = e->live && !e->device ? e->live : e->copy[j.step & 1];
        if (record_tensor(r, j.step, e->name, e->dtype, e->ndim, e->shape, data, e->nbytes,
                          &s->tensors[i]))
            return -1;
    }
    if (j.phase != PHASE_P)
        return 0;
    /* The step is complete: digest, chain, trace line. */
    repro_digest *d = malloc((size_t)r->nentries * sizeof *d);
    repro_trace_tensor *ordered = malloc((size_t)r->nentries * sizeof *ordered);
    if (!d || !ordered) {
        free(d);
        free(ordered);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    for (int pos = 0; pos < r->nentries; pos++) {
        ordered[pos] = s->tensors[order_index(r, pos)];
        d[pos] = ordered[pos].digest;
    }
    repro_trace_step ts = {0};
    ts.step = j.step;
    int rc = repro_sha256_digests(d, (size_t)r->nentries, &ts.step_digest);
    repro_digest pair[2] = {r->chain, ts.step_digest};
    if (!rc)
        rc = repro_sha256_digests(pair, 2, &r->chain);
    r->chained = j.step;
    ts.chain = r->chain;
    ts.epoch = s->epoch;
    ts.loss_bits = s->loss_bits;
    ts.loss_value = s->loss_value;
    ts.ntensors = r->nentries;
    ts.tensors = ordered;
    ts.nops = s->nops;
    ts.ops = s->ops;
    /* Step 1 carries the algorithm choices (the lock --algo-lock replays);
     * the training thread made them during step 1's forward. */
    json_t *extra = NULL;
    if (j.step == 1 && r->t->model.algo.nchoices > 0) {
        extra = json_object();
        json_object_set_new(extra, "algorithms", repro_algo_choices_json(&r->t->model.algo));
        ts.extra = extra;
    }
    if (s->has_eval) {
        /* Informational (trace.h): the exact double bits say more than the
         * decimal; not part of the step digest. */
        char bits[24];
        uint64_t u;
        memcpy(&u, &s->eval_loss, 8);
        snprintf(bits, sizeof bits, "0x%016llx", (unsigned long long)u);
        if (!extra)
            extra = json_object();
        json_object_set_new(extra, "eval_loss",
                            isfinite(s->eval_loss) ? json_real(s->eval_loss) : json_null());
        json_object_set_new(extra, "eval_loss_bits", json_string(bits));
        json_object_set_new(extra, "eval_accuracy", isfinite(s->eval_accuracy)
                                                        ? json_real(s->eval_accuracy)
                                                        : json_null());
        ts.extra = extra;
        s->has_eval = 0;
    }
    if (!rc && r->w)
        rc = repro_trace_writer_step(r->w, &ts, detail_step(r, j.step));
    json_decref(extra);
    s->nops = 0;
    free(d);
    free(ordered);
    return rc;
}

static void *hasher_main(void *arg)
{
    repro_recorder *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->qlen == 0)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->qlen == 0)
            break; /* stop requested and nothing left */
        job j = r->queue[r->qhead];
        pthread_mutex_unlock(&r->mu);
        int rc = r->failed ? 0 : run_job(r, j);
        pthread_mutex_lock(&r->mu);
        if (rc && !r->failed) {
            r->failed = 1;
            r->fail_code = repro_error_code();
            snprintf(r->fail_msg, sizeof r->fail_msg, "%s", repro_error_message());
        }
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

static int check_failed(repro_recorder *r)
{
    if (!r->failed)
        return 0;
    return repro_error_set(r->fail_code, "%s", r->fail_msg);
}

static int wait_done(repro_recorder *r, int phase, long step)
{
    pthread_mutex_lock(&r->mu);
    while ((phase == PHASE_G ? r->g_done : r->p_done) < step)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return check_failed(r);
}

static void enqueue(repro_recorder *r, int phase, long step)
{
    pthread_mutex_lock(&r->mu);
    r->queue[(r->qhead + r->qlen) % 4] = (job){phase, step};
    r->qlen++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void fail_now(repro_recorder *r, int code, const char *msg)
{
    if (r->failed)
        return;
    r->failed = 1;
    r->fail_code = code;
    snprintf(r->fail_msg, sizeof r->fail_msg, "%.1000s", msg);
}

/* The quarantine tap (record.h): record or substitute this op output. */
static void tap_op(repro_recorder *r, const char *name, float *data, size_t nbytes)
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

static void on_op(void *ctx, const char *name, float *data, int ndim, const long *shape)
{
    repro_recorder *r = ctx;
    long step = r->t->step + 1;
    step_slot *s = &r->slots[step & 1];
    if (r->failed)
        return;
    if (s->nops == s->cap_ops) {
        int cap = s->cap_ops ? 2 * s->cap_ops : 32;
        repro_trace_tensor *ops = realloc(s->ops, (size_t)cap * sizeof *ops);
        if (!ops) {
            r->failed = 1;
            r->fail_code = REPRO_EIO;
            snprintf(r->fail_msg, sizeof r->fail_msg, "out of memory recording ops");
            return;
        }
        s->ops = ops;
        s->cap_ops = cap;
    }
    size_t n = 4;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
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
    tap_op(r, name, data, n);
    if (data != live && r->o.tap_mode == REPRO_TAP_READ && r->tap &&
        repro_op_matches(r->o.tap_op, name))
        m->be->copy_h2d(m->be_ctx, live, data, n); /* the substitute goes back */
    if (r->o.level != REPRO_TRACE_OP)
        return; /* installed only for the tap */
    /* Op outputs are hashed here, on the training thread: level op is for
     * bisecting, where completeness matters more than speed. */
    if (record_tensor(r, step, name, "f32", ndim, shape, data, n, &s->ops[s->nops]) && !r->failed) {
        r->failed = 1;
        r->fail_code = repro_error_code();
        snprintf(r->fail_msg, sizeof r->fail_msg, "%s", repro_error_message());
    }
    s->nops++;
}

int repro_recorder_before_backward(repro_recorder *r)
{
    return wait_done(r, PHASE_G, r->t->step); /* G(n-1) still reads the grads */
}

int repro_recorder_after_backward(repro_recorder *r)
{
    repro_trainer *t = r->t;
    long step = t->step + 1;
    int par = (int)(step & 1);
    const repro_batch *b = t->batch;
    step_slot *s = &r->slots[par];
    float loss = (float)t->loss;
    memcpy(&s->loss_bits, &loss, 4);
    s->loss_value = t->loss;
    s->epoch = b->epoch;
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
        const void *src = NULL;
        if (!strcmp(e->name, "batch.ids"))
            src = b->ids;
        else if (!strcmp(e->name, "batch.x"))
            src = b->x;
        else if (!strcmp(e->name, "batch.y"))
            src = b->y;
        else if (!strcmp(e->name, "logits"))
            fetch(r, e->copy[par], t->model.act[t->model.nlayers], e->nbytes);
        else if (!strcmp(e->name, "loss"))
            src = &loss;
        else if (!strcmp(e->name, "metrics.class_features"))
            fetch(r, e->copy[par], t->class_features, e->nbytes);
        else if (!strcmp(e->name, "rng.state"))
            src = rng;
        else if (!strcmp(e->name, "scaler.scale"))
            src = &t->scaler.last_scale;
        else if (!strcmp(e->name, "scaler.skipped"))
            src = &skipped;
        if (src)
            memcpy(e->copy[par], src, e->nbytes);
        /* The negative control's one call (fault.h): before the hash, in the
         * live buffer for gradients, so the optimizer uses the flipped value. */
        if (e->device)
            fetch_live(r, e, step, par);
        else
            repro_fault_apply(&r->fault, step, e->name,
                              e->live ? (void *)e->live : e->copy[par], e->nbytes);
    }
    enqueue(r, PHASE_G, step);
    return check_failed(r);
}

int repro_recorder_before_update(repro_recorder *r)
{
    return wait_done(r, PHASE_P, r->t->step); /* P(n-1) still reads the params */
}

int repro_recorder_after_update(repro_recorder *r)
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
    enqueue(r, PHASE_P, step);
    return check_failed(r);
}

int repro_recorder_new(repro_recorder **out, repro_trainer *t, const repro_recorder_opts *opts)
{
    *out = NULL;
    repro_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    r->t = t;
    r->o = *opts;
    if (r->o.every < 1)
        r->o.every = 1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (repro_fault_from_env(&r->fault))
        goto fail;
    if (build_entries(r)) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto fail;
    }
    snprintf(r->dump_dir, sizeof r->dump_dir, "%s", opts->dump_dir ? opts->dump_dir : "dump");
    if (opts->start_step > 0) {
        /* Resumed: the chain and the hasher's progress start where the
         * checkpoint left off (the waits compare with step numbers). */
        r->chained = r->g_done = r->p_done = opts->start_step;
        if (opts->start_chain)
            r->chain = *opts->start_chain;
    }
    json_t *hextra = NULL;
    if (opts->start_step > 0 && opts->resumed_from) {
        char hex[65];
        repro_digest_hex(&r->chain, hex);
        hextra = json_pack("{s:{s:s, s:I, s:s}}", "resumed_from", "path", opts->resumed_from,
                           "step", (json_int_t)opts->start_step, "chain", hex);
    }
    int wrc = opts->trace_path ? repro_trace_writer_open_with(&r->w, opts->trace_path, &t->cfg,
                                                              opts->level, r->o.every, hextra)
                               : 0;
    json_decref(hextra);
    if (wrc)
        goto fail;
    if (pthread_create(&r->thread, NULL, hasher_main, r) != 0) {
        repro_error_set(REPRO_EIO, "cannot start the hasher thread");
        goto fail;
    }
    r->thread_started = 1;
    if (opts->tap_mode && opts->tap_op && opts->tap_path) {
        r->tap = fopen(opts->tap_path, opts->tap_mode == REPRO_TAP_WRITE ? "wb" : "rb");
        if (!r->tap) {
            repro_error_set_errno(REPRO_EINVAL, "%s: cannot open quarantine tap",
                                  opts->tap_path);
            goto fail;
        }
    }
    if (opts->level == REPRO_TRACE_OP || r->tap) {
        t->model.on_op = on_op;
        t->model.on_op_ctx = r;
    }
    t->rec = r;
    *out = r;
    return 0;
fail:
    repro_recorder_free(r);
    return -1;
}

int repro_recorder_sync(repro_recorder *r)
{
    return wait_done(r, PHASE_P, r->t->step);
}

int repro_recorder_finish(repro_recorder *r, repro_digest *chain, void *trailer_extra)
{
    if (wait_done(r, PHASE_P, r->t->step))
        return -1;
    *chain = r->chain;
    if (r->w) {
        repro_trace_writer *w = r->w;
        r->w = NULL;
        if (repro_trace_writer_close(w, r->chained, &r->chain, trailer_extra))
            return -1;
    }
    return 0;
}

long repro_recorder_steps(const repro_recorder *r)
{
    return r->chained;
}

long repro_recorder_chain(const repro_recorder *r, repro_digest *chain)
{
    *chain = r->chain;
    return r->chained;
}

void repro_recorder_free(repro_recorder *r)
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
    repro_trace_writer_abort(r->w);
    if (r->tap)
        fclose(r->tap);
    if (r->t && r->t->rec == r) {
        r->t->rec = NULL;
        r->t->model.on_op = NULL;
    }
    for (int i = 0; r->entries && i < r->nentries; i++)
        for (int p = 0; p < 2; p++)
            free(r->entries[i].copy[p]);
    free(r->entries);
    free(r->op_host);
    for (int s = 0; s < 2; s++) {
        free(r->slots[s].tensors);
        free(r->slots[s].ops);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
