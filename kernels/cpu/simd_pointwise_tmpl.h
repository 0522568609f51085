/* Template of the per-path elementwise loops (simd.h: relu_fwd ..
 * unscale_check), the second half of simd_tmpl.h (which includes it at its
 * end, for simd_sse2.c, simd_avx2.c and simd_avx512.c): the same LANES,
 * TGT, SFX, SPLAT_INIT and vector helpers, plus optionally
 *   VSQRT(v)   the path's vector square root instruction on a VF
 * (without it each lane calls repro_hd_sqrtf: portable, slow).
 *
 * Each function is the scalar kernel's per-element expression
 * (kernels/shared/pointwise.h, optim.h: the one copy the CUDA kernels also
 * compile) written on vectors, term for term in the same order: a lane is
 * one element, IEEE add, multiply, divide and square root are correctly
 * rounded at every width, products are rounded before their add (no FMA:
 * -ffp-contract=off, and none is written), and a select is a bit mask, so
 * every lane has the scalar expression's bits. (One thing C leaves to the
 * compiler, here as in the scalar code: where two NaN operands meet, x86
 * returns the first operand's, and the compiler picks the operand order;
 * gcc 12 picks the former scalar loops' order here, checked element by
 * element, and add_into pins it.) The last n % LANES elements
 * run the scalar expression itself. Branches on a per-call constant
 * (first_step, the lerp form, inv == 1) are taken once, outside the loop. */
#include "kernels/shared/optim.h"
#include "kernels/shared/pointwise.h"

#include <limits.h>
#include <stdint.h>

typedef int SFX(vi) __attribute__((vector_size(LANES * 4)));
#define VF SFX(vf)
#define VI SFX(vi)

TGT static inline VI SFX(splati)(int a)
{
    VI v = SPLAT_INIT(a);
    return v;
}

/* -1 in the lanes where m, else 0: a ? b : 0 on the bits. */
TGT static inline VF SFX(keep)(VI m, VF b)
{
    return (VF)(m & (VI)b);
}

/* -1 in each lane that is inf or NaN (repro_hd_isfinite on the bits). */
TGT static inline VI SFX(nonfinite)(VF v)
{
    VI e = SFX(splati)(0x7f800000);
    return ((VI)v & e) == e;
}

/* ---- ReLU: repro_hd_relu, repro_hd_relu_grad ------------------------------ */

TGT static void SFX(relu_fwd)(const float *x, float *y, long n)
{
    VF zero = SFX(splat)(0.0f);
    long i = 0;
    for (; i + LANES <= n; i += LANES) {
        VF v = SFX(ld)(x + i);
        SFX(st)(y + i, SFX(keep)((v > zero) | (v != v), v)); /* else +0 */
    }
    for (; i < n; i++)
        y[i] = repro_hd_relu(x[i]);
}

TGT static void SFX(relu_bwd)(const float *y, const float *dy, float *dx, long n)
{
    VF zero = SFX(splat)(0.0f);
    long i = 0;
    for (; i + LANES <= n; i += LANES)
        SFX(st)(dx + i, SFX(keep)(SFX(ld)(y + i) > zero, SFX(ld)(dy + i)));
    for (; i < n; i++)
        dx[i] = repro_hd_relu_grad(y[i], dy[i]);
}

/* ---- SGD: repro_hd_sgd ---------------------------------------------------- */

/* A line of p and of buf 2 KiB ahead, asked for with intent to write. A
 * recorded run's hasher reads p and buf on the other core between updates,
 * so each line the update writes must first be taken back from that core's
 * cache; asking early overlaps those round trips instead of paying them one
 * store at a time (hashed MLP, 2-core Xeon: the update went from 2.7x to
 * 1.2x its unhashed time). prefetchw where the path's target has it (the
 * AVX-512 and AVX2 paths'; an Intel CPU older than Broadwell runs it as a
 * no-op), a plain prefetch otherwise: on the Xeon a plain one left the
 * AVX2 path's hashed mlp at 0.70x its unhashed speed (prefetchw: 0.96x);
 * a prefetch never faults, so the address may run past the end. */
#define PREFETCH_FOR_WRITE(x) __builtin_prefetch((const void *)((uintptr_t)(x) + 2048), 1, 3)

TGT static void SFX(sgd)(float *p, const float *g, float *buf, long n, float lr, float momentum,
                         float wd, int first_step)
{
    VF vlr = SFX(splat)(lr), vm = SFX(splat)(momentum), vwd = SFX(splat)(wd);
    long i = 0;
    if (first_step) /* buf = g + wd*p, the old buf unread */
        for (; i + LANES <= n; i += LANES) {
            VF pv = SFX(ld)(p + i);
            VF b = SFX(ld)(g + i) + vwd * pv;
            SFX(st)(buf + i, b);
            SFX(st)(p + i, pv - vlr * b);
        }
    else
        for (; i + LANES <= n; i += LANES) {
            if ((i & 15) == 0) { /* one line of each array in 16 floats */
                PREFETCH_FOR_WRITE(p + i);
                PREFETCH_FOR_WRITE(buf + i);
            }
            VF pv = SFX(ld)(p + i);
            VF gg = SFX(ld)(g + i) + vwd * pv;
            VF b = vm * SFX(ld)(buf + i) + gg;
            SFX(st)(buf + i, b);
            SFX(st)(p + i, pv - vlr * b);
        }
    for (; i < n; i++)
        repro_hd_sgd(&p[i], g[i], &buf[i], lr, momentum, wd, first_step);
}

/* ---- AdamW: repro_hd_adamw ------------------------------------------------ */

/* repro_hd_sqrtf per lane. It equals IEEE sqrt on every float (checked
 * exhaustively) except two: a negative operand, where x86 answers its
 * default NaN 0xffc00000 and repro_hd_sqrtf +NaN 0x7fc00000, and a
 * signalling NaN, which the hardware quiets but AdamW's v never is (it is
 * an add's result). The negative lanes get their sign bit cleared. (Not
 * "select 0x7fc00000 where v < 0": clang folds that pattern away as
 * "a NaN either way", leaving x86's -NaN.) */
TGT static inline VF SFX(sqrt)(VF v)
{
#ifdef VSQRT
    VI neg = v < SFX(splat)(0.0f);
    return (VF)((VI)VSQRT(v) & ~(neg & SFX(splati)(INT_MIN)));
#else
    for (int j = 0; j < LANES; j++)
        v[j] = repro_hd_sqrtf(v[j]);
    return v;
#endif
}

/* The vector loop for one lerp form (a constant where it is inlined):
 * returns how many elements it did. */
TGT static inline __attribute__((always_inline)) long
SFX(adamw_lanes)(const repro_adamw_consts *k, float *pp, const float *gp, float *mp, float *vp,
                 long n, const int from_end)
{
    VF decay = SFX(splat)(k->decay), w = SFX(splat)(k->w), b2 = SFX(splat)(k->beta2);
    VF one_minus_w = SFX(splat)(1.0f - k->w), omb2 = SFX(splat)(k->one_minus_b2);
    VF step = SFX(splat)(k->neg_step), bc2 = SFX(splat)(k->bc2_sqrt), eps = SFX(splat)(k->eps);
    long i = 0;
    for (; i + LANES <= n; i += LANES) {
        VF g = SFX(ld)(gp + i);
        VF p = SFX(ld)(pp + i) * decay;
        VF m = SFX(ld)(mp + i);
        m = from_end ? g - (g - m) * one_minus_w : m + w * (g - m);
        VF v = SFX(ld)(vp + i) * b2;
        v = v + omb2 * g * g;
        VF denom = SFX(sqrt)(v) / bc2 + eps;
        p = p + step * m / denom;
        SFX(st)(pp + i, p);
        SFX(st)(mp + i, m);
        SFX(st)(vp + i, v);
    }
    return i;
}

TGT static void SFX(adamw)(const repro_adamw_consts *k, float *p, const float *g, float *m,
                           float *v, long n)
{
    long i = k->lerp_from_end ? SFX(adamw_lanes)(k, p, g, m, v, n, 1)
                              : SFX(adamw_lanes)(k, p, g, m, v, n, 0);
    for (; i < n; i++)
        repro_hd_adamw(k, g[i], &p[i], &m[i], &v[i]);
}

/* ---- the step's small elementwise kernels (elementwise.h) ---------------- */

TGT static void SFX(div_scalar)(float *x, long n, float d)
{
    VF vd = SFX(splat)(d);
    long i = 0;
    for (; i + LANES <= n; i += LANES)
        SFX(st)(x + i, SFX(ld)(x + i) / vd);
    for (; i < n; i++)
        x[i] = x[i] / d;
}

TGT static void SFX(mul_scalar)(float *x, long n, float s)
{
    VF vs = SFX(splat)(s);
    long i = 0;
    for (; i + LANES <= n; i += LANES)
        SFX(st)(x + i, SFX(ld)(x + i) * vs);
    for (; i < n; i++)
        x[i] = x[i] * s;
}

/* a + b, and where a is NaN exactly a, quieted. When both are NaN, x86
 * returns the first operand's; the former scalar loop (y[i] + x[i]) had y
 * first, but a compiler treats + as commutative and may put x first (gcc
 * does here): this pins y's NaN, whatever the compiler. Any other lane is
 * the plain sum (one NaN operand propagates whichever order). */
TGT static inline VF SFX(add_first_nan)(VF a, VF b)
{
    VI a_nan = a != a;
    return (VF)((a_nan & ((VI)a | SFX(splati)(0x00400000))) | (~a_nan & (VI)(a + b)));
}

TGT static inline float SFX(add_first_nan1)(float a, float b)
{
    return a != a ? repro_hd_f32_of(repro_hd_f32_bits(a) | 0x00400000u) : a + b;
}

TGT static void SFX(add_into)(float *y, const float *x, long n)
{
    long i = 0;
    for (; i + LANES <= n; i += LANES)
        SFX(st)(y + i, SFX(add_first_nan)(SFX(ld)(y + i), SFX(ld)(x + i)));
    for (; i < n; i++)
        y[i] = SFX(add_first_nan1)(y[i], x[i]);
}

/* repro_hd_unscale: the test is on the value before the multiply, and an
 * inv of exactly 1 leaves g untouched, so then only the test runs (also
 * in the tail: clang folds `inv == 1 ? g : g * inv` to g * inv, which
 * quiets a signalling NaN). */
TGT static int SFX(unscale_check)(float *g, long n, float inv)
{
    VF vinv = SFX(splat)(inv);
    VI bad = SFX(splati)(0);
    long i = 0;
    int found = 0;
    if (inv == 1.0f) {
        for (; i + LANES <= n; i += LANES)
            bad |= SFX(nonfinite)(SFX(ld)(g + i));
        for (; i < n; i++)
            found |= !repro_hd_isfinite(g[i]);
    } else {
        for (; i + LANES <= n; i += LANES) {
            VF v = SFX(ld)(g + i);
            bad |= SFX(nonfinite)(v);
            SFX(st)(g + i, v * vinv);
        }
        for (; i < n; i++)
            g[i] = repro_hd_unscale(g[i], inv, &found);
    }
    for (int j = 0; j < LANES; j++)
        found |= bad[j] != 0;
    return found;
}

#undef VF
#undef VI
#undef VSQRT
