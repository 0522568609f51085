/* Comparing two trace files as streams (compare.h): both are read in step
 * order, one step of each in memory, and walked together over their common
 * steps, so `repro diff` of a million-step run costs what a thousand-step
 * one does. */
#include <string.h>

#include "analysis/compare.h"
#include "util/error.h"

/* A trace without a trailer is a run that did not finish: comparing it
 * would report a difference that is only a crash, so it is an input error. */
static int check_finished(const repro_trace *t)
{
    if (t->has_trailer)
        return 0;
    long line = t->nsteps ? t->last_line : 1;
    return repro_error_set(
        REPRO_EINVAL, "%s: truncated trace (no trailer after line %ld): the run did not finish",
        t->path, line);
}

typedef struct {
    repro_trace_stream *st;
    const repro_trace_step *s; /* the current step, NULL at the end */
    repro_digest last_chain;
} side;

static int advance(side *x)
{
    int got = repro_trace_stream_next(x->st, &x->s);
    if (got < 0)
        return -1;
    if (got == 0)
        x->s = NULL;
    else
        x->last_chain = x->s->chain;
    return 0;
}

/* Walks A and B in step order: the side behind catches up (a resumed trace
 * starts later), equal step numbers are compared. Both are read to the end
 * so that every line is checked, as the whole-trace reader does; A's
 * errors come first. */
static int walk(side *xa, side *xb, repro_compare_walk *w)
{
    if (advance(xa) || advance(xb))
        return -1;
    while (xa->s || xb->s) {
        if (xa->s && xb->s && xa->s->step == xb->s->step) {
            if (repro_compare_walk_step(w, xa->s, xb->s) || advance(xa) || advance(xb))
                return -1;
        } else if (xa->s && (!xb->s || xa->s->step < xb->s->step)) {
            if (advance(xa))
                return -1;
        } else if (advance(xb)) {
            return -1;
        }
    }
    return 0;
}

int repro_compare_files(const char *path_a, const char *path_b, repro_trace *a, repro_trace *b,
                        int same_config, int require_trailer, repro_divergence *out)
{
    side xa = {0}, xb = {0};
    repro_compare_walk w;
    repro_compare_walk_begin(&w, out);
    memset(b, 0, sizeof *b);
    int rc = -1;
    if (repro_trace_stream_open(&xa.st, a, path_a) || repro_trace_stream_open(&xb.st, b, path_b))
        goto done;
    if (walk(&xa, &xb, &w))
        goto done;
    if (require_trailer && (check_finished(a) || check_finished(b)))
        goto done;
    if (repro_compare_headers(a, b, same_config))
        goto done;
    repro_compare_walk_end(&w, a, b, a->nsteps ? &xa.last_chain : NULL,
                           b->nsteps ? &xb.last_chain : NULL);
    rc = 0;
done:
    repro_trace_stream_close(xa.st);
    repro_trace_stream_close(xb.st);
    if (rc)
        repro_divergence_release(out);
    return rc;
}
