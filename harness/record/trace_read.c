/* Reading trace files (format: trace.h) into a repro_trace, strictly: every
 * line is parsed by jansson, every field is checked, and the hash chain is
 * re-verified, so a comparison never rests on a corrupt or hand-edited file.
 * Every error is "path:line: what" with exit code 2. */
#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repro/repro.h" /* repro_dtype_from_name */
#include "util/error.h"
#include "util/lines.h"
#include "record/trace.h"

/* A longer line is refused while it is being read, before the parser sees
 * it. The longest line this repro can write is an op-level step of the
 * largest model the config allows (8 conv blocks: ~150 tensors of ~250
 * bytes, 37 KB measured); headers are a few KB. 1 MiB is ~25 times that,
 * and it bounds what one line can cost, since jansson builds 25-80 bytes of
 * objects per input byte at worst: a 1 MiB line of `[0,0,...]` peaks at
 * 26 MB resident, of `[{},{},...]` at 85 MB (measured), where a 60 MB line
 * of small integers used to cost 1.3 GB and 18 s before it was refused. */
#define MAX_LINE_BYTES ((size_t)1 << 20)

/* Where we are, for messages. */
typedef struct {
    const char *path;
    long line;
} pos;

static int fail(const pos *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const pos *p, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return repro_error_set(REPRO_EINVAL, "%s:%ld: %s", p->path, p->line, what);
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* ---- field getters: `ctx` prefixes messages ("", "tensors[3] ...") ---- */

static int get_field(const pos *p, const char *ctx, json_t *o, const char *key, json_t **out)
{
    *out = json_object_get(o, key);
    if (!*out)
        return fail(p, "%smissing \"%s\"", ctx, key);
    return 0;
}

static int get_string(const pos *p, const char *ctx, json_t *o, const char *key, char *buf,
                      size_t len)
{
    json_t *v;
    if (get_field(p, ctx, o, key, &v))
        return -1;
    if (!json_is_string(v))
        return fail(p, "%s\"%s\" must be a string, not %s", ctx, key, json_kind(v));
    if (json_string_length(v) >= len)
        return fail(p, "%s\"%s\" is too long (%zu bytes, at most %zu)", ctx, key,
                    json_string_length(v), len - 1);
    memcpy(buf, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int get_long(const pos *p, const char *ctx, json_t *o, const char *key, long min, long max,
                    long *out)
{
    json_t *v;
    if (get_field(p, ctx, o, key, &v))
        return -1;
    if (!json_is_integer(v))
        return fail(p, "%s\"%s\" must be an integer, not %s", ctx, key, json_kind(v));
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return fail(p, "%s\"%s\" is %" JSON_INTEGER_FORMAT ", outside %ld..%ld", ctx, key, n, min,
                    max);
    *out = (long)n;
    return 0;
}

static int get_int(const pos *p, const char *ctx, json_t *o, const char *key, int min, int *out)
{
    long v;
    if (get_long(p, ctx, o, key, min, 1L << 30, &v))
        return -1;
    *out = (int)v;
    return 0;
}

/* A number. Never null: the writer's stats are over finite elements and
 * always finite, and it leaves a non-finite loss_value out (the loss bits
 * say it); jansson reads no NaN or infinity. `min` bounds it from below
 * (-INFINITY: no bound; 0 for a norm). */
static int get_double(const pos *p, const char *ctx, json_t *o, const char *key, double min,
                      double *out)
{
    json_t *v;
    if (get_field(p, ctx, o, key, &v))
        return -1;
    if (!json_is_number(v))
        return fail(p, "%s\"%s\" must be a number, not %s", ctx, key, json_kind(v));
    *out = json_number_value(v);
    if (*out < min)
        return fail(p, "%s\"%s\" is %.17g: it cannot be negative", ctx, key, *out);
    return 0;
}

static int get_digest(const pos *p, const char *ctx, json_t *o, const char *key, repro_digest *out)
{
    char hex[80];
    if (get_string(p, ctx, o, key, hex, sizeof hex))
        return -1;
    if (repro_digest_from_hex(hex, out))
        return fail(p, "%s\"%s\" is not a SHA-256 digest (64 hex digits): \"%s\"", ctx, key, hex);
    return 0;
}

/* ---- lines ---------------------------------------------------------- */

/* Optional: the client that wrote a program's trace ("client": {"name",
 * "version", "protocol" >= 1}); protocol 0 when absent. */
static int parse_client(repro_trace *t, json_t *o, const pos *p)
{
    json_t *c = json_object_get(o, "client");
    long protocol;
    t->client_protocol = 0;
    if (!c)
        return 0;
    if (!json_is_object(c))
        return fail(p, "header: \"client\" must be an object, not %s", json_kind(c));
    const char *h = "header: client: ";
    if (get_string(p, h, c, "name", t->client_name, sizeof t->client_name) ||
        get_string(p, h, c, "version", t->client_version, sizeof t->client_version) ||
        get_long(p, h, c, "protocol", 1, 1L << 30, &protocol))
        return -1;
    t->client_protocol = (int)protocol;
    return 0;
}

/* Optional "thread_pools": name -> threads (at least 1), each name short
 * enough to keep and no more names than the trace holds. */
static int read_pools(const pos *p, json_t *o, repro_trace *t)
{
    json_t *pools = json_object_get(o, "thread_pools"), *v;
    const char *name;
    t->npools = 0;
    if (!pools)
        return 0;
    if (!json_is_object(pools))
        return fail(p, "header: \"thread_pools\" must be an object, not %s", json_kind(pools));
    if (json_object_size(pools) > REPRO_TRACE_MAX_POOLS)
        return fail(p, "header: \"thread_pools\" names %zu pools, at most %d",
                    json_object_size(pools), REPRO_TRACE_MAX_POOLS);
    json_object_foreach(pools, name, v) {
        if (!name[0] || strlen(name) >= sizeof t->pools[0].name)
            return fail(p, "header: \"thread_pools\": a pool name must be 1 to %zu bytes",
                        sizeof t->pools[0].name - 1);
        snprintf(t->pools[t->npools].name, sizeof t->pools[0].name, "%s", name);
        if (get_int(p, "header: thread_pools: ", pools, name, 1, &t->pools[t->npools].threads))
            return -1;
        t->npools++;
    }
    return 0;
}

static int parse_header(repro_trace *t, json_t *o, const pos *p)
{
    json_t *ver = json_object_get(o, "repro_trace"), *type = json_object_get(o, "type");
    /* A step line first means the head of the file is missing: say so
     * before complaining about the version field such lines lack. */
    if (json_is_string(type) && strcmp(json_string_value(type), "header") != 0)
        return fail(p, "first line is not a trace header (\"type\": \"%s\")",
                    json_string_value(type));
    if (!ver)
        return fail(p, "not a repro trace: the first line has no \"repro_trace\" version");
    if (!json_is_integer(ver))
        return fail(p, "\"repro_trace\" must be an integer, not %s", json_kind(ver));
    if (json_integer_value(ver) < REPRO_TRACE_VERSION_MIN ||
        json_integer_value(ver) > REPRO_TRACE_VERSION)
        return fail(p, "unknown trace version %" JSON_INTEGER_FORMAT " (this repro reads %d..%d)",
                    json_integer_value(ver), REPRO_TRACE_VERSION_MIN, REPRO_TRACE_VERSION);
    t->version = (int)json_integer_value(ver);
    if (!type)
        return fail(p, "first line is not a trace header (no \"type\")");
    if (!json_is_string(type))
        return fail(p, "\"type\" must be a string, not %s", json_kind(type));

    const char *h = "header: ";
    char level[16];
    json_t *config;
    if (get_string(p, h, o, "experiment", t->experiment, sizeof t->experiment) ||
        get_string(p, h, o, "experiment_path", t->experiment_path, sizeof t->experiment_path) ||
        get_field(p, h, o, "config", &config) ||
        get_digest(p, h, o, "config_digest", &t->config_digest) ||
        get_digest(p, h, o, "numerics_digest", &t->numerics_digest) ||
        get_string(p, h, o, "seed", t->seed, sizeof t->seed) ||
        get_string(p, h, o, "seed_scheme", t->seed_scheme, sizeof t->seed_scheme) ||
        get_string(p, h, o, "rng", t->rng, sizeof t->rng) ||
        get_string(p, h, o, "tensor_hash", t->tensor_hash, sizeof t->tensor_hash) ||
        get_string(p, h, o, "repro_version", t->repro_version, sizeof t->repro_version) ||
        get_string(p, h, o, "compiler", t->compiler, sizeof t->compiler) ||
        get_string(p, h, o, "cflags", t->cflags, sizeof t->cflags) ||
        get_string(p, h, o, "level", level, sizeof level) ||
        get_int(p, h, o, "every", 1, &t->every) || get_int(p, h, o, "threads", 1, &t->threads) ||
        get_int(p, h, o, "num_workers", 0, &t->num_workers))
        return -1;
    /* Optional: what the run says it really used (programs that do not
     * say have none). */
    t->threads_used = t->workers_used = t->world_size_used = t->tp_used = -1;
    if ((json_object_get(o, "threads_used") &&
         get_int(p, h, o, "threads_used", 1, &t->threads_used)) ||
        (json_object_get(o, "workers_used") &&
         get_int(p, h, o, "workers_used", 0, &t->workers_used)) ||
        (json_object_get(o, "world_size_used") &&
         get_int(p, h, o, "world_size_used", 1, &t->world_size_used)) ||
        (json_object_get(o, "tp_used") && get_int(p, h, o, "tp_used", 1, &t->tp_used)))
        return -1;
    if (parse_client(t, o, p) || read_pools(p, o, t))
        return -1;
    /* Optional: traces written before the environment class have none. */
    if (json_object_get(o, "env_class") &&
        get_string(p, h, o, "env_class", t->env_class, sizeof t->env_class))
        return -1;
    if (!json_is_object(config))
        return fail(p, "header: \"config\" must be an object, not %s", json_kind(config));
    if (!strcmp(level, "step"))
        t->level = REPRO_TRACE_STEP;
    else if (!strcmp(level, "tensor"))
        t->level = REPRO_TRACE_TENSOR;
    else if (!strcmp(level, "op"))
        t->level = REPRO_TRACE_OP;
    else
        return fail(p, "header: \"level\" is \"%s\", expected step, tensor or op", level);
    /* Digests under a tensor-hash scheme we do not know mean nothing to
     * us: comparing them would report every tensor as different. Both
     * known ones are read (v1, SHA-256 leaves: every trace before XXH3 and
     * every `digest = sha256` one); readers compare only traces of the same
     * one (repro_compare_headers). */
    if (repro_digest_fn_from_name(t->tensor_hash, &t->digest_fn) != 0 ||
        strncmp(t->tensor_hash, "repro-tensor/", 13) != 0) {
        repro_error_clear();
        return fail(p, "header: unknown tensor hash \"%s\" (this repro reads %s and %s)",
                    t->tensor_hash, REPRO_TENSOR_HASH_XXH3, REPRO_TENSOR_HASH_SHA256);
    }
    /* Optional: a resumed run's steps start after the checkpoint's step,
     * its chain from the checkpoint's chain. */
    t->first_step = 1;
    json_t *res = json_object_get(o, "resumed_from");
    if (res) {
        long k;
        if (!json_is_object(res))
            return fail(p, "header: \"resumed_from\" must be an object, not %s", json_kind(res));
        if (get_long(p, "header: resumed_from: ", res, "step", 0, REPRO_TRACE_STEP_MAX, &k) ||
            get_digest(p, "header: resumed_from: ", res, "chain", &t->start_chain))
            return -1;
        t->first_step = k + 1;
    }
    t->header_json = json_incref(o);
    return 0;
}

static int parse_tensor(repro_trace_tensor *tt, json_t *o, const pos *p, const char *list, size_t i)
{
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s[%zu]: ", list, i);
    if (!json_is_object(o))
        return fail(p, "%smust be an object, not %s", ctx, json_kind(o));
    if (get_string(p, ctx, o, "name", tt->name, sizeof tt->name))
        return -1;
    /* From here on, name the tensor: it is what the user will look for. */
    snprintf(ctx, sizeof ctx, "%s[%zu] (\"%s\"): ", list, i, tt->name);
    json_t *shape;
    repro_dtype dt;
    if (get_string(p, ctx, o, "dtype", tt->dtype, sizeof tt->dtype) ||
        get_field(p, ctx, o, "shape", &shape))
        return -1;
    if (repro_dtype_from_name(&dt, tt->dtype))
        return fail(p, "%s\"dtype\" is \"%s\", expected one of f32 f64 f16 bf16 i32 i64 u8 u32",
                    ctx, tt->dtype);
    if (!json_is_array(shape))
        return fail(p, "%s\"shape\" must be an array, not %s", ctx, json_kind(shape));
    if (json_array_size(shape) > 8)
        return fail(p, "%s\"shape\" has %zu dimensions, at most 8", ctx, json_array_size(shape));
    tt->ndim = (int)json_array_size(shape);
    for (int d = 0; d < tt->ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > INT32_MAX)
            return fail(p, "%s\"shape\"[%d] must be a non-negative integer (at most %d)", ctx,
                        d, INT32_MAX);
        tt->shape[d] = (long)json_integer_value(v);
    }
    return get_digest(p, ctx, o, "digest", &tt->digest) ||
                   get_double(p, ctx, o, "l2", 0, &tt->l2) ||
                   get_double(p, ctx, o, "sum", -INFINITY, &tt->sum) ||
                   get_double(p, ctx, o, "max_abs", 0, &tt->max_abs) ||
                   get_long(p, ctx, o, "nonfinite", 0, REPRO_TRACE_STEP_MAX, &tt->nonfinite)
               ? -1
               : 0;
}

static int by_name(const void *x, const void *y)
{
    const repro_trace_tensor *a = *(const repro_trace_tensor *const *)x;
    const repro_trace_tensor *b = *(const repro_trace_tensor *const *)y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a < b ? -1 : a > b); /* ties in list order, for the message */
}

/* Each name once in a list: a comparison matches tensors by name, and a
 * second tensor of the same name would hide behind the first. Sorted
 * pointers, not pairs: a list may be long. */
static int check_unique_names(const repro_trace_tensor *list, int n, const pos *p,
                              const char *key)
{
    if (n < 2)
        return 0;
    const repro_trace_tensor **sorted = malloc(sizeof *sorted * (size_t)n);
    if (!sorted)
        return repro_error_set(REPRO_ENOMEM, "%s:%ld: out of memory", p->path, p->line);
    for (int i = 0; i < n; i++)
        sorted[i] = &list[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_name);
    int rc = 0;
    for (int i = 1; i < n && !rc; i++)
        if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
            rc = fail(p, "%s[%td] and %s[%td] are both named \"%s\" (names are unique in a step)",
                      key, sorted[i - 1] - list, key, sorted[i] - list, sorted[i]->name);
    free(sorted);
    return rc;
}

/* Parses the array `key` of o into a freshly allocated tensor list. */
static int parse_tensor_list(json_t *o, const char *key, const pos *p, repro_trace_tensor **out,
                             int *n)
{
    json_t *arr = json_object_get(o, key);
    if (!json_is_array(arr))
        return fail(p, "\"%s\" must be an array, not %s", key, json_kind(arr));
    size_t len = json_array_size(arr);
    if (len > 1000000)
        return fail(p, "\"%s\" has %zu entries: not a plausible trace", key, len);
    *out = calloc(len ? len : 1, sizeof **out);
    if (!*out)
        return repro_error_set(REPRO_ENOMEM, "%s:%ld: out of memory", p->path, p->line);
    *n = (int)len;
    for (size_t i = 0; i < len; i++)
        if (parse_tensor(&(*out)[i], json_array_get(arr, i), p, key, i))
            return -1;
    return strcmp(key, "tensors") ? 0 : check_unique_names(*out, *n, p, key);
}

/* "0x" and exactly 8 hex digits, nothing else: strtoul alone would also
 * take a sign or blanks after the "0x" ("0x+0000001", "0x 0000001"). */
static int parse_loss_bits(const char *s, uint32_t *out)
{
    if (strncmp(s, "0x", 2) != 0 || strlen(s) != 10)
        return -1;
    uint32_t v = 0;
    for (int i = 2; i < 10; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* "loss" (float32 bits) into s, and "loss_value" when present (else the
 * bits' value: jansson cannot write a NaN or infinite loss_value, so the
 * writer leaves it out then, and version 2 writes it on detail steps only). */
static int parse_loss(repro_trace_step *s, json_t *o, const pos *p)
{
    char bits[32];
    if (get_string(p, "", o, "loss", bits, sizeof bits))
        return -1;
    if (parse_loss_bits(bits, &s->loss_bits))
        return fail(p, "\"loss\" must be float32 bits as \"0x\" and 8 hex digits, not \"%s\"",
                    bits);
    if (json_object_get(o, "loss_value"))
        return get_double(p, "", o, "loss_value", -INFINITY, &s->loss_value);
    float f;
    memcpy(&f, &s->loss_bits, sizeof f);
    s->loss_value = f;
    return 0;
}

/* The tensor lists of a detail line, and the step digest recomputed from
 * them. */
static int parse_detail(repro_trace_step *s, json_t *o, const pos *p)
{
    if (get_long(p, "", o, "epoch", 0, 1L << 30, &(long){0}) ||
        parse_tensor_list(o, "tensors", p, &s->tensors, &s->ntensors))
        return -1;
    if (json_object_get(o, "ops") && parse_tensor_list(o, "ops", p, &s->ops, &s->nops))
        return -1;
    repro_digest *ds = malloc(sizeof *ds * (size_t)(s->ntensors ? s->ntensors : 1)), sd;
    if (!ds)
        return repro_error_set(REPRO_ENOMEM, "%s:%ld: out of memory", p->path, p->line);
    for (int i = 0; i < s->ntensors; i++)
        ds[i] = s->tensors[i].digest;
    int rc = repro_sha256_digests(ds, (size_t)s->ntensors, &sd);
    free(ds);
    if (rc)
        return -1;
    if (!repro_digest_eq(&sd, &s->step_digest))
        return fail(p,
                    "step %ld: \"step_digest\" is not the SHA-256 of its tensor digests: "
                    "the trace is corrupt or was edited",
                    s->step);
    return 0;
}

/* Which keys a line may hold without "tensors": version 1 keeps the loss
 * for detail lines, version 2 has it on every line (and may leave the
 * chain out there: it follows from the previous one). */
static int check_detail_keys(const repro_trace_step *s, json_t *o, const pos *p, int version)
{
    static const char *const v1[] = {"loss", "loss_value", "ops"};
    static const char *const v2[] = {"ops"};
    const char *const *keys = version >= 2 ? v2 : v1;
    int n = version >= 2 ? 1 : 3;
    if (s->has_detail) {
        if (!json_object_get(o, "chain"))
            return fail(p, "missing \"chain\" (a detail line carries it)");
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (json_object_get(o, keys[i]))
            return fail(p, "\"%s\" without \"tensors\" (detail comes whole)", keys[i]);
    if (version < 2 && !json_object_get(o, "chain"))
        return fail(p, "missing \"chain\"");
    return 0;
}

static int check_step_number(const repro_trace_step *s, const pos *p, long expect, long first)
{
    if (s->step == expect)
        return 0;
    if (expect == first && first > 1)
        return fail(p, "the first step is step %ld: this trace resumed after step %ld, so "
                       "it starts at %ld",
                    s->step, first - 1, first);
    if (expect == 1)
        return fail(p, "the first step is step %ld: steps count from 1", s->step);
    if (s->step < expect)
        return fail(p, "step %ld after step %ld: steps must be strictly increasing", s->step,
                    expect - 1);
    return fail(p, "step %ld after step %ld: steps %ld..%ld are missing (every step has a line)",
                s->step, expect - 1, expect, s->step - 1);
}

/* Parses a step line into s (owned by the caller, who frees its lists even
 * on failure) and checks its digests against the spec's definitions. */
static int parse_step(repro_trace_step *s, json_t *o, const pos *p, long expect,
                      const repro_digest *prev_chain, long first, int version)
{
    s->line = (int)p->line;
    if (get_long(p, "", o, "step", 0, REPRO_TRACE_STEP_MAX, &s->step) ||
        check_step_number(s, p, expect, first) ||
        get_digest(p, "", o, "step_digest", &s->step_digest))
        return -1;
    if (json_object_get(o, "epoch")) {
        long e;
        if (get_long(p, "", o, "epoch", 0, 1L << 30, &e))
            return -1;
        s->epoch = (int)e;
    }
    s->has_detail = json_object_get(o, "tensors") != NULL;
    if (check_detail_keys(s, o, p, version))
        return -1;
    s->has_loss = s->has_detail || version >= 2;
    if ((s->has_loss && parse_loss(s, o, p)) || (s->has_detail && parse_detail(s, o, p)))
        return -1;
    /* chain[n] = SHA-256(chain[n-1] || step[n]): a broken link means the
     * file was damaged or edited, and binary search over it would lie. */
    repro_digest pair[2] = {*prev_chain, s->step_digest}, c;
    if (repro_sha256_digests(pair, 2, &c))
        return -1;
    if (!json_object_get(o, "chain")) {
        s->chain = c;
        return 0;
    }
    if (get_digest(p, "", o, "chain", &s->chain))
        return -1;
    if (!repro_digest_eq(&c, &s->chain))
        return fail(p,
                    "step %ld: \"chain\" is not SHA-256(previous chain || step_digest): "
                    "the trace is corrupt or was edited",
                    s->step);
    return 0;
}

/* One step line after another, one in memory: the state of a reader
 * between lines. `prev` is the chain of the last step read (the start
 * chain before any), which is all the next line's check needs. */
struct repro_trace_stream {
    repro_trace *t;
    repro_lines lr;
    int lines_open;
    pos p;
    repro_digest prev;
    repro_trace_step cur;
};

static int parse_trailer(repro_trace_stream *st, json_t *o, const pos *p)
{
    repro_trace *t = st->t;
    long last = t->first_step + t->nsteps - 1;
    if (get_long(p, "trailer: ", o, "steps", 0, REPRO_TRACE_STEP_MAX, &t->trailer_steps) ||
        get_digest(p, "trailer: ", o, "chain", &t->trailer_chain))
        return -1;
    if (t->trailer_steps != last)
        return fail(p, "trailer says %ld steps but the last step line is step %ld",
                    t->trailer_steps, last);
    if (!repro_digest_eq(&st->prev, &t->trailer_chain))
        return fail(p, "trailer chain differs from the chain of step %ld", last);
    /* Optional (the built-in workload's, since XXH3 leaves): SHA-256 of
     * the final parameters, the cryptographic binding of the final state. */
    t->has_final_params = json_object_get(o, "final_params_sha256") != NULL;
    if (t->has_final_params &&
        get_digest(p, "trailer: ", o, "final_params_sha256", &t->final_params))
        return -1;
    t->has_trailer = 1;
    return 0;
}

static void release_step(repro_trace_step *s)
{
    free(s->tensors);
    free(s->ops);
    s->tensors = s->ops = NULL;
}

/* A line after the header: a step (1, into st->cur) or the trailer (0). */
static int parse_line(repro_trace_stream *st, json_t *o)
{
    repro_trace *t = st->t;
    const pos *p = &st->p;
    if (!json_is_object(o))
        return fail(p, "%s is not a trace line (expected a JSON object)", json_kind(o));
    if (t->has_trailer)
        return fail(p, "line after the trailer (the trailer must be the last line)");
    char type[32];
    if (get_string(p, "", o, "type", type, sizeof type))
        return -1;
    if (!strcmp(type, "trailer"))
        return parse_trailer(st, o, p);
    if (!strcmp(type, "header"))
        return fail(p, "second header (the header is line 1 only)");
    if (strcmp(type, "step") != 0)
        return fail(p, "unknown line type \"%s\" (expected step or trailer)", type);

    repro_trace_step *s = &st->cur;
    release_step(s);
    memset(s, 0, sizeof *s);
    if (t->first_step + t->nsteps > REPRO_TRACE_STEP_MAX) {
        /* first_step <= REPRO_TRACE_STEP_MAX + 1 and nsteps < line count:
         * the sum cannot overflow, and past the bound no step may follow. */
        return fail(p, "step %ld is past the largest step number a trace may hold (%lld)",
                    t->first_step + t->nsteps, (long long)REPRO_TRACE_STEP_MAX);
    }
    if (parse_step(s, o, p, t->first_step + t->nsteps, &st->prev, t->first_step, t->version))
        return -1;
    st->prev = s->chain;
    t->last_line = s->line;
    t->nsteps++;
    return 1;
}

/* The next line, parsed: *o set, 1; end of file, 0; else -1. */
static int next_json(repro_trace_stream *st, json_t **o)
{
    pos *p = &st->p;
    char *buf;
    size_t len;
    int complete;
    int got = repro_lines_next(&st->lr, &buf, &len, &complete);
    if (got == REPRO_LINES_TOO_LONG) {
        p->line++;
        return fail(p, "line longer than the %zu KiB limit: not a trace (the longest line repro "
                       "writes is tens of KiB)",
                    MAX_LINE_BYTES >> 10);
    }
    if (got == REPRO_LINES_ERROR)
        return repro_error_set_errno(REPRO_EINVAL, "%s:%ld: read error", p->path, p->line + 1);
    if (got != REPRO_LINES_OK)
        return 0;
    p->line++;
    if (strlen(buf) != len)
        return fail(p, "embedded NUL byte: not a text trace");
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    if (len == 0)
        return fail(p, "empty line (JSON Lines has one object per line)");
    json_error_t jerr;
    *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*o)
        return fail(p, "not JSON: %s (column %d)%s", jerr.text, jerr.column,
                    !complete ? "; the last line is incomplete, as when a run is killed mid-write"
                              : "");
    return 1;
}

int repro_trace_stream_open(repro_trace_stream **out, repro_trace *t, const char *path)
{
    *out = NULL;
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    repro_trace_stream *st = calloc(1, sizeof *st);
    if (!st)
        return repro_error_set(REPRO_ENOMEM, "%s: out of memory", path);
    st->t = t;
    st->p.path = t->path;
    if (repro_lines_open(&st->lr, path, NULL, MAX_LINE_BYTES)) {
        free(st);
        return -1;
    }
    st->lines_open = 1;
    json_t *o = NULL;
    int got = next_json(st, &o);
    if (got == 0) {
        st->p.line = 1;
        fail(&st->p, "empty file: no trace header");
    }
    int rc = -1;
    if (got == 1) {
        if (!json_is_object(o))
            fail(&st->p, "%s is not a trace line (expected a JSON object)", json_kind(o));
        else
            rc = parse_header(t, o, &st->p);
        json_decref(o);
    }
    if (rc) {
        repro_trace_stream_close(st);
        repro_trace_release(t);
        return -1;
    }
    st->prev = t->start_chain;
    *out = st;
    return 0;
}

int repro_trace_stream_next(repro_trace_stream *st, const repro_trace_step **step)
{
    *step = NULL;
    for (;;) {
        json_t *o = NULL;
        int got = next_json(st, &o);
        if (got <= 0)
            return got;
        int rc = parse_line(st, o);
        json_decref(o);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            *step = &st->cur;
            return 1;
        }
    }
}

void repro_trace_stream_close(repro_trace_stream *st)
{
    if (!st)
        return;
    release_step(&st->cur);
    if (st->lines_open)
        repro_lines_close(&st->lr);
    free(st);
}

int repro_trace_scan(repro_trace *out, const char *path)
{
    repro_trace_stream *st;
    if (repro_trace_stream_open(&st, out, path))
        return -1;
    const repro_trace_step *s;
    int got;
    while ((got = repro_trace_stream_next(st, &s)) == 1)
        ;
    repro_trace_stream_close(st);
    if (got < 0) {
        repro_trace_release(out);
        return -1;
    }
    return 0;
}

/* The whole trace: the stream's steps, each kept (its lists moved over). */
int repro_trace_read(repro_trace *out, const char *path)
{
    repro_trace_stream *st;
    if (repro_trace_stream_open(&st, out, path))
        return -1;
    long cap = 0, kept = 0;
    const repro_trace_step *s;
    int got;
    while ((got = repro_trace_stream_next(st, &s)) == 1) {
        if (kept == cap) {
            long ncap = cap ? 2 * cap : 64;
            repro_trace_step *n = realloc(out->steps, sizeof *n * (size_t)ncap);
            if (!n) {
                got = repro_error_set(REPRO_ENOMEM, "%s:%ld: out of memory", path, st->p.line);
                break;
            }
            out->steps = n;
            cap = ncap;
        }
        out->steps[kept++] = st->cur;
        st->cur.tensors = st->cur.ops = NULL; /* moved */
    }
    repro_trace_stream_close(st);
    if (got < 0) {
        out->nsteps = kept;
        repro_trace_release(out);
        return -1;
    }
    return 0;
}

void repro_trace_release(repro_trace *t)
{
    if (t->steps)
        for (long i = 0; i < t->nsteps; i++)
            release_step(&t->steps[i]);
    free(t->steps);
    json_decref((json_t *)t->header_json);
    t->steps = NULL;
    t->header_json = NULL;
    t->nsteps = 0;
}

const repro_trace_step *repro_trace_find_step(const repro_trace *t, long step)
{
    /* The reader guarantees steps first_step..first_step + nsteps - 1 in
     * order, one line each (first_step = 1 unless resumed); a streamed
     * trace keeps none. */
    long first = t->first_step > 0 ? t->first_step : 1;
    if (!t->steps || step < first || step - first >= t->nsteps)
        return NULL;
    return &t->steps[step - first];
}

int repro_trace_op_position(const repro_trace *t, long step, const char *name, int *nops)
{
    const repro_trace_step *s = repro_trace_find_step(t, step);
    *nops = s ? s->nops : 0;
    for (int i = 0; s && i < s->nops; i++)
        if (!strcmp(s->ops[i].name, name))
            return i + 1;
    return 0;
}
