/* Numbers given on the command line: counts (--runs, --steps, --repeat,
 * --threads lists, ...) and seeds. One strict reading for all of them, so
 * that `--runs 4294967298` is an error rather than 2, and `--seed 010` is
 * ten, not eight:
 *   - decimal digits only: no sign, no spaces, no 0x (hex) and no octal —
 *     leading zeros are read as decimal ("010" is 10);
 *   - range-checked before any narrowing (no overflow can wrap);
 *   - errors (REPRO_EINVAL) name the flag and the value as given:
 *     "check: --runs 4294967298: expected a decimal count in 1..32". */
#ifndef REPRO_NUMPARSE_H
#define REPRO_NUMPARSE_H

#include <stdint.h>

/* Reads decimal digits (as above) into *out. 0, or -1 without touching the
 * error slot (for callers with their own message, e.g. the config). */
int repro_parse_decimal_u64(const char *s, uint64_t *out);

/* A count in [lo, hi] (0 <= lo <= hi). `what` names the flag, with the
 * command: "check: --runs". 0, or -1 with the error slot set. */
int repro_parse_count(const char *what, const char *value, long lo, long hi, long *out);
/* The same into an int (hi must fit an int). */
int repro_parse_count_int(const char *what, const char *value, int lo, int hi, int *out);

/* A comma-separated list of counts in [lo, hi], "1,2,3": at most max of
 * them into out, *n their number (at least one). Errors name the element:
 * "check: --threads 1,x: 'x' is not a count in 0..256". */
int repro_parse_count_list(const char *what, const char *list, long lo, long hi, long *out,
                           int max, int *n);

/* A size in bytes: decimal digits, then optionally a binary unit K, M, G
 * or T (1024-based; any case, optionally followed by "iB" or "B": "512M",
 * "2G", "4GiB"; a bare number is bytes), at least `lo` bytes and at most
 * 2^63 - 1. 0, or -1 with the error slot set:
 * "verify: --max-memory 2X: expected a size such as 512M or 4G". */
int repro_parse_size(const char *what, const char *value, uint64_t lo, uint64_t *out);

/* A seed: any uint64 in decimal. */
int repro_parse_seed(const char *what, const char *value, uint64_t *out);

#endif
