/* Convolution forward algorithms: the same convolution (conv2d.c's shape and
 * layout) computed three ways that round differently, as cuDNN's algorithms
 * do. `benchmark = on` picks one of them by timing; every one of them is
 * deterministic and thread-count invariant on its own (fixed per-element
 * order, each output written by one chunk), so the bits change only when the
 * pick changes, which is exactly the effect repro has to show.
 *
 *  direct   repro_conv2d_forward itself: bias, then one running sum over
 *           (c, ry, rx) in lexicographic order (ops.h).
 *  im2col   unfold + GEMM whose reduction is split into fixed blocks of 16
 *           terms (conv_algos.c states the order).
 *  winograd F(2x2, 3x3) (Lavin & Gray): transformed filter and input tiles,
 *           channel sum in the transformed domain, output transform.
 *
 * None uses FMA (built with -ffp-contract=off) and vectorization is only ever
 * across independent outputs, so the bits are the same with any compiler or
 * optimization level. */
#ifndef REPRO_CONV_ALGOS_H
#define REPRO_CONV_ALGOS_H

#include <stddef.h>

#include "ops.h"

/* repro_conv_algo (the ids) and repro_conv_algo_name / _from_name are
 * shared by every backend: kernels/backend.h (included by ops.h). */

/* 1 when the algorithm handles the shape: direct and im2col always,
 * winograd only for R == 3 (stride is always 1 here; any padding). */
int repro_conv_algo_eligible(repro_conv_algo a, const repro_conv_shape *s);

/* Floats of scratch repro_conv2d_forward_algo needs for the whole batch
 * (0 for direct). Every sample has its own region, so chunks (one sample
 * each) never share scratch:
 *   im2col:   B * (C*R*R) * (OH*OW)            one column matrix per sample
 *   winograd: K*C*16                            transformed filters, then
 *             + B * (C + 1) * 16 * TH*TW        per sample: transformed input
 *                                               tiles and one k's products,
 *             TH = ceil(OH/2), TW = ceil(OW/2) (2x2 output tiles). */
size_t repro_conv_workspace_floats(repro_conv_algo a, const repro_conv_shape *s);

/* y = conv(x, w) + b, NCHW, w [K][C][R][R], b may be NULL: the same math as
 * repro_conv2d_forward, by algorithm a (which should be eligible for s: an
 * ineligible or unknown one computes direct, so y is never left unwritten).
 * workspace holds repro_conv_workspace_floats(a, s) floats (may be NULL when
 * that is 0); its contents on return are unspecified. */
void repro_conv2d_forward_algo(repro_pool *pool, repro_conv_algo a, const repro_conv_shape *s,
                               const float *x, const float *w, const float *b, float *y,
                               float *workspace);

/* Unfolds one sample xb (C x H x W) into col [Q = C*R*R][P = OH*OW]:
 * col[(c*R + ry)*R + rx][oy*OW + ox] = x[c][oy+ry-pad][ox+rx-pad], +0 where
 * that is padding. Shared by im2col and direct (conv2d.c). */
void repro_conv_unfold(const repro_conv_shape *s, const float *xb, float *col);

#endif
