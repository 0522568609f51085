/* The program engine of `repro parity -- PROGRAM` (parity.h): the parity
 * protocol (docs/PROTOCOL.md) as fresh processes. One training run
 * (REPRO_PARITY=train) writes the checkpoint and its own forward's output
 * for every probe; one inference run per batch size (REPRO_PARITY=infer,
 * REPRO_BATCH_SIZE=N) reads that checkpoint and serves the probes. Each
 * writes probe i's output as <REPRO_PARITY_OUT>/probe-<i>.npy (float32,
 * positions x elements) and records it in its trace; the outputs are then
 * compared (parity_compare.c). */
#include "analysis/parity.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/npy.h"

#define MAX_ENV (16 + REPRO_PARITY_MAX_SETS)

typedef struct {
    char buf[MAX_ENV][1400];
    const char *env[MAX_ENV + 1];
    int n;
} env_list;

static void env_add(env_list *e, const char *fmt, const char *a, const char *b)
{
    snprintf(e->buf[e->n], sizeof e->buf[e->n], fmt, a, b);
    e->env[e->n] = e->buf[e->n];
    e->env[++e->n] = NULL;
}

/* KEY=VALUE as REPRO_SET_<KEY> (upper case, '.' and '-' as '_'). */
static void env_set_key(env_list *e, const char *assignment)
{
    char key[128];
    size_t k = strcspn(assignment, "=");
    if (k >= sizeof key)
        k = sizeof key - 1;
    for (size_t i = 0; i < k; i++)
        key[i] = assignment[i] == '.' || assignment[i] == '-'
                     ? '_'
                     : (char)toupper((unsigned char)assignment[i]);
    key[k] = '\0';
    env_add(e, "REPRO_SET_%s=%s", key, assignment + k + (assignment[k] == '='));
}

/* The last line of a run's stderr, for the message of a failed run. */
static void last_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (line[strspn(line, " \t\r\n")])
            snprintf(out, len, "%.*s", (int)strcspn(line, "\r\n"), line);
    fclose(f);
}

/* One run of the program: side "train" or "infer" (size > 0) into
 * dir/<sub>. 0, or -1: EINVAL when the program said its input is bad
 * (exit 2), EIO when it could not be run. */
static int run_side(char *const *cmd, const repro_parity_opts *o, const char *probes_abs,
                    const char *ckpt, const char *sub, int size)
{
    char out[1200], trace[1300], err[1300], num[32];
    snprintf(out, sizeof out, "%s/%s", o->dir, sub);
    snprintf(trace, sizeof trace, "%s/trace.jsonl", out);
    snprintf(err, sizeof err, "%s/stderr.txt", out);
    if (repro_mkdirs(out))
        return -1;
    env_list *e = calloc(1, sizeof *e);
    if (!e)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    env_add(e, "REPRO_PARITY=%s%s", size ? "infer" : "train", "");
    env_add(e, "REPRO_PARITY_CHECKPOINT=%s%s", ckpt, "");
    env_add(e, "REPRO_PARITY_PROBES=%s%s", probes_abs, "");
    env_add(e, "REPRO_PARITY_OUT=%s%s", out, "");
    env_add(e, "REPRO_TRACE=%s%s", trace, "");
    if (size) {
        snprintf(num, sizeof num, "%d", size);
        env_add(e, "REPRO_BATCH_SIZE=%s%s", num, "");
        for (int i = 0; i < o->ninfer_set; i++)
            env_set_key(e, o->infer_set[i]);
    } else {
        if (o->steps > 0) {
            snprintf(num, sizeof num, "%ld", o->steps);
            env_add(e, "REPRO_SET_STEPS=%s%s", num, "");
        }
        for (int i = 0; i < o->ntrain_set; i++)
            env_set_key(e, o->train_set[i]);
    }
    repro_child c;
    memset(&c, 0, sizeof c);
    c.argv = cmd;
    c.env_set = e->env;
    c.out_path = NULL;
    c.err_path = err;
    c.timeout_s = o->timeout_s;
    repro_child_status st;
    int rc = repro_child_run(&c, &st);
    free(e);
    if (rc)
        return -1;
    if (st.how == REPRO_CHILD_EXITED && st.code == 0)
        return 0;
    char why[96], line[400];
    repro_child_status_text(&st, &c, why, sizeof why);
    last_line(err, line, sizeof line);
    int bad = st.how == REPRO_CHILD_EXITED && st.code == 2;
    return repro_error_set(bad ? REPRO_EINVAL : REPRO_EIO, "parity: the %s run (%s) %s%s%s",
                           size ? "inference" : "training", sub, why, line[0] ? ": " : "",
                           line);
}

/* Probe outputs of one run: dir/<sub>/probe-<i>.npy. 0 or -1 (EIO). */
static int read_outputs(const repro_parity_opts *o, const char *sub, int n,
                        repro_parity_outputs *out)
{
    if (repro_parity_outputs_alloc(out, n))
        return -1;
    char path[1300];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s/probe-%d.npy", o->dir, sub, i);
        repro_npy npy;
        if (repro_npy_load(path, &npy)) {
            char why[400];
            snprintf(why, sizeof why, "%s", repro_error_message());
            return repro_error_set(REPRO_EIO, "parity: the %s run gave no output for probe %d: %s",
                                   sub, i, why);
        }
        long npos = npy.ndim == 2 ? npy.shape[0] : 1,
             nelem = npy.ndim == 2 ? npy.shape[1] : npy.ndim ? npy.shape[0] : 1;
        out->out[i] = npy.data;
        if (strcmp(npy.dtype, "f32") || npy.ndim > 2 || (i && nelem != out->nelem))
            return repro_error_set(REPRO_EIO, "parity: %s: a %s output of %d dimensions where "
                                   "a float32 probe x %ld output was expected",
                                   path, npy.dtype, npy.ndim, out->nelem);
        out->npos[i] = npos;
        out->nelem = nelem;
    }
    return 0;
}

static int run_all(char *const *cmd, const repro_parity_probes *probes,
                   const repro_parity_opts *o, repro_parity_result *r,
                   repro_parity_outputs *train, repro_parity_outputs *infer)
{
    char probes_abs[PATH_MAX], sub[48];
    if (repro_mkdirs(o->dir))
        return -1;
    if (!realpath(probes->path, probes_abs))
        return repro_error_set(REPRO_ENOTFOUND, "%s: no such probes file", probes->path);
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s/ckpt.bin", o->dir);
    if (!o->quiet)
        fprintf(stderr, "repro: parity: the training run ...\n");
    if (run_side(cmd, o, probes_abs, r->checkpoint, "train", 0))
        return -1;
    if (access(r->checkpoint, R_OK))
        return repro_error_set(REPRO_EIO,
                               "parity: the training run wrote no checkpoint at %s (does the "
                               "program speak the parity protocol? docs/PROTOCOL.md)",
                               r->checkpoint);
    if (read_outputs(o, "train", probes->n, train))
        return -1;
    for (int c = 0; c < r->ncomps; c++) {
        snprintf(sub, sizeof sub, "infer-batch-%d", r->comps[c].size);
        if (!o->quiet)
            fprintf(stderr, "repro: parity: inference, %s ...\n", r->comps[c].label);
        if (run_side(cmd, o, probes_abs, r->checkpoint, sub, r->comps[c].size) ||
            read_outputs(o, sub, probes->n, &infer[c]))
            return -1;
    }
    return repro_parity_compare(probes, train, infer, r->ncomps, r);
}

int repro_parity_run_program(char *const *cmd, const char *name,
                             const repro_parity_probes *probes, const repro_parity_opts *o,
                             repro_parity_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->experiment, sizeof r->experiment, "%s", name);
    r->program = 1;
    r->nprobes = probes->n;
    r->step = o->steps;
    r->train_batch = 0; /* the program's own composition */
    for (int i = 0; i < o->nsizes; i++) {
        if (o->sizes[i] > probes->n)
            return repro_error_set(REPRO_EINVAL,
                                   "parity: batch size %d does not fit %d probes (a batch "
                                   "must be full at least once)",
                                   o->sizes[i], probes->n);
        repro_parity_comp *c = &r->comps[r->ncomps++];
        c->size = o->sizes[i];
        snprintf(c->label, sizeof c->label, "batch %d", c->size);
    }
    repro_parity_outputs train = {0}, infer[REPRO_PARITY_MAX_SIZES] = {{0}};
    int rc = run_all(cmd, probes, o, r, &train, infer);
    repro_parity_outputs_free(&train, probes->n);
    for (int c = 0; c < REPRO_PARITY_MAX_SIZES; c++)
        repro_parity_outputs_free(&infer[c], probes->n);
    return rc;
}
