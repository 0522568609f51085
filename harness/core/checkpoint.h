/* Checkpoints: everything a training run needs to continue bit for bit as
 * if it had never stopped (the determinism contract's "checkpoint at step k
 * then resume: identical to the uninterrupted run").
 *
 * File format, version 1 (all integers little-endian, floats as their IEEE
 * bits; the writer refuses big-endian hosts rather than byte-swapping):
 *
 *   "REPROCKP"  8-byte magic
 *   u32 version (1)
 *   sections, in this order, each  u32 tag (4 ASCII bytes) | u64 length | payload:
 *     META  str experiment | 32-byte numerics digest (trace.h) | str config
 *           (the effective config as INI: names the keys that differ when a
 *           resume is refused) | i64 step (optimizer steps done)
 *     OPTM  u32 optimizer | f64 beta1_pow | f64 beta2_pow (AdamW's beta^t)
     SCAL  i64 updates applied (sgd's first step and adamw's bias correction
           count updates; fp16 skips some) | the fp16 loss scaler: f32
           scale | i32 growth_tracker | i32 last_skipped | f32 last_scale |
           i64 skipped_total
 *     LOAD  u64 gen_key | u64 gen_block | i32 gen_used (the shuffle
 *           generator) | i32 epoch | u64 base_seed | i64 batches drawn |
 *           i32 next batch in the epoch | i32 num_workers | i32 augment_seed
 *           | u32 n | u32 permutation[n] (the current epoch's sample order)
 *     CHAN  i64 steps covered | 32-byte chain digest (chain[steps]; steps =
 *           -1 when the trainer had no recorder)
 *     PARM  one per parameter, in model order: str name | u32 ndim | u32
 *           shape[ndim] | f32 data | f32 state1 (momentum / exp_avg) |
 *           f32 state2 (exp_avg_sq; AdamW only)
 *     END_  empty
 *   32-byte SHA-256 of every byte before it
 *
 *   (str = u32 length | bytes, no NUL)
 *
 * Gradients are not saved: every step overwrites them before use. Dropout
 * masks need nothing: their keys are (seed, step). Worker RNGs need nothing
 * either: loader.c replays them from (base_seed, permutation, next batch). */
#ifndef REPRO_CHECKPOINT_H
#define REPRO_CHECKPOINT_H

#include "record/hash.h"
#include "core/train.h"

#define REPRO_CHECKPOINT_VERSION 1

typedef struct {
    long step;          /* optimizer steps done when saved */
    long chain_steps;   /* steps the chain covers (= step), or -1: no chain */
    repro_digest chain;
} repro_checkpoint_info;

/* Waits for the trainer's recorder (if any) to hash every finished step,
 * then writes the checkpoint atomically: PATH.<pid>.tmp, fsync, rename to
 * PATH, fsync of the directory. Returns 0, or -1 with the error slot set
 * (exit 3). */
int repro_checkpoint_save(const repro_trainer *t, const char *path);

/* A run killed while it wrote a checkpoint (kill -9, a crash, the OOM
 * killer) leaves its temporary behind. Removes from `dir` the abandoned
 * ones: files named ckpt-<N>.bin.<PID>.tmp whose writer PID no longer
 * exists, and the pid-less ckpt-<N>.bin.tmp of older repros once not
 * modified for REPRO_CHECKPOINT_TEMP_AGE_S (nothing says who writes
 * those). Any other file, and a temporary whose writer still runs, is left
 * alone. `repro run --checkpoint-every` calls it before it writes there.
 * 0 with *removed set, or -1 (REPRO_EIO) when dir cannot be listed. */
#define REPRO_CHECKPOINT_TEMP_AGE_S 3600
int repro_checkpoint_clean_temps(const char *dir, int *removed);

/* Restores a checkpoint into a trainer fresh from repro_trainer_init (no
 * step taken, no recorder yet). Validates first: magic and version, the
 * SHA-256 ("corrupted checkpoint"), the experiment name, the numerics digest
 * of the config (naming the keys that differ), the model's parameters, and
 * in augment_seed = worker mode the worker count. Any failure: -1, exit 2,
 * trainer unchanged. `info` (may be NULL) receives the step and the chain to
 * continue the trace from (train_record.h's start_step / start_chain). */
int repro_checkpoint_load(repro_trainer *t, const char *path, repro_checkpoint_info *info);

#endif
