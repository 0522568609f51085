/* The kernel-variant registry: every implementation of every op, whether it
 * is deterministic, whether it is batch-invariant, and why. Experiments pick
 * a variant per op ([variant] section: `linear.bwd_weight = atomic`,
 * `linear.fwd = splitk`); deterministic = on
 * refuses nondeterministic ones by name, as PyTorch's
 * use_deterministic_algorithms raises. `repro kernels` lists this table.
 * Backend-neutral: every backend (backend.h) implements every row, the
 * variant passed to its entries as an id (REPRO_VARIANT_ORDERED = the
 * op's first row, REPRO_VARIANT_ATOMIC = "atomic", REPRO_VARIANT_SPLITK =
 * "splitk"); the `why` lines state
 * the CPU kernels' orders, which backend.h makes the contract.
 *
 * Batch-invariant: each sample's output row is the same bits whatever else
 * shares its batch and whatever the batch size (a row computed alone equals
 * the same row inside any batch): what an inference server needs so that a
 * request's answer does not depend on its neighbours (`repro check
 * --batch-invariance`). Deterministic is a different promise: a split-K
 * GEMM that picks its split from the row count is deterministic run to run
 * and still not batch-invariant. */
#ifndef REPRO_VARIANTS_H
#define REPRO_VARIANTS_H

typedef struct {
    const char *op;      /* "linear.bwd_weight" */
    const char *variant; /* "ordered", "atomic", ... */
    int deterministic;
    /* 1: batch-invariant; 0: not (a sample's row depends on the batch);
     * REPRO_BATCH_NA (-1): no per-sample rows to compare (a sum over the
     * batch such as a weight gradient, or a parameter update). */
    int batch_invariant;
    const char *why;     /* one line */
} repro_variant_info;

enum { REPRO_BATCH_NA = -1 };

/* The table, terminated by an entry with op == NULL. */
extern const repro_variant_info repro_variants[];

/* The entry for (op, variant), or NULL. */
const repro_variant_info *repro_variant_find(const char *op, const char *variant);

#endif
