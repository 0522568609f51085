/* TEST-ONLY FAULT INJECTION — the negative control of every detector.
 *
 *   REPRO_FAULT=flip:step=37:tensor=param.fc1.weight[:element=0][:bit=0][:run=1][:rank=R]
 *                                                   [:repeat=K[,K...]]
 *
 * flips one bit of one element of one recorded tensor at one step, in the
 * live buffer (so a flipped parameter or gradient really changes training
 * from there on), right before it is hashed. It exists so tests can prove
 * that `repro check` and `repro diff` fail when they should. `run=K` limits it
 * to the K-th run (0-based) of a `repro check` (which sets REPRO_CHECK_RUN
 * in each child; default K = 1, the second run); outside a check the fault
 * always applies. This file parses REPRO_FAULT (repro_fault_from_env, called
 * once by the command that starts a training run); the trainer applies the
 * flip (core/train_record.c, and core/train_dist.c on a replica). Besides it, golden.c reads
 * REPRO_FAULT=bless-before-rename to fail a golden install between fsync
 * and rename, and REPRO_FAULT=bless-stall, with which it stops an install
 * forever after the header line (so a test can kill -9 a bless mid-write),
 * and there is
 *
 *   REPRO_FAULT=overflow:step=N
 *
 * which this file parses (repro_fault_overflow_from_env) and the loss
 * scaler (core/mixed.c) acts on: after step N's backward one gradient
 * element becomes +inf, as an fp16 overflow would leave it, so tests can
 * prove the loss scaler skips exactly that step and backs off. It applies in every run of
 * a check (each run overflows alike). TEST-ONLY as well. */
#ifndef REPRO_FAULT_H
#define REPRO_FAULT_H

#include <stddef.h>

typedef struct {
    int active;
    long step;
    char tensor[64];
    long element;
    int bit;
    int replica;  /* rank=R given: R + 1 (a replica fault, below); 0: none */
    unsigned long long repeats; /* repeat=LIST given: bit K set fires on repeat K (0..63) of
                                   a `repro screen --repeat`; 0: every repeat */
} repro_fault;

/* REPRO_FAULT's text when it injects a fault into training (flip:... or
 * overflow:...), else NULL: what `bless` and `submit` refuse to record. */
const char *repro_fault_training_spec(void);

/* Reads REPRO_FAULT (and REPRO_CHECK_RUN). Unset: inactive, 0. Malformed:
 * -1 with the error slot set (exit 2). */
int repro_fault_from_env(repro_fault *out);
/* A replica fault, `flip:step=N:tensor=param.NAME:rank=R` (data parallel):
 * rank R flips the bit in its own live parameter right after step N's
 * update, so its replica leaves the others there; the drift check must
 * report R, N and the tensor. repro_fault_apply ignores it (rank 0's
 * recorder must not flip); repro_fault_apply_replica applies it on rank R
 * only. Returns 1 if it flipped. */
int repro_fault_apply_replica(const repro_fault *f, int rank, long step, const char *name,
                              void *data, size_t nbytes);
/* `repro screen` (golden/screen.h): every rank runs the whole workload on
 * its own, so `rank=R` there selects the rank that computes wrong, not a
 * replica: on rank R this makes f a plain fault (applied by
 * repro_fault_apply), on every other rank inactive. `repeat=LIST` (a
 * comma list of 0-based repeats, e.g. repeat=1,3) is the intermittent
 * form: the fault fires only on those repeats of `repro screen --repeat
 * K`, as a marginal core fails only some of the time. */
void repro_fault_select_screen(repro_fault *f, int rank, int repeat);
/* Flips the bit if (step, name) match; element index is taken modulo the
 * element count (4-byte elements). Returns 1 if it flipped. */
int repro_fault_apply(const repro_fault *f, long step, const char *name, void *data, size_t nbytes);
/* REPRO_FAULT=overflow:step=N: *step = N; any other value or unset: 0.
 * Malformed overflow spec: -1 with the error slot set (exit 2). */
int repro_fault_overflow_from_env(long *step);

#endif
