/* The elementwise step kernels (see elementwise.h); the finiteness test is
 * kernels/shared/pointwise.h's, on the bits, as the CUDA kernel's. */
#include "elementwise.h"

#include "kernels/shared/pointwise.h"

void repro_div_scalar(float *x, long n, float d)
{
    for (long i = 0; i < n; i++)
        x[i] = x[i] / d;
}

void repro_mul_scalar(float *x, long n, float s)
{
    for (long i = 0; i < n; i++)
        x[i] = x[i] * s;
}

void repro_add_into(float *y, const float *x, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = y[i] + x[i];
}

int repro_unscale_check(float *g, long n, float inv)
{
    int found = 0;
    for (long i = 0; i < n; i++)
        g[i] = repro_hd_unscale(g[i], inv, &found);
    return found;
}
