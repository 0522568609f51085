/* The public recorder (repro/repro.h): named tensors in, step digests,
 * chain digests and trace lines out. It knows no trainer: the built-in
 * workload (core/train_record.c) records through these same calls, from its
 * hasher thread, as any external program does from its training loop.
 *
 * Not thread-safe: one thread at a time may use a recorder (the built-in
 * workload hands it between its training and hasher threads under a mutex).
 * After any error the recorder is failed: every later call returns the
 * same code, so a program that checks only close() still learns of it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/recorder.h"
#include "record/stats.h"
#include "record/trace.h"
#include "record/values.h"
#include "util/error.h"
#include "util/version.h"

/* One step's list (tensors, or ops), grown as the program records. */
typedef struct {
    repro_trace_tensor *v;
    int n, cap;
} tensor_list;

struct repro_recorder {
    repro_trace_writer *w;     /* NULL: digests only */
    repro_recorder_options o;
    tensor_list tensors, ops;
    repro_digest chain;
    int64_t step;              /* the last ended step */
    int failed;                /* a REPRO_E* code once something failed */
    json_t *header;            /* the header written, until the first step ends */
    int64_t first_step;        /* the step before the first this recorder ends */
    int first_detail;          /* the first step gets detail (recorder.h) */
    /* The last step's param.* tensors (total_steps known): their SHA-256
     * tree digests, for the trailer's final_params_sha256; partial when one
     * came as leaf digests of another function (no bytes to SHA-256). */
    repro_digest *final;
    size_t nfinal, final_cap;
    int final_partial;
    char trace_path[1024];     /* "" when no trace is written */
    char *values;              /* repro_recorder_values' directory, or NULL */
};

void repro_recorder_options_init(repro_recorder_options *o)
{
    memset(o, 0, sizeof *o);
    o->level = REPRO_LEVEL_TENSOR;
    /* Detail every 10th step, as the built-in experiments: a 30,000-step
     * program trace stays within 30 MB (docs/traces.md). Every step keeps
     * its digests and loss; repro bisect asks for every step itself. */
    o->every = 10;
    o->threads = 1;
}

void repro_recorder_no_first_detail(repro_recorder *r)
{
    r->first_detail = 0;
}

static int fail(repro_recorder *r, int code, const char *fmt, const char *arg)
{
    repro_error_set(code, fmt, arg);
    if (!r->failed)
        r->failed = code;
    return code;
}

/* The slot already says what failed (a lower layer set it): remember its
 * code. */
static int mark(repro_recorder *r)
{
    int code = repro_error_code();
    if (!r->failed)
        r->failed = code;
    return code;
}

/* After a failure, repeat it: the slot may have been overwritten since. */
static int check_alive(repro_recorder *r)
{
    if (!r)
        return repro_error_set(REPRO_EINVAL, "recorder: NULL"), REPRO_EINVAL;
    if (r->failed) {
        repro_error_set(r->failed, "recorder: an earlier call failed (the trace is incomplete)");
        return r->failed;
    }
    return 0;
}

/* ---- the header ---------------------------------------------------------- */

static json_t *parse_object(const char *text, const char *what)
{
    json_error_t err;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        repro_error_set(REPRO_EINVAL, "%s is not a JSON object: %s", what,
                        o ? "another JSON value" : err.text);
        return NULL;
    }
    return o;
}

/* A program's own config: its digests are SHA-256 of the canonical JSON
 * (sorted keys, compact), so key order and spacing do not count. */
static int add_config(json_t *h, const repro_run_info *info)
{
    json_t *config = info->config_json ? parse_object(info->config_json, "config_json")
                                       : json_object();
    if (!config)
        return -1;
    char *canon = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    repro_digest d;
    int rc = !canon ? repro_error_set(REPRO_ENOMEM, "out of memory")
                    : repro_sha256(canon, strlen(canon), &d) ? -1 : 0;
    free(canon);
    if (rc) {
        json_decref(config);
        return -1;
    }
    char hex[65];
    repro_digest_hex(&d, hex);
    json_object_set_new(h, "config", config);
    json_object_set_new(h, "config_digest", json_string(hex));
    json_object_set_new(h, "numerics_digest", json_string(hex));
    return 0;
}

static json_t *build_header(const repro_run_info *info, const repro_recorder_options *o)
{
    const char *exp = info->experiment && info->experiment[0] ? info->experiment : "unnamed";
    json_t *h = repro_trace_header_new(exp, o->experiment_path ? o->experiment_path : exp,
                                       info->seed, (int)o->level, o->every, o->threads,
                                       o->workers, o->backend);
    if (!h)
        return NULL;
    /* The run's digest function, at the top and in the env block (which
     * repro_trace_header_new fills with the library default). */
    const char *fn = repro_digest_fn_name(o->digest);
    json_object_set_new(h, "tensor_hash", json_string(fn));
    json_object_set_new(json_object_get(h, "env"), "tensor_hash", json_string(fn));
    if (add_config(h, info)) {
        json_decref(h);
        return NULL;
    }
    if (o->start_step > 0) {
        char hex[65];
        repro_digest zero = {{0}};
        repro_digest_hex(o->start_chain ? o->start_chain : &zero, hex);
        json_object_set_new(h, "resumed_from",
                            json_pack("{s:s, s:I, s:s}", "path", "", "step",
                                      (json_int_t)o->start_step, "chain", hex));
    }
    if (o->header_json) {
        /* The caller's keys win: the built-in workload supplies its own
         * config, digests and resume point this way. */
        json_t *extra = parse_object(o->header_json, "header_json");
        if (!extra) {
            json_decref(h);
            return NULL;
        }
        json_object_update(h, extra);
        json_decref(extra);
    }
    return h;
}

static int validate_options(const repro_recorder_options *o)
{
    if ((int)o->level < REPRO_LEVEL_STEP || (int)o->level > REPRO_LEVEL_OP)
        return repro_error_set(REPRO_EINVAL, "recorder: level %d is not step, tensor or op",
                               (int)o->level);
    if (o->every < 1)
        return repro_error_set(REPRO_EINVAL, "recorder: every = %d (must be >= 1)", o->every);
    if (o->start_step < 0 || o->start_step > REPRO_TRACE_MAX_STEP)
        return repro_error_set(REPRO_EINVAL, "recorder: start_step %lld out of range",
                               (long long)o->start_step);
    if (o->threads < 0 || o->workers < 0)
        return repro_error_set(REPRO_EINVAL, "recorder: negative threads or workers");
    if (!repro_digest_fn_name(o->digest))
        return repro_error_set(REPRO_EINVAL, "recorder: digest %d is not XXH3-128 or SHA-256",
                               (int)o->digest);
    return 0;
}

int repro_recorder_open_ex(repro_recorder **out, const char *trace_path,
                           const repro_run_info *info, const repro_recorder_options *opts)
{
    if (!out || !info)
        return repro_error_set(REPRO_EINVAL, "recorder: NULL argument"), REPRO_EINVAL;
    *out = NULL;
    repro_recorder_options o;
    if (opts)
        o = *opts;
    else
        repro_recorder_options_init(&o);
    if (validate_options(&o))
        return repro_error_code();
    if (!trace_path)
        trace_path = getenv("REPRO_TRACE");
    repro_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return repro_error_set(REPRO_ENOMEM, "out of memory"), REPRO_ENOMEM;
    r->o = o;
    r->o.header_json = NULL; /* not kept: the caller's string may go away */
    r->o.experiment_path = NULL;
    r->o.backend = NULL;
    r->step = o.start_step;
    if (o.start_chain)
        r->chain = *o.start_chain;
    r->o.start_chain = NULL;
    r->first_step = o.start_step;
    /* Detail on the first step too: where a program's seed, thread count
     * or world size shows first, and a short run has no 10th step. */
    r->first_detail = 1;
    if (trace_path && trace_path[0]) {
        json_t *h = build_header(info, &o);
        int rc = h ? repro_trace_writer_open(&r->w, trace_path, h) : -1;
        if (rc) {
            json_decref(h);
            free(r);
            return repro_error_code();
        }
        r->header = h; /* kept: repro_recorder_set_threads may add to it */
        snprintf(r->trace_path, sizeof r->trace_path, "%s", trace_path);
    }
    *out = r;
    return 0;
}

int repro_recorder_open(repro_recorder **out, const char *trace_path, const repro_run_info *info)
{
    return repro_recorder_open_ex(out, trace_path, info, NULL);
}

int repro_recorder_set_threads(repro_recorder *r, int threads, int workers)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (threads == 0 || threads < -1 || workers < -1)
        return fail(r, REPRO_EINVAL, "recorder: set_threads: %s",
                    "threads must be at least 1, workers at least 0 (-1: not known)");
    if (r->step != r->first_step)
        return fail(r, REPRO_EINVAL, "recorder: set_threads: %s",
                    "call it before the first step ends (it is part of the header)");
    if (!r->header)
        return 0; /* digests only: no header to say it in */
    if (threads > 0)
        json_object_set_new(r->header, "threads_used", json_integer(threads));
    if (workers >= 0)
        json_object_set_new(r->header, "workers_used", json_integer(workers));
    if (repro_trace_writer_rewrite_header(r->w, r->header))
        return mark(r);
    return 0;
}

int repro_recorder_set_tp(repro_recorder *r, int tp)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (tp < 1)
        return fail(r, REPRO_EINVAL, "recorder: set_tp: %s", "the size must be at least 1");
    if (r->step != r->first_step)
        return fail(r, REPRO_EINVAL, "recorder: set_tp: %s",
                    "call it before the first step ends (it is part of the header)");
    if (!r->header)
        return 0; /* digests only: no header to say it in */
    json_object_set_new(r->header, "tp_used", json_integer(tp));
    return repro_trace_writer_rewrite_header(r->w, r->header) ? mark(r) : 0;
}

int repro_recorder_set_pool(repro_recorder *r, const char *name, int threads)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (!name || !name[0] || strlen(name) > 31 || threads < 1)
        return fail(r, REPRO_EINVAL, "recorder: set_pool: %s",
                    "a name of 1 to 31 bytes and at least 1 thread");
    if (r->step != r->first_step)
        return fail(r, REPRO_EINVAL, "recorder: set_pool: %s",
                    "call it before the first step ends (it is part of the header)");
    if (!r->header)
        return 0;
    json_t *pools = json_object_get(r->header, "thread_pools");
    if (!json_is_object(pools)) {
        pools = json_object();
        json_object_set_new(r->header, "thread_pools", pools);
    }
    if (!json_object_get(pools, name) && json_object_size(pools) >= REPRO_TRACE_MAX_POOLS)
        return fail(r, REPRO_EINVAL, "recorder: set_pool: %s",
                    "a trace names at most 8 thread pools");
    json_object_set_new(pools, name, json_integer(threads));
    if (repro_trace_writer_rewrite_header(r->w, r->header))
        return mark(r);
    return 0;
}

int repro_recorder_header_set(repro_recorder *r, const char *key, const char *json_value)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (!key || !key[0] || !json_value)
        return fail(r, REPRO_EINVAL, "recorder: header_set: %s", "a key and a JSON value");
    if (r->step != r->first_step)
        return fail(r, REPRO_EINVAL, "recorder: header_set: %s",
                    "call it before the first step ends (it is part of the header)");
    if (!r->header)
        return 0;
    if (json_object_get(r->header, key))
        return fail(r, REPRO_EINVAL, "recorder: header_set: the header already has \"%s\"",
                    key);
    json_t *v = json_loads(json_value, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (!v)
        return fail(r, REPRO_EINVAL, "recorder: header_set: the value of \"%s\" is not JSON",
                    key);
    json_object_set_new(r->header, key, v);
    if (repro_trace_writer_rewrite_header(r->w, r->header))
        return mark(r);
    return 0;
}

/* ---- tensors ------------------------------------------------------------- */

static int detail_step(const repro_recorder *r, int64_t step)
{
    return r->o.level != REPRO_LEVEL_STEP &&
           (step % r->o.every == 0 || step == r->o.total_steps ||
            (r->first_detail && step == r->first_step + 1));
}

static repro_trace_tensor *list_push(repro_recorder *r, tensor_list *l)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        repro_trace_tensor *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            fail(r, REPRO_ENOMEM, "out of memory recording %s", "a tensor");
            return NULL;
        }
        l->v = v;
        l->cap = cap;
    }
    repro_trace_tensor *t = &l->v[l->n++];
    memset(t, 0, sizeof *t);
    return t;
}

/* Name, dtype and shape into *t, checked; the byte count into *nbytes. */
static int describe(repro_recorder *r, repro_trace_tensor *t, const char *name,
                    repro_dtype dtype, int ndim, const int64_t *shape, uint64_t *nbytes)
{
    const char *dname = repro_dtype_name(dtype);
    if (!name || !name[0] || strlen(name) >= sizeof t->name)
        return fail(r, REPRO_EINVAL, "recorder: tensor name \"%.80s\" is empty or over 63 bytes",
                    name ? name : "");
    if (!dname)
        return fail(r, REPRO_EINVAL, "recorder: %s: unknown dtype", name);
    if (ndim < 0 || ndim > 8 || (ndim > 0 && !shape))
        return fail(r, REPRO_EINVAL, "recorder: %s: ndim must be 0..8 with a shape", name);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->dtype, sizeof t->dtype, "%s", dname);
    t->ndim = ndim;
    uint64_t n = repro_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > UINT64_MAX / 2 / (uint64_t)shape[i]))
            return fail(r, REPRO_EINVAL, "recorder: %s: a dimension is negative or too large",
                        name);
        t->shape[i] = (long)shape[i];
        n *= (uint64_t)shape[i];
    }
    *nbytes = n;
    return 0;
}

/* A tensor of the step about to end: if it is a param.* of the last step,
 * its SHA-256 tree digest joins the final state (repro_recorder_close).
 * Under digest = sha256 that is its trace digest; else it is computed from
 * `data`, once per run, or the final state is partial without bytes. */
static int note_final(repro_recorder *r, const repro_trace_tensor *t, const int64_t *shape,
                      const void *data, uint64_t nbytes)
{
    if (r->o.total_steps <= 0 || r->step + 1 != r->o.total_steps ||
        strncmp(t->name, "param.", 6) != 0)
        return 0;
    int sha = r->o.digest == REPRO_DIGEST_SHA256;
    if (!sha && !data && nbytes > 0) {
        r->final_partial = 1;
        return 0;
    }
    if (r->nfinal == r->final_cap) {
        size_t cap = r->final_cap ? 2 * r->final_cap : 16;
        repro_digest *v = realloc(r->final, cap * sizeof *v);
        if (!v)
            return fail(r, REPRO_ENOMEM, "out of memory recording %s", t->name);
        r->final = v;
        r->final_cap = cap;
    }
    repro_digest *d = &r->final[r->nfinal++];
    if (sha)
        *d = t->digest;
    else if (repro_tensor_digest_bytes_fn(REPRO_DIGEST_SHA256, d, t->name, t->dtype, t->ndim,
                                          shape, data, nbytes))
        return mark(r);
    return 0;
}

static int hash_into(repro_recorder *r, tensor_list *l, const char *name, repro_dtype dtype,
                     int ndim, const int64_t *shape, const void *data)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    repro_trace_tensor *t = list_push(r, l);
    uint64_t nbytes;
    if (!t || describe(r, t, name, dtype, ndim, shape, &nbytes))
        return r->failed;
    if (nbytes > 0 && !data)
        return fail(r, REPRO_EINVAL, "recorder: %s: NULL data", name);
    repro_tensor_view v = {t->name, t->dtype, t->ndim, t->shape, data, (size_t)nbytes,
                           r->o.digest};
    if (repro_tensor_digest(&v, &t->digest, NULL))
        return mark(r);
    if (l == &r->tensors && note_final(r, t, shape, data, nbytes))
        return r->failed;
    if (detail_step(r, r->step + 1)) {
        repro_tensor_stats_compute(t->dtype, data, (size_t)nbytes, &t->l2, &t->sum, &t->max_abs,
                                   &t->nonfinite);
        if (r->values && repro_values_write(r->values, (long)r->step + 1, t->name, t->dtype,
                                            t->ndim, t->shape, data, (size_t)nbytes) < 0)
            return mark(r);
    }
    return 0;
}

int repro_recorder_values(repro_recorder *r, const char *dir)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    char def[1100];
    if (!dir) {
        if (!r->trace_path[0])
            return fail(r, REPRO_EINVAL, "recorder: values: %s", "no trace is written, so "
                        "there is no directory beside it: name one");
        repro_values_default_dir(def, sizeof def, r->trace_path);
        dir = def;
    }
    if (!dir[0] || strlen(dir) > 1000)
        return fail(r, REPRO_EINVAL, "recorder: values: directory \"%.80s\" is empty or over "
                    "1,000 bytes", dir);
    char *copy = strdup(dir);
    if (!copy)
        return fail(r, REPRO_ENOMEM, "out of memory recording %s", "values");
    free(r->values);
    r->values = copy;
    return 0;
}

int repro_recorder_tensor(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                          const int64_t *shape, const void *host_data)
{
    return hash_into(r, r ? &r->tensors : NULL, name, dtype, ndim, shape, host_data);
}

/* The starting state as tensors of the first step, named as the Python
 * client's module hooks name theirs: bisect reads input* as what the step
 * was given, so a changed initialization is not blamed on an op. */
int repro_recorder_state(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                         const int64_t *shape, const void *host_data)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (r->step != r->first_step)
        return fail(r, REPRO_EINVAL, "recorder: state %.80s: call it before the first step ends",
                    name ? name : "");
    char full[sizeof r->tensors.v->name + 16];
    if (!name || !name[0] || (size_t)snprintf(full, sizeof full, "input.state.%s", name) >=
                                 sizeof r->tensors.v->name)
        return fail(r, REPRO_EINVAL, "recorder: state name \"%.80s\" is empty or over 51 bytes",
                    name ? name : "");
    return hash_into(r, &r->tensors, full, dtype, ndim, shape, host_data);
}

int repro_recorder_op(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                      const int64_t *shape, const void *host_data)
{
    int rc = check_alive(r);
    if (rc || r->o.level != REPRO_LEVEL_OP)
        return rc;
    return hash_into(r, &r->ops, name, dtype, ndim, shape, host_data);
}

int repro_recorder_tensor_leaves(repro_recorder *r, const char *name, repro_dtype dtype, int ndim,
                                 const int64_t *shape, uint64_t nbytes,
                                 const repro_digest *leaves, const repro_tensor_stats *stats)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    repro_trace_tensor *t = list_push(r, &r->tensors);
    uint64_t want;
    if (!t || describe(r, t, name, dtype, ndim, shape, &want))
        return r->failed;
    if (want != nbytes)
        return fail(r, REPRO_EINVAL, "recorder: %s: nbytes does not match dtype x shape", name);
    if (nbytes > 0 && !leaves)
        return fail(r, REPRO_EINVAL, "recorder: %s: NULL leaves", name);
    repro_tensor_view v = {t->name, t->dtype, t->ndim, t->shape, NULL, (size_t)nbytes,
                           r->o.digest};
    if (repro_tensor_digest_of_leaves(&v, leaves, &t->digest))
        return mark(r);
    if (note_final(r, t, shape, NULL, nbytes))
        return r->failed;
    if (stats) {
        t->l2 = stats->l2;
        t->sum = stats->sum;
        t->max_abs = stats->max_abs;
        t->nonfinite = (long)stats->nonfinite;
    }
    return 0;
}

/* ---- steps ----------------------------------------------------------------- */

static json_t *step_extra(repro_recorder *r, const char *extra_json)
{
    if (!extra_json)
        return NULL;
    json_t *o = parse_object(extra_json, "extra_json");
    if (!o)
        mark(r);
    return o;
}

int repro_recorder_step_ex(repro_recorder *r, const repro_step_info *info)
{
    int rc = check_alive(r);
    if (rc)
        return rc;
    if (!info || info->step != r->step + 1) {
        char msg[96];
        snprintf(msg, sizeof msg, "%lld after step %lld (steps count up by one)",
                 info ? (long long)info->step : -1LL, (long long)r->step);
        return fail(r, REPRO_EINVAL, "recorder: step %s", msg);
    }
    repro_trace_step ts = {0};
    ts.step = (long)info->step;
    repro_digest *d = malloc(sizeof *d * (size_t)(r->tensors.n ? r->tensors.n : 1));
    if (!d)
        return fail(r, REPRO_ENOMEM, "out of memory ending step%s", "");
    for (int i = 0; i < r->tensors.n; i++)
        d[i] = r->tensors.v[i].digest;
    int hrc = repro_sha256_digests(d, (size_t)r->tensors.n, &ts.step_digest);
    free(d);
    repro_digest pair[2] = {r->chain, ts.step_digest};
    if (hrc || repro_sha256_digests(pair, 2, &r->chain))
        return mark(r);
    r->step = info->step;
    json_decref(r->header); /* fixed once a step follows it */
    r->header = NULL;
    ts.chain = r->chain;
    ts.epoch = info->epoch < 0 ? 0 : info->epoch;
    float loss = info->loss_f32 ? *info->loss_f32 : (float)info->loss;
    memcpy(&ts.loss_bits, &loss, 4);
    ts.loss_value = info->loss;
    ts.ntensors = r->tensors.n;
    ts.tensors = r->tensors.v;
    ts.nops = r->ops.n;
    ts.ops = r->ops.v;
    json_t *extra = step_extra(r, info->extra_json);
    if (info->extra_json && !extra)
        return r->failed;
    ts.extra = extra;
    if (r->w && repro_trace_writer_step(r->w, &ts, detail_step(r, info->step)))
        mark(r);
    json_decref(extra);
    r->tensors.n = 0;
    r->ops.n = 0;
    return r->failed;
}

int repro_recorder_step(repro_recorder *r, int64_t step, double loss)
{
    repro_step_info info = {step, 0, loss, NULL, NULL};
    return repro_recorder_step_ex(r, &info);
}

int64_t repro_recorder_chain(const repro_recorder *r, repro_digest *chain)
{
    if (chain)
        *chain = r->chain;
    return r->step;
}

/* ---- closing --------------------------------------------------------------- */

static void free_recorder(repro_recorder *r)
{
    json_decref(r->header);
    free(r->values);
    free(r->final);
    free(r->tensors.v);
    free(r->ops.v);
    free(r);
}

/* The trailer's final_params_sha256 (trace.h): SHA-256 over the SHA-256
 * tree digests of the last step's param.* tensors, in the order recorded,
 * when the run ended at total_steps with all of them seen as bytes (or
 * under sha256), and the caller's trailer does not say it already. */
static int add_final(repro_recorder *r, json_t **extra)
{
    if (r->nfinal == 0 || r->final_partial || r->step != r->o.total_steps ||
        (*extra && json_object_get(*extra, "final_params_sha256")))
        return 0;
    repro_digest fin;
    if (repro_sha256_digests(r->final, r->nfinal, &fin))
        return fail(r, REPRO_EIO, "recorder: %s", "SHA-256 failed");
    char hex[65];
    repro_digest_hex(&fin, hex);
    if (!*extra)
        *extra = json_object();
    json_object_set_new(*extra, "final_params_sha256", json_string(hex));
    return 0;
}

int repro_recorder_close_ex(repro_recorder *r, char chain_hex[65], const char *trailer_json)
{
    int rc = check_alive(r);
    if (!r)
        return rc;
    if (!rc && r->tensors.n > 0)
        rc = fail(r, REPRO_EINVAL, "recorder: %s", "tensors recorded after the last step");
    json_t *extra = NULL;
    if (!rc && trailer_json && !(extra = parse_object(trailer_json, "trailer_json")))
        rc = REPRO_EINVAL;
    if (!rc && add_final(r, &extra))
        rc = r->failed;
    if (rc) {
        repro_trace_writer_abort(r->w);
    } else if (r->w && repro_trace_writer_close(r->w, (long)r->step, &r->chain, extra)) {
        rc = repro_error_code();
    }
    json_decref(extra);
    if (!rc && chain_hex)
        repro_digest_hex(&r->chain, chain_hex);
    free_recorder(r);
    return rc;
}

int repro_recorder_close(repro_recorder *r, char chain_hex[65])
{
    return repro_recorder_close_ex(r, chain_hex, NULL);
}

void repro_recorder_abort(repro_recorder *r)
{
    if (!r)
        return;
    repro_trace_writer_abort(r->w);
    free_recorder(r);
}

/* ---- dtypes and versions (repro.h) ----------------------------------------- */

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [REPRO_F32] = {"f32", 4}, [REPRO_F64] = {"f64", 8},  [REPRO_F16] = {"f16", 2},
    [REPRO_BF16] = {"bf16", 2}, [REPRO_I32] = {"i32", 4}, [REPRO_I64] = {"i64", 8},
    [REPRO_U8] = {"u8", 1},   [REPRO_U32] = {"u32", 4},
};
#define NDTYPES ((int)(sizeof dtypes / sizeof *dtypes))

size_t repro_dtype_size(repro_dtype dtype)
{
    return (int)dtype >= 0 && (int)dtype < NDTYPES ? dtypes[dtype].size : 0;
}

const char *repro_dtype_name(repro_dtype dtype)
{
    return (int)dtype >= 0 && (int)dtype < NDTYPES ? dtypes[dtype].name : NULL;
}

int repro_dtype_from_name(repro_dtype *out, const char *name)
{
    for (int i = 0; name && i < NDTYPES; i++)
        if (!strcmp(dtypes[i].name, name)) {
            *out = (repro_dtype)i;
            return 0;
        }
    repro_error_set(REPRO_EINVAL, "unknown dtype \"%s\"", name ? name : "(null)");
    return REPRO_EINVAL;
}

int repro_api_version(void)
{
    return REPRO_API_VERSION;
}

const char *repro_version_string(void)
{
    return REPRO_VERSION;
}
