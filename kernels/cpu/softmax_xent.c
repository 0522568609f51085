/* Softmax + cross-entropy loss and its gradient. Determinism argument: a
 * single thread walks the rows and columns in ascending order, in double,
 * with repro_exp/repro_log (never libm), so the result is the same on every
 * machine; there is no pool because the op is tiny next to the GEMMs. The
 * loss uses log-sum-exp, -log p[label] = log(sum_j e_j) - (z_label - max),
 * rather than the log of the rounded float probability. */
#include "ops.h"

double repro_softmax_xent_forward(const float *logits, const int32_t *labels, float *probs,
                                  int B, int C)
{
    double total = 0.0;
    for (long b = 0; b < B; b++) {
        const float *z = logits + b * C;
        float *pr = probs + b * C;
        float mx = z[0];
        for (int j = 1; j < C; j++) /* NaN never becomes max; it shows up below */
            if (z[j] > mx)
                mx = z[j];
        double sum = 0.0;
        for (int j = 0; j < C; j++)
            sum += repro_exp((double)z[j] - (double)mx);
        for (int j = 0; j < C; j++)
            pr[j] = (float)(repro_exp((double)z[j] - (double)mx) / sum);
        total += repro_log(sum) - ((double)z[labels[b]] - (double)mx);
    }
    return B > 0 ? total / B : 0.0;
}

void repro_softmax_xent_backward(const float *probs, const int32_t *labels, float *dlogits,
                                 int B, int C)
{
    float fb = (float)B;
    for (long b = 0; b < B; b++)
        for (int j = 0; j < C; j++) {
            float onehot = j == labels[b] ? 1.0f : 0.0f;
            dlogits[b * C + j] = (probs[b * C + j] - onehot) / fb;
        }
}
