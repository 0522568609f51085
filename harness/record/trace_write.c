/* Writing trace files (format: trace.h): jansson builds each line, one
 * fwrite + fflush per line so a crash leaves a valid prefix. */
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

struct repro_trace_writer {
    FILE *f;
    char path[1024];
};

static json_t *hex_json(const repro_digest *d)
{
    char hex[65];
    repro_digest_hex(d, hex);
    return json_string(hex);
}

static int write_line(repro_trace_writer *w, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(obj);
    if (!s)
        return repro_error_set(REPRO_EIO, "%s: cannot encode trace line", w->path);
    size_t n = strlen(s);
    int ok = fwrite(s, 1, n, w->f) == n && fputc('\n', w->f) != EOF && fflush(w->f) == 0;
    free(s);
    if (!ok)
        return repro_error_set_errno(REPRO_EIO, "%s: write failed", w->path);
    return 0;
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
    w->f = fopen(path, "w");
    if (!w->f) {
        free(w);
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create trace", path);
    }
    if (write_line(w, json_incref(h))) {
        repro_trace_writer_abort(w);
        return -1;
    }
    *out = w;
    return 0;
}

static json_t *tensor_json(const repro_trace_tensor *t)
{
    json_t *o = json_object(), *shape = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(shape, json_integer(t->shape[i]));
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "dtype", json_string(t->dtype));
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "digest", hex_json(&t->digest));
    /* Stats are over finite elements in double: always finite themselves. */
    json_object_set_new(o, "l2", json_real(t->l2));
    json_object_set_new(o, "sum", json_real(t->sum));
    json_object_set_new(o, "max_abs", json_real(t->max_abs));
    json_object_set_new(o, "nonfinite", json_integer(t->nonfinite));
    return o;
}

int repro_trace_writer_step(repro_trace_writer *w, const repro_trace_step *s, int detail)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("step"));
    json_object_set_new(o, "step", json_integer(s->step));
    json_object_set_new(o, "step_digest", hex_json(&s->step_digest));
    json_object_set_new(o, "chain", hex_json(&s->chain));
    if (s->extra)
        json_object_update_missing(o, (json_t *)s->extra);
    if (detail) {
        char bits[16];
        snprintf(bits, sizeof bits, "0x%08x", s->loss_bits);
        json_object_set_new(o, "epoch", json_integer(s->epoch));
        json_object_set_new(o, "loss", json_string(bits));
        json_object_set_new(o, "loss_value", json_real(s->loss_value));
        json_t *arr = json_array();
        for (int i = 0; i < s->ntensors; i++)
            json_array_append_new(arr, tensor_json(&s->tensors[i]));
        json_object_set_new(o, "tensors", arr);
        if (s->nops > 0) {
            json_t *ops = json_array();
            for (int i = 0; i < s->nops; i++)
                json_array_append_new(ops, tensor_json(&s->ops[i]));
            json_object_set_new(o, "ops", ops);
        }
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
    free(w);
    return rc;
}

void repro_trace_writer_abort(repro_trace_writer *w)
{
    if (!w)
        return;
    fclose(w->f);
    free(w);
}
