/* Softmax + cross-entropy loss and its gradient. Determinism argument: a
 * single thread walks the rows in ascending order, each row's math being
 * kernels/shared/softmax.h (in double, with our own exp/log, never libm: the
 * code the CUDA kernel compiles too), so the result is the same on every
 * machine; there is no pool because the op is tiny next to the GEMMs. */
#include "ops.h"

#include "kernels/shared/softmax.h"

double repro_softmax_xent_forward(const float *logits, const int32_t *labels, float *probs,
                                  int B, int C)
{
    double total = 0.0;
    for (long b = 0; b < B; b++)
        total += repro_hd_softmax_row(logits + b * C, probs + b * C, C, labels[b]);
    return B > 0 ? total / B : 0.0;
}

void repro_softmax_xent_backward(const float *probs, const int32_t *labels, float *dlogits,
                                 int B, int C)
{
    float fb = (float)B;
    for (long b = 0; b < B; b++)
        for (int j = 0; j < C; j++)
            dlogits[b * C + j] = repro_hd_xent_grad(probs[b * C + j], j == labels[b], fb);
}
