/* Writing trace files (format: trace.h): jansson builds each line, one
 * fwrite + fflush per line so a crash leaves a valid prefix.
 *
 * A recorded run writes one step line per step from the hasher thread,
 * whose speed bounds the run's: building some 250 jansson values and
 * freeing them again took ~25 of a line's ~70 us (25 tensors, measured on
 * a Xeon guest). So the tensor objects of a detail step are kept and, while
 * the next step lists the same tensors (name, dtype, shape), only their
 * digests and stats are set in place; lines are encoded into one buffer
 * that grows as needed. The text is jansson's either way. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_info.h"
#include "record/env.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "kernels/philox.h"
#include "util/seeds.h"
#include "record/trace.h"
#include "util/version.h"
#include "util/outpath.h"

/* The JSON values a detail step's tensor list sets in place. */
typedef struct {
    json_t *name, *dtype, *shape, *digest, *l2, *sum, *max_abs, *nonfinite;
} tensor_values;

/* The last detail step's "tensors" or "ops" array, kept for the next. */
typedef struct {
    json_t *arr;         /* NULL: none yet */
    tensor_values *vals; /* one per element of arr */
} tensor_list_cache;

struct repro_trace_writer {
    FILE *f;
    char path[1024];
    tensor_list_cache tensors, ops;
    char *line;          /* the encoded line, grown as needed */
    size_t line_cap;
    long lines;          /* written so far (the header is line 1) */
};

static json_t *hex_json(const repro_digest *d)
{
    char hex[65];
    repro_digest_hex(d, hex);
    return json_string(hex);
}

static int write_line(repro_trace_writer *w, json_t *obj)
{
    size_t n = json_dumpb(obj, w->line, w->line_cap, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (n + 1 > w->line_cap && n > 0) { /* did not fit (with the newline): grow, encode again */
        size_t cap = 2 * (n + 1);
        char *grown = realloc(w->line, cap);
        if (!grown) {
            json_decref(obj);
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        }
        w->line = grown, w->line_cap = cap;
        n = json_dumpb(obj, w->line, w->line_cap, JSON_COMPACT | JSON_ENSURE_ASCII);
    }
    json_decref(obj);
    if (n == 0)
        return repro_error_set(REPRO_EIO, "%s: cannot encode trace line", w->path);
    w->line[n++] = '\n';
    int ok = fwrite(w->line, 1, n, w->f) == n && fflush(w->f) == 0;
    if (!ok)
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", w->path);
    w->lines++;
    return 0;
}

static void cache_clear(tensor_list_cache *c)
{
    json_decref(c->arr);
    free(c->vals);
    c->arr = NULL, c->vals = NULL;
}

static void writer_free(repro_trace_writer *w)
{
    cache_clear(&w->tensors);
    cache_clear(&w->ops);
    free(w->line);
    free(w);
}

static const char *const level_names[] = {"step", "tensor", "op"};

void *repro_trace_header_new(const char *experiment, const char *experiment_path,
                             uint64_t seed, int level, int every, int threads, int workers,
                             const char *backend)
{
    repro_env env;
    /* the class of the backend the run computes on (cuda: its GPU fields) */
    if (repro_env_get_backend(&env, backend ? backend : "cpu"))
        return NULL;
    if (level < REPRO_TRACE_STEP || level > REPRO_TRACE_OP) {
        repro_error_set(REPRO_EINVAL, "trace level %d is not step, tensor or op", level);
        return NULL;
    }
    char seedstr[32];
    snprintf(seedstr, sizeof seedstr, "%llu", (unsigned long long)seed);
    json_t *h = json_object();
    if (!h) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        return NULL;
    }
    json_object_set_new(h, "repro_trace", json_integer(REPRO_TRACE_VERSION));
    json_object_set_new(h, "type", json_string("header"));
    json_object_set_new(h, "experiment", json_string(experiment));
    json_object_set_new(h, "experiment_path", json_string(experiment_path));
    json_object_set_new(h, "seed", json_string(seedstr));
    json_object_set_new(h, "seed_scheme", json_string(REPRO_SEED_SCHEME));
    json_object_set_new(h, "rng", json_string(REPRO_RNG_VERSION));
    json_object_set_new(h, "tensor_hash", json_string(REPRO_TENSOR_HASH_VERSION));
    json_object_set_new(h, "repro_version", json_string(REPRO_VERSION));
    json_object_set_new(h, "compiler", json_string(REPRO_CC_VERSION));
    json_object_set_new(h, "cflags", json_string(REPRO_CFLAGS));
    json_object_set_new(h, "level", json_string(level_names[level]));
    json_object_set_new(h, "every", json_integer(every));
    json_object_set_new(h, "threads", json_integer(threads));
    json_object_set_new(h, "num_workers", json_integer(workers));
    json_object_set_new(h, "env", repro_env_to_json(&env));
    json_object_set_new(h, "env_class", json_string(env.class_id));
    return h;
}

int repro_trace_writer_open(repro_trace_writer **out, const char *path, void *header)
{
    *out = NULL;
    json_t *h = header;
    static const char *const required[] = {"experiment", "config", "config_digest",
                                           "numerics_digest", "seed"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!json_object_get(h, required[i]))
            return repro_error_set(REPRO_EINVAL, "%s: trace header lacks \"%s\"", path,
                                   required[i]);
    if (repro_mkdirs_for(path))
        return -1;
    repro_trace_writer *w = calloc(1, sizeof *w);
    if (!w)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    repro_outfile of; /* the output-path rule, written in place: runs are watched */
    if (repro_outfile_open_stream(&of, path, "trace")) {
        writer_free(w);
        return -1;
    }
    w->f = of.f;
    if (write_line(w, json_incref(h))) {
        repro_trace_writer_abort(w);
        return -1;
    }
    *out = w;
    return 0;
}

int repro_trace_writer_rewrite_header(repro_trace_writer *w, void *header)
{
    if (w->lines != 1)
        return repro_error_set(REPRO_EINVAL, "%s: the header can change only before the first "
                                             "step", w->path);
    if (fflush(w->f) != 0 || ftruncate(fileno(w->f), 0) != 0 || fseek(w->f, 0, SEEK_SET) != 0)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot rewrite the header", w->path);
    w->lines = 0;
    return write_line(w, json_incref(header));
}

static void set_digest(json_t *str, const repro_digest *d)
{
    char hex[65];
    repro_digest_hex(d, hex);
    json_string_setn_nocheck(str, hex, 64);
}

/* Stats are over finite elements in double: always finite themselves. */
static void set_values(const tensor_values *v, const repro_trace_tensor *t)
{
    set_digest(v->digest, &t->digest);
    json_real_set(v->l2, t->l2);
    json_real_set(v->sum, t->sum);
    json_real_set(v->max_abs, t->max_abs);
    json_integer_set(v->nonfinite, t->nonfinite);
}

static json_t *tensor_json(const repro_trace_tensor *t, tensor_values *v)
{
    json_t *o = json_object(), *shape = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(shape, json_integer(t->shape[i]));
    json_object_set_new(o, "name", v->name = json_string(t->name));
    json_object_set_new(o, "dtype", v->dtype = json_string(t->dtype));
    json_object_set_new(o, "shape", v->shape = shape);
    json_object_set_new(o, "digest", v->digest = json_string(""));
    json_object_set_new(o, "l2", v->l2 = json_real(0));
    json_object_set_new(o, "sum", v->sum = json_real(0));
    json_object_set_new(o, "max_abs", v->max_abs = json_real(0));
    json_object_set_new(o, "nonfinite", v->nonfinite = json_integer(0));
    set_values(v, t);
    return o;
}

/* The cached values describe the same tensor: name, dtype and shape. */
static int same_tensor(const tensor_values *v, const repro_trace_tensor *t)
{
    if (strcmp(json_string_value(v->name), t->name) || strcmp(json_string_value(v->dtype), t->dtype) ||
        json_array_size(v->shape) != (size_t)t->ndim)
        return 0;
    for (int i = 0; i < t->ndim; i++)
        if (json_integer_value(json_array_get(v->shape, (size_t)i)) != t->shape[i])
            return 0;
    return 1;
}

/* The array of n tensors (borrowed from the cache): the cached one with
 * its values set, when it lists the same tensors, else built anew. NULL
 * when out of memory. */
static json_t *tensor_list(tensor_list_cache *c, const repro_trace_tensor *t, int n)
{
    int same = c->arr && json_array_size(c->arr) == (size_t)n;
    for (int i = 0; same && i < n; i++)
        same = same_tensor(&c->vals[i], &t[i]);
    if (same) {
        for (int i = 0; i < n; i++)
            set_values(&c->vals[i], &t[i]);
        return c->arr;
    }
    cache_clear(c);
    c->vals = calloc((size_t)(n > 0 ? n : 1), sizeof *c->vals);
    c->arr = json_array();
    if (!c->vals || !c->arr) {
        cache_clear(c);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        json_array_append_new(c->arr, tensor_json(&t[i], &c->vals[i]));
    return c->arr;
}

int repro_trace_writer_step(repro_trace_writer *w, const repro_trace_step *s, int detail)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("step"));
    json_object_set_new(o, "step", json_integer(s->step));
    json_object_set_new(o, "step_digest", hex_json(&s->step_digest));
    json_object_set_new(o, "chain", hex_json(&s->chain));
    /* The loss on every step (version 2): the one number verify's policy
     * and diff's report can use between detail steps, 20 bytes. */
    char bits[16];
    snprintf(bits, sizeof bits, "0x%08x", s->loss_bits);
    json_object_set_new(o, "loss", json_string(bits));
    if (s->extra)
        json_object_update_missing(o, (json_t *)s->extra);
    if (detail) {
        json_object_set_new(o, "epoch", json_integer(s->epoch));
        json_object_set_new(o, "loss_value", json_real(s->loss_value));
        json_t *arr = tensor_list(&w->tensors, s->tensors, s->ntensors);
        json_t *ops = s->nops > 0 ? tensor_list(&w->ops, s->ops, s->nops) : NULL;
        if (!arr || (s->nops > 0 && !ops)) {
            json_decref(o);
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        }
        json_object_set(o, "tensors", arr); /* the cache keeps its reference */
        if (ops)
            json_object_set(o, "ops", ops);
    }
    return write_line(w, o);
}

int repro_trace_writer_close(repro_trace_writer *w, long steps, const repro_digest *chain,
                             void *extra)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("trailer"));
    json_object_set_new(o, "steps", json_integer(steps));
    json_object_set_new(o, "chain", hex_json(chain));
    if (extra)
        json_object_update_missing(o, (json_t *)extra);
    int rc = write_line(w, o);
    if (rc == 0 && fsync(fileno(w->f)) != 0)
        rc = repro_error_set_errno(REPRO_EIO, "%s: fsync failed", w->path);
    if (fclose(w->f) != 0 && rc == 0)
        rc = repro_error_set_errno(REPRO_EIO, "%s: close failed", w->path);
    writer_free(w);
    return rc;
}

void repro_trace_writer_abort(repro_trace_writer *w)
{
    if (!w)
        return;
    fclose(w->f);
    writer_free(w);
}
