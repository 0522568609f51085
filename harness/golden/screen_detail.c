/* Element detail of a screen's divergences (screen.h): a rank that
 * diverged from a reference rank, and that reference, each run again to
 * the divergent step dumping only the first differing tensor, with the
 * same fault selection as the repeat; the two tensors go to rank 0, which
 * counts the differing elements and their largest ULP distance. A rank
 * whose fault does not come back on the re-run (a marginal core) leaves
 * the detail unknown, never zero. */
#include "golden/screen.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/session.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/npy.h"
#include "util/ulp.h"

/* One divergence to detail, as rank 0 sends it to every rank. */
typedef struct {
    int rank, ref;
    long step;
    char tensor[64];
} detail_job;

/* This rank's run to job->step with the tensor dumped; the tensor's bytes
 * (malloc'd) and their count, or NULL (the error slot cleared: no detail). */
static void *rerun_tensor(const repro_config *cfg, const repro_screen_opts *o, int rank,
                          int repeat, const char *dir, const detail_job *job, size_t *nbytes)
{
    repro_config *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *cfg;
    c->train_steps = (int)job->step;
    char trace[1200], npy[1400];
    snprintf(trace, sizeof trace, "%s/detail-%d-r%d-s%ld/trace.jsonl", dir, repeat, job->rank,
             job->step);
    repro_session_opts so;
    memset(&so, 0, sizeof so);
    so.output = trace;
    so.no_eval = 1;
    so.dump[0] = job->step;
    so.ndump = 1;
    so.dump_only = job->tensor;
    so.fault_spec = o->fault_spec;
    void *data = NULL;
    repro_session *s = NULL;
    if (repro_fault_from_env(&so.fault) == 0) {
        repro_fault_select_screen(&so.fault, rank, repeat);
        if (repro_session_open(&s, c, &so) == 0) {
            if (repro_session_run(s) == 0 && repro_session_finish(s) == 0) {
                snprintf(npy, sizeof npy, "%s/step-%06ld/%s.npy", s->dump_dir, job->step,
                         job->tensor);
                data = repro_npy_read(npy, nbytes);
            }
            repro_session_close(s);
        }
    }
    repro_error_clear();
    free(c);
    return data;
}

/* Rank `from`'s tensor (data, nbytes: its own) to rank 0: the size, then
 * the bytes. Rank 0 gets a malloc'd copy (NULL when from had none). */
static int send_tensor(repro_dist *dist, int from, const void *data, size_t nbytes,
                       void **got, size_t *got_bytes)
{
    long size = data ? (long)nbytes : -1, at_root = -1;
    if (repro_dist_send_to_root(dist, from, &size, &at_root, sizeof size))
        return -1;
    if (repro_dist_rank(dist) != 0 && repro_dist_rank(dist) != from)
        return 0;
    long n = repro_dist_rank(dist) == 0 ? at_root : size;
    if (n <= 0)
        return 0;
    void *buf = repro_dist_rank(dist) == 0 ? malloc((size_t)n) : NULL;
    int rc = repro_dist_send_to_root(dist, from, data, buf, (size_t)n);
    if (repro_dist_rank(dist) == 0) {
        *got = buf;
        *got_bytes = (size_t)n;
    }
    return rc;
}

/* Rank 0: the differing 4-byte elements of a (the reference) and b. */
static void count_elements(const void *a, const void *b, size_t bytes, repro_screen_verdict *v)
{
    v->elements = 0;
    v->max_ulp = 0;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        uint32_t x, y;
        memcpy(&x, (const char *)a + i, 4);
        memcpy(&y, (const char *)b + i, 4);
        if (x == y)
            continue;
        v->elements++;
        uint64_t u = repro_ulp_distance_f32(x, y);
        if (u > v->max_ulp)
            v->max_ulp = u;
    }
    v->has_elements = v->elements > 0;
}

/* One job on every rank: the two re-runs, the two sends, rank 0's count. */
static int detail_one(const repro_config *cfg, const repro_screen_opts *o, repro_dist *dist,
                      int repeat, const char *dir, const detail_job *job,
                      repro_screen_verdict *v)
{
    int me = repro_dist_rank(dist);
    void *mine = NULL, *bad = NULL, *good = NULL;
    size_t mine_bytes = 0, bad_bytes = 0, good_bytes = 0;
    if (me == job->rank || me == job->ref)
        mine = rerun_tensor(cfg, o, me, repeat, dir, job, &mine_bytes);
    int rc = send_tensor(dist, job->rank, me == job->rank ? mine : NULL, mine_bytes, &bad,
                         &bad_bytes) ||
                     send_tensor(dist, job->ref, me == job->ref ? mine : NULL, mine_bytes, &good,
                                 &good_bytes)
                 ? -1
                 : 0;
    if (!rc && me == 0 && v && bad && good && bad_bytes == good_bytes)
        count_elements(good, bad, good_bytes, &v[job->rank]);
    free(mine);
    free(bad);
    free(good);
    return rc;
}

int repro_screen_detail(const repro_config *cfg, const repro_screen_opts *o, repro_dist *dist,
                        int repeat, const char *dir, repro_screen_verdict *v, const int *wanted,
                        int n)
{
    detail_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return repro_error_set(REPRO_ENOMEM, "screen: out of memory");
    int njobs = 0;
    for (int i = 0; v && i < n; i++)
        if (wanted[i] && v[i].diverged && v[i].against && !strcmp(v[i].against, "ranks") &&
            v[i].ref_rank >= 0 && v[i].step > 0 && v[i].tensor[0])
            jobs[njobs++] = (detail_job){i, v[i].ref_rank, v[i].step, ""},
            snprintf(jobs[njobs - 1].tensor, sizeof jobs->tensor, "%s", v[i].tensor);
    int rc = 0;
    if (dist)
        rc = repro_dist_bcast(dist, &njobs, sizeof njobs) ||
                     (njobs && repro_dist_bcast(dist, jobs, (size_t)njobs * sizeof *jobs))
                 ? -1
                 : 0;
    for (int k = 0; k < njobs && !rc && dist; k++)
        rc = detail_one(cfg, o, dist, repeat, dir, &jobs[k], v);
    free(jobs);
    return rc;
}
