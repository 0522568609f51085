/* Bisect for batch invariance (bisect_ops.h): which variant makes a
 * sample's bits depend on its batch? The suspects are the variants in use
 * that the registry marks not batch-invariant (variants.h); each is put
 * back to its default on its own and the in-process check repeated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bisect/bisect_ops.h"
#include "kernels/variants.h"
#include "util/error.h"

/* The variant keys cfg sets to a variant registered not batch-invariant. */
static void candidates(repro_bisect_batchinv_result *r)
{
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const repro_variant_info *vi = repro_config_variant_in_use(&r->cfg, k);
        if (vi && vi->batch_invariant == 0 && r->ncand < REPRO_BISECT_OPS_MAX_CAND)
            r->cand[r->ncand++] = k;
    }
}

/* Sets variant key k of cfg to its default (its first choice). */
static int to_default(repro_config *cfg, int k)
{
    repro_config d;
    repro_config_defaults(&d);
    char v[64], set[160];
    repro_config_variant_name(&d, k, v, sizeof v);
    snprintf(set, sizeof set, "variant.%s=%s", repro_config_key_name(k), v);
    return repro_config_set(cfg, set);
}

/* The check with the candidates in `mask` (bit i: cand[i]) at their
 * defaults: 1 batch-invariant, 0 not, -1 error. */
static int passes_with(repro_bisect_batchinv_result *r, const repro_batchinv_opts *bo,
                       unsigned mask, repro_batchinv_result *scratch, int quiet)
{
    repro_config cfg = r->cfg;
    for (int i = 0; i < r->ncand; i++)
        if ((mask >> i & 1u) && to_default(&cfg, r->cand[i]))
            return -1;
    repro_batchinv_opts o = *bo;
    o.quiet = 1;
    r->tests++;
    if (repro_batchinv_run(&cfg, &o, scratch))
        return -1;
    if (!quiet) {
        fprintf(stderr, "bisect: batch invariance with {");
        for (int i = 0, first = 1; i < r->ncand; i++)
            if (mask >> i & 1u) {
                fprintf(stderr, "%s%s", first ? "" : ", ", repro_config_key_name(r->cand[i]));
                first = 0;
            }
        fprintf(stderr, "} at the default: %s\n", scratch->batch_invariant ? "passes" : "fails");
    }
    return scratch->batch_invariant;
}

int repro_bisect_batchinv(const repro_bisect_ops_opts *o, const repro_batchinv_opts *bo,
                          repro_bisect_batchinv_result *r)
{
    memset(r, 0, sizeof *r);
    if (repro_config_load(&r->cfg, o->exp) ||
        repro_config_apply_run_options(&r->cfg, o->pass.argv, o->pass.n) ||
        repro_config_validate(&r->cfg))
        return -1;
    repro_batchinv_opts first = *bo;
    first.quiet = o->quiet;
    r->tests = 1;
    if (repro_batchinv_run(&r->cfg, &first, &r->check))
        return -1;
    if (r->check.batch_invariant)
        return 0;
    candidates(r);
    repro_batchinv_result *scratch = calloc(1, sizeof *scratch);
    if (!scratch)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = 0;
    for (int i = 0; i < r->ncand && rc >= 0; i++)
        if ((rc = passes_with(r, bo, 1u << i, scratch, o->quiet)) == 1)
            r->culprits[r->nculprits++] = r->cand[i];
    if (rc >= 0 && r->nculprits == 0 && r->ncand > 1 &&
        (rc = passes_with(r, bo, (1u << r->ncand) - 1, scratch, o->quiet)) == 1) {
        r->jointly = 1;
        for (int i = 0; i < r->ncand; i++)
            r->culprits[r->nculprits++] = r->cand[i];
    }
    free(scratch);
    return rc < 0 ? -1 : 0;
}
