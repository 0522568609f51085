/* The elementwise step kernels (see elementwise.h): the vector path's loops
 * (simd.h), each the scalar expression per lane; the finiteness test is
 * kernels/shared/pointwise.h's, on the bits, as the CUDA kernel's. */
#include "elementwise.h"

#include "simd.h"

void repro_div_scalar(float *x, long n, float d)
{
    repro_simd_get()->div_scalar(x, n, d);
}

void repro_mul_scalar(float *x, long n, float s)
{
    repro_simd_get()->mul_scalar(x, n, s);
}

void repro_add_into(float *y, const float *x, long n)
{
    repro_simd_get()->add_into(y, x, n);
}

int repro_unscale_check(float *g, long n, float inv)
{
    return repro_simd_get()->unscale_check(g, n, inv);
}
