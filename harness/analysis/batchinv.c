/* The batch-invariance engine (batchinv.h): the held-out samples through
 * one eval model in every composition, each sample's logits compared bit
 * for bit with the reference composition's, and the first op located for
 * the samples shown; then the training forward (batchinv_train.c). */
#include "analysis/batchinv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/batchinv_locate.h"
#include "core/dataset.h"
#include "core/session.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/numparse.h"
#include "util/seeds.h"

typedef struct {
    const repro_config *cfg;
    const repro_batchinv_opts *o;
    repro_batchinv_result *r;
    repro_session *sess; /* the weights (trained train_steps), the data, the loader */
    repro_model em;   /* the eval model: the same weights, room for the largest batch */
    int em_ready;
    int cap, N;
    float *x;         /* N x 784: the held-out inputs, as the trainer's eval scales them */
    float *xb;        /* cap x 784: one batch */
    float *host_logits; /* cap x 10 */
    int *order[REPRO_BATCHINV_MAX_COMPS];     /* N: the samples in batch order */
    float *logits[REPRO_BATCHINV_MAX_COMPS];  /* N x 10: each sample's row */
} bi_state;

void repro_batchinv_opts_init(repro_batchinv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sizes[0] = 1;
    o->sizes[1] = 7;
    o->sizes[2] = 64;
    o->nsizes = 3;
}

int repro_batchinv_parse_sizes(repro_batchinv_opts *o, const char *what, const char *list)
{
    long sizes[REPRO_BATCHINV_MAX_SIZES];
    if (repro_parse_count_list(what, list, 1, REPRO_BATCHINV_MAX_BATCH, sizes,
                               REPRO_BATCHINV_MAX_SIZES, &o->nsizes))
        return -1;
    for (int i = 0; i < o->nsizes; i++)
        o->sizes[i] = (int)sizes[i];
    return 0;
}

/* Stage lines on stderr unless --quiet (util/progress.h). */
#define progress(s, ...) repro_progress_note((s)->o->quiet, "batch invariance", __VA_ARGS__)

/* The eval model: the trainer's weights copied through host memory (the
 * same layout: the same config). 0 or -1. */
static int eval_model(bi_state *s)
{
    const repro_dataset *ds = &s->sess->t.test_set;
    s->N = s->o->samples > 0 && s->o->samples < ds->n ? s->o->samples : ds->n;
    if (s->N < 1)
        return repro_error_set(REPRO_EINVAL, "%s: no held-out samples to evaluate",
                               s->cfg->path);
    int maxs = 1;
    for (int i = 0; i < s->o->nsizes; i++)
        maxs = s->o->sizes[i] > maxs ? s->o->sizes[i] : maxs;
    s->cap = maxs < s->N ? maxs : s->N;
    repro_model *tm = &s->sess->t.model;
    if (repro_model_init(&s->em, s->cfg, s->cap, tm->be))
        return -1;
    s->em_ready = 1;
    size_t bytes;
    void *src = repro_model_arena(tm, REPRO_ARENA_PARAMS, &bytes);
    void *host = malloc(bytes ? bytes : 1);
    s->x = malloc((size_t)s->N * REPRO_IMG_PIXELS * sizeof(float));
    s->xb = malloc((size_t)s->cap * REPRO_IMG_PIXELS * sizeof(float));
    s->host_logits = malloc((size_t)s->cap * REPRO_CLASSES * sizeof(float));
    if (!host || !s->x || !s->xb || !s->host_logits) {
        free(host);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    tm->be->copy_d2h(tm->be_ctx, host, src, bytes);
    s->em.be->copy_h2d(s->em.be_ctx, repro_model_arena(&s->em, REPRO_ARENA_PARAMS, NULL), host,
                       bytes);
    free(host);
    for (long i = 0; i < (long)s->N * REPRO_IMG_PIXELS; i++)
        s->x[i] = (float)ds->images[i] / 255.0f; /* as the trainer's eval */
    return 0;
}

/* The compositions: each size in order (the first is the reference), then
 * each size above 1 shuffled by its own seeded permutation. 0 or -1. */
static int plan(bi_state *s)
{
    repro_batchinv_result *r = s->r;
    r->shuffle_seed =
        repro_seed_derive(s->cfg->train_seed, REPRO_PURPOSE_BATCH_COMPOSITION, 0, 0, 0, 0);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->o->nsizes; i++) {
            int size = s->o->sizes[i];
            if (pass == 1 && size == 1)
                continue; /* alone is alone in any order */
            repro_batchinv_comp *c = &r->comps[r->ncomps];
            int *ord = malloc((size_t)s->N * sizeof *ord);
            s->logits[r->ncomps] = malloc((size_t)s->N * REPRO_CLASSES * sizeof(float));
            s->order[r->ncomps++] = ord;
            if (!ord || !s->logits[r->ncomps - 1])
                return repro_error_set(REPRO_ENOMEM, "out of memory");
            c->size = size;
            c->shuffled = pass;
            snprintf(c->label, sizeof c->label, "%sbatch %d", pass ? "shuffled " : "", size);
            if (!pass) {
                for (int j = 0; j < s->N; j++)
                    ord[j] = j;
                continue;
            }
            repro_generator g;
            repro_generator_init(&g, repro_seed_derive(r->shuffle_seed,
                                                       REPRO_PURPOSE_BATCH_COMPOSITION, 0, 0, 0,
                                                       (uint64_t)size));
            repro_generator_randperm(&g, (uint32_t)s->N, (uint32_t *)ord);
        }
    return 0;
}

/* Gathers batch `bi` of composition c into s->xb; returns its size. */
static int gather(bi_state *s, int c, int bi)
{
    int size = s->r->comps[c].size < s->cap ? s->r->comps[c].size : s->cap;
    int start = bi * size, B = s->N - start < size ? s->N - start : size;
    for (int j = 0; j < B; j++)
        memcpy(s->xb + (size_t)j * REPRO_IMG_PIXELS,
               s->x + (size_t)s->order[c][start + j] * REPRO_IMG_PIXELS,
               REPRO_IMG_PIXELS * sizeof(float));
    return B;
}

/* Every batch of composition c through the eval forward; each sample's
 * logits into s->logits[c]. 0 or -1. */
static int run_comp(bi_state *s, int c)
{
    int size = s->r->comps[c].size < s->cap ? s->r->comps[c].size : s->cap;
    for (int bi = 0; bi * size < s->N; bi++) {
        int B = gather(s, c, bi);
        const float *logits = repro_model_forward(&s->em, s->xb, B, 0, 0, 0);
        if (!logits)
            return -1;
        s->em.be->copy_d2h(s->em.be_ctx, s->host_logits, logits,
                           (size_t)B * REPRO_CLASSES * sizeof(float));
        for (int j = 0; j < B; j++)
            memcpy(s->logits[c] + (size_t)s->order[c][bi * size + j] * REPRO_CLASSES,
                   s->host_logits + (size_t)j * REPRO_CLASSES, REPRO_CLASSES * sizeof(float));
    }
    return 0;
}

/* Where sample `sample` sat in composition c. */
static void place_of(const bi_state *s, int c, long sample, repro_batchinv_place *p)
{
    int size = s->r->comps[c].size < s->cap ? s->r->comps[c].size : s->cap;
    int i = 0;
    while (i < s->N && s->order[c][i] != sample)
        i++;
    snprintf(p->label, sizeof p->label, "%s", s->r->comps[c].label);
    p->batch = i / size;
    p->pos = i % size;
    p->bsize = s->N - p->batch * size < size ? s->N - p->batch * size : size;
}

/* The first op whose row for the shown sample differs between its batch
 * in the reference and in composition c. 0 or -1. */
static int locate(bi_state *s, int c, repro_batchinv_mismatch *m)
{
    repro_op_rows ra, rb;
    int Ba = gather(s, 0, m->a.batch);
    if (repro_batchinv_capture(&s->em, s->xb, Ba, m->a.pos, 0, 0, 0, &ra))
        return -1;
    int Bb = gather(s, c, m->b.batch);
    if (repro_batchinv_capture(&s->em, s->xb, Bb, m->b.pos, 0, 0, 0, &rb)) {
        repro_op_rows_free(&ra);
        return -1;
    }
    repro_batchinv_first_op(&ra, &rb, s->cfg, m);
    repro_op_rows_free(&ra);
    repro_op_rows_free(&rb);
    return 0;
}

/* Each sample's logits in every composition against the reference's; the
 * first REPRO_BATCHINV_MAX_SHOWN differing samples located. 0 or -1. */
static int compare(bi_state *s)
{
    repro_batchinv_result *r = s->r;
    size_t row = REPRO_CLASSES * sizeof(float);
    for (long i = 0; i < s->N; i++) {
        int first = -1;
        for (int c = 1; c < r->ncomps; c++)
            if (memcmp(s->logits[c] + i * REPRO_CLASSES, s->logits[0] + i * REPRO_CLASSES,
                       row)) {
                r->comps[c].ndiffer++;
                if (first < 0)
                    first = c;
            }
        if (first < 0)
            continue;
        r->ndiffer++;
        if (r->nshown == REPRO_BATCHINV_MAX_SHOWN)
            continue;
        repro_batchinv_mismatch *m = &r->shown[r->nshown++];
        m->sample = m->sample_id = i;
        snprintf(m->what, sizeof m->what, "logits");
        place_of(s, 0, i, &m->a);
        place_of(s, first, i, &m->b);
        if (locate(s, first, m))
            return -1;
    }
    return 0;
}

static int run_eval(bi_state *s)
{
    if (eval_model(s) || plan(s))
        return -1;
    for (int c = 0; c < s->r->ncomps; c++) {
        progress(s, "%s (%d/%d) ...", s->r->comps[c].label, c + 1, s->r->ncomps);
        if (run_comp(s, c))
            return -1;
    }
    return compare(s);
}

static void release(bi_state *s)
{
    for (int c = 0; c < REPRO_BATCHINV_MAX_COMPS; c++) {
        free(s->order[c]);
        free(s->logits[c]);
    }
    free(s->x);
    free(s->xb);
    free(s->host_logits);
    if (s->em_ready)
        repro_model_release(&s->em);
    repro_session_close(s->sess);
}

int repro_batchinv_run(const repro_config *cfg, const repro_batchinv_opts *o,
                       repro_batchinv_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->experiment, sizeof r->experiment, "%s", cfg->name);
    r->train_steps = o->train_steps;
    if (o->nsizes < 1)
        return repro_error_set(REPRO_EINVAL, "batch invariance: no batch sizes");
    bi_state *s = calloc(1, sizeof *s);
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    s->cfg = cfg;
    s->o = o;
    s->r = r;
    /* A session that only trains: no recorder, no eval of its own. */
    repro_session_opts so = {.no_recorder = 1, .no_eval = 1};
    int rc = repro_session_open(&s->sess, cfg, &so);
    for (long i = 0; rc == 0 && i < o->train_steps; i++) {
        if (i == 0)
            progress(s, "training %ld steps first ...", o->train_steps);
        rc = repro_session_step(s->sess);
    }
    if (rc == 0)
        rc = run_eval(s);
    if (rc == 0) {
        progress(s, "a training batch whole and in %d micro-batches ...",
                 o->micro > 0 ? o->micro : 8);
        rc = repro_batchinv_train_check(&s->sess->t, o, r);
    }
    r->nsamples = s->N;
    r->batch_invariant = rc == 0 && r->ndiffer == 0 && r->train_ndiffer == 0;
    release(s);
    free(s);
    return rc;
}
