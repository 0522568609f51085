/* The kernel-variant registry (variants.h): one row per implementation of
 * each op, with its determinism and batch-invariance flags and the one-line
 * reason. Deterministic rows cite the fixed order ops.h states;
 * nondeterministic rows say which additions meet in scheduler order
 * (atomic.h); the one non-batch-invariant row says what the batch size
 * changes (cpu/splitk.h); dropout's mask is keyed by the element's position
 * in the batch tensor. R = REPRO_BATCH_NA: no per-sample rows (a sum over
 * the batch, or a parameter update), so batch invariance does not apply. */
#include "variants.h"

#include <string.h>

enum { R = REPRO_BATCH_NA };

const repro_variant_info repro_variants[] = {
    {"linear.fwd", "ordered", 1, 1,
     "each output sums bias then inputs in ascending index, fixed output blocks"},
    {"linear.fwd", "splitk", 1, 0,
     "inputs split into 4 chunks below 8 rows, 2 for 8..31, 1 from 32 (as BLAS/cuBLAS "
     "heuristics split K for skinny problems), partials added in chunk order: fixed run to run, "
     "but a row rounds differently in batches of different sizes"},
    {"linear.bwd_data", "ordered", 1, 1,
     "each input gradient sums over outputs in ascending index, fixed output blocks"},
    {"linear.bwd_weight", "ordered", 1, R,
     "sums over the batch in ascending sample order, fixed chunking"},
    {"linear.bwd_weight", "atomic", 0, R,
     "partial sums added with atomic compare-exchange (cuda: atomicAdd) in scheduler order: "
     "bits vary run to run"},
    {"linear.bwd_bias", "ordered", 1, R,
     "each column summed over the batch in ascending sample order by one chunk"},
    {"linear.bwd_bias", "atomic", 0, R,
     "per-chunk column sums added atomically (cuda: atomicAdd) in scheduler order: bits vary run "
     "to run"},
    {"conv2d.fwd", "direct", 1, 1,
     "each output sums bias then (c, ry, rx) in lexicographic order, one chunk per plane"},
    {"conv2d.fwd", "im2col", 1, 1,
     "unfolded columns times filters, the reduction summed in blocks of 16 then blocks in order: "
     "fixed, rounds unlike direct"},
    {"conv2d.fwd", "winograd", 1, 1,
     "F(2x2,3x3) transforms in a fixed order, channels summed ascending: fixed, rounds unlike "
     "direct"},
    {"conv2d.bwd_data", "direct", 1, 1,
     "each input gradient sums (k, ry, rx) in lexicographic order, one chunk per plane"},
    {"conv2d.bwd_filter", "direct", 1, R,
     "per-column sums over (b, oy) ascending, then columns ascending, one chunk per filter row"},
    {"conv2d.bwd_filter", "atomic", 0, R,
     "per-sample partials added with atomic compare-exchange (cuda: atomicAdd) in scheduler "
     "order: bits vary run to run"},
    {"relu", "ordered", 1, 1, "elementwise: no reduction"},
    {"maxpool.fwd", "ordered", 1, 1,
     "max over each window in row-major order, first maximum wins, NaN wins"},
    {"maxpool.bwd", "ordered", 1, 1, "windows do not overlap: no two terms meet"},
    {"dropout", "philox", 1, 0,
     "mask from counter-based Philox keyed by element index, independent of tiling and threads; "
     "so a sample's mask depends on its position in the batch (train mode; eval is the "
     "identity)"},
    {"softmax_xent", "ordered", 1, 1,
     "softmax in double per row (rows independent); loss summed over the batch in ascending "
     "order"},
    {"sgd", "ordered", 1, R, "elementwise update: no reduction"},
    {"adamw", "ordered", 1, R, "elementwise update: no reduction; bias corrections by repeated "
                            "multiplication, not pow"},
    {"allreduce", "ordered", 1, R,
     "each shard's gradient summed over its samples, the shard sums added in shard order on "
     "every rank: the same bits for any number of ranks"},
    {"allreduce", "ring", 1, R,
     "ring reduce-scatter + allgather as NCCL and Gloo do: fixed for a fixed world size, but "
     "each chunk's sum starts at another rank, so the bits change with the number of ranks"},
    {"allreduce", "arrival", 0, R,
     "remote shard sums added in the order messages arrive (MPI_ANY_SOURCE): bits vary run to "
     "run"},
    {"linear.tp_reduce", "ordered", 1, R,
     "row-parallel linear: each output's running sum passed rank to rank in ascending input "
     "order, from the bias: TP-invariant, the one-process sum for any tensor-parallel size"},
    {"linear.tp_reduce", "ring", 1, R,
     "each rank sums its input slice, then a ring all-reduce (Megatron over NCCL): fixed for a "
     "fixed size, NOT TP-invariant: the association changes with the tensor-parallel size"},
    {"index_add", "ordered", 1, R,
     "each output row receives its inputs in ascending index, chunks own columns"},
    {"index_add", "atomic", 0, R,
     "inputs added atomically (cuda: atomicAdd) in scheduler order where they share a row: bits "
     "vary run to run"},
    {NULL, NULL, 0, 0, NULL},
};

const repro_variant_info *repro_variant_find(const char *op, const char *variant)
{
    if (!op || !variant)
        return NULL;
    for (const repro_variant_info *v = repro_variants; v->op; v++)
        if (!strcmp(v->op, op) && !strcmp(v->variant, variant))
            return v;
    return NULL;
}
