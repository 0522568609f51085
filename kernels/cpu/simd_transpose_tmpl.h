/* The transposing copy of simd.h (transpose), included by simd_tmpl.h in
 * each path's file: square blocks through a register transpose, 8 x 8 on
 * the AVX paths (AVX-512 uses the AVX block: a 16 x 16 one takes more
 * shuffles per float), 4 x 4 on SSE2, the edges one float at a time.
 * Copies only, no arithmetic: the bits moved are the bits read, so no
 * path's choice can change a result. */

#if LANES >= 8
#define TBLOCK 8
/* d[i*ldd + j] = s[j*lds + i] for i, j < 8. Each register first holds
 * rows j and j + 4 (the low half of a row's 8 floats, or the high half),
 * so a 4 x 4 transpose inside each 128-bit lane gives whole output rows. */
#define TROWS(j, o)                                                                    \
    _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(s + (j) * lds + (o))),        \
                         _mm_loadu_ps(s + ((j) + 4) * lds + (o)), 1)
/* Output rows h .. h + 3 from the four registers holding their columns. */
#define TQUAD(h, t0, t1, t2, t3)                                                       \
    {                                                                                  \
        __m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpackhi_ps(t0, t1);       \
        __m256 u2 = _mm256_unpacklo_ps(t2, t3), u3 = _mm256_unpackhi_ps(t2, t3);       \
        _mm256_storeu_ps(d + (h) * ldd, _mm256_shuffle_ps(u0, u2, 0x44));              \
        _mm256_storeu_ps(d + ((h) + 1) * ldd, _mm256_shuffle_ps(u0, u2, 0xEE));        \
        _mm256_storeu_ps(d + ((h) + 2) * ldd, _mm256_shuffle_ps(u1, u3, 0x44));        \
        _mm256_storeu_ps(d + ((h) + 3) * ldd, _mm256_shuffle_ps(u1, u3, 0xEE));        \
    }
/* Written out, not looped: an array of registers went through the stack. */
TGT static inline void SFX(tblock)(const float *s, long lds, float *d, long ldd)
{
    __m256 t0 = TROWS(0, 0), t1 = TROWS(1, 0), t2 = TROWS(2, 0), t3 = TROWS(3, 0);
    TQUAD(0, t0, t1, t2, t3)
    __m256 t4 = TROWS(0, 4), t5 = TROWS(1, 4), t6 = TROWS(2, 4), t7 = TROWS(3, 4);
    TQUAD(4, t4, t5, t6, t7)
}
#undef TROWS
#undef TQUAD
#elif defined(__SSE2__)
#define TBLOCK 4
TGT static inline void SFX(tblock)(const float *s, long lds, float *d, long ldd)
{
    __m128 v0 = _mm_loadu_ps(s), v1 = _mm_loadu_ps(s + lds);
    __m128 v2 = _mm_loadu_ps(s + 2 * lds), v3 = _mm_loadu_ps(s + 3 * lds);
    _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
    _mm_storeu_ps(d, v0);
    _mm_storeu_ps(d + ldd, v1);
    _mm_storeu_ps(d + 2 * ldd, v2);
    _mm_storeu_ps(d + 3 * ldd, v3);
}
#endif

/* dst[i*ldd + j] = src[j*lds + i] for i < rows, j < cols. */
TGT static void SFX(transpose)(const float *src, long lds, long rows, long cols, float *dst,
                               long ldd)
{
    long j = 0;
#ifdef TBLOCK
    for (; j + TBLOCK <= cols; j += TBLOCK) {
        const float *s = src + j * lds;
        float *d = dst + j;
        long i = 0;
        for (; i + TBLOCK <= rows; i += TBLOCK)
            SFX(tblock)(s + i, lds, d + i * ldd, ldd);
        for (; i < rows; i++)
            for (int jj = 0; jj < TBLOCK; jj++)
                d[i * ldd + jj] = s[jj * lds + i];
    }
#undef TBLOCK
#endif
    for (; j < cols; j++)
        for (long i = 0; i < rows; i++)
            dst[i * ldd + j] = src[j * lds + i];
}
