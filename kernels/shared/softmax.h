/* Softmax cross-entropy's per-row and per-element pieces, shared by the CPU
 * kernel (softmax_xent.c) and the CUDA one: the row in double with
 * repro_hd_exp / repro_hd_log (never libm), columns ascending; the loss uses
 * log-sum-exp, -log p[label] = log(sum_j e_j) - (z_label - max). The batch
 * sum of the row terms (ascending b, in double) is the caller's loop. */
#ifndef REPRO_SHARED_SOFTMAX_H
#define REPRO_SHARED_SOFTMAX_H

#include "mathx.h"

/* pr[j] = softmax(z)[j] rounded to float; returns the row's loss term. */
static inline REPRO_HD double repro_hd_softmax_row(const float *z, float *pr, int C, int label)
{
    float mx = z[0];
    for (int j = 1; j < C; j++) /* NaN never becomes max; it shows up below */
        if (z[j] > mx)
            mx = z[j];
    /* each e_j kept from the sum for the quotient where the row is short
     * (the 10 logits: half the exps); a longer row computes them again,
     * the same function of the same input, so the same bits either way */
    double e[16], sum = 0.0;
    for (int j = 0; j < C; j++) {
        double ej = repro_hd_exp((double)z[j] - (double)mx);
        if (j < 16)
            e[j] = ej;
        sum += ej;
    }
    for (int j = 0; j < C; j++)
        pr[j] = (float)((j < 16 ? e[j] : repro_hd_exp((double)z[j] - (double)mx)) / sum);
    return repro_hd_log(sum) - ((double)z[label] - (double)mx);
}

/* dlogits[b][j] = (probs[b][j] - onehot) / B, in float. */
static inline REPRO_HD float repro_hd_xent_grad(float prob, int is_label, float fb)
{
    float onehot = is_label ? 1.0f : 0.0f;
    return (prob - onehot) / fb;
}

#endif
