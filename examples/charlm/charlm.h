/* charlm's model, shared by the trainer (charlm.c) and its inference
 * engine (serve.c). */
#ifndef CHARLM_H
#define CHARLM_H

#include <repro/repro.h>

enum { V = 27, D = 16, H = 32, T = 12, BATCH = 32, SHARD = 4, NSHARD = BATCH / SHARD };

typedef struct {
    float E[V * D], Wx[H * D], Wh[H * H], b[H], Wo[V * H], bo[V];
} params;

/* Prints what failed with repro's last error and exits (2 for a bad
 * setting, 3 otherwise). */
void die(const char *what);

/* One position of the trainer's forward (charlm.c). */
void charlm_cell(const params *p, int ch, const float *h_prev, float *h_next, float *logits);

/* The parity protocol (serve.c, docs/PROTOCOL.md). REPRO_PARITY=infer:
 * serves the probes from the checkpoint and exits (never returns).
 * After training, REPRO_PARITY=train: writes the checkpoint and the
 * trainer's forward of every probe, recording them as train.<i> into r's
 * current step. Both do nothing outside the protocol. */
void charlm_parity_serve_if_asked(void);
void charlm_parity_after_training(repro_recorder *r, const params *p);

#endif
