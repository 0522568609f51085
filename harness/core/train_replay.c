/* replay.every: the first computation's gradients kept, the second's
 * compared (train_replay.h). */
#include "core/train_replay.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/ulp.h"

int repro_replay_save(repro_replay *r, const repro_model *m)
{
    memset(r, 0, sizeof *r);
    void *grads = repro_model_arena(m, REPRO_ARENA_GRADS, &r->bytes);
    r->first = malloc(r->bytes ? r->bytes : 1);
    r->second = malloc(r->bytes ? r->bytes : 1);
    if (!r->first || !r->second) {
        repro_replay_release(r);
        return repro_error_set(REPRO_ENOMEM, "replay: out of memory for %zu bytes of gradients",
                               r->bytes);
    }
    if (r->bytes)
        m->be->copy_d2h(m->be_ctx, r->first, grads, r->bytes);
    return 0;
}

/* Elements of a and b that differ, and the largest ULP distance. */
static long count_differing(const float *a, const float *b, long n, uint64_t *max_ulp)
{
    long count = 0;
    *max_ulp = 0;
    for (long i = 0; i < n; i++) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x == y)
            continue;
        count++;
        uint64_t u = repro_ulp_distance_f32(x, y);
        if (u > *max_ulp)
            *max_ulp = u;
    }
    return count;
}

int repro_replay_compare(repro_replay *r, const repro_model *m, const repro_fault *f, long step,
                         int rank, char *differs, size_t len)
{
    size_t bytes;
    void *grads = repro_model_arena(m, REPRO_ARENA_GRADS, &bytes);
    if (bytes)
        m->be->copy_d2h(m->be_ctx, r->second, grads, bytes);
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        char name[48];
        snprintf(name, sizeof name, "grad.%s", p->name);
        float *second = r->second + p->offset;
        repro_fault_apply(f, step, name, second, (size_t)p->numel * sizeof(float));
        if (!memcmp(r->first + p->offset, second, (size_t)p->numel * sizeof(float)))
            continue;
        snprintf(differs, len, "%s", name);
        uint64_t ulp;
        long n = count_differing(r->first + p->offset, second, p->numel, &ulp);
        char ulps[32];
        if (ulp == REPRO_ULP_NAN)
            snprintf(ulps, sizeof ulps, "NaN");
        else
            snprintf(ulps, sizeof ulps, "%llu ULP", (unsigned long long)ulp);
        return repro_error_set(REPRO_EMISMATCH,
                               "replay: step %ld, rank %d: %s differs between two computations "
                               "of the same step from the same state (%ld of %ld elements, max "
                               "%s): hardware or nondeterminism; the run stopped before the "
                               "update",
                               step, rank, name, n, p->numel, ulps);
    }
    return 0;
}

void repro_replay_release(repro_replay *r)
{
    free(r->first);
    free(r->second);
    r->first = r->second = NULL;
}
