/* Tensor parallel (Megatron's split of an MLP) over a group of MPI ranks,
 * with the one-process bits at any group size.
 *
 * The mlp's first linear layer is column-parallel (rank r computes the
 * output features [r*O/N, (r+1)*O/N) whole), the second row-parallel (rank
 * r holds the input features [r*K/N, (r+1)*K/N)). A column-parallel output
 * is one rank's whole sum, the kernel's own, so it is exact. A row-parallel
 * output is a sum over K split across ranks, and the kernels' contract
 * (kernels/backend.h, linear_forward) fixes it: bias first, then the
 * inputs in ascending index. So the ranks do not all-reduce partial sums
 * (that association changes with N: the `ring` control); they carry the
 * running sums: rank 0 starts every output from its bias and adds its
 * slice, sends the running sums to rank 1, which continues over its slice
 * in ascending index, and so on; the last rank's sums are the layer's
 * output, broadcast to the group. The tree is fixed by k, not by N, and it
 * is the one-process order, so tp = 1, 2, 4 give the golden's bits. The
 * batch's rows go through the chain in tiles, so rank r + 1 works on tile
 * t while rank r works on tile t + 1.
 *
 * Backward: every product is checked for what it sums over. The weight and
 * bias gradients sum over the batch (not split: each rank computes its
 * slice's rows or columns whole, per gradient shard, through the model's
 * shard reduce, so data parallel composes); the row-parallel layer's input
 * gradient sums over its outputs (not split); the column-parallel layer's
 * input gradient would sum over its split outputs, and is computed whole
 * from the replicated weights (the mlp's fc1 has none: its input is the
 * batch). Parameters and optimizer state stay replicated: each rank's
 * slices of the gradients are gathered into the full tensors, every rank
 * applies the same update, and digests are taken over the full tensors in
 * the one-process layout. */
#ifndef REPRO_TP_H
#define REPRO_TP_H

#include "core/model.h"

struct repro_dist;

enum { REPRO_TP_COLUMN = 1, REPRO_TP_ROW = 2 };
/* linear.tp_reduce, the config's order. */
enum { REPRO_TP_REDUCE_ORDERED = 0, REPRO_TP_REDUCE_RING = 1 };

/* Splits m's first two linear layers across group (its size divides their
 * shared width: config.c checks it) with the given tp_reduce variant.
 * m must be on a host-memory backend. Returns 0 or -1 (error slot). */
int repro_tp_attach(repro_model *m, struct repro_dist *group, int variant);
/* Frees the buffers; m->tp becomes NULL (the group is the caller's). */
void repro_tp_detach(repro_model *m);

/* Layer l (marked tp) forward over B rows: out is the whole output on
 * every rank of the group. 0 or -1 (error slot). */
int repro_tp_forward(repro_model *m, const repro_layer *l, const float *in, float *out, int B);
/* Layer l (index i) backward: the whole parameter gradients (written, or
 * added with accumulate, as the model's own path) and, if din, the whole
 * input gradient, on every rank. 0 or -1 (error slot). */
int repro_tp_backward(repro_model *m, const repro_layer *l, int i, float *din, int B,
                      int accumulate);

/* The row-parallel chain (tp_chain.c): y (B x out, every rank) =
 * bias, then every rank's slice of x w^T in rank order, ascending k; rows
 * in tiles of `tile`. 0 or -1 (error slot). */
int repro_tp_chain_rowpar(struct repro_dist *g, const float *x, long ld_x, const float *w,
                          long ld_w, const float *bias, float *y, int B, int K, int out, int tile);

#endif
