/* torch.optim.AdamW's single-tensor update, elementwise in float.
 * Determinism argument: each element's update touches only its own p, g, m,
 * v, in the fixed expression order of PyTorch's CPU kernels (lerp, then
 * v*beta2 + ((1-beta2)*g)*g as addcmul computes it, then p + (-step*m)/denom
 * as addcdiv computes it); the scalar factors are formed once in double and
 * rounded to float, as PyTorch casts Python scalars for a float tensor; the
 * square roots are our own correctly rounded ones (IEEE sqrt is exactly
 * specified, so these equal sqrtf/sqrt bit for bit, without linking libm).
 * Chunks are fixed 16384-element ranges, so threads change nothing. The
 * per-element update and sqrtf are kernels/shared/optim.h (the CUDA kernel
 * compiles the same code; the loop is the vector path's, simd.h: adamw,
 * the same expression per lane); the per-step constants are made here,
 * once, on the host, for both backends (repro_adamw_constants). */
#include "ops.h"
#include "simd.h"

#include <stdint.h>
#include <string.h>

enum { CHUNK = 16384 };

static double bits_to_d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t d_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Correctly rounded sqrt of a double, digit by digit on integers (as
 * fdlibm's e_sqrt.c): exact, slow, used once per step for sqrt(bc2). */
__extension__ typedef unsigned __int128 u128;

static double repro_sqrt(double d)
{
    if (d != d || d == 0.0 || d > 1.79769313486231570815e308)
        return d; /* NaN, +-0, +inf */
    if (d < 0.0)
        return bits_to_d(0x7ff8000000000000ULL);
    uint64_t u = d_to_bits(d);
    int ex = (int)(u >> 52);
    uint64_t m = u & 0x000fffffffffffffULL;
    if (ex == 0) { /* subnormal: normalize the integer mantissa */
        ex = 1;
        while (!(m & 0x0010000000000000ULL)) {
            m <<= 1;
            ex--;
        }
    } else {
        m |= 0x0010000000000000ULL;
    }
    /* d = m * 2^e2 with m in [2^52, 2^53); make e2 even */
    int e2 = ex - 1023 - 52;
    if (e2 & 1) {
        m <<= 1;
        e2--;
    }
    /* q = floor(sqrt(m * 2^52)) has 53 bits; rem decides the rounding */
    u128 n = (u128)m << 52, res = 0, one = (u128)1 << 104;
    while (one > n)
        one >>= 2;
    while (one) {
        if (n >= res + one) {
            n -= res + one;
            res = (res >> 1) + one;
        } else {
            res >>= 1;
        }
        one >>= 2;
    }
    uint64_t q = (uint64_t)res;
    if (n > res) /* N > q^2 + q  <=>  sqrt(N) > q + 1/2 (no ties for sqrt) */
        q++;
    /* sqrt(d) = q * 2^(e2/2 - 26); a carry of q into 2^53 bumps the exponent */
    int e = e2 / 2 - 26 + 52 + 1023;
    return bits_to_d(((uint64_t)e << 52) + (q - 0x0010000000000000ULL));
}

typedef struct {
    const repro_simd *simd;
    float *p, *m, *v;
    const float *g;
    long n;
    repro_adamw_consts k;
} adamw_ctx;

static void adamw_chunk(void *vctx, long chunk)
{
    const adamw_ctx *c = vctx;
    long i0 = chunk * CHUNK, i1 = (chunk + 1) * CHUNK < c->n ? (chunk + 1) * CHUNK : c->n;
    c->simd->adamw(&c->k, c->p + i0, c->g + i0, c->m + i0, c->v + i0, i1 - i0);
}

void repro_adamw_constants(repro_adamw_consts *k, double lr, double beta1, double beta2, float eps,
                           double wd, double bc1, double bc2)
{
    /* As PyTorch forms them: the hyperparameters are Python floats
     * (doubles); each scalar is computed in double and rounded to float
     * only where it meets the float tensor. (Rounding beta2 to float first
     * made 1 - beta2 come out 9.99987e-4 instead of 1e-3.) */
    double w = 1.0 - beta1;
    k->decay = (float)(1.0 - lr * wd);
    k->w = (float)w;
    k->one_minus_b2 = (float)(1.0 - beta2);
    k->beta2 = (float)beta2;
    k->neg_step = (float)(-(lr / bc1));
    k->bc2_sqrt = (float)repro_sqrt(bc2);
    k->eps = eps;
    k->lerp_from_end = !(w < 0.5 && w > -0.5);
}

void repro_adamw_step(repro_pool *pool, float *p, const float *g, float *m, float *v, long n,
                      double lr, double beta1, double beta2, float eps, double wd,
                      double bc1, double bc2)
{
    adamw_ctx c = {.simd = repro_simd_get(), .p = p, .m = m, .v = v, .g = g, .n = n};
    repro_adamw_constants(&c.k, lr, beta1, beta2, eps, wd, bc1, bc2);
    repro_pool_run(pool, (n + CHUNK - 1) / CHUNK, adamw_chunk, &c);
}
