/* The strict experiment-config parser, defaults and dump (see config.h).
 * inih does the INI syntax; we feed it lines through our own reader so that
 * every message can name the exact line (inih's handler gets no line number
 * in the ABI Debian ships) and so that bytes inih would silently cut, merge
 * or ignore (over-long lines, NUL bytes, bare CRs, text after a section
 * header) are refused first. Seeds and counts are decimal only. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/dataset.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/numparse.h"
#include "util/suggest.h"
#include "kernels/variants.h"

typedef enum { T_INT, T_U64, T_REAL, T_BOOL, T_ENUM, T_STR, T_LIST } key_type;

typedef struct {
    const char *section, *name, *def, *choices, *help;
    key_type type;
    double lo, hi;
    size_t off, off_n; /* field offset; LIST: offset of the count */
} key_info;

#define OFF_N_INT(s, k) 0
#define OFF_N_U64(s, k) 0
#define OFF_N_REAL(s, k) 0
#define OFF_N_BOOL(s, k) 0
#define OFF_N_ENUM(s, k) 0
#define OFF_N_STR(s, k) 0
#define OFF_N_LIST(s, k) offsetof(repro_config, s##_##k##_n)

/* A variant's default is its first choice: the text before the first '|'. */
#define VARIANT_DEFAULT(ch) ch

static const key_info keys[REPRO_KEY_COUNT] = {
#define X(s, k, T, d, lo, hi, ch, help) \
    {#s, #k, d, ch, help, T_##T, lo, hi, offsetof(repro_config, s##_##k), OFF_N_##T(s, k)},
#define XV(f, name, ch, help) \
    {"variant", name, NULL, ch, help, T_ENUM, 0, 0, offsetof(repro_config, variant_##f), 0},
#include "core/config_keys.h"
#undef X
#undef XV
};

static void choice_name(const char *choices, int idx, char *buf, size_t len);

static const char *const sections[] = {"model", "data", "train", "trace", "replay", "parallel", "variant"};

int repro_config_key_bits_neutral(int key)
{
    switch (key) {
    case REPRO_KEY_train_threads:
    case REPRO_KEY_parallel_tp: /* with linear.tp_reduce = ordered (core/tp.h) */
    case REPRO_KEY_train_ranks: /* with allreduce = ordered (ring and arrival are variants:
                                   they count on their own) */
    case REPRO_KEY_data_num_workers: /* in augment_seed = worker mode it does change bits:
                                        that is the pitfall `repro check --workers` shows */
    case REPRO_KEY_data_prefetch:
    case REPRO_KEY_train_steps:
    case REPRO_KEY_train_log_every:
    case REPRO_KEY_train_eval_every: /* reads the parameters only (tests/check_resume.c) */
    case REPRO_KEY_trace_level:
    case REPRO_KEY_trace_every:
    case REPRO_KEY_trace_digest: /* how the bits are digested, not the bits */
    case REPRO_KEY_replay_every: /* recomputes and compares; the update is the same */
    case REPRO_KEY_train_deterministic: /* permits variants; the variants change bits */
        return 1;
    }
    return 0;
}

const char *repro_config_key_section(int key) { return keys[key].section; }
const char *repro_config_key_name(int key) { return keys[key].name; }

int repro_config_find_key(const char *name)
{
    /* "section.key" first; then the whole text as a key name, which also
     * covers dotted variant keys written without their section
     * ("linear.bwd_weight"). */
    const char *dot = strchr(name, '.');
    if (dot) {
        size_t sl = (size_t)(dot - name);
        for (int i = 0; i < REPRO_KEY_COUNT; i++)
            if (strlen(keys[i].section) == sl && !strncmp(keys[i].section, name, sl) &&
                !strcmp(keys[i].name, dot + 1))
                return i;
    }
    int found = -1;
    for (int i = 0; i < REPRO_KEY_COUNT; i++) {
        if (!strcmp(keys[i].name, name)) {
            if (found >= 0)
                return -2; /* ambiguous */
            found = i;
        }
    }
    return found;
}

int repro_config_key_is_variant(int key)
{
    return !strcmp(keys[key].section, "variant");
}

const char *repro_config_variant_name(const repro_config *cfg, int key, char *buf, size_t len)
{
    choice_name(keys[key].choices, *(const int *)((const char *)cfg + keys[key].off), buf, len);
    return buf;
}

const repro_variant_info *repro_config_variant_in_use(const repro_config *cfg, int key)
{
    if (!repro_config_key_is_variant(key))
        return NULL;
    char v[64];
    repro_config_variant_name(cfg, key, v, sizeof v);
    return repro_variant_find(keys[key].name, v);
}

static int find_in_section(const char *section, const char *name)
{
    for (int i = 0; i < REPRO_KEY_COUNT; i++)
        if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
            return i;
    return -1;
}

/* " (did you mean 'x'?)" for an unknown key: among the keys of `section`
 * (NULL: every key, as "section.key" and bare names). */
static const char *key_hint(char *buf, size_t len, const char *section, const char *name)
{
    static char dotted[REPRO_KEY_COUNT][96];
    const char *cands[2 * REPRO_KEY_COUNT];
    size_t n = 0;
    for (int i = 0; i < REPRO_KEY_COUNT; i++) {
        if (section && strcmp(keys[i].section, section))
            continue;
        cands[n++] = keys[i].name;
        if (!section) {
            snprintf(dotted[i], sizeof dotted[i], "%s.%s", keys[i].section, keys[i].name);
            cands[n++] = dotted[i];
        }
    }
    return repro_suggest_phrase(buf, len, name, cands, n);
}

static int is_section(const char *s)
{
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        if (!strcmp(sections[i], s))
            return 1;
    return 0;
}

/* Index of `value` in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *value)
{
    size_t vl = strlen(value);
    int idx = 0;
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && !strncmp(p, value, len))
            return idx;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

static void choice_name(const char *choices, int idx, char *buf, size_t len)
{
    const char *p = choices;
    for (int i = 0; i < idx && p; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p) {
        snprintf(buf, len, "?");
        return;
    }
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    snprintf(buf, len, "%.*s", (int)n, p);
}

/* A decimal integer at p: an optional '-' (a negative count is then
 * refused by its range, with the range in the message), then digits 0-9
 * only. No '+', no whitespace, no 0x or octal: strtol(..., 0) read
 * "seed = 010" as 8 and "0x1F" as 31 while "--steps 010" was 10; here
 * leading zeros are plain decimal. *end: the first byte after the digits. */
static int parse_decimal(const char *p, const char **end, long *out)
{
    const char *q = p + (*p == '-');
    if (!isdigit((unsigned char)*q))
        return -1;
    long x = 0;
    for (; isdigit((unsigned char)*q); q++) {
        int d = *q - '0';
        if (x > (LONG_MAX - d) / 10)
            return -1; /* overflow */
        x = x * 10 + d;
    }
    *out = *p == '-' ? -x : x;
    *end = q;
    return 0;
}

static int parse_long(const char *v, long *out)
{
    const char *end;
    if (parse_decimal(v, &end, out) || *end)
        return -1;
    return 0;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF): values are echoed into JSON trace headers, and jansson drops
 * a string that is not UTF-8, so such a value would silently vanish from
 * the record (found by the bad-input table). */
static int utf8_valid(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2
                                          : (c >> 3) == 30 ? 3 : 9;
        if (n == 9 || (n == 1 && c < 0xc2))
            return 0;
        unsigned cp = n ? c & (0x3f >> n) : c;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        s += n + 1;
    }
    return 1;
}

/* Parses `value` into key `k` of cfg. On error writes a message (without
 * location) into err and returns -1. */
static int set_value(repro_config *cfg, int k, const char *value, char *err, size_t errlen)
{
    const key_info *ki = &keys[k];
    char *field = (char *)cfg + ki->off;
    if (!utf8_valid((const unsigned char *)value)) {
        snprintf(err, errlen, "%s: value is not valid UTF-8", ki->name);
        return -1;
    }
    switch (ki->type) {
    case T_INT: {
        long x;
        if (parse_long(value, &x)) {
            snprintf(err, errlen, "%s: '%s' is not an integer (decimal digits only)", ki->name,
                     value);
            return -1;
        }
        if (x < (long)ki->lo || x > (long)ki->hi) {
            snprintf(err, errlen, "%s: %ld is out of range [%ld, %ld]", ki->name, x, (long)ki->lo,
                     (long)ki->hi);
            return -1;
        }
        *(int *)field = (int)x;
        return 0;
    }
    case T_U64: {
        if (value[0] == '-' || !isdigit((unsigned char)value[0])) {
            snprintf(err, errlen, "%s: '%s' is not an unsigned integer", ki->name, value);
            return -1;
        }
        /* Decimal only (util/numparse.h): base 0 would read "010" as 8 and
         * take "0x1F", and a seed must mean the same wherever it is given. */
        uint64_t x;
        if (repro_parse_decimal_u64(value, &x)) {
            snprintf(err, errlen,
                     "%s: '%s' is not an unsigned 64-bit decimal integer (digits 0-9 only: "
                     "no hex, octal, sign or spaces)",
                     ki->name, value);
            return -1;
        }
        *(uint64_t *)field = x;
        return 0;
    }
    case T_REAL: {
        char *end;
        errno = 0;
        double x = strtod(value, &end);
        if (end == value || *end) {
            snprintf(err, errlen, "%s: '%s' is not a number", ki->name, value);
            return -1;
        }
        /* A number, but not one a double holds: say which way it misses
         * (strtod gives +-HUGE_VAL above, 0 or a subnormal below). */
        if (errno == ERANGE) {
            snprintf(err, errlen, "%s: '%s' %s", ki->name, value,
                     fabs(x) == HUGE_VAL
                         ? "overflows floating point (larger than 1.8e308)"
                         : "underflows floating point (not zero, but closer to it than 2.2e-308)");
            return -1;
        }
        if (!isfinite(x)) {
            snprintf(err, errlen, "%s: '%s' is not a finite number", ki->name, value);
            return -1;
        }
        int open = !strcmp(ki->choices, "min-open");
        if ((open ? x <= ki->lo : x < ki->lo) || x > ki->hi) {
            snprintf(err, errlen, "%s: %s is out of range %c%g, %g]", ki->name, value,
                     open ? '(' : '[', ki->lo, ki->hi);
            return -1;
        }
        *(double *)field = x;
        return 0;
    }
    case T_BOOL: {
        static const char *const yes[] = {"on", "true", "yes", "1"};
        static const char *const no[] = {"off", "false", "no", "0"};
        for (int i = 0; i < 4; i++) {
            if (!strcmp(value, yes[i])) {
                *(int *)field = 1;
                return 0;
            }
            if (!strcmp(value, no[i])) {
                *(int *)field = 0;
                return 0;
            }
        }
        snprintf(err, errlen, "%s: '%s' is not on/off (or true/false, yes/no, 1/0)", ki->name,
                 value);
        return -1;
    }
    case T_ENUM: {
        int idx = choice_index(ki->choices, value);
        if (idx < 0) {
            snprintf(err, errlen, "%s: '%s' is not one of %s", ki->name, value, ki->choices);
            return -1;
        }
        *(int *)field = idx;
        return 0;
    }
    case T_STR:
        if (strlen(value) >= REPRO_CONFIG_PATH_MAX) {
            snprintf(err, errlen, "%s: value longer than %d bytes", ki->name,
                     REPRO_CONFIG_PATH_MAX - 1);
            return -1;
        }
        strcpy(field, value);
        return 0;
    case T_LIST: {
        int vals[REPRO_CONFIG_LIST_MAX];
        int n = 0;
        const char *p = value;
        for (;;) {
            while (*p == ' ' || *p == '\t')
                p++;
            const char *end;
            long x;
            /* The entry must end at a blank, a comma or the end ("0x10"
             * is not 0 followed by junk that happens to be refused later). */
            const char *after = NULL;
            if (!parse_decimal(p, &end, &x))
                for (after = end; *after == ' ' || *after == '\t'; after++)
                    ;
            if (!after || (*after && *after != ',')) {
                snprintf(err, errlen, "%s: '%s' is not a comma-separated list of integers",
                         ki->name, value);
                return -1;
            }
            if (x < (long)ki->lo || x > (long)ki->hi) {
                snprintf(err, errlen, "%s: %ld is out of range [%ld, %ld]", ki->name, x,
                         (long)ki->lo, (long)ki->hi);
                return -1;
            }
            if (n == REPRO_CONFIG_LIST_MAX) {
                snprintf(err, errlen, "%s: more than %d entries", ki->name,
                         REPRO_CONFIG_LIST_MAX);
                return -1;
            }
            vals[n++] = (int)x;
            if (!*after)
                break;
            p = after + 1;
        }
        memcpy(field, vals, sizeof vals);
        *(int *)((char *)cfg + ki->off_n) = n;
        return 0;
    }
    }
    return -1;
}

void repro_config_defaults(repro_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    char err[256];
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        char first[64];
        const char *def = keys[k].def;
        if (!def) { /* a variant: its first choice */
            choice_name(keys[k].choices, 0, first, sizeof first);
            def = first;
        }
        if (set_value(cfg, k, def, err, sizeof err) != 0) {
            /* A bad default is a bug in config_keys.h, caught by the tests. */
            fprintf(stderr, "repro: internal error: bad default: %s\n", err);
            abort();
        }
    }
    snprintf(cfg->name, sizeof cfg->name, "unnamed");
}

/* ---- file parsing ------------------------------------------------------- */

typedef struct {
    FILE *f;
    repro_config *cfg;
    int lineno;       /* of the line inih is processing */
    int err_line;     /* first error's line, 0 = none */
    int stop;         /* the reader found the file unreadable: end it there */
    char err[512];
    unsigned char seen[REPRO_KEY_COUNT];
} parse_state;

static void record_error(parse_state *ps, const char *fmt, const char *a, const char *b)
{
    if (ps->err_line)
        return;
    ps->err_line = ps->lineno;
    snprintf(ps->err, sizeof ps->err, fmt, a, b);
}

/* The text of a "[section]" line (leading blanks skipped): the name must be
 * known, and nothing but blanks or a comment may follow the ']' (inih
 * ignores the rest of the line, so "[train] steps = 9" lost its key). */
static void check_section_line(parse_state *ps, const char *p)
{
    const char *close = strchr(p, ']');
    if (!close)
        return; /* inih reports the syntax error */
    char name[64];
    size_t n = (size_t)(close - p - 1);
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, p + 1, n);
    name[n] = '\0';
    if (!is_section(name)) {
        record_error(ps, "unknown section [%s] (sections: model, data, train, trace, replay, parallel, variant)%s",
                     name, "");
        return;
    }
    const char *q = close + 1;
    while (*q == ' ' || *q == '\t')
        q++;
    if (*q && *q != ';' && *q != '#')
        record_error(ps, "text after the section header [%s]: '%s' (put each key on its own "
                         "line)",
                     name, q);
}

/* inih's reader: one line per call, counted, read byte by byte so that
 * nothing is silently cut or merged: a NUL byte (fgets would end the line
 * there and the rest would vanish), a carriage return not followed by a
 * line feed (a bare-CR file was one long line, so it ran on defaults) and
 * an over-long line (fgets would split it) are errors naming the line, and
 * parsing stops there. CRLF line ends are accepted: "\r\n" is one line end.
 * Section headers are checked here too (inih only reports sections that
 * hold keys). */
static char *reader(char *buf, int num, void *stream)
{
    parse_state *ps = stream;
    if (ps->stop)
        return NULL;
    int c = getc(ps->f);
    if (c == EOF)
        return NULL;
    ps->lineno++;
    size_t n = 0, max = (size_t)num - 2; /* inih's buffer: the line, '\n' and a NUL */
    const char *bad = NULL;
    for (; c != EOF && c != '\n'; c = getc(ps->f)) {
        if (c == '\0') {
            bad = "NUL byte in the file: an experiment is text";
            break;
        }
        if (c == '\r') {
            int d = getc(ps->f);
            if (d == '\n')
                break;
            bad = "carriage return without a line feed: bare-CR line ends are not "
                  "supported (use LF or CRLF)";
            break;
        }
        if (n == max) {
            char lim[16];
            snprintf(lim, sizeof lim, "%zu", max);
            record_error(ps, "line longer than %s characters%s", lim, "");
            ps->stop = 1;
            return NULL;
        }
        buf[n++] = (char)c;
    }
    buf[n] = '\0';
    if (bad) {
        record_error(ps, "%s%s", bad, "");
        ps->stop = 1;
        return NULL;
    }
    const char *p = buf;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '[')
        check_section_line(ps, p);
    return buf;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_state *ps = user;
    if (!*section) {
        record_error(ps, "key '%s' outside a section%s", name, "");
        return 1;
    }
    if (!is_section(section))
        return 1; /* already reported by the reader */
    int k = find_in_section(section, name);
    if (k < 0) {
        char hint[160];
        char msg[300];
        snprintf(msg, sizeof msg, "unknown key '%.80s' in section [%.30s]%s", name, section,
                 key_hint(hint, sizeof hint, section, name));
        record_error(ps, "%s%s", msg, "");
        return 1;
    }
    if (ps->seen[k]) {
        char prev[16];
        snprintf(prev, sizeof prev, "%d", ps->cfg->line[k]);
        record_error(ps, "duplicate key '%s' (first set on line %s)", name, prev);
        return 1;
    }
    ps->seen[k] = 1;
    char err[400];
    if (set_value(ps->cfg, k, value, err, sizeof err) != 0) {
        record_error(ps, "%s%s", err, "");
        return 1;
    }
    ps->cfg->line[k] = ps->lineno;
    return 1;
}

static void set_name_from_path(repro_config *cfg, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    int n = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(cfg->name, sizeof cfg->name, "%.*s", n, base);
}

/* An experiment must at least name its model and its length: an empty or
 * comment-only file (or one whose keys were lost) used to train the
 * defaults and exit 0. */
static int require_keys(const parse_state *ps, const char *path)
{
    static const int required[] = {REPRO_KEY_model_type, REPRO_KEY_train_steps};
    char missing[128] = "";
    size_t used = 0;
    int n = 0;
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        int k = required[i];
        if (ps->seen[k])
            continue;
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%s[%s] %s",
                                 n++ ? " and " : "", keys[k].section, keys[k].name);
    }
    if (!n)
        return 0;
    return repro_error_set(REPRO_EINVAL,
                           "%s: missing %s: an experiment must name its model ([model] type) "
                           "and its length ([train] steps)",
                           path, missing);
}

int repro_config_load(repro_config *cfg, const char *path)
{
    repro_config_defaults(cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    set_name_from_path(cfg, path);
    parse_state ps = {0};
    ps.cfg = cfg;
    ps.f = repro_fopen_regular(path, "experiment");
    if (!ps.f)
        return -1;
    int rc = ini_parse_stream(reader, &ps, handler, &ps);
    int read_err = ferror(ps.f);
    fclose(ps.f);
    if (read_err)
        return repro_error_set(REPRO_EINVAL, "%s: read error", path);
    /* Our error came first unless inih found a syntax error on an earlier line. */
    if (ps.err_line && (rc <= 0 || ps.err_line <= rc))
        return repro_error_set(REPRO_EINVAL, "%s:%d: %s", path, ps.err_line, ps.err);
    if (rc > 0)
        return repro_error_set(REPRO_EINVAL,
                               "%s:%d: syntax error (expected '[section]' or 'key = value')",
                               path, rc);
    if (rc < 0)
        return repro_error_set(REPRO_ENOMEM, "%s: out of memory while parsing", path);
    return require_keys(&ps, path);
}

int repro_config_set(repro_config *cfg, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return repro_error_set(REPRO_EINVAL, "--set %s: expected KEY=VALUE", assignment);
    char name[128];
    size_t n = (size_t)(eq - assignment);
    if (n >= sizeof name)
        return repro_error_set(REPRO_EINVAL, "--set %s: key too long", assignment);
    memcpy(name, assignment, n);
    name[n] = '\0';
    int k = repro_config_find_key(name);
    if (k == -2)
        return repro_error_set(REPRO_EINVAL, "--set %s: key '%s' is ambiguous, use section.key",
                               assignment, name);
    if (k < 0)
    {
        char hint[160];
        return repro_error_set(REPRO_EINVAL,
                               "--set %s: unknown key '%s'%s (see `repro help config`)",
                               assignment, name, key_hint(hint, sizeof hint, NULL, name));
    }
    char err[400];
    if (set_value(cfg, k, eq + 1, err, sizeof err) != 0)
        return repro_error_set(REPRO_EINVAL, "--set %s: %s", assignment, err);
    cfg->line[k] = -1;
    return 0;
}

/* "path:line: " for the key that set a value, or "command line: ". */
static const char *where(const repro_config *cfg, int k, char *buf, size_t len)
{
    if (cfg->line[k] > 0)
        snprintf(buf, len, "%s:%d: ", cfg->path, cfg->line[k]);
    else if (cfg->line[k] < 0)
        snprintf(buf, len, "command line: ");
    else
        snprintf(buf, len, "%s: ", cfg->path[0] ? cfg->path : "config");
    return buf;
}

/* The shard rule (core/model.h: repro_model_set_shards, in core/shards.c):
 * shards of equal size, and every rank holding whole shards, so that the
 * gradient is the same sum on any world size. */
static int validate_shards(const repro_config *cfg)
{
    char w[REPRO_CONFIG_PATH_MAX + 32];
    int B = cfg->train_batch_size, S = cfg->train_shard_size, N = cfg->train_ranks;
    if (S > 0 && B % S)
        return repro_error_set(REPRO_EINVAL,
                               "%sshard_size %d does not divide batch_size %d (shards must be "
                               "equal: the step's gradient is the mean of the shard means)",
                               where(cfg, REPRO_KEY_train_shard_size, w, sizeof w), S, B);
    if (N == 1)
        return 0;
    if (S == 0)
        return repro_error_set(REPRO_EINVAL,
                               "%sranks = %d needs [train] shard_size (e.g. %d): the batch is cut "
                               "into fixed shards, each rank holding whole ones, so that the "
                               "gradient does not depend on the number of ranks",
                               where(cfg, REPRO_KEY_train_ranks, w, sizeof w), N,
                               B % (N * 16) == 0 ? 16 : B / N);
    if ((B / S) % N)
        return repro_error_set(REPRO_EINVAL,
                               "%sranks = %d does not divide the %d shards (batch_size %d / "
                               "shard_size %d): every rank must hold the same number of shards",
                               where(cfg, REPRO_KEY_train_ranks, w, sizeof w), N, B / S, B, S);
    if (cfg->trace_level == 2 /* op (record/trace.h) */)
        return repro_error_set(REPRO_EINVAL,
                               "%strace level op records every kernel output of the whole batch; "
                               "with ranks = %d each rank holds part of it (run ranks = 1: the "
                               "same bits)",
                               where(cfg, REPRO_KEY_trace_level, w, sizeof w), N);
    return 0;
}

/* Tensor parallel (core/tp.h): the mlp's fc1 is cut by output features
 * and fc2 by input features, the same hidden width; the split runs on the
 * CPU kernels in fp32, whose order the chain of running sums reproduces. */
static int validate_tp(const repro_config *cfg)
{
    char w[REPRO_CONFIG_PATH_MAX + 32], works[160] = "";
    int tp = cfg->parallel_tp;
    if (tp == 1)
        return 0;
    where(cfg, REPRO_KEY_parallel_tp, w, sizeof w);
    if (cfg->model_type != REPRO_MODEL_MLP || cfg->model_hidden_n < 1)
        return repro_error_set(REPRO_EINVAL,
                               "%stp = %d splits an mlp's first two linear layers; this model "
                               "has none to split (model = mlp with a hidden layer, or tp = 1)",
                               w, tp);
    int width = cfg->model_hidden[0];
    if (width % tp) {
        size_t o = 0;
        for (int d = 1; d <= width && d <= 64 && o + 8 < sizeof works; d++)
            if (width % d == 0)
                o += (size_t)snprintf(works + o, sizeof works - o, "%s%d", o ? ", " : "", d);
        return repro_error_set(REPRO_EINVAL,
                               "%stp = %d does not divide layer fc1's %d output features (fc1 "
                               "is split by them, fc2 by the same %d inputs): tp = %s would "
                               "work",
                               w, tp, width, width, works);
    }
    if (cfg->train_backend != REPRO_BACKEND_CPU || cfg->train_precision != REPRO_PRECISION_FP32 ||
        cfg->variant_linear_fwd != 0 /* ordered */)
        return repro_error_set(REPRO_EINVAL,
                               "%stp = %d runs on backend = cpu, precision = fp32 and "
                               "linear.fwd = ordered only (the chain continues those kernels' "
                               "sums)",
                               w, tp);
    return 0;
}

int repro_config_validate(const repro_config *cfg)
{
    if (validate_shards(cfg) || validate_tp(cfg))
        return -1;
    char w[REPRO_CONFIG_PATH_MAX + 32];
    /* The replay recomputes the step's one batch; under accumulation the
     * loader has moved past the earlier micro-batches. */
    if (cfg->replay_every > 0 && cfg->train_accumulation_steps > 1)
        return repro_error_set(REPRO_EINVAL, "%sreplay.every needs accumulation_steps = 1",
                               where(cfg, REPRO_KEY_replay_every, w, sizeof w));
    /* deterministic = on refuses nondeterministic variants by name, as
     * PyTorch's use_deterministic_algorithms(True) raises. */
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const repro_variant_info *vi = repro_config_variant_in_use(cfg, k);
        if (vi && !vi->deterministic && cfg->train_deterministic == REPRO_DETERMINISTIC_ON)
            return repro_error_set(REPRO_EINVAL,
                                   "%svariant %s = %s is nondeterministic (%s); deterministic = on "
                                   "refuses it (set deterministic = warn or off to run it)",
                                   where(cfg, k, w, sizeof w), keys[k].name, vi->variant, vi->why);
    }
    if (cfg->data_dataset == REPRO_DATASET_IDX) {
        if (!cfg->data_train_images[0] || !cfg->data_train_labels[0])
            return repro_error_set(REPRO_EINVAL,
                                   "%sdataset = idx needs train_images and train_labels",
                                   where(cfg, REPRO_KEY_data_dataset, w, sizeof w));
        if (!cfg->data_test_images[0] != !cfg->data_test_labels[0])
            return repro_error_set(REPRO_EINVAL,
                                   "%stest_images and test_labels go together",
                                   where(cfg, cfg->data_test_images[0] ? REPRO_KEY_data_test_images
                                                                       : REPRO_KEY_data_test_labels,
                                         w, sizeof w));
    }
    if (cfg->model_type == REPRO_MODEL_CNN) {
        int h = REPRO_IMG_ROWS; /* the dataset's images (core/dataset.h) */
        for (int i = 0; i < cfg->model_conv_channels_n; i++) {
            h = h + 2 * cfg->model_padding - cfg->model_kernel_size + 1;
            if (h >= 1)
                h /= 2;
            if (h < 1)
                return repro_error_set(
                    REPRO_EINVAL,
                    "%s%d conv blocks with kernel_size %d and padding %d shrink %dx%d to nothing",
                    where(cfg, REPRO_KEY_model_conv_channels, w, sizeof w),
                    cfg->model_conv_channels_n, cfg->model_kernel_size, cfg->model_padding,
                    REPRO_IMG_ROWS, REPRO_IMG_COLS);
        }
    }
    return 0;
}

void repro_config_value_str(const repro_config *cfg, int k, char *buf, size_t len)
{
    const key_info *ki = &keys[k];
    const char *field = (const char *)cfg + ki->off;
    switch (ki->type) {
    case T_INT: snprintf(buf, len, "%d", *(const int *)field); break;
    case T_U64: snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case T_REAL: snprintf(buf, len, "%.17g", *(const double *)field); break;
    case T_BOOL: snprintf(buf, len, "%s", *(const int *)field ? "on" : "off"); break;
    case T_ENUM: choice_name(ki->choices, *(const int *)field, buf, len); break;
    case T_STR: snprintf(buf, len, "%s", field); break;
    case T_LIST: {
        int n = *(const int *)((const char *)cfg + ki->off_n);
        size_t pos = 0;
        buf[0] = '\0';
        for (int i = 0; i < n && pos < len; i++)
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%d", i ? "," : "",
                                    ((const int *)field)[i]);
        break;
    }
    }
}

void repro_config_dump(const repro_config *cfg, FILE *out)
{
    const char *cur = "";
    char val[REPRO_CONFIG_PATH_MAX + 16];
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        if (strcmp(cur, keys[k].section)) {
            cur = keys[k].section;
            fprintf(out, "%s[%s]\n", k ? "\n" : "", cur);
        }
        repro_config_value_str(cfg, k, val, sizeof val);
        fprintf(out, "%s = %s\n", keys[k].name, val);
    }
}

void repro_config_print_reference(FILE *out)
{
    static const char *const tn[] = {"int", "u64", "real", "bool", "enum", "path", "list"};
    const char *cur = "";
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const key_info *ki = &keys[k];
        if (strcmp(cur, ki->section)) {
            cur = ki->section;
            fprintf(out, "%s[%s]\n", k ? "\n" : "", cur);
        }
        char range[96] = "";
        if (ki->type == T_INT || ki->type == T_LIST)
            snprintf(range, sizeof range, " %ld..%ld", (long)ki->lo, (long)ki->hi);
        else if (ki->type == T_REAL)
            snprintf(range, sizeof range, " %c%g, %g]", strcmp(ki->choices, "min-open") ? '[' : '(',
                     ki->lo, ki->hi);
        else if (ki->type == T_ENUM)
            snprintf(range, sizeof range, " %s", ki->choices);
        char first[64];
        if (!ki->def)
            choice_name(ki->choices, 0, first, sizeof first);
        fprintf(out, "  %-14s %s%s, default \"%s\"\n      %s\n", ki->name, tn[ki->type], range,
                ki->def ? ki->def : first, ki->help);
    }
}

int repro_config_nondeterministic(const repro_config *cfg, char *buf, size_t len)
{
    int n = 0;
    size_t pos = 0;
    if (len)
        buf[0] = '\0';
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        const repro_variant_info *vi = repro_config_variant_in_use(cfg, k);
        if (!vi || vi->deterministic)
            continue;
        n++;
        if (pos < len)
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%s = %s (%s)", n > 1 ? "; " : "",
                                    keys[k].name, vi->variant, vi->why);
    }
    return n;
}
