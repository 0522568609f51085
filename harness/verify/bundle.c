/* Reading, validating and writing submission bundles (see bundle.h). */
#include "verify/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "util/outpath.h"
#include "verify/pack.h"
#include "verify/sign.h"

#define ENV_MEMBERS_MAX 64
#define ENV_STRING_MAX 1024

int repro_read_file_limited(const char *path, long max, char **out, size_t *len_out)
{
    *out = NULL;
    *len_out = 0;
    /* Regular files only: a FIFO planted in a bundle must not hang. */
    int fd;
    if (repro_open_regular(path, "file", &fd))
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return repro_error_set_errno(REPRO_EINVAL, "%s: cannot stat", path);
    }
    if (st.st_size > max) {
        close(fd);
        return repro_error_set(REPRO_EINVAL, "%s: too large (%lld bytes; the limit is %ld)",
                               path, (long long)st.st_size, max);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return repro_error_set(REPRO_ENOMEM, "out of memory reading %s", path);
    }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* shrank while we read: take what is there */
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len_out = n;
    return 0;
}

int repro_write_file_atomic(const char *path, const void *data, size_t len)
{
    /* The output-path rule (util/outpath.h): a temporary file fsynced and
     * renamed over the target (through a symlink to it), a FIFO or device
     * written in place, anything else refused. */
    return repro_outfile_write(path, NULL, data, len);
}

void repro_bundle_release(repro_bundle *b)
{
    json_decref(b->manifest);
    memset(b, 0, sizeof *b);
}

/* ---- field checks: each names the key and says what was expected ------ */

static const char *kind(const json_t *v)
{
    if (!v) /* a key that is not there */
        return "missing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int in_set(char c, const char *extra)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c && strchr(extra, c));
}

/* A string member: present, a string, length in [min, max], each byte in
 * [A-Za-z0-9] or `extra` (NULL: any printable byte). Copied into buf. */
static int get_str(const char *what, const json_t *o, const char *key, size_t min, size_t max,
                   const char *extra, char *buf, size_t buflen)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return repro_error_set(REPRO_EINVAL, "%s: missing key \"%s\"", what, key);
    if (!json_is_string(v))
        return repro_error_set(REPRO_EINVAL, "%s: \"%s\" must be a string, not %s", what,
                               key, kind(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < min || n > max)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"%s\" must be %zu to %zu bytes long (it is %zu)", what, key,
                               min, max, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (extra ? !in_set((char)c, extra) : (c < 0x20 || c == 0x7f))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"%s\" has a character not allowed there (byte %zu)", what,
                                   key, i);
    }
    if (buf)
        snprintf(buf, buflen, "%s", s);
    return 0;
}

static int is_lower_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* A path inside the bundle, by its text: relative, no "." or ".."
 * components, no empty ones. (Symlinks are checked on disk by load.) */
static int check_rel_path(const char *what, const char *p)
{
    if (p[0] == '/')
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"trace\" must be a path inside the bundle, not absolute",
                               what);
    const char *c = p;
    while (*c) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"trace\" must be a path inside the bundle (no empty, "
                                   "\".\" or \"..\" components): '%s'",
                                   what, p);
        c += n;
        if (*c == '/')
            c++;
        if (!*c && c[-1] == '/')
            return repro_error_set(REPRO_EINVAL, "%s: \"trace\" must name a file: '%s'",
                                   what, p);
    }
    return 0;
}

static int check_string_object(const char *what, const char *key, const json_t *o, int depth)
{
    if (json_object_size(o) > ENV_MEMBERS_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: \"%s\" has more than %d members", what,
                               key, ENV_MEMBERS_MAX);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (strlen(k) > 64)
            return repro_error_set(REPRO_EINVAL, "%s: \"%s\" has a key longer than 64 bytes",
                                   what, key);
        if (json_is_object(v) && depth == 0) {
            if (check_string_object(what, key, v, 1))
                return -1;
        } else if (!json_is_string(v)) {
            return repro_error_set(REPRO_EINVAL, "%s: \"%s\".\"%s\" must be a string, not %s",
                                   what, key, k, kind(v));
        } else if (json_string_length(v) > ENV_STRING_MAX) {
            return repro_error_set(REPRO_EINVAL,
                                   "%s: \"%s\".\"%s\" is longer than %d bytes", what, key, k,
                                   ENV_STRING_MAX);
        }
    }
    return 0;
}

/* A malformed "value" (not a string, not base64, not 64 bytes) has its
 * own message: it is not a signature at all, unlike one that does not
 * verify. Decodes it into raw (REPRO_SIG_LEN + 4 bytes). */
static int signature_value(const char *what, const json_t *sig, uint8_t *raw)
{
    if (!json_object_get(sig, "value"))
        return repro_error_set(REPRO_EINVAL,
                               "%s: malformed signature: \"signature\".\"value\" is missing (it "
                               "must be base64 of a %d-byte Ed25519 signature)",
                               what, REPRO_SIG_LEN);
    const char *val = json_string_value(json_object_get(sig, "value"));
    size_t len = val ? strlen(val) : 0;
    if (!val || len != REPRO_SIG_B64_LEN ||
        repro_base64_decode(val, raw, REPRO_SIG_LEN + 4) != REPRO_SIG_LEN)
        return repro_error_set(REPRO_EINVAL,
                               "%s: malformed signature: \"signature\".\"value\" must be "
                               "base64 of a %d-byte Ed25519 signature (%d characters; it is %s "
                               "of %zu)",
                               what, REPRO_SIG_LEN, REPRO_SIG_B64_LEN,
                               val ? "a string" : kind(json_object_get(sig, "value")), len);
    return 0;
}

static int check_signature_form(const char *what, const json_t *sig)
{
    if (!json_is_object(sig))
        return repro_error_set(REPRO_EINVAL, "%s: \"signature\" must be an object, not %s",
                               what, kind(sig));
    static const char *const known[] = {"alg", "public_key", "key_id", "value"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sig, k, v) {
        size_t i = 0;
        while (i < 4 && strcmp(k, known[i]))
            i++;
        if (i == 4)
            return repro_error_set(REPRO_EINVAL, "%s: unknown key \"signature\".\"%.64s\"",
                                   what, k);
    }
    char alg[16], id[65];
    if (get_str(what, sig, "alg", 1, 15, "", alg, sizeof alg))
        return -1;
    if (strcmp(alg, "ed25519"))
        return repro_error_set(REPRO_EINVAL, "%s: \"signature\".\"alg\" must be \"ed25519\"",
                               what);
    json_t *pk = json_object_get(sig, "public_key");
    if (!json_is_string(pk) || json_string_length(pk) == 0 ||
        json_string_length(pk) > REPRO_PEM_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"signature\".\"public_key\" must be a PEM string of at most "
                               "%d bytes",
                               what, REPRO_PEM_MAX);
    if (get_str(what, sig, "key_id", 64, 64, "", id, sizeof id))
        return -1;
    if (!is_lower_hex(id, 64))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"signature\".\"key_id\" must be 64 lowercase hex digits",
                               what);
    uint8_t raw[REPRO_SIG_LEN + 4];
    return signature_value(what, sig, raw);
}

int repro_bundle_parse(repro_bundle *b, const char *bytes, size_t len, const char *what)
{
    if (len > (size_t)REPRO_BUNDLE_MANIFEST_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: too large (%zu bytes; the limit is %ld)",
                               what, len, REPRO_BUNDLE_MANIFEST_MAX);
    if (repro_sha256(bytes, len, &b->manifest_digest))
        return -1;
    json_error_t je;
    /* Duplicate keys are refused: two "steps" would let a reader and a
     * verifier see different manifests. jansson also refuses invalid UTF-8,
     * NUL in strings, NaN/Infinity and integers beyond int64. */
    json_t *doc = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return repro_error_set(REPRO_EINVAL, "%s:%d: not valid JSON: %s", what, je.line,
                               je.text);
    b->manifest = doc;
    if (!json_is_object(doc))
        return repro_error_set(REPRO_EINVAL, "%s: the manifest must be a JSON object, not %s",
                               what, kind(doc));
    static const char *const known[] = {"repro_bundle", "experiment", "config",  "seed",
                                        "steps",        "trace",      "chain",   "env",
                                        "env_class",    "commit",     "repro_version",
                                        "created",      "signature",  "dirty",
                                        "program",      "score"};
    const size_t nknown = sizeof known / sizeof *known;
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v) {
        size_t i = 0;
        while (i < nknown && strcmp(k, known[i]))
            i++;
        if (i == nknown)
            return repro_error_set(REPRO_EINVAL, "%s: unknown key \"%.64s\"", what, k);
    }
    json_t *ver = json_object_get(doc, "repro_bundle");
    if (!ver)
        return repro_error_set(REPRO_EINVAL,
                               "%s: missing key \"repro_bundle\" (not a repro bundle manifest)",
                               what);
    if (!json_is_integer(ver) || json_integer_value(ver) != REPRO_BUNDLE_VERSION)
        return repro_error_set(REPRO_EINVAL,
                               "%s: unsupported \"repro_bundle\" version (this repro reads %d)",
                               what, REPRO_BUNDLE_VERSION);

    if (get_str(what, doc, "experiment", 1, 64, "._-", b->experiment, sizeof b->experiment))
        return -1;
    if (!in_set(b->experiment[0], ""))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"experiment\" must start with a letter or digit", what);

    json_t *cfg = json_object_get(doc, "config"), *prog = json_object_get(doc, "program");
    if (cfg && prog)
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"config\" and \"program\" both given: a bundle holds an "
                               "experiment or a program",
                               what);
    if (prog) {
        if (repro_bundle_parse_program(&b->program, prog, what))
            return -1;
        b->is_program = 1;
    } else if (!cfg)
        return repro_error_set(REPRO_EINVAL, "%s: missing key \"config\"", what);
    else if (!json_is_string(cfg))
        return repro_error_set(REPRO_EINVAL, "%s: \"config\" must be a string, not %s", what,
                               kind(cfg));
    else if (json_string_length(cfg) == 0 ||
             json_string_length(cfg) > (size_t)REPRO_BUNDLE_CONFIG_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: \"config\" must be 1 to %ld bytes long",
                               what, REPRO_BUNDLE_CONFIG_MAX);
    b->config = cfg ? json_string_value(cfg) : NULL;
    json_t *score = json_object_get(doc, "score");
    if (score && repro_bundle_parse_score(score, what, b->score, sizeof b->score,
                                          &b->score_value))
        return -1;
    b->has_score = score != NULL;

    if (get_str(what, doc, "seed", 1, 20, "", b->seed, sizeof b->seed))
        return -1;
    errno = 0;
    char *end;
    unsigned long long sv = strtoull(b->seed, &end, 10);
    if (*end || errno == ERANGE || b->seed[0] < '0' || b->seed[0] > '9')
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"seed\" must be a decimal uint64 string, not '%s'", what,
                               b->seed);
    b->seed_value = sv;

    json_t *steps = json_object_get(doc, "steps");
    if (!steps)
        return repro_error_set(REPRO_EINVAL, "%s: missing key \"steps\"", what);
    if (!json_is_integer(steps))
        return repro_error_set(REPRO_EINVAL, "%s: \"steps\" must be an integer, not %s", what,
                               kind(steps));
    json_int_t ns = json_integer_value(steps);
    if (ns < 1 || ns > REPRO_BUNDLE_STEPS_MAX)
        return repro_error_set(REPRO_EINVAL, "%s: \"steps\" must be 1 to %ld (it is %" JSON_INTEGER_FORMAT ")",
                               what, REPRO_BUNDLE_STEPS_MAX, ns);
    b->steps = (long)ns;

    if (get_str(what, doc, "trace", 1, 255, "._/-", b->trace, sizeof b->trace) ||
        check_rel_path(what, b->trace))
        return -1;
    if (get_str(what, doc, "chain", 64, 64, "", b->chain_hex, sizeof b->chain_hex))
        return -1;
    if (!is_lower_hex(b->chain_hex, 64) || repro_digest_from_hex(b->chain_hex, &b->chain))
        return repro_error_set(REPRO_EINVAL, "%s: \"chain\" must be 64 lowercase hex digits",
                               what);

    json_t *env = json_object_get(doc, "env");
    if (!env)
        return repro_error_set(REPRO_EINVAL, "%s: missing key \"env\"", what);
    if (!json_is_object(env))
        return repro_error_set(REPRO_EINVAL, "%s: \"env\" must be an object, not %s", what,
                               kind(env));
    if (check_string_object(what, "env", env, 0))
        return -1;
    b->env = env;
    if (get_str(what, doc, "env_class", 1, 63, "._-", b->env_class, sizeof b->env_class))
        return -1;
    const char *ec = json_string_value(json_object_get(env, "class"));
    if (ec && strcmp(ec, b->env_class))
        return repro_error_set(REPRO_EINVAL,
                               "%s: \"env_class\" '%s' is not the fingerprint's class '%.63s'",
                               what, b->env_class, ec);
    if (get_str(what, doc, "commit", 1, 64, "._-", b->commit, sizeof b->commit) ||
        get_str(what, doc, "repro_version", 1, 31, NULL, b->repro_version,
                sizeof b->repro_version))
        return -1;
    json_t *dirty = json_object_get(doc, "dirty");
    if (dirty && !json_is_boolean(dirty))
        return repro_error_set(REPRO_EINVAL, "%s: \"dirty\" must be true or false", what);
    b->dirty = dirty ? json_is_true(dirty) : -1;
    if (json_object_get(doc, "created") &&
        get_str(what, doc, "created", 1, 32, ":.+-", NULL, 0))
        return -1;
    json_t *sig = json_object_get(doc, "signature");
    if (sig && check_signature_form(what, sig))
        return -1;
    return 0;
}

/* Resolves dir/rel and requires it to lie inside dir (after symlinks) and
 * to be a regular file. */
static int resolve_inside(const char *dir, const char *rel, char *out, size_t outlen,
                          const char *what)
{
    char rdir[PATH_MAX], path[PATH_MAX + 300], rpath[PATH_MAX];
    if (!realpath(dir, rdir))
        return repro_error_set_errno(REPRO_EINVAL, "cannot open bundle %s", dir);
    snprintf(path, sizeof path, "%s/%s", rdir, rel);
    if (!realpath(path, rpath))
        return repro_error_set_errno(REPRO_EINVAL, "%s: claimed trace '%s' is missing", what,
                                     rel);
    size_t n = strlen(rdir);
    if (strncmp(rpath, rdir, n) || (rpath[n] != '/' && strcmp(rdir, "/")))
        return repro_error_set(REPRO_EINVAL,
                               "%s: claimed trace '%s' resolves outside the bundle (%s)", what,
                               rel, rpath);
    struct stat st;
    if (stat(rpath, &st) != 0 || !S_ISREG(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s: claimed trace '%s' is not a regular file",
                               what, rel);
    if (st.st_size > REPRO_BUNDLE_TRACE_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "%s: claimed trace '%s' is too large (%lld bytes; the limit is "
                               "%ld)",
                               what, rel, (long long)st.st_size, REPRO_BUNDLE_TRACE_MAX);
    snprintf(out, outlen, "%s", rpath);
    return 0;
}

/* A program bundle's tree: a real directory inside the bundle (not a
 * link), holding what a packed tree may hold (pack.h). */
static int load_tree(repro_bundle *b)
{
    repro_bundle_program *p = &b->program;
    char path[2048], rdir[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", b->dir, p->tree);
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || !realpath(b->dir, rdir))
        return repro_error_set(REPRO_EINVAL,
                               "%s: the program's tree '%s' is missing or not a directory",
                               b->manifest_path, p->tree);
    snprintf(p->tree_path, sizeof p->tree_path, "%s/%s", rdir, p->tree);
    if (repro_pack_check(p->tree_path, &p->tree_files, &p->tree_bytes))
        return repro_error_wrap(REPRO_EINVAL, "%s", b->manifest_path);
    return 0;
}

static int check_signature(repro_bundle *b)
{
    json_t *sig = json_object_get(b->manifest, "signature");
    if (!sig)
        return 0;
    const char *pem = json_string_value(json_object_get(sig, "public_key"));
    const char *id = json_string_value(json_object_get(sig, "key_id"));
    EVP_PKEY *key = NULL;
    char *bytes = NULL, real_id[65];
    uint8_t raw[REPRO_SIG_LEN + 4];
    int rc = -1;
    if (repro_sign_public_from_pem(&key, pem)) {
        repro_error_wrap(REPRO_EINVAL, "%s: \"signature\"", b->manifest_path);
        goto cleanup;
    }
    if (repro_sign_key_id(key, real_id))
        goto cleanup;
    if (strcmp(real_id, id)) {
        repro_error_set(REPRO_EINVAL, "%s: \"signature\".\"key_id\" is not the key's id",
                        b->manifest_path);
        goto cleanup;
    }
    if (signature_value(b->manifest_path, sig, raw))
        goto cleanup;
    bytes = repro_json_canonical(b->manifest);
    if (!bytes) {
        repro_error_set(REPRO_ENOMEM, "out of memory");
        goto cleanup;
    }
    int ok = repro_sign_verify(key, bytes, strlen(bytes), raw, REPRO_SIG_LEN);
    if (ok < 0)
        goto cleanup;
    if (!ok) {
        repro_error_set(REPRO_EINVAL,
                        "%s: the submitter's signature does not verify against its key "
                        "(fingerprint %s): the manifest was changed after signing, or the "
                        "signature was not made with that key",
                        b->manifest_path, real_id);
        goto cleanup;
    }
    b->is_signed = 1;
    snprintf(b->key_id, sizeof b->key_id, "%s", real_id);
    rc = 0;
cleanup:
    EVP_PKEY_free(key);
    free(bytes);
    return rc;
}

int repro_bundle_load(repro_bundle *b, const char *dir)
{
    memset(b, 0, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    struct stat st;
    if (stat(dir, &st) != 0)
        return repro_error_set_errno(REPRO_EINVAL, "cannot open bundle %s", dir);
    if (!S_ISDIR(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s: a bundle is a directory", dir);
    snprintf(b->manifest_path, sizeof b->manifest_path, "%s/%s", dir, REPRO_BUNDLE_MANIFEST);
    /* The manifest is a plain file in the bundle, not a link elsewhere. */
    if (lstat(b->manifest_path, &st) == 0 && S_ISLNK(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s: must not be a symbolic link",
                               b->manifest_path);
    char *bytes;
    size_t len;
    if (repro_read_file_limited(b->manifest_path, REPRO_BUNDLE_MANIFEST_MAX, &bytes, &len))
        return -1;
    int rc = repro_bundle_parse(b, bytes, len, b->manifest_path);
    free(bytes);
    if (rc)
        return -1;
    if (resolve_inside(dir, b->trace, b->trace_path, sizeof b->trace_path, b->manifest_path))
        return -1;
    if (b->is_program && load_tree(b))
        return -1;
    return check_signature(b);
}

int repro_bundle_write_manifest(const char *dir, json_t *doc, EVP_PKEY *key)
{
    if (key && repro_sign_json(doc, key))
        return -1;
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text)
        return repro_error_set(REPRO_EIO, "cannot serialize the manifest");
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, REPRO_BUNDLE_MANIFEST);
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (!withnl) {
        free(text);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    int rc = repro_write_file_atomic(path, withnl, n + 1);
    free(withnl);
    return rc;
}
