/* The environment fingerprint (everything about this build and machine that
 * could matter to the bits, for the record) and the environment class (the
 * part of it under which bitwise identity is promised; goldens are keyed by
 * it: golden/<experiment>/<class id>.jsonl).
 *
 * Class fields, in digest order (a field with an empty value is left out of
 * the digest, so adding a CUDA-only field never renames a CPU class):
 *   backend      "cpu" (later "cuda")
 *   arch         the architecture the binary was compiled for (x86_64,
 *                aarch64, ...): identity is promised per architecture only
 *   seed_scheme  REPRO_SEED_SCHEME   every derived seed
 *   rng          REPRO_RNG_VERSION   every random number
 *   gpu_name, gpu_sm_count, gpu_cc, gpu_driver, cuda_version, cudnn_version
 *                reserved for the CUDA backend (empty on cpu)
 *
 * The digest function (tensor_hash) is not a class field since
 * repro-env-class/v2: it changes how the bits are digested, not the bits,
 * and each trace names its own, so a `[trace] digest = sha256` run and a
 * default one share a class and a golden (compared, they say "different
 * digest function"). v1 had it (always "repro-tensor/v1"): a golden filed
 * under a v1 id is found through repro_env_class_id_v1.
 *
 * Class id: "<backend>-<arch>-<12 hex>", the hex being the first 48 bits of
 * SHA-256 over "repro-env-class/v2\n" followed by "key=value\n" for each
 * non-empty class field in the order above. backend and arch are repeated in
 * clear so a golden's file name says what it is for; characters outside
 * [A-Za-z0-9._-] become '_', so the id is always a safe file name. */
#ifndef REPRO_ENV_H
#define REPRO_ENV_H

#include <stddef.h>

#include <jansson.h>

#define REPRO_ENV_CLASS_VERSION "repro-env-class/v2"
#define REPRO_ENV_CLASS_VERSION_V1 "repro-env-class/v1"
/* Longest class id plus its NUL; trace.h's env_class has this size. */
#define REPRO_ENV_CLASS_MAX 64

typedef struct {
    /* ---- class fields: bitwise identity is promised within a class ---- */
    char backend[16];
    char arch[32];
    char seed_scheme[64];
    char rng[64];
    /* CUDA backend (kernels/cuda, through backend.h's describe_device):
     * filled for a run on the cuda backend, empty on cpu. */
    char gpu_name[128];
    char gpu_sm_count[16];
    char gpu_cc[16];         /* compute capability, "9.0" */
    char gpu_driver[64];
    char cuda_version[32];
    char cudnn_version[32];

    /* ---- informational: recorded, deliberately not in the class ---- */
    char machine[64];        /* uname -m of the host running the binary */
    char cpu_model[256];     /* /proc/cpuinfo "model name", or "unknown" */
    char cpu_flags[128];     /* which of the flags we ask about are present */
    char isa_path[256];      /* the code path the kernels were compiled for */
    char tensor_hash[64];    /* the default digest function; a trace's env block
                                names the run's own (recorder.c) */
    char leaf_sha[64];       /* how tensor leaves are SHA-256'd (leaf_sha.h) */
    char leaf_xxh3[64];      /* how they are XXH3-128'd (leaf_xxh3.h) */
    char compiler[32];       /* REPRO_CC */
    char compiler_version[256];
    char cflags[1024];
    char repro_version[32];
    char trace_format[16];   /* REPRO_TRACE_VERSION */
    char openssl[128];
    char libgit2[32];
    char jansson[32];
    char inih[64];
    char libc[64];
    char os_kernel[160];     /* uname -s -r */
    char cuda_backend[192];  /* this build's CUDA backend: compiled or not, and
                                whether it was verified on hardware */
    char cublas_version[32]; /* cuda backend: cuBLAS (not used to compute) */
    char gpu_seen[256];      /* `repro env` on cpu: the GPU this machine has, if
                                any (not in the class: cpu bits do not depend on it) */

    char class_id[REPRO_ENV_CLASS_MAX];
} repro_env;

/* Fills *out for this process and computes class_id. What cannot be found
 * reads "unknown"; returns -1 (error slot, exit 3) only if SHA-256 fails.
 * The backend is "cpu". */
int repro_env_get(repro_env *out);
/* The same for a run on `backend` ("cpu" or "cuda"): for cuda the GPU
 * fields of device 0 are class fields (what the backend's describe_device
 * reports; "unavailable: why" when there is none). */
int repro_env_get_backend(repro_env *out, const char *backend);
/* `repro env`: fills gpu_seen (informational) with device 0 of this build's
 * CUDA backend, or why there is none; the class does not change. */
void repro_env_probe_gpu(repro_env *e);

/* Computes the class id from e's class fields only (see above) into out
 * (REPRO_ENV_CLASS_MAX bytes). Returns 0, or -1 if hashing failed (error
 * slot). Exposed so tests can vary one field. */
int repro_env_class_id(const repro_env *e, char *out, size_t len);
/* The id e's class had under repro-env-class/v1 (tensor_hash
 * "repro-tensor/v1" among the fields): where a golden blessed before v2 is
 * filed. */
int repro_env_class_id_v1(const repro_env *e, char *out, size_t len);
/* *out from a trace header's "env" object (repro_env_to_json's): the
 * fields it has, the class id recomputed. 0 or -1 (REPRO_EINVAL). */
int repro_env_from_json(const json_t *env, repro_env *out);

/* Every field, plus "class": id and "class_fields": {the non-empty class
 * fields}. New reference. */
json_t *repro_env_to_json(const repro_env *e);

/* Field i (0, 1, ... until NULL) in display order: returns its JSON key and
 * sets *value and *in_class. The class fields come in digest order. */
const char *repro_env_field(const repro_env *e, int i, const char **value, int *in_class);

#endif
