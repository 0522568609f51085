/* The runner protocol (repro/repro.h): the environment variables repro
 * sets for a program it runs, read back strictly. Decimal only, range
 * checked: a mistyped value must stop the program, not change its bits. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repro/repro.h"
#include "util/error.h"

static int bad(const char *var, const char *value, const char *want)
{
    repro_error_set(REPRO_EINVAL, "%s=\"%.60s\": expected %s", var, value, want);
    return REPRO_EINVAL;
}

/* Decimal digits only (no sign, no hex, no spaces), <= max. */
static int read_u64(const char *var, uint64_t max, uint64_t *out)
{
    const char *v = getenv(var);
    if (!v)
        return 0;
    if (!*v || strspn(v, "0123456789") != strlen(v))
        return bad(var, v, "a decimal number");
    errno = 0;
    unsigned long long x = strtoull(v, NULL, 10);
    if (errno || x > max)
        return bad(var, v, "a smaller number");
    *out = x;
    return 0;
}

static int read_int(const char *var, int max, int *out)
{
    uint64_t x = (uint64_t)*out;
    int rc = read_u64(var, (uint64_t)max, &x);
    *out = (int)x;
    return rc;
}

/* One of `names` (index into them). */
static int read_word(const char *var, const char *const *names, int n, const char *want, int *out)
{
    const char *v = getenv(var);
    if (!v)
        return 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    return bad(var, v, want);
}

int repro_run_env_read(repro_run_env *out, uint64_t default_seed)
{
    memset(out, 0, sizeof *out);
    out->seed = default_seed;
    out->threads = 1;
    out->deterministic = 1;
    out->level = REPRO_LEVEL_TENSOR;
    out->trace_path = getenv("REPRO_TRACE");
    out->under_repro = out->trace_path != NULL;
    static const char *const det[] = {"off", "on", "warn"};
    static const char *const onoff[] = {"off", "on"};
    static const char *const levels[] = {"step", "tensor", "op"};
    int level = (int)out->level;
    int rc = read_u64("REPRO_SEED", UINT64_MAX, &out->seed);
    if (!rc)
        rc = read_int("REPRO_THREADS", 4096, &out->threads);
    if (!rc && out->threads < 1)
        rc = bad("REPRO_THREADS", getenv("REPRO_THREADS"), "at least 1");
    if (!rc)
        rc = read_int("REPRO_WORKERS", 4096, &out->workers);
    if (!rc)
        rc = read_word("REPRO_DETERMINISTIC", det, 3, "on, off or warn", &out->deterministic);
    if (!rc)
        rc = read_word("REPRO_BENCHMARK", onoff, 2, "on or off", &out->benchmark);
    if (!rc)
        rc = read_word("REPRO_TRACE_LEVEL", levels, 3, "step, tensor or op", &level);
    if (!rc)
        rc = read_int("REPRO_RUN_INDEX", 1 << 20, &out->run_index);
    if (!rc)
        rc = read_int("REPRO_BATCH_SIZE", 1 << 24, &out->batch_size);
    out->level = (repro_level)level;
    return rc;
}

const char *repro_run_env_setting(const char *key)
{
    char var[160] = "REPRO_SET_";
    size_t n = strlen(var);
    for (const char *k = key; k && *k && n + 1 < sizeof var; k++)
        var[n++] = (*k == '.' || *k == '-') ? '_' : (char)toupper((unsigned char)*k);
    var[n] = '\0';
    return key && *key ? getenv(var) : NULL;
}

void repro_recorder_options_from_env(repro_recorder_options *o, const repro_run_env *env)
{
    o->level = env->level;
    o->threads = env->threads;
    o->workers = env->workers;
    /* `repro check --set trace.digest=sha256` (already validated by repro's
     * config: an ENUM key) reaches the program as REPRO_SET_TRACE_DIGEST. */
    repro_digest_fn fn;
    const char *digest = repro_run_env_setting("trace.digest");
    if (digest && repro_digest_fn_from_name(digest, &fn) == 0)
        o->digest = fn;
    else if (digest)
        repro_error_clear();
    /* ... and `--set trace.every=K` (detail every K-th step) as
     * REPRO_SET_TRACE_EVERY; a value that is not a count >= 1 is left. */
    const char *every = repro_run_env_setting("trace.every");
    char *end = NULL;
    long k = every ? strtol(every, &end, 10) : 0;
    if (every && *every && end && !*end && k >= 1 && k <= INT_MAX)
        o->every = (int)k;
}
