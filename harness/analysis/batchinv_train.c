/* The training half of the batch-invariance check (batchinv_locate.h): the
 * batch of the trainer's next step through the forward as one batch and as
 * micro-batches (gradient accumulation's split), on the trainer's own model
 * and buffers. Per sample: the logits row, the softmax row the loss kernel
 * computes inside the batch, and the sample's loss (the loss kernel on its
 * row alone). Gradient sums over the batch legitimately differ between the
 * two splits; these rows must not. */
#include <stdlib.h>
#include <string.h>

#include "analysis/batchinv_locate.h"
#include "core/dataset.h"
#include "util/error.h"

typedef struct {
    float *logits, *probs; /* B x 10 each, host */
    double *loss;          /* B */
} train_rows;

/* Rows [0, B) of x through the forward and the loss kernel, into out at
 * row `at`. 0 or -1. */
static int rows(repro_trainer *t, const float *x, const int32_t *y, int B, int train, long step,
                train_rows *out, int at)
{
    repro_model *m = &t->model;
    const repro_backend *be = m->be;
    const float *logits = repro_model_forward(m, x, B, train, t->cfg.train_seed, step);
    if (!logits)
        return -1;
    be->copy_h2d(m->be_ctx, t->labels, y, (size_t)B * sizeof(int32_t));
    be->softmax_xent_forward(m->be_ctx, logits, t->labels, t->probs, B, REPRO_CLASSES);
    size_t n = (size_t)B * REPRO_CLASSES;
    be->copy_d2h(m->be_ctx, out->logits + (size_t)at * REPRO_CLASSES, logits, n * sizeof(float));
    be->copy_d2h(m->be_ctx, out->probs + (size_t)at * REPRO_CLASSES, t->probs,
                 n * sizeof(float));
    for (int i = 0; i < B; i++) /* each sample's loss: its row alone (dlogits as scratch) */
        out->loss[at + i] = be->softmax_xent_forward(m->be_ctx, logits + (size_t)i * REPRO_CLASSES,
                                                     t->labels + i, t->dlogits, 1, REPRO_CLASSES);
    return 0;
}

static int rows_alloc(train_rows *r, int B)
{
    r->logits = malloc((size_t)B * REPRO_CLASSES * sizeof(float));
    r->probs = malloc((size_t)B * REPRO_CLASSES * sizeof(float));
    r->loss = malloc((size_t)B * sizeof(double));
    return r->logits && r->probs && r->loss ? 0 : -1;
}

static void rows_free(train_rows *r)
{
    free(r->logits);
    free(r->probs);
    free(r->loss);
}

/* The first differing quantity of sample i, or NULL when none differs. */
static const char *differs(const train_rows *a, const train_rows *b, int i)
{
    size_t row = REPRO_CLASSES * sizeof(float), at = (size_t)i * REPRO_CLASSES;
    if (memcmp(a->logits + at, b->logits + at, row))
        return "logits";
    if (memcmp(a->probs + at, b->probs + at, row))
        return "probs";
    if (memcmp(&a->loss[i], &b->loss[i], sizeof(double)))
        return "loss";
    return NULL;
}

/* The first op where sample i's rows part, whole vs its micro-batch. */
static int locate(repro_trainer *t, const repro_batch *b, int train, long step, int i,
                  repro_batchinv_result *r, repro_batchinv_mismatch *m)
{
    int ms = r->train_micro_size, j = i / ms;
    int Bj = b->size - j * ms < ms ? b->size - j * ms : ms;
    repro_op_rows ra, rb;
    if (repro_batchinv_capture(&t->model, b->x, b->size, i, train, t->cfg.train_seed, step, &ra))
        return -1;
    if (repro_batchinv_capture(&t->model, b->x + (size_t)j * ms * REPRO_IMG_PIXELS, Bj, i % ms,
                               train, t->cfg.train_seed, step + j, &rb)) {
        repro_op_rows_free(&ra);
        return -1;
    }
    if (!repro_batchinv_first_op(&ra, &rb, &t->cfg, m)) {
        /* every op row agrees: the loss kernel's rows are where they part */
        snprintf(m->first_op, sizeof m->first_op, "softmax_xent");
        repro_batchinv_name_op(&t->cfg, m);
    }
    repro_op_rows_free(&ra);
    repro_op_rows_free(&rb);
    return 0;
}

static void places(const repro_batchinv_result *r, int i, repro_batchinv_mismatch *m)
{
    int ms = r->train_micro_size, B = r->train_batch;
    snprintf(m->a.label, sizeof m->a.label, "training batch of %d", B);
    m->a.batch = 0;
    m->a.pos = i;
    m->a.bsize = B;
    snprintf(m->b.label, sizeof m->b.label, "%d micro-batches of %d", r->train_nmicro, ms);
    m->b.batch = i / ms;
    m->b.pos = i % ms;
    m->b.bsize = B - m->b.batch * ms < ms ? B - m->b.batch * ms : ms;
}

/* Whole, then micro-batches, then the comparison. 0 or -1. */
static int compare(repro_trainer *t, const repro_batch *b, repro_batchinv_result *r)
{
    int B = b->size, ms = r->train_micro_size, train = r->train_mode;
    /* the dropout stream key the trainer would use (micro-batch j: + j) */
    long step = t->step * t->cfg.train_accumulation_steps;
    train_rows whole = {0}, micro = {0};
    int rc = -1;
    if (rows_alloc(&whole, B) || rows_alloc(&micro, B)) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto done;
    }
    if (rows(t, b->x, b->y, B, train, step, &whole, 0))
        goto done;
    for (int j = 0; j * ms < B; j++) {
        int Bj = B - j * ms < ms ? B - j * ms : ms;
        if (rows(t, b->x + (size_t)j * ms * REPRO_IMG_PIXELS, b->y + j * ms, Bj, train, step + j,
                 &micro, j * ms))
            goto done;
    }
    for (int i = 0; i < B; i++) {
        const char *what = differs(&whole, &micro, i);
        if (!what)
            continue;
        r->train_ndiffer++;
        if (r->train_nshown == REPRO_BATCHINV_MAX_SHOWN)
            continue;
        repro_batchinv_mismatch *m = &r->train_shown[r->train_nshown++];
        m->sample = i;
        m->sample_id = b->ids[i];
        snprintf(m->what, sizeof m->what, "%s", what);
        places(r, i, m);
        if (locate(t, b, train, step, i, r, m))
            goto done;
    }
    rc = 0;
done:
    rows_free(&whole);
    rows_free(&micro);
    return rc;
}

int repro_batchinv_train_check(repro_trainer *t, const repro_batchinv_opts *o,
                               repro_batchinv_result *r)
{
    const repro_batch *b;
    if (repro_loader_next(t->loader, &b))
        return -1;
    int nmicro = o->micro > 0 ? o->micro : 8;
    int ms = b->size / nmicro > 0 ? b->size / nmicro : 1;
    r->train_checked = 1;
    r->train_step = t->step + 1;
    r->train_batch = b->size;
    r->train_micro_size = ms;
    r->train_nmicro = (b->size + ms - 1) / ms;
    /* dropout's mask follows the element's position in the batch tensor:
     * by design not batch-invariant (variants.c), so a model with dropout
     * has this forward in eval mode (same kernels, no positional mask) */
    r->train_mode = !(t->cfg.model_dropout > 0);
    return compare(t, b, r);
}
