/* exp and log in double, shared by the CPU kernels (mathx.c's repro_exp /
 * repro_log are these) and the CUDA kernels: the same bits everywhere.
 * Only IEEE-754 + - * / (each correctly rounded; no FMA: -ffp-contract=off
 * on the CPU, --fmad=false under nvcc), a fixed Horner order, and exact
 * power-of-two scaling on the exponent bits; no libm, no table. Relative
 * error below 1e-14 on the finite range (checked against libm in
 * tests/check_kernels.c). exp gives gradual underflow (one final exact-then-
 * rounded scaling), +0 below about -745.13; log accepts subnormals.
 * Constants are locals, not file-scope statics: device code can use those. */
#ifndef REPRO_SHARED_MATHX_H
#define REPRO_SHARED_MATHX_H

#include "hd.h"

/* 2^e as a double, exact, for e in [-1022, 1023] (a normal number). */
static inline REPRO_HD double repro_hd_pow2i(int e)
{
    return repro_hd_f64_of((uint64_t)(e + 1023) << 52);
}

/* exp(x) = 2^k * exp(r), r = x - k ln2 in [-ln2/2, ln2/2] (Cody-Waite).
 * exp(r) is its Taylor series to degree 14: the truncation error is
 * (ln2/2)^15/15! < 3e-20, far below double's 1.1e-16 rounding.
 * ln 2 is split as in fdlibm: LN2_HI has 32 significant bits, so
 * k * LN2_HI is exact for |k| < 2^21. Adding and subtracting 1.5 * 2^52
 * rounds a double below 2^51 in magnitude to the nearest integer (ties to
 * even) without libm. */
static inline REPRO_HD double repro_hd_exp(double x)
{
    const double LN2_HI = 6.93147180369123816490e-01;  /* 0x3fe62e42fee00000 */
    const double LN2_LO = 1.90821492927058770002e-10;  /* 0x3dea39ef35793c76 */
    const double INV_LN2 = 1.44269504088896338700e+00;
    const double ROUND_SHIFTER = 6755399441055744.0;   /* 0x1.8p52 */
    if (x != x)
        return x; /* NaN in, the same NaN out */
    if (x > 709.782712893383973096)  /* ln(DBL_MAX) */
        return repro_hd_f64_of(0x7ff0000000000000ULL); /* +inf */
    if (x < -745.1332191019412076235) /* below half the least subnormal */
        return 0.0;
    double kd = (x * INV_LN2 + ROUND_SHIFTER) - ROUND_SHIFTER;
    int k = (int)kd;
    /* x - kd*LN2_HI is exact (kd*LN2_HI is exact and close to x). */
    double r = (x - kd * LN2_HI) - kd * LN2_LO;
    /* Horner, fixed order, coefficients 1/n! (constant-folded with correct
     * rounding, so the same bits on every compiler). */
    double p = 1.0 / 87178291200.0; /* 1/14! */
    p = 1.0 / 6227020800.0 + r * p; /* 1/13! */
    p = 1.0 / 479001600.0 + r * p;
    p = 1.0 / 39916800.0 + r * p;
    p = 1.0 / 3628800.0 + r * p;
    p = 1.0 / 362880.0 + r * p;
    p = 1.0 / 40320.0 + r * p;
    p = 1.0 / 5040.0 + r * p;
    p = 1.0 / 720.0 + r * p;
    p = 1.0 / 120.0 + r * p;
    p = 1.0 / 24.0 + r * p;
    p = 1.0 / 6.0 + r * p;
    p = 0.5 + r * p;
    p = 1.0 + r * p;
    p = 1.0 + r * p; /* exp(r), in [0.7, 1.42] */
    /* Scale by 2^k in at most two exact steps; only the last multiply of a
     * result in the subnormal range rounds. k is in [-1075, 1024]. */
    if (k > 1023)
        return p * repro_hd_pow2i(k - 1) * 2.0;
    if (k < -1021)
        return (p * repro_hd_pow2i(k + 64)) * repro_hd_pow2i(-64);
    return p * repro_hd_pow2i(k);
}

/* log(x) = e ln2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)).
 * log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716, by its series
 * 2(s + s^3/3 + ... + s^25/25); the first omitted term is below
 * s * 1e-20. m - 1 is exact (Sterbenz), so log near 1 keeps full relative
 * accuracy. */
static inline REPRO_HD double repro_hd_log(double x)
{
    const double LN2_HI = 6.93147180369123816490e-01;
    const double LN2_LO = 1.90821492927058770002e-10;
    if (x != x)
        return x;
    if (x < 0.0)
        return repro_hd_f64_of(0x7ff8000000000000ULL); /* log of a negative: NaN */
    if (x == 0.0)
        return repro_hd_f64_of(0xfff0000000000000ULL); /* log(+-0) = -inf */
    uint64_t u = repro_hd_f64_bits(x);
    if ((u >> 52) == 0x7ff)
        return x; /* +inf */
    int e = 0;
    if ((u >> 52) == 0) { /* subnormal: scale into the normal range, exactly */
        x *= repro_hd_pow2i(54);
        e = -54;
        u = repro_hd_f64_bits(x);
    }
    e += (int)(u >> 52) - 1023;
    /* m in [1, 2): same mantissa, exponent field of 1.0 */
    double m = repro_hd_f64_of((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    if (m > 1.41421356237309504880) { /* move to [sqrt(1/2), sqrt(2)) */
        m *= 0.5;
        e += 1;
    }
    double f = m - 1.0; /* exact */
    double s = f / (2.0 + f);
    double z = s * s;
    double q = 1.0 / 25.0;
    q = 1.0 / 23.0 + z * q;
    q = 1.0 / 21.0 + z * q;
    q = 1.0 / 19.0 + z * q;
    q = 1.0 / 17.0 + z * q;
    q = 1.0 / 15.0 + z * q;
    q = 1.0 / 13.0 + z * q;
    q = 1.0 / 11.0 + z * q;
    q = 1.0 / 9.0 + z * q;
    q = 1.0 / 7.0 + z * q;
    q = 1.0 / 5.0 + z * q;
    q = 1.0 / 3.0 + z * q;
    /* log(m) = 2s + 2s*z*q: adding the small correction last keeps the
     * rounding error near half an ulp of the result. */
    double two_s = 2.0 * s;
    double logm = two_s + two_s * (z * q);
    double ed = (double)e;
    /* e*LN2_HI is exact (|e| < 1100); the small parts are added first. */
    return ed * LN2_HI + (ed * LN2_LO + logm);
}

#endif
