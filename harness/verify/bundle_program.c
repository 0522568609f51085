/* The "program" and "score" members of a bundle manifest (bundle.h): as
 * strict as the rest, since a host builds and runs what they name. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "verify/bundle.h"
#include "verify/pack.h"

static int is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* A string member of o of at most max bytes with no control bytes; NULL
 * (error slot set) when it is not. */
static const char *str(const json_t *o, const char *key, size_t max, const char *what)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        repro_error_set(REPRO_EINVAL, "%s: \"program\".\"%s\" must be a string", what, key);
        return NULL;
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            repro_error_set(REPRO_EINVAL, "%s: \"program\".\"%s\" has a control character",
                            what, key);
            return NULL;
        }
    if (n > max) {
        repro_error_set(REPRO_EINVAL, "%s: \"program\".\"%s\" is longer than %zu bytes", what,
                        key, max);
        return NULL;
    }
    return s;
}

int repro_bundle_env_allowed(const char *kv)
{
    static const char *const names[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                        "OPENBLAS_NUM_THREADS", "PYTHONHASHSEED"};
    static const char *const denied[] = {"REPRO_TRACE", "REPRO_LIB", "REPRO_DATA"};
    size_t n = strcspn(kv, "=");
    if (!kv[n] || n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((kv[i] >= 'A' && kv[i] <= 'Z') || (kv[i] >= '0' && kv[i] <= '9') || kv[i] == '_'))
            return 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && !strncmp(kv, names[i], n))
            return 1;
    for (size_t i = 0; i < sizeof denied / sizeof *denied; i++)
        if (strlen(denied[i]) == n && !strncmp(kv, denied[i], n))
            return 0;
    /* REPRO_FAULT is the test-only fault switch: never from a bundle. */
    return !strncmp(kv, "REPRO_", 6) && strncmp(kv, "REPRO_FAULT", 11);
}

static int check_argv(const json_t *a, const char *what)
{
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > REPRO_BUNDLE_ARGV_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"argv\" must be an array of 1 to %d strings",
                               what, REPRO_BUNDLE_ARGV_MAX);
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || json_string_length(v) > REPRO_BUNDLE_CMD_MAX ||
            strlen(json_string_value(v)) != json_string_length(v))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"program\".\"argv\"[%zu] must be a string of at most "
                                   "%d bytes",
                                   what, i, REPRO_BUNDLE_CMD_MAX);
    }
    const char *a0 = json_string_value(json_array_get(a, 0));
    if (!a0[0] || a0[0] == '/')
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"argv\"[0] '%.200s' must be a program in the "
                               "tree or on PATH, not an absolute path",
                               what, a0);
    return 0;
}

static int check_env(const json_t *e, const char *what)
{
    if (!json_is_array(e) || json_array_size(e) > REPRO_BUNDLE_ENV_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"env\" must be an array of at most %d strings",
                               what, REPRO_BUNDLE_ENV_MAX);
    size_t i;
    const json_t *v;
    json_array_foreach(e, i, v) {
        const char *s = json_string_value(v);
        if (!s || json_string_length(v) > 1024 || !repro_bundle_env_allowed(s))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"program\".\"env\"[%zu] '%.80s' is not a runner-protocol "
                                   "setting a bundle may carry (REPRO_*, OMP_NUM_THREADS, ...)",
                                   what, i, s ? s : "(not a string)");
    }
    return 0;
}

static int check_outputs(const json_t *o, const char *what)
{
    if (!json_is_array(o) || json_array_size(o) > REPRO_BUNDLE_OUTPUTS_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"outputs\" must be an array of at most %d",
                               what, REPRO_BUNDLE_OUTPUTS_MAX);
    size_t i;
    const json_t *v;
    json_array_foreach(o, i, v) {
        const char *p = json_string_value(json_object_get(v, "path"));
        const char *h = json_string_value(json_object_get(v, "sha256"));
        const json_t *n = json_object_get(v, "bytes");
        if (!json_is_object(v) || json_object_size(v) != 3 || !p || !repro_pack_rel_ok(p) ||
            !h || !is_hex(h, 64) || !json_is_integer(n) || json_integer_value(n) < 0)
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"program\".\"outputs\"[%zu] must be {\"path\": a "
                                   "relative path, \"sha256\": 64 hex, \"bytes\": a size}",
                                   what, i);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(p, json_string_value(json_object_get(json_array_get(o, k), "path"))))
                return repro_error_set(REPRO_EINVAL,
                                       "%s: \"program\".\"outputs\" names '%s' twice", what, p);
    }
    return 0;
}

/* "data" (optional): the digest of the submitter's --data directory. */
static int parse_data(repro_bundle_program *p, const json_t *d, const char *what)
{
    if (!d)
        return 0;
    const char *h = json_string_value(json_object_get(d, "sha256"));
    const json_t *files = json_object_get(d, "files"), *bytes = json_object_get(d, "bytes");
    if (!json_is_object(d) || json_object_size(d) != 3 || !h || !is_hex(h, 64) ||
        !json_is_integer(files) || json_integer_value(files) < 0 || !json_is_integer(bytes) ||
        json_integer_value(bytes) < 0)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"data\" must be {\"sha256\": 64 hex, "
                               "\"files\": a count, \"bytes\": a size}",
                               what);
    p->has_data = 1;
    snprintf(p->data_sha256, sizeof p->data_sha256, "%s", h);
    p->data_files = (long)json_integer_value(files);
    p->data_bytes = (uint64_t)json_integer_value(bytes);
    return 0;
}

int repro_bundle_parse_program(repro_bundle_program *p, const json_t *v, const char *what)
{
    static const char *const known[] = {"tree", "commit", "dirty",   "cwd",
                                        "argv", "build",  "env",     "outputs", "data"};
    const size_t nknown = sizeof known / sizeof *known;
    memset(p, 0, sizeof *p);
    if (!json_is_object(v))
        return repro_error_set(REPRO_EINVAL, "%s: \"program\" must be an object", what);
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m) {
        size_t i = 0;
        while (i < nknown && strcmp(k, known[i]))
            i++;
        if (i == nknown)
            return repro_error_set(REPRO_EINVAL, "%s: unknown key \"program\".\"%.64s\"", what, k);
    }
    const char *tree = str(v, "tree", 64, what), *commit, *cwd;
    if (!tree || !(commit = str(v, "commit", 40, what)) || !(cwd = str(v, "cwd", 255, what)))
        return -1;
    if (!repro_pack_rel_ok(tree) || strchr(tree, '/'))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"tree\" must be one path component", what);
    if (!is_hex(commit, 40))
        return repro_error_set(REPRO_EINVAL, "%s: \"program\".\"commit\" must be 40 hex", what);
    if (cwd[0] && !repro_pack_rel_ok(cwd))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"program\".\"cwd\" must be \"\" or a relative path inside "
                               "the tree",
                               what);
    if (!json_is_boolean(json_object_get(v, "dirty")))
        return repro_error_set(REPRO_EINVAL, "%s: \"program\".\"dirty\" must be a boolean",
                               what);
    if (json_object_get(v, "build") && !(p->build = str(v, "build", REPRO_BUNDLE_CMD_MAX, what)))
        return -1;
    p->argv = json_object_get(v, "argv");
    p->env = json_object_get(v, "env");
    p->outputs = json_object_get(v, "outputs");
    if (check_argv(p->argv, what) || check_env(p->env, what) ||
        check_outputs(p->outputs, what) || parse_data(p, json_object_get(v, "data"), what))
        return -1;
    snprintf(p->tree, sizeof p->tree, "%s", tree);
    snprintf(p->commit, sizeof p->commit, "%s", commit);
    snprintf(p->cwd, sizeof p->cwd, "%s", cwd);
    p->dirty = json_is_true(json_object_get(v, "dirty"));
    return 0;
}

int repro_bundle_parse_score(const json_t *v, const char *what, char *buf, size_t len,
                             double *value)
{
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    double d = s ? strtod(s, &end) : NAN;
    if (!s || !*s || json_string_length(v) > 31 || *end || errno == ERANGE || !isfinite(d) ||
        strspn(s, "0123456789+-.eE") != strlen(s))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"score\" must be a finite decimal number as a string "
                               "(\"0.875\")",
                               what);
    snprintf(buf, len, "%s", s);
    *value = d;
    return 0;
}
