/* The environment fingerprint and class (env.h): gathers what this binary
 * was built with and runs on, and names the class goldens are keyed by. */
#include "record/env.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "build_info.h"
#include "util/error.h"
#include "record/hash.h"
#include "kernels/backend.h"
#include "kernels/isa.h"
#include "record/leaf_sha.h"
#include "record/leaf_xxh3.h"
#include "kernels/philox.h"
#include "util/seeds.h"
#include "record/trace.h"
#include "util/version.h"

/* Trace headers carry the class id in a fixed-size field. */
_Static_assert(sizeof(((repro_trace *)0)->env_class) == REPRO_ENV_CLASS_MAX,
               "trace.h env_class must hold a class id");

#define FIELD(key, member, cls) \
    {key, offsetof(repro_env, member), sizeof(((repro_env *)0)->member), cls}

/* Display order; the class fields (cls = 1) among them in digest order,
 * which is part of the class id's definition: never reorder them. */
static const struct {
    const char *key;
    size_t off, size;
    int cls;
} fields[] = {
    FIELD("backend", backend, 1),
    FIELD("arch", arch, 1),
    FIELD("machine", machine, 0),
    FIELD("cpu_model", cpu_model, 0),
    FIELD("cpu_flags", cpu_flags, 0),
    FIELD("isa_path", isa_path, 0),
    FIELD("leaf_sha", leaf_sha, 0),
    FIELD("leaf_xxh3", leaf_xxh3, 0),
    FIELD("compiler", compiler, 0),
    FIELD("compiler_version", compiler_version, 0),
    FIELD("cflags", cflags, 0),
    FIELD("repro_version", repro_version, 0),
    FIELD("trace_format", trace_format, 0),
    FIELD("seed_scheme", seed_scheme, 1),
    FIELD("rng", rng, 1),
    FIELD("tensor_hash", tensor_hash, 0), /* in the class until repro-env-class/v1 */
    FIELD("gpu_name", gpu_name, 1),
    FIELD("gpu_sm_count", gpu_sm_count, 1),
    FIELD("gpu_cc", gpu_cc, 1),
    FIELD("gpu_driver", gpu_driver, 1),
    FIELD("cuda_version", cuda_version, 1),
    FIELD("cudnn_version", cudnn_version, 1),
    FIELD("openssl", openssl, 0),
    FIELD("libgit2", libgit2, 0),
    FIELD("jansson", jansson, 0),
    FIELD("inih", inih, 0),
    FIELD("libc", libc, 0),
    FIELD("os_kernel", os_kernel, 0),
    FIELD("cuda_backend", cuda_backend, 0),
    FIELD("cublas_version", cublas_version, 0),
    FIELD("gpu_seen", gpu_seen, 0),
};
#define NFIELDS ((int)(sizeof fields / sizeof fields[0]))

const char *repro_env_field(const repro_env *e, int i, const char **value, int *in_class)
{
    if (i < 0 || i >= NFIELDS)
        return NULL;
    *value = (const char *)e + fields[i].off;
    *in_class = fields[i].cls;
    return fields[i].key;
}

/* Bounded copy that always terminates (snprintf into a smaller array would
 * trip -Wformat-truncation on constant sources). */
static void set(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The architecture the binary targets, not the host's uname: a 32-bit
 * build on a 64-bit kernel computes with another ISA (and its bits are
 * another class), whatever `uname -m` says. */
static const char *target_arch(const char *machine)
{
#if defined(__x86_64__)
    (void)machine;
    return "x86_64";
#elif defined(__i386__)
    (void)machine;
    return "i386";
#elif defined(__aarch64__)
    (void)machine;
    return "aarch64";
#elif defined(__arm__)
    (void)machine;
    return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
    (void)machine;
    return "riscv64";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
    (void)machine;
    return "ppc64le";
#elif defined(__s390x__)
    (void)machine;
    return "s390x";
#else
    return machine;
#endif
}

/* The vector path the CPU kernels run on: chosen at run time (kernels/isa.h:
 * the best the CPU has, or REPRO_ISA), beside what the build itself was
 * compiled for. Informational: with no FMA contraction and vectorization
 * only across independent outputs, the bits do not depend on it; a build
 * that enables more is still said plainly. */
static void isa_path(char *buf, size_t len)
{
    const char *build;
#if defined(__x86_64__) || defined(__i386__)
#if defined(__AVX512F__)
    build = "x86-64 with AVX-512F";
#elif defined(__AVX2__)
    build = "x86-64 with AVX2";
#elif defined(__AVX__)
    build = "x86-64 with AVX";
#elif defined(__SSE2__)
    build = "x86-64 baseline (SSE2)";
#else
    build = "x86 without SSE2 (x87 arithmetic)";
#endif
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_SVE)
    build = "AArch64 with SVE";
#else
    build = "AArch64 baseline (ASIMD/NEON)";
#endif
#else
    build = "generic C";
#endif
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
    const char *fma_isa = ", FMA instructions available";
#else
    const char *fma_isa = "";
#endif
    /* -ffp-contract has no predefined macro; the flags are what we have. */
    const char *contract = strstr(REPRO_CFLAGS, "-ffp-contract=off")
                               ? ", no FMA contraction"
                               : ", FMA contraction NOT disabled (outside the contract)";
#ifdef __FAST_MATH__
    const char *fast = ", -ffast-math (outside the contract)";
#else
    const char *fast = "";
#endif
    snprintf(buf, len, "%s kernels (run time; build: %s%s)%s%s",
             repro_isa_name(repro_isa_current()), build, fma_isa, contract, fast);
}

/* Reads the first /proc/cpuinfo line whose key is `key` into val. */
static int cpuinfo_value(const char *key, char *val, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[8192];
    size_t klen = strlen(key);
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' &&
                                              line[klen] != ':'))
            continue;
        char *v = strchr(line, ':');
        if (!v)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        set(val, len, v);
        found = 0;
    }
    fclose(f);
    return found;
}

static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') &&
            (p[n] == '\0' || p[n] == ' ' || p[n] == '\t'))
            return 1;
    return 0;
}

/* The CPU features worth knowing when bits differ between machines:
 * present ones, then the absent ones in parentheses. */
static void cpu_flags(char *buf, size_t len)
{
    char line[8192];
#if defined(__aarch64__) || defined(__arm__)
    static const char *const want[] = {"asimd", "fphp", "sve", "sha2", NULL};
    const char *key = "Features";
#else
    static const char *const want[] = {"sse2", "avx2", "avx512f", "fma", "sha_ni", NULL};
    const char *key = "flags";
#endif
    if (cpuinfo_value(key, line, sizeof line)) {
        set(buf, len, "unknown");
        return;
    }
    char have[128] = "", lack[128] = "";
    for (int i = 0; want[i]; i++) {
        char *dst = has_word(line, want[i]) ? have : lack;
        size_t used = strlen(dst);
        snprintf(dst + used, sizeof have - used, "%s%s", used ? " " : "", want[i]);
    }
    snprintf(buf, len, "%s%s%s%s", have[0] ? have : "none of them", lack[0] ? " (no " : "",
             lack, lack[0] ? ")" : "");
}

/* The canonical text of e's class: versioned, one "key=value" line per
 * non-empty class field. `legacy`: the repro-env-class/v1 text, whose
 * fields also had tensor_hash (after rng), always "repro-tensor/v1" then. */
static size_t class_text(const repro_env *e, int legacy, char *text, size_t cap)
{
    size_t n = (size_t)snprintf(text, cap, "%s\n",
                                legacy ? REPRO_ENV_CLASS_VERSION_V1 : REPRO_ENV_CLASS_VERSION);
    for (int i = 0; i < NFIELDS; i++) {
        const char *v = (const char *)e + fields[i].off;
        int v1_hash = legacy && !strcmp(fields[i].key, "tensor_hash");
        if (v1_hash)
            v = REPRO_TENSOR_HASH_SHA256;
        if ((!fields[i].cls && !v1_hash) || !v[0])
            continue;
        n += (size_t)snprintf(text + n, cap - n, "%s=%s\n", fields[i].key, v);
    }
    return n;
}

static int class_id(const repro_env *e, int legacy, char *out, size_t len)
{
    char text[2048];
    size_t n = class_text(e, legacy, text, sizeof text);
    /* The fields' sizes bound the text well below its buffer. */
    repro_digest d;
    if (repro_sha256(text, n < sizeof text ? n : sizeof text - 1, &d))
        return -1;
    char hex[65];
    repro_digest_hex(&d, hex);

    /* backend and arch in clear, made file-name safe; the digest covers them
     * as they are, so sanitizing never merges two classes. */
    char id[REPRO_ENV_CLASS_MAX];
    size_t k = 0;
    const char *parts[2] = {e->backend[0] ? e->backend : "unknown",
                            e->arch[0] ? e->arch : "unknown"};
    for (int p = 0; p < 2; p++) {
        for (const char *c = parts[p]; *c && k < 24 * (size_t)(p + 1); c++) {
            int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                     (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
            id[k++] = ok ? *c : '_';
        }
        id[k++] = '-';
    }
    memcpy(id + k, hex, 12);
    id[k + 12] = '\0';
    if (strlen(id) >= len)
        return repro_error_set(REPRO_EIO, "environment class id too long");
    memcpy(out, id, strlen(id) + 1);
    return 0;
}

int repro_env_class_id(const repro_env *e, char *out, size_t len)
{
    return class_id(e, 0, out, len);
}

int repro_env_class_id_v1(const repro_env *e, char *out, size_t len)
{
    return class_id(e, 1, out, len);
}

int repro_env_from_json(const json_t *env, repro_env *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(env))
        return repro_error_set(REPRO_EINVAL, "environment: not a JSON object");
    for (int i = 0; i < NFIELDS; i++) {
        const char *v = json_string_value(json_object_get(env, fields[i].key));
        if (v)
            snprintf((char *)out + fields[i].off, fields[i].size, "%s", v);
    }
    return repro_env_class_id(out, out->class_id, sizeof out->class_id);
}

/* The GPU fields of device 0 from the CUDA backend's describe_device
 * (through backend.h: env.c knows no CUDA header). 0, or -1 with why. */
static int describe_gpu(repro_device_info *d, char *why, size_t len)
{
    const repro_backend *cuda = repro_backend_get("cuda");
    if (!cuda) {
        snprintf(why, len, "%s", repro_backend_missing("cuda"));
        return -1;
    }
    return cuda->describe_device(0, d, why, len);
}

static void gpu_class_fields(repro_env *e)
{
    repro_device_info d;
    char why[256];
    if (describe_gpu(&d, why, sizeof why)) {
        snprintf(e->gpu_name, sizeof e->gpu_name, "unavailable: %.100s", why);
        return;
    }
    set(e->gpu_name, sizeof e->gpu_name, d.name);
    snprintf(e->gpu_sm_count, sizeof e->gpu_sm_count, "%d", d.sm_count);
    snprintf(e->gpu_cc, sizeof e->gpu_cc, "%d.%d", d.cc_major, d.cc_minor);
    set(e->gpu_driver, sizeof e->gpu_driver, d.driver);
    set(e->cuda_version, sizeof e->cuda_version, d.runtime);
    set(e->cudnn_version, sizeof e->cudnn_version, d.cudnn);
    set(e->cublas_version, sizeof e->cublas_version, d.cublas);
}

void repro_env_probe_gpu(repro_env *e)
{
    repro_device_info d;
    char why[200];
    if (describe_gpu(&d, why, sizeof why))
        snprintf(e->gpu_seen, sizeof e->gpu_seen, "none (%.200s)", why);
    else
        snprintf(e->gpu_seen, sizeof e->gpu_seen,
                 "%.60s (%d SMs, cc %d.%d, %zu MiB), driver %.20s, CUDA %.20s, cuDNN %.20s, "
                 "cuBLAS %.20s",
                 d.name, d.sm_count, d.cc_major, d.cc_minor, d.total_memory >> 20, d.driver,
                 d.runtime, d.cudnn, d.cublas);
}

int repro_env_get(repro_env *e)
{
    return repro_env_get_backend(e, "cpu");
}

int repro_env_get_backend(repro_env *e, const char *backend)
{
    memset(e, 0, sizeof *e);
    struct utsname u;
    int have_uname = uname(&u) == 0;

    /* class */
    set(e->backend, sizeof e->backend, backend && backend[0] ? backend : "cpu");
    if (!strcmp(e->backend, "cuda"))
        gpu_class_fields(e);
    set(e->machine, sizeof e->machine, have_uname ? u.machine : "unknown");
    set(e->arch, sizeof e->arch, target_arch(e->machine));
    set(e->seed_scheme, sizeof e->seed_scheme, REPRO_SEED_SCHEME);
    set(e->rng, sizeof e->rng, REPRO_RNG_VERSION);
    /* Informational: the default; each trace names its own ("tensor_hash"). */
    set(e->tensor_hash, sizeof e->tensor_hash, REPRO_TENSOR_HASH_VERSION);

    /* informational */
    if (cpuinfo_value("model name", e->cpu_model, sizeof e->cpu_model) || !e->cpu_model[0])
        set(e->cpu_model, sizeof e->cpu_model, "unknown");
    cpu_flags(e->cpu_flags, sizeof e->cpu_flags);
    isa_path(e->isa_path, sizeof e->isa_path);
    /* Same digests on every path; informational, like the vector path. */
    snprintf(e->leaf_sha, sizeof e->leaf_sha, "%s", repro_leaf_sha_path());
    snprintf(e->leaf_xxh3, sizeof e->leaf_xxh3, "%s", repro_leaf_xxh3_path());
    set(e->compiler, sizeof e->compiler, REPRO_CC);
    set(e->compiler_version, sizeof e->compiler_version, REPRO_CC_VERSION);
    set(e->cflags, sizeof e->cflags, REPRO_CFLAGS);
    set(e->repro_version, sizeof e->repro_version, REPRO_VERSION);
    snprintf(e->trace_format, sizeof e->trace_format, "%d", REPRO_TRACE_VERSION);
    set(e->openssl, sizeof e->openssl, OpenSSL_version(OPENSSL_VERSION));
    /* The version built against (pkg-config at build time): only the git
     * layer may include <git2.h>, and Debian's soname pins the version. */
    set(e->libgit2, sizeof e->libgit2, REPRO_LIBGIT2_VERSION);
#if JANSSON_VERSION_HEX >= 0x020d00
    /* The library loaded may be newer than the header built against. */
    if (strcmp(jansson_version_str(), JANSSON_VERSION) != 0)
        snprintf(e->jansson, sizeof e->jansson, "%s (built with %s)", jansson_version_str(),
                 JANSSON_VERSION);
    else
        set(e->jansson, sizeof e->jansson, JANSSON_VERSION);
#else
    set(e->jansson, sizeof e->jansson, JANSSON_VERSION);
#endif
#ifdef REPRO_INIH_VERSION
    snprintf(e->inih, sizeof e->inih, "inih r%s", REPRO_INIH_VERSION);
#else
    /* inih has no runtime version, and the build does not record one. */
    set(e->inih, sizeof e->inih, "inih (system libinih, version not recorded)");
#endif
#ifdef __GLIBC__
    snprintf(e->libc, sizeof e->libc, "glibc %s", gnu_get_libc_version());
#else
    set(e->libc, sizeof e->libc, "unknown (not glibc)");
#endif
    if (have_uname)
        snprintf(e->os_kernel, sizeof e->os_kernel, "%s %s", u.sysname, u.release);
    else
        set(e->os_kernel, sizeof e->os_kernel, "unknown");
    set(e->cuda_backend, sizeof e->cuda_backend, repro_backend_cuda_status());

    return repro_env_class_id(e, e->class_id, sizeof e->class_id);
}

/* jansson refuses strings that are not UTF-8 (a CPU model string could be
 * anything): say so rather than drop the key. */
static json_t *str_json(const char *v)
{
    json_t *s = json_string(v);
    return s ? s : json_string("(not UTF-8)");
}

json_t *repro_env_to_json(const repro_env *e)
{
    json_t *o = json_object(), *cls = json_object();
    for (int i = 0; i < NFIELDS; i++) {
        const char *v = (const char *)e + fields[i].off;
        /* Empty class fields (CUDA ones on cpu) are not part of the class. */
        if (fields[i].cls && !v[0])
            continue;
        json_object_set_new(o, fields[i].key, str_json(v));
        if (fields[i].cls)
            json_object_set_new(cls, fields[i].key, str_json(v));
    }
    json_object_set_new(o, "class", json_string(e->class_id));
    json_object_set_new(o, "class_fields", cls);
    return o;
}
