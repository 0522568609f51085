/* Tensor-parallel sums that do not depend on the tensor-parallel size.
 *
 * A row-parallel linear layer (Megatron's: rank r of N holds the input
 * features [r*K/N, (r+1)*K/N) of x and of the weight) usually sums its
 * slice and all-reduces the partials: the association, and so the bits,
 * change with N. repro's kernels sum every output from its bias over the
 * inputs in ascending index; carrying the running sums from rank to rank in
 * that order gives those bits for any N (docs/tensor-parallel.md):
 *
 *     acc = rank 0 ? bias (broadcast over rows) : receive from rank - 1
 *     repro_tp_continue(acc, ...over this rank's slice...)
 *     rank N - 1 ? broadcast acc : send to rank + 1
 *
 * Build with the flags of the library (no FMA contraction,
 * -ffp-contract=off) anything that must match it. */
#ifndef REPRO_PUBLIC_TP_H
#define REPRO_PUBLIC_TP_H

#ifdef __cplusplus
extern "C" {
#endif

/* Continues B x out running sums over K more inputs, in ascending k:
 * acc[b*ld_acc + o] = acc[b*ld_acc + o] + x[b*ld_x + k] * w[o*ld_w + k]
 * for k = 0, 1, ..., K - 1, each product rounded to float before the add
 * (never fused). w is in PyTorch's [out][in] layout: pass the slice's
 * first column and the full row length as ld_w. */
void repro_tp_continue(float *acc, long ld_acc, const float *x, long ld_x, const float *w,
                       long ld_w, int B, int K, int out);

/* The whole chain over an MPI communicator: `comm` points at the caller's
 * MPI_Comm (the tensor-parallel group; this rank's place in it is its
 * slice's). x (B x K, ld_x) and w (out x K, ld_w) are this rank's slices,
 * bias (out floats) is read on rank 0 only, y (B x out) receives the
 * layer's whole output on every rank. Rows travel in tiles of `tile`
 * (0: 16). Returns 0, or -1 (MPI failed or no MPI in this build: see
 * repro_error_last()). */
int repro_tp_linear_rowpar(void *comm, const float *x, long ld_x, const float *w, long ld_w,
                           const float *bias, float *y, int B, int K, int out, int tile);

#ifdef __cplusplus
}
#endif

#endif
