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
#include "kernels/philox.h"
#include "util/seeds.h"
#include "record/trace.h"
#include "util/version.h"

struct repro_trace_writer {
    FILE *f;
    char path[1024];
};

/* mkdir -p of the directory part of `path`. */
static int make_parents(const char *path)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return repro_error_set(REPRO_EINVAL, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return repro_error_set_errno(REPRO_EIO, "%s: cannot create directory", buf);
        *p = '/';
    }
    return 0;
}

/* The config digests. The numerics digest leaves out the bits-neutral keys
 * and every key at its default value: so adding a new key (at a default
 * that keeps today's behaviour) does not turn every existing golden into
 * "a different config", while any key set away from its default counts. */
static int digest_text(const repro_config *cfg, int numerics, repro_digest *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    char val[REPRO_CONFIG_PATH_MAX + 16], def[REPRO_CONFIG_PATH_MAX + 16];
    static repro_config defaults;
    repro_config_defaults(&defaults);
    if (numerics)
        fprintf(f, "repro-numerics/v2\n");
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        if (numerics && repro_config_key_bits_neutral(k))
            continue;
        repro_config_value_str(cfg, k, val, sizeof val);
        if (numerics) {
            repro_config_value_str(&defaults, k, def, sizeof def);
            if (!strcmp(val, def))
                continue;
        }
        fprintf(f, "%s.%s = %s\n", repro_config_key_section(k), repro_config_key_name(k), val);
    }
    fclose(f);
    int rc = repro_sha256(text, len, out);
    free(text);
    return rc;
}

int repro_config_digests(const repro_config *cfg, repro_digest *all, repro_digest *numerics)
{
    return digest_text(cfg, 0, all) || digest_text(cfg, 1, numerics) ? -1 : 0;
}

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

int repro_trace_writer_open(repro_trace_writer **out, const char *path, const repro_config *cfg,
                            int level, int every)
{
    return repro_trace_writer_open_with(out, path, cfg, level, every, NULL);
}

int repro_trace_writer_open_with(repro_trace_writer **out, const char *path,
                                 const repro_config *cfg, int level, int every, void *header_extra)
{
    *out = NULL;
    repro_digest all, numerics;
    repro_env env;
    /* the class of the backend the run computes on (cuda: its GPU fields) */
    const char *backend = cfg->train_backend == REPRO_BACKEND_CUDA ? "cuda" : "cpu";
    if (repro_config_digests(cfg, &all, &numerics) || repro_env_get_backend(&env, backend) ||
        make_parents(path))
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
    json_t *config = json_object();
    char val[REPRO_CONFIG_PATH_MAX + 16];
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const char *sec = repro_config_key_section(k);
        json_t *s = json_object_get(config, sec);
        if (!s) {
            s = json_object();
            json_object_set_new(config, sec, s);
        }
        repro_config_value_str(cfg, k, val, sizeof val);
        json_object_set_new(s, repro_config_key_name(k), json_string(val));
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cfg->train_seed);
    json_t *h = json_object();
    json_object_set_new(h, "repro_trace", json_integer(REPRO_TRACE_VERSION));
    json_object_set_new(h, "type", json_string("header"));
    json_object_set_new(h, "experiment", json_string(cfg->name));
    json_object_set_new(h, "experiment_path", json_string(cfg->path));
    json_object_set_new(h, "config", config);
    json_object_set_new(h, "config_digest", hex_json(&all));
    json_object_set_new(h, "numerics_digest", hex_json(&numerics));
    json_object_set_new(h, "seed", json_string(seed));
    json_object_set_new(h, "seed_scheme", json_string(REPRO_SEED_SCHEME));
    json_object_set_new(h, "rng", json_string(REPRO_RNG_VERSION));
    json_object_set_new(h, "tensor_hash", json_string(REPRO_TENSOR_HASH_VERSION));
    json_object_set_new(h, "repro_version", json_string(REPRO_VERSION));
    json_object_set_new(h, "compiler", json_string(REPRO_CC_VERSION));
    json_object_set_new(h, "cflags", json_string(REPRO_CFLAGS));
    json_object_set_new(h, "level", json_string(level_names[level]));
    json_object_set_new(h, "every", json_integer(every));
    json_object_set_new(h, "threads", json_integer(cfg->train_threads));
    json_object_set_new(h, "num_workers", json_integer(cfg->data_num_workers));
    json_object_set_new(h, "env", repro_env_to_json(&env));
    json_object_set_new(h, "env_class", json_string(env.class_id));
    if (header_extra)
        json_object_update_missing(h, (json_t *)header_extra);
    if (write_line(w, h)) {
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
