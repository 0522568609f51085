/* The public trace reader and comparison (repro/trace.h): thin wrappers
 * over the reader and comparator `repro diff` uses, so a program that
 * consumes traces gets the very same verdicts. */
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "record/trace.h"
#include "util/error.h"

int repro_trace_load(repro_trace **out, const char *path)
{
    if (!out || !path) {
        repro_error_set(REPRO_EINVAL, "trace: NULL argument");
        return REPRO_EINVAL;
    }
    *out = NULL;
    repro_trace *t = calloc(1, sizeof *t);
    if (!t) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return REPRO_ENOMEM;
    }
    if (repro_trace_read(t, path)) {
        free(t);
        return repro_error_code();
    }
    *out = t;
    return 0;
}

void repro_trace_free(repro_trace *t)
{
    if (!t)
        return;
    repro_trace_release(t);
    free(t);
}

const char *repro_trace_experiment(const repro_trace *t)
{
    return t->experiment;
}

void repro_trace_threads_used(const repro_trace *t, int *threads, int *workers)
{
    if (threads)
        *threads = t->threads_used;
    if (workers)
        *workers = t->workers_used;
}

int64_t repro_trace_step_count(const repro_trace *t)
{
    return t->nsteps;
}

int64_t repro_trace_last_step(const repro_trace *t)
{
    return t->nsteps ? t->steps[t->nsteps - 1].step : t->first_step - 1;
}

int repro_trace_complete(const repro_trace *t)
{
    return t->has_trailer;
}

int repro_trace_chain_at(const repro_trace *t, int64_t step, repro_digest *out)
{
    const repro_trace_step *s = repro_trace_find_step(t, (long)step);
    if (!s) {
        repro_error_set(REPRO_ENOTFOUND, "%s: no step %lld", t->path, (long long)step);
        return REPRO_ENOTFOUND;
    }
    *out = s->chain;
    return 0;
}

int repro_trace_compare(const repro_trace *a, const repro_trace *b, repro_trace_diff *out)
{
    if (!a || !b || !out) {
        repro_error_set(REPRO_EINVAL, "trace compare: NULL argument");
        return REPRO_EINVAL;
    }
    memset(out, 0, sizeof *out);
    repro_divergence d;
    if (repro_compare_traces(a, b, &d))
        return repro_error_code();
    out->identical = d.identical;
    out->first_step = d.first_step;
    out->common_steps = d.common_steps;
    out->a_complete = !d.truncated_a;
    out->b_complete = !d.truncated_b;
    if (d.ntensors > 0 && d.detail_step == d.first_step) /* at the divergent step */
        snprintf(out->tensor, sizeof out->tensor, "%s", d.tensors[0].name);
    repro_divergence_release(&d);
    return 0;
}
