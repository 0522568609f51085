/* Four-float vectors (GCC/Clang vector extensions) for the kernels' inner
 * loops: gcc's -O2 auto-vectorizer rarely fires on them. Each lane is an
 * independent output element, so the arithmetic is exactly the scalar
 * arithmetic (never a reduction across lanes): bits do not depend on it. */
#ifndef REPRO_VEC4_H
#define REPRO_VEC4_H

#include <string.h>

typedef float v4f __attribute__((vector_size(16)));

static inline v4f v4_load(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v); /* unaligned-safe */
    return v;
}

static inline void v4_store(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

static inline v4f v4_splat(float a)
{
    v4f v = {a, a, a, a};
    return v;
}

/* Short row copies and clears (unfolds, packing): inline, because a libc
 * call per row of a few dozen floats costs more than the copy. */
static inline void repro_fcopy(float *dst, const float *src, long n)
{
    long i = 0;
    for (; i + 4 <= n; i += 4)
        v4_store(dst + i, v4_load(src + i));
    for (; i < n; i++)
        dst[i] = src[i];
}

static inline void repro_fzero(float *dst, long n)
{
    long i = 0;
    for (; i + 4 <= n; i += 4)
        v4_store(dst + i, v4_splat(0.0f));
    for (; i < n; i++)
        dst[i] = 0.0f;
}

#endif
