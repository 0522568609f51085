/* A program's rows compared across batch sizes (batchinv_rows.h): the
 * runs are planned here and executed by the multirun engine; the traces'
 * "row.<id>" tensors are matched by (step, id) and compared by digest. */
#include "analysis/batchinv_rows.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

int repro_batchinv_rows_plan(repro_multirun *m, const char *name, char *const *cmd,
                             double timeout_s, const repro_run_pass *pass,
                             const repro_batchinv_opts *o)
{
    repro_multirun_init(m, name, name, "check-batchinv");
    m->cmd = cmd;
    m->timeout_s = timeout_s;
    m->no_element_detail = 1;
    repro_multirun_add_pass(m, pass);
    /* Rows are compared at every step: detail on each, not the recorder's
     * default every 10th (as bisect asks for its ops). */
    if (m->npass + 2 <= REPRO_MULTIRUN_MAX_PASS) {
        m->pass[m->npass++] = "--set";
        m->pass[m->npass++] = "trace.every=1";
    }
    for (int i = 0; i < o->nsizes; i++) {
        char label[48], set[48];
        snprintf(label, sizeof label, "batch %d", o->sizes[i]);
        snprintf(set, sizeof set, "batch_size=%d", o->sizes[i]);
        if (repro_multirun_add(m, label, REPRO_BATCHINV_SCOPE, "--set", set))
            return -1;
    }
    if (m->nplan < 2)
        return repro_error_set(REPRO_EINVAL, "check: --batch-invariance needs two or more "
                                             "--batch-sizes for a program");
    return 0;
}

/* One recorded row (borrowed from its trace). */
typedef struct {
    long step;
    const repro_trace_tensor *t;
} row_ref;

static int is_row(const repro_trace_tensor *t)
{
    return !strncmp(t->name, REPRO_ROW_PREFIX, strlen(REPRO_ROW_PREFIX));
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* (step, id), numeric ids first and in numeric order (row.2 before
 * row.10): the report lists the first samples first. */
static int row_cmp(const void *pa, const void *pb)
{
    const row_ref *a = pa, *b = pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    const char *ia = a->t->name + strlen(REPRO_ROW_PREFIX);
    const char *ib = b->t->name + strlen(REPRO_ROW_PREFIX);
    int da = all_digits(ia), db = all_digits(ib);
    if (da != db) /* numeric ids first: a total order, as qsort and bsearch need */
        return da ? -1 : 1;
    if (da && strlen(ia) != strlen(ib))
        return strlen(ia) < strlen(ib) ? -1 : 1;
    return strcmp(ia, ib);
}

/* The trace's rows, sorted by (step, name): malloc'd, count in *n. */
static row_ref *rows_of(const repro_trace *t, long *n)
{
    long count = 0;
    for (long s = 0; s < t->nsteps; s++)
        for (int i = 0; i < t->steps[s].ntensors; i++)
            count += is_row(&t->steps[s].tensors[i]);
    row_ref *r = malloc((size_t)(count > 0 ? count : 1) * sizeof *r);
    if (!r)
        return NULL;
    *n = 0;
    for (long s = 0; s < t->nsteps; s++)
        for (int i = 0; i < t->steps[s].ntensors; i++)
            if (is_row(&t->steps[s].tensors[i]))
                r[(*n)++] = (row_ref){t->steps[s].step, &t->steps[s].tensors[i]};
    qsort(r, (size_t)*n, sizeof *r, row_cmp);
    return r;
}

/* Everything but the rows must agree between runs 0 and i: the first
 * difference, as an error (could not be tested), or 0. */
static int same_outside_rows(const repro_multirun *m, int i)
{
    const repro_trace *a = &m->traces[0], *b = &m->traces[i];
    for (long s = 0; s < a->nsteps; s++) {
        const repro_trace_step *sa = &a->steps[s];
        const repro_trace_step *sb = repro_trace_find_step(b, sa->step);
        if (!sb)
            return repro_error_set(REPRO_EIO, "%s of `%s` could not be tested: it has no step "
                                              "%ld",
                                   m->plan[i].label, m->cmd[0], sa->step);
        for (int k = 0; k < sa->ntensors; k++) {
            const repro_trace_tensor *ta = &sa->tensors[k];
            if (is_row(ta))
                continue;
            const repro_trace_tensor *tb = NULL;
            for (int j = 0; j < sb->ntensors && !tb; j++)
                if (!strcmp(sb->tensors[j].name, ta->name))
                    tb = &sb->tensors[j];
            if (!tb || !repro_digest_eq(&ta->digest, &tb->digest))
                return repro_error_set(
                    REPRO_EIO,
                    "%s of `%s` could not be tested for batch invariance: it differs from %s "
                    "outside its rows (step %ld, %s), so its rows could differ for another "
                    "reason than the batch; keep training independent of REPRO_BATCH_SIZE "
                    "and check run-to-run reproducibility first (repro check -- PROGRAM)",
                    m->plan[i].label, m->cmd[0], m->plan[0].label, sa->step, ta->name);
        }
    }
    return 0;
}

static void note_diff(repro_batchinv_rows_result *r, const row_ref *a, const row_ref *b, int i)
{
    if (r->nshown == REPRO_BATCHINV_MAX_SHOWN)
        return;
    repro_batchinv_row_diff *d = &r->shown[r->nshown++];
    snprintf(d->id, sizeof d->id, "%s", a->t->name + strlen(REPRO_ROW_PREFIX));
    d->step = a->step;
    d->a = 0;
    d->b = i;
    d->ta = *a->t;
    d->tb = *b->t;
}

/* Run i's rows against the reference's; samples that differ are marked
 * in seen[] (per reference row) so each is counted once. 0 or -1. */
static int compare_run(const repro_multirun *m, int i, const row_ref *ref, long nref,
                       unsigned char *seen, repro_batchinv_rows_result *r)
{
    long n;
    row_ref *rows = rows_of(&m->traces[i], &n);
    if (!rows)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = 0;
    for (long k = 0; k < nref && rc == 0; k++) {
        const row_ref *b = bsearch(&ref[k], rows, (size_t)n, sizeof *rows, row_cmp);
        if (!b) {
            rc = repro_error_set(REPRO_EIO, "%s of `%s` could not be tested: it recorded no %s "
                                            "at step %ld (%s did)",
                                 m->plan[i].label, m->cmd[0], ref[k].t->name, ref[k].step,
                                 m->plan[0].label);
            break;
        }
        if (repro_digest_eq(&ref[k].t->digest, &b->t->digest))
            continue;
        r->ndiffer_run[i]++;
        if (!seen[k]++) {
            r->ndiffer++;
            note_diff(r, &ref[k], b, i);
        }
    }
    if (rc == 0 && n != nref)
        rc = repro_error_set(REPRO_EIO, "%s of `%s` could not be tested: it recorded %ld rows, "
                                        "%s recorded %ld",
                             m->plan[i].label, m->cmd[0], n, m->plan[0].label, nref);
    free(rows);
    return rc;
}

int repro_batchinv_rows_compare(const repro_multirun *m, repro_batchinv_rows_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->experiment, sizeof r->experiment, "%s", m->traces[0].experiment);
    r->nruns = m->nplan < REPRO_BATCHINV_MAX_SIZES ? m->nplan : REPRO_BATCHINV_MAX_SIZES;
    for (int i = 0; i < r->nruns; i++) {
        snprintf(r->labels[i], sizeof r->labels[i], "%s", m->plan[i].label);
        r->sizes[i] = atoi(m->plan[i].label + strlen("batch "));
    }
    long nref;
    row_ref *ref = rows_of(&m->traces[0], &nref);
    unsigned char *seen = ref ? calloc((size_t)(nref > 0 ? nref : 1), 1) : NULL;
    int rc = 0;
    if (!ref || !seen)
        rc = repro_error_set(REPRO_ENOMEM, "out of memory");
    else if (nref == 0)
        rc = repro_error_set(REPRO_EIO, "`%s` could not be tested for batch invariance: its "
                                        "trace has no rows (tensors named %s<sample-id>, "
                                        "recorded at trace level tensor: docs/PROTOCOL.md)",
                             m->cmd[0], REPRO_ROW_PREFIX);
    r->nrows = ref ? nref : 0;
    for (int i = 1; rc == 0 && i < r->nruns; i++)
        rc = same_outside_rows(m, i) ? -1 : compare_run(m, i, ref, nref, seen, r);
    r->batch_invariant = rc == 0 && r->ndiffer == 0;
    free(ref);
    free(seen);
    return rc;
}
