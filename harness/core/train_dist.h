/* The shard rule and data parallelism inside the trainer (train.c calls
 * these; core/dist.h is the MPI side).
 *
 * The shard rule, [train] shard_size = S > 0: the global batch of B samples
 * is cut into B / S shards (the loader's rows are shard-major, core/loader.h
 * says which samples each holds). Per shard: the loss is the mean over its
 * S rows (one softmax_xent call), its loss gradient (p - y) / S is divided
 * by the shard count, and its parameter gradients are summed over its own
 * rows; the shards' gradients are then added in shard order (model.h,
 * repro_model_set_shards). The step's loss is the shards' mean losses added
 * in shard order, in double, divided by the shard count. All of it is the
 * same arithmetic whether one process holds every shard or N ranks hold
 * B / S / N each, which is what makes the bits world-size invariant.
 * shard_size = 0: the batch is one shard and nothing here changes the
 * arithmetic of a run without shards.
 *
 * Ranks (world > 1): rank r holds shards r, r + N, ...; the gradient
 * reduce is core/dist.h's; rank 0 gathers the global batch (ids, x, y,
 * logits, penultimate features) so that its recorder hashes the same
 * tensors one process would; after every update each rank hashes its
 * parameters and the digests are compared (replica drift). */
#ifndef REPRO_TRAIN_DIST_H
#define REPRO_TRAIN_DIST_H

#include "core/train.h"

/* After the model and loader exist: turns the shard rule on (if
 * shard_size > 0), installs the data-parallel reduce (if t->dist) and the
 * global view (rank 0 of world > 1). 0, or -1 with the error slot set. */
int repro_train_shards_setup(repro_trainer *t);
void repro_train_shards_free(repro_trainer *t);

/* Tensor parallel (parallel.tp > 1): splits the job `job` (its size is
 * ranks x tp) into the data-parallel and tensor-parallel groups and sets
 * t->dist, rank and world to the data-parallel ones. Before the model.
 * After it, repro_train_tp_attach splits the model's layers. 0 or -1. */
int repro_train_tp_groups(repro_trainer *t, struct repro_dist *job);
int repro_train_tp_attach(repro_trainer *t);
void repro_train_tp_free(repro_trainer *t);

/* The loss of this rank's B rows (forward of softmax_xent into t->probs),
 * shard by shard, combined over every shard of the global batch as above.
 * 0, or -1 (a collective failed). */
int repro_train_loss(repro_trainer *t, const float *logits, int B, double *loss);
/* The loss gradient of this rank's rows into t->dlogits, shard by shard. */
void repro_train_loss_grad(repro_trainer *t, int B);

/* Rank 0 of world > 1: gathers batch b's global view (every rank calls
 * it) and points t->batch and t->logits_view at it; *features and *labels
 * are what the class-feature sums read (global on rank 0; this rank's own
 * elsewhere, *rows their count). 0, or -1. */
int repro_train_gather_global(repro_trainer *t, const repro_batch *b, const float **features,
                              const int32_t **labels, int *rows);

/* After step `step`'s update (every rank): applies a replica fault, then
 * compares every rank's parameter digests with rank 0's. A drift is
 * REPRO_EMISMATCH naming the rank, the step, the tensor and its first
 * differing element (on rank 0; other ranks get a short message). */
int repro_train_check_replicas(repro_trainer *t, long step);

/* Every rank's training seconds and peak resident set (KiB), rank order,
 * into rank 0's arrays (world entries; other ranks pass NULL). */
int repro_train_rank_stats(repro_trainer *t, double seconds, double *all_seconds,
                           long *all_rss_kib);

#endif
