/* The judgements of tests/gpu/check_cuda_ops.c, apart from any device, so
 * that a CPU test (tests/check_gpu_compare.c) can prove each of them able
 * to fail: a NaN where the CPU's value is finite, an output the kernel
 * never wrote, a value outside the tolerance.
 *
 * Poison: before an op whose output buffer is reused, the check fills it
 * with POISON (a quiet NaN with a payload no kernel produces: GPUs return
 * the canonical NaN 0x7fffffff, the CPU the input's payload). An element
 * still holding those bits afterwards was not written; it is counted as
 * such, and never excused as "any NaN = any NaN" (an unwritten buffer
 * would otherwise pass wherever the CPU's value is a NaN).
 *
 * Header-only (static inline): check_cuda_ops.c is also built alone by
 * tests/gpu/fallback.sh, with nothing but the kernels' sources. */
#ifndef REPRO_GPU_OPS_COMPARE_H
#define REPRO_GPU_OPS_COMPARE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { GPU_POISON_BITS = 0x7fc0dead };

/* Fills n 32-bit words with the poison. */
static inline void gpu_poison_fill(void *words, size_t n)
{
    uint32_t p = GPU_POISON_BITS;
    for (size_t i = 0; i < n; i++) /* memcpy: the words may be floats (aliasing) */
        memcpy((char *)words + 4 * i, &p, 4);
}

static inline int gpu_is_nan_bits(uint32_t u)
{
    return (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu);
}

/* What a comparison found. differ counts every failing element (the
 * unwritten ones included); first is the first of them. */
typedef struct {
    size_t n, differ, first, unwritten, nan_payloads, nan_vs_finite;
    double worst; /* largest |want - got| / bound over the finite pairs */
} gpu_compare_result;

/* Bitwise, word by word. as_float: a NaN equals any NaN (payloads are
 * not promised on the GPU; nan_payloads counts them), except the poison,
 * which is a failure ("unwritten") unless the CPU's word is the poison. */
static inline gpu_compare_result gpu_compare_words(const void *want, const void *got, size_t n,
                                                   int as_float)
{
    gpu_compare_result r = {.n = n};
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b; /* memcpy: the words may be floats (aliasing) */
        memcpy(&a, (const char *)want + 4 * i, 4);
        memcpy(&b, (const char *)got + 4 * i, 4);
        if (a == b)
            continue;
        if (b == (uint32_t)GPU_POISON_BITS)
            r.unwritten++;
        else if (as_float && gpu_is_nan_bits(a) && gpu_is_nan_bits(b)) {
            r.nan_payloads++;
            continue;
        }
        if (!r.differ++)
            r.first = i;
    }
    return r;
}

/* Each element within tol * (bound[i] + 1e-30) of the CPU's (bound: the
 * sum of |terms| that made it). Fails: an unwritten element (the poison),
 * a NaN where the CPU's value is not NaN (nan_vs_finite), a finite value
 * where the CPU's is NaN, an infinity the CPU does not have, and any
 * difference beyond the limit. The test is !(d <= lim), so a NaN
 * difference can never pass. */
static inline gpu_compare_result gpu_compare_close(const float *want, const float *got,
                                                   const double *bound, size_t n, double tol)
{
    gpu_compare_result r = {.n = n};
    for (size_t i = 0; i < n; i++) {
        uint32_t gb;
        memcpy(&gb, &got[i], 4);
        int bad;
        if (gb == (uint32_t)GPU_POISON_BITS) {
            uint32_t wb;
            memcpy(&wb, &want[i], 4);
            bad = wb != gb;
            r.unwritten += bad;
        } else if (isnan(want[i]) || isnan(got[i])) {
            bad = !(isnan(want[i]) && isnan(got[i]));
            r.nan_vs_finite += bad && isnan(got[i]);
        } else if (want[i] == got[i]) { /* equal infinities too */
            bad = 0;
        } else {
            double d = fabs((double)want[i] - (double)got[i]), b = bound[i] + 1e-30;
            bad = !(d <= tol * b);
            if (isfinite(d) && d / b > r.worst)
                r.worst = d / b;
        }
        if (bad && !r.differ++)
            r.first = i;
    }
    return r;
}

/* A chooser's pick (conv_algo_choose) judged against what it reported,
 * each part able to fail: the pick is eligible, and deterministic when
 * only those may run; by timing (benchmark): every algorithm given a time
 * is eligible (and deterministic where required), the pick is a timed one
 * unless nothing was timed (then it is not one of cuDNN's: the fallback is
 * our own kernel), and no timed algorithm was faster; by the heuristic:
 * nothing was timed. eligible[], deterministic[], time_us[]: per id, nalgos
 * of them (time_us < 0: not timed). Returns 1 when sound, else 0 with why
 * naming the first fault. */
static inline int gpu_pick_sound(int pick, int benchmark, int deterministic_only,
                                 const double *time_us, const int *eligible,
                                 const int *deterministic, int nalgos, int cudnn_base, char *why,
                                 size_t why_len)
{
    snprintf(why, why_len, "sound");
    if (pick < 0 || pick >= nalgos || !eligible[pick])
        return snprintf(why, why_len, "the pick %d is not eligible", pick), 0;
    if (deterministic_only && !deterministic[pick])
        return snprintf(why, why_len, "the pick %d is nondeterministic", pick), 0;
    int timed = 0;
    for (int a = 0; a < nalgos; a++) {
        if (!(time_us[a] >= 0))
            continue;
        timed++;
        if (!benchmark)
            return snprintf(why, why_len, "the heuristic reported a time for %d", a), 0;
        if (!eligible[a] || (deterministic_only && !deterministic[a]))
            return snprintf(why, why_len, "algorithm %d was timed but is not admissible", a), 0;
        if (time_us[a] < time_us[pick])
            return snprintf(why, why_len, "algorithm %d was timed faster (%.3g us) than the "
                                          "pick %d (%.3g us)", a, time_us[a], pick,
                            time_us[pick]), 0;
    }
    if (benchmark && timed && !(time_us[pick] >= 0))
        return snprintf(why, why_len, "the pick %d was not among the %d timed", pick, timed), 0;
    if (benchmark && !timed && pick >= cudnn_base)
        return snprintf(why, why_len, "nothing was timed, yet cuDNN's %d was picked", pick), 0;
    return 1;
}

#endif
