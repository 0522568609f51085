/* Experiment configuration: a strict INI file (unknown section or key,
 * duplicate key, bad or out-of-range value -> exit 2 with "file:line: what"),
 * then --set overrides validated the same way. The struct, the defaults, the
 * parser and the dump all come from config_keys.h. */
#ifndef REPRO_CONFIG_H
#define REPRO_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "kernels/variants.h"
#include "repro/digest.h"

#define REPRO_CONFIG_LIST_MAX 8
#define REPRO_CONFIG_PATH_MAX 1024

enum { REPRO_MODEL_MLP = 0, REPRO_MODEL_CNN = 1 };
enum { REPRO_DATASET_SYNTHETIC = 0, REPRO_DATASET_IDX = 1 };
enum { REPRO_OPT_SGD = 0, REPRO_OPT_ADAMW = 1 };
enum { REPRO_ZERO_GRAD_ZERO = 0, REPRO_ZERO_GRAD_NONE = 1 };
enum { REPRO_PRECISION_FP32 = 0, REPRO_PRECISION_BF16 = 1, REPRO_PRECISION_FP16 = 2 };
/* [train] backend: the kernel backend's name is the choice's text. */
enum { REPRO_BACKEND_CPU = 0, REPRO_BACKEND_CUDA = 1 };

#define REPRO_CFG_FIELD_INT(s, k) int s##_##k;
#define REPRO_CFG_FIELD_U64(s, k) uint64_t s##_##k;
#define REPRO_CFG_FIELD_REAL(s, k) double s##_##k;
#define REPRO_CFG_FIELD_BOOL(s, k) int s##_##k;
#define REPRO_CFG_FIELD_ENUM(s, k) int s##_##k;
#define REPRO_CFG_FIELD_STR(s, k) char s##_##k[REPRO_CONFIG_PATH_MAX];
#define REPRO_CFG_FIELD_LIST(s, k) int s##_##k[REPRO_CONFIG_LIST_MAX]; int s##_##k##_n;

/* The key count, and each key's index (REPRO_KEY_train_seed, ...). */
enum {
#define X(s, k, T, d, lo, hi, ch, help) REPRO_KEY_##s##_##k,
#define XV(f, name, ch, help) REPRO_KEY_variant_##f,
#include "core/config_keys.h"
#undef X
#undef XV
    REPRO_KEY_COUNT
};

enum { REPRO_DETERMINISTIC_ON = 0, REPRO_DETERMINISTIC_OFF = 1, REPRO_DETERMINISTIC_WARN = 2 };

typedef struct {
#define X(s, k, T, d, lo, hi, ch, help) REPRO_CFG_FIELD_##T(s, k)
#define XV(f, name, ch, help) int variant_##f; /* index into its choices; 0 = deterministic */
#include "core/config_keys.h"
#undef X
#undef XV
    char name[128];                     /* experiment name: the file's stem */
    char path[REPRO_CONFIG_PATH_MAX];   /* the file it came from */
    int line[REPRO_KEY_COUNT];          /* where each key was set; 0 = default, -1 = command line */
} repro_config;

/* Fills *cfg with the defaults. */
void repro_config_defaults(repro_config *cfg);
/* defaults + file. On error returns -1 with "path:line: message" in the
 * error slot (exit code 2). */
int repro_config_load(repro_config *cfg, const char *path);
/* One override "section.key=value" or "key=value" (key unambiguous), checked
 * like a file line; errors name the override. */
int repro_config_set(repro_config *cfg, const char *assignment);
/* Cross-key checks (idx needs its files, the CNN's feature map stays >= 1
 * pixel, ...); errors name the file:line of the key at fault. */
int repro_config_validate(const repro_config *cfg);
/* The effective config as INI, every key in table order: loading it back
 * gives the same config. */
void repro_config_dump(const repro_config *cfg, FILE *out);
/* One key's value as text (as the dump writes it). */
void repro_config_value_str(const repro_config *cfg, int key, char *buf, size_t len);

/* ---- config_digest.c: the config as a trace header records it ---------- */
/* SHA-256 of the effective config dumped as INI (`all`), and of the same
 * without the bits-neutral keys and the keys at their defaults (`numerics`):
 * traces whose numerics digests differ are different experiments. */
int repro_config_digests(const repro_config *cfg, repro_digest *all,
                         repro_digest *numerics);
/* Every key as a string, grouped by section (a json_t object, new
 * reference), or NULL with the error slot set. */
void *repro_config_to_json(const repro_config *cfg);
/* `repro help config`: every key with its type, default, range and help. */
void repro_config_print_reference(FILE *out);
/* Variant keys: 1 if `key` selects a kernel variant; its op name
 * ("linear.bwd_weight") and chosen variant name. */
int repro_config_key_is_variant(int key);
const char *repro_config_variant_name(const repro_config *cfg, int key, char *buf, size_t len);
/* The registry entry of the variant cfg selects for `key` (its
 * determinism and batch invariance), or NULL when key is not a variant
 * key. */
const repro_variant_info *repro_config_variant_in_use(const repro_config *cfg, int key);

/* The nondeterministic variants cfg selects, as "op = variant" lines
 * (for deterministic = warn's warning); returns how many. */
int repro_config_nondeterministic(const repro_config *cfg, char *buf, size_t len);

/* Keys promised not to change the bits, or that only bound or describe the
 * run (threads, num_workers, prefetch, steps, log_every, trace.*): left out
 * of the numerics digest, so runs that differ only in them compare. */
int repro_config_key_bits_neutral(int key);
/* The index of "section.key" or an unambiguous "key", else -1. */
int repro_config_find_key(const char *name);
const char *repro_config_key_section(int key);
const char *repro_config_key_name(int key);

#endif
