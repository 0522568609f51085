/* The built-in engine of `repro parity` (parity.h): a training session to a
 * checkpoint (or restored from one), the trainer's own forward over the
 * probes, then an inference model built from the checkpoint FILE with its
 * own config overrides, serving the probes in every batch size; outputs
 * compared (parity_compare.c) and the first differing op located. */
#include "analysis/parity.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/batchinv_locate.h"
#include "core/checkpoint.h"
#include "core/dataset.h"
#include "core/session.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/fsutil.h"
#include "util/npy.h"

typedef struct {
    const repro_config *cfg;   /* the trainer's */
    repro_config icfg;         /* the inference side's: cfg + infer_set */
    const repro_parity_probes *probes;
    const repro_parity_opts *o;
    repro_parity_result *r;
    repro_session *sess;
    repro_model em;            /* the inference model */
    int em_ready;
    float *x;                  /* nprobes x 784: the probes' inputs */
    float *xb, *host;          /* one batch in, one batch of logits out */
    repro_parity_outputs train, infer[REPRO_PARITY_MAX_SIZES];
} pe_state;

/* Stage lines on stderr unless --quiet (util/progress.h). */
#define progress(s, ...) repro_progress_note((s)->o->quiet, "parity", __VA_ARGS__)

/* The trainer: trained to the checkpoint it writes, or restored from the
 * given one. 0 or -1. */
static int trainer(pe_state *s)
{
    repro_parity_result *r = s->r;
    /* Hashed without a trace file: the checkpoint then carries its chain,
     * so it can be restored here and resumed by `repro run`. */
    repro_session_opts so = {.no_trace = 1, .no_eval = 1};
    long steps = s->o->steps > 0 ? s->o->steps : s->cfg->train_steps;
    if (s->o->checkpoint) {
        if (access(s->o->checkpoint, R_OK))
            return repro_error_set(REPRO_ENOTFOUND, "checkpoint %s: no such file",
                                   s->o->checkpoint);
        so.resume = s->o->checkpoint;
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", s->o->checkpoint);
    } else {
        so.checkpoint_every = steps;
        so.checkpoint_dir = s->o->dir;
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s/ckpt-%ld.bin", s->o->dir, steps);
    }
    if (repro_session_open(&s->sess, s->cfg, &so))
        return -1;
    if (!s->o->checkpoint) {
        progress(s, "training %ld steps to %s ...", steps, r->checkpoint);
        for (long i = 0; i < steps; i++)
            if (repro_session_step(s->sess))
                return -1;
    }
    r->step = s->sess->t.step;
    r->train_batch = s->sess->t.model.capacity;
    return 0;
}

/* The probes' inputs, scaled as the trainer's eval scales them. 0 or -1. */
static int inputs(pe_state *s, int cap)
{
    const repro_dataset *ds = &s->sess->t.test_set;
    int n = s->probes->n;
    s->x = malloc((size_t)n * REPRO_IMG_PIXELS * sizeof(float));
    s->xb = malloc((size_t)cap * REPRO_IMG_PIXELS * sizeof(float));
    s->host = malloc((size_t)cap * REPRO_CLASSES * sizeof(float));
    if (!s->x || !s->xb || !s->host)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        long k;
        if (repro_parity_probe_sample(s->probes, i, ds->n, &k))
            return -1;
        for (long p = 0; p < REPRO_IMG_PIXELS; p++)
            s->x[(size_t)i * REPRO_IMG_PIXELS + p] =
                (float)ds->images[k * REPRO_IMG_PIXELS + p] / 255.0f;
    }
    return 0;
}

/* Probes [first, first + B) into s->xb. */
static void gather(pe_state *s, int first, int B)
{
    memcpy(s->xb, s->x + (size_t)first * REPRO_IMG_PIXELS,
           (size_t)B * REPRO_IMG_PIXELS * sizeof(float));
}

/* Every probe through m's eval forward in batches of size, in file order;
 * each probe's logits into out. 0 or -1. */
static int serve(pe_state *s, repro_model *m, int size, repro_parity_outputs *out)
{
    int n = s->probes->n;
    if (repro_parity_outputs_alloc(out, n))
        return -1;
    out->nelem = REPRO_CLASSES;
    for (int first = 0; first < n; first += size) {
        int B = n - first < size ? n - first : size;
        gather(s, first, B);
        const float *logits = repro_model_forward(m, s->xb, B, 0, 0, 0);
        if (!logits)
            return -1;
        m->be->copy_d2h(m->be_ctx, s->host, logits, (size_t)B * REPRO_CLASSES * sizeof(float));
        for (int j = 0; j < B; j++) {
            out->npos[first + j] = 1;
            out->out[first + j] = malloc(REPRO_CLASSES * sizeof(float));
            if (!out->out[first + j])
                return repro_error_set(REPRO_ENOMEM, "out of memory");
            memcpy(out->out[first + j], s->host + (size_t)j * REPRO_CLASSES,
                   REPRO_CLASSES * sizeof(float));
        }
    }
    return 0;
}

/* The inference model: icfg's network, the parameters read back from the
 * checkpoint file through a trainer of the checkpoint's own config (so the
 * file, not the live trainer, is what is served). 0 or -1. */
static int inference_model(pe_state *s, int cap)
{
    repro_trainer *lt = calloc(1, sizeof *lt);
    if (!lt)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = repro_trainer_init(lt, s->cfg);
    if (rc) {
        free(lt);
        return -1;
    }
    if ((rc = repro_checkpoint_load(lt, s->r->checkpoint, NULL)) == 0 &&
        (rc = repro_model_init(&s->em, &s->icfg, cap, lt->model.be)) == 0) {
        s->em_ready = 1;
        size_t bytes, ibytes;
        void *src = repro_model_arena(&lt->model, REPRO_ARENA_PARAMS, &bytes);
        void *dst = repro_model_arena(&s->em, REPRO_ARENA_PARAMS, &ibytes);
        void *host = malloc(bytes ? bytes : 1);
        if (!host || bytes != ibytes)
            rc = host ? repro_error_set(REPRO_EINVAL,
                                        "the inference config builds another network "
                                        "(%zu parameter bytes, the checkpoint's %zu)",
                                        ibytes, bytes)
                      : repro_error_set(REPRO_ENOMEM, "out of memory");
        else {
            lt->model.be->copy_d2h(lt->model.be_ctx, host, src, bytes);
            s->em.be->copy_h2d(s->em.be_ctx, dst, host, bytes);
        }
        free(host);
    }
    repro_trainer_release(lt);
    free(lt);
    return rc;
}

/* The inference side's config: the trainer's with infer_set applied. */
static int inference_config(pe_state *s)
{
    s->icfg = *s->cfg;
    for (int i = 0; i < s->o->ninfer_set; i++)
        if (repro_config_set(&s->icfg, s->o->infer_set[i]))
            return -1;
    return repro_config_validate(&s->icfg);
}

/* The first op of the first differing probe, and each side's variant. */
static int locate(pe_state *s)
{
    repro_parity_diff *d = &s->r->first;
    repro_op_rows ra, rb;
    gather(s, d->train_batch * s->r->train_batch, d->train_bsize);
    if (repro_batchinv_capture(&s->sess->t.model, s->xb, d->train_bsize, d->train_row, 0, 0, 0,
                               &ra))
        return -1;
    gather(s, d->batch * s->r->comps[d->comp].size, d->bsize);
    if (repro_batchinv_capture(&s->em, s->xb, d->bsize, d->row, 0, 0, 0, &rb)) {
        repro_op_rows_free(&ra);
        return -1;
    }
    repro_batchinv_mismatch mt = {0}, mi = {0};
    if (repro_batchinv_first_op(&ra, &rb, s->cfg, &mt)) {
        memcpy(mi.first_op, mt.first_op, sizeof mi.first_op);
        repro_batchinv_name_op(&s->icfg, &mi);
        snprintf(d->first_op, sizeof d->first_op, "%s", mt.first_op);
        snprintf(d->op, sizeof d->op, "%s", mt.op);
        snprintf(d->train_variant, sizeof d->train_variant, "%s", mt.variant);
        snprintf(d->infer_variant, sizeof d->infer_variant, "%s", mi.variant);
        d->infer_batch_invariant = mi.batch_invariant;
        snprintf(d->changed, sizeof d->changed, "%s",
                 strcmp(mt.variant, mi.variant) ? "inference" : "batch composition");
    }
    repro_op_rows_free(&ra);
    repro_op_rows_free(&rb);
    return 0;
}

/* The outputs as .npy beside the checkpoint: train.npy and
 * infer.batch-N.npy (probes x classes), for numpy or a later diff. */
static int write_outputs(pe_state *s)
{
    int n = s->probes->n;
    float *all = malloc((size_t)n * REPRO_CLASSES * sizeof(float));
    if (!all)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = 0;
    char path[1200];
    long shape[2] = {n, REPRO_CLASSES};
    for (int c = -1; rc == 0 && c < s->r->ncomps; c++) {
        const repro_parity_outputs *o = c < 0 ? &s->train : &s->infer[c];
        for (int i = 0; i < n; i++)
            memcpy(all + (size_t)i * REPRO_CLASSES, o->out[i], REPRO_CLASSES * sizeof(float));
        if (c < 0)
            snprintf(path, sizeof path, "%s/train.npy", s->o->dir);
        else
            snprintf(path, sizeof path, "%s/infer.batch-%d.npy", s->o->dir, s->r->comps[c].size);
        rc = repro_npy_write(path, "f32", 2, shape, all, (size_t)n * REPRO_CLASSES * sizeof(float));
    }
    free(all);
    return rc;
}

static int check_sizes(pe_state *s, int *cap)
{
    *cap = 1;
    for (int i = 0; i < s->o->nsizes; i++) {
        if (s->o->sizes[i] > s->probes->n)
            return repro_error_set(REPRO_EINVAL,
                                   "parity: batch size %d does not fit %d probes (a batch "
                                   "must be full at least once)",
                                   s->o->sizes[i], s->probes->n);
        *cap = s->o->sizes[i] > *cap ? s->o->sizes[i] : *cap;
        repro_parity_comp *c = &s->r->comps[s->r->ncomps++];
        c->size = s->o->sizes[i];
        snprintf(c->label, sizeof c->label, "batch %d", c->size);
    }
    return 0;
}

static int run(pe_state *s)
{
    int cap;
    if (check_sizes(s, &cap) || inference_config(s) || repro_mkdirs(s->o->dir) || trainer(s))
        return -1;
    int tcap = s->r->train_batch;
    if (inputs(s, cap > tcap ? cap : tcap))
        return -1;
    progress(s, "the trainer's forward (batches of %d) ...", tcap);
    if (serve(s, &s->sess->t.model, tcap, &s->train) || inference_model(s, cap))
        return -1;
    for (int c = 0; c < s->r->ncomps; c++) {
        progress(s, "inference, %s ...", s->r->comps[c].label);
        if (serve(s, &s->em, s->r->comps[c].size, &s->infer[c]))
            return -1;
    }
    if (repro_parity_compare(s->probes, &s->train, s->infer, s->r->ncomps, s->r) ||
        write_outputs(s))
        return -1;
    return s->r->has_first ? locate(s) : 0;
}

int repro_parity_run(const repro_config *cfg, const repro_parity_probes *probes,
                     const repro_parity_opts *o, repro_parity_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->experiment, sizeof r->experiment, "%s", cfg->name);
    r->nprobes = probes->n;
    pe_state *s = calloc(1, sizeof *s);
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    s->cfg = cfg;
    s->probes = probes;
    s->o = o;
    s->r = r;
    int rc = run(s);
    repro_parity_outputs_free(&s->train, probes->n);
    for (int c = 0; c < REPRO_PARITY_MAX_SIZES; c++)
        repro_parity_outputs_free(&s->infer[c], probes->n);
    free(s->x);
    free(s->xb);
    free(s->host);
    if (s->em_ready)
        repro_model_release(&s->em);
    if (s->sess)
        repro_session_close(s->sess);
    free(s);
    return rc;
}
