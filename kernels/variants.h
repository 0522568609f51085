/* The kernel-variant registry: every implementation of every op, whether it
 * is deterministic, and why. Experiments pick a variant per op
 * ([variant] section: `linear.bwd_weight = atomic`); deterministic = on
 * refuses nondeterministic ones by name, as PyTorch's
 * use_deterministic_algorithms raises. `repro kernels` lists this table.
 * Backend-neutral: every backend (backend.h) implements every row, the
 * variant passed to its entries as an id (REPRO_VARIANT_ORDERED = the
 * op's first row, REPRO_VARIANT_ATOMIC = "atomic"); the `why` lines state
 * the CPU kernels' orders, which backend.h makes the contract. */
#ifndef REPRO_VARIANTS_H
#define REPRO_VARIANTS_H

typedef struct {
    const char *op;      /* "linear.bwd_weight" */
    const char *variant; /* "ordered", "atomic", ... */
    int deterministic;
    const char *why;     /* one line */
} repro_variant_info;

/* The table, terminated by an entry with op == NULL. */
extern const repro_variant_info repro_variants[];

/* The entry for (op, variant), or NULL. */
const repro_variant_info *repro_variant_find(const char *op, const char *variant);

#endif
