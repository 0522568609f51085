/* The fully connected layer on the GPU, in the CPU kernels' exact order
 * (kernels/cpu/linear.c, gemm.c): one thread per output element, whose sum
 * starts from its init (the bias, +0, or the old value when accumulating)
 * and adds the rounded products one by one in ascending k. Built with
 * --fmad=false, so a*b + c is a rounded product then a rounded add, as on
 * the CPU: the results are the CPU's bits, and no thread count, block size
 * or grid changes them (each output has one writer and one order).
 *
 * The atomic variants (REPRO_VARIANT_ATOMIC) are the nondeterministic ones
 * variants.h lists: one thread per (output, chunk of 4 samples) sums its
 * chunk in order and atomicAdds the partial into the zeroed (or, when
 * accumulating, the old) output, so partials meet in whatever order the
 * hardware schedules them.
 *
 * The split-K forward (REPRO_VARIANT_SPLITK) is deterministic but not
 * batch-invariant: its split comes from the row count (backend.h). */
#include "ctx.cuh"

enum { ATOMIC_CHUNK = 4 }; /* samples per partial, as the CPU's ATOMIC_BATCH_CHUNK */

/* C[m*ldc + n] = init + sum over k ascending of A(m, k) * B(k, n), with
 * A(m, k) = A[m*a_rs + k*a_cs], B(k, n) = B[k*b_rs + n*b_cs]; init is C
 * (accumulate), else bias[n] (bias not NULL), else +0: repro_gemm's rule. */
__global__ void gemm_ordered(int M, int N, int K, const float *A, long a_rs, long a_cs,
                             const float *B, long b_rs, long b_cs, float *C, long ldc,
                             const float *bias, int accumulate)
{
    REPRO_CUDA_FOR(i, (long)M * N)
    {
        long m = i / N, n = i % N;
        float acc = accumulate ? C[m * ldc + n] : bias ? bias[n] : 0.0f;
        const float *a = A + m * a_rs;
        const float *b = B + n * b_cs;
        for (int k = 0; k < K; k++) {
            float p = a[k * a_cs] * b[k * b_rs];
            acc = acc + p;
        }
        C[m * ldc + n] = acc;
    }
}

static int gemm(repro_cuda_ctx *c, int M, int N, int K, const float *A, long a_rs, long a_cs,
                const float *B, long b_rs, long b_cs, float *C, long ldc, const float *bias,
                int accumulate)
{
    if (M <= 0 || N <= 0)
        return 0;
    gemm_ordered<<<repro_cuda_blocks((long)M * N), REPRO_CUDA_THREADS, 0, c->stream>>>(
        M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, bias, accumulate);
    launchCheck(c);
    return 0;
}

size_t repro_cuda_linear_workspace_bytes(void *ctx, int B, int in, int out)
{
    (void)ctx;
    (void)B;
    (void)in;
    (void)out;
    return 0; /* w is read in place, no transpose */
}

/* The SPLITK variant (backend.h): one thread per output; nk partials over
 * contiguous input chunks of klen, partial 0 from the bias, the others from
 * +0, each in ascending input order, then added in chunk order: the CPU's
 * kernels/cpu/splitk.c bits. nk comes from the row count, so a row's bits
 * depend on its batch: the batch-invariance negative control. */
__global__ void linear_splitk(const float *x, const float *w, const float *b, float *y, int B,
                              int in, int out, int nk, int klen)
{
    REPRO_CUDA_FOR(t, (long)B * out)
    {
        long r = t / out, o = t % out;
        const float *xr = x + r * in, *wo = w + o * in;
        float tot = 0.0f;
        for (int j = 0; j < nk; j++) {
            int i0 = j * klen, i1 = i0 + klen < in ? i0 + klen : in;
            if (j > 0 && i0 >= in)
                break;
            float part = j == 0 ? b[o] : 0.0f;
            for (int i = i0; i < i1; i++) {
                float p = xr[i] * wo[i];
                part = part + p;
            }
            tot = j == 0 ? part : tot + part;
        }
        y[t] = tot;
    }
}

static int forward_splitk(repro_cuda_ctx *c, const float *x, const float *w, const float *b,
                          float *y, int B, int in, int out)
{
    if (B <= 0 || out <= 0)
        return 0;
    int nk = repro_splitk_chunks(B);
    linear_splitk<<<repro_cuda_blocks((long)B * out), REPRO_CUDA_THREADS, 0, c->stream>>>(
        x, w, b, y, B, in, out, nk, (in + nk - 1) / nk);
    launchCheck(c);
    return 0;
}

void repro_cuda_linear_forward(void *ctx, int variant, const float *x, const float *w,
                               const float *b, float *y, int B, int in, int out, void *workspace)
{
    (void)workspace;
    repro_cuda_ctx *c = repro_cuda(ctx);
    if (variant == REPRO_VARIANT_SPLITK)
        forward_splitk(c, x, w, b, y, B, in, out);
    else /* y[b][o] = b[o] + sum_i x[b][i] * w[o][i]: A = x, B(k=i, n=o) = w[o*in + i] */
        gemm(c, B, out, in, x, in, 1, w, 1, in, y, out, b, 0);
}

void repro_cuda_linear_backward_data(void *ctx, const float *dy, const float *w, float *dx,
                                     int B, int in, int out)
{
    /* dx[b][i] = sum_o dy[b][o] * w[o][i] */
    gemm(repro_cuda(ctx), B, in, out, dy, out, 1, w, in, 1, dx, in, NULL, 0);
}

/* dw[o][i] (+)= partial of samples [4j, 4j+4) in ascending order, added
 * atomically: nondeterministic. */
__global__ void weight_atomic(const float *dy, const float *x, float *dw, int B, int in, int out)
{
    long chunks = (B + ATOMIC_CHUNK - 1) / ATOMIC_CHUNK;
    REPRO_CUDA_FOR(t, (long)out * in * chunks)
    {
        long j = t % chunks, oi = t / chunks, o = oi / in, i = oi % in;
        long b1 = (j + 1) * ATOMIC_CHUNK < B ? (j + 1) * ATOMIC_CHUNK : B;
        float part = 0.0f;
        for (long b = j * ATOMIC_CHUNK; b < b1; b++) {
            float p = dy[b * out + o] * x[b * in + i];
            part = part + p;
        }
        atomicAdd(&dw[o * in + i], part);
    }
}

static int backward_weight(repro_cuda_ctx *c, int variant, const float *dy, const float *x,
                           float *dw, int B, int in, int out, int accumulate)
{
    if (variant == REPRO_VARIANT_ORDERED) /* dw[o][i] (+)= sum_b dy[b][o] * x[b][i] */
        return gemm(c, out, in, B, dy, 1, out, x, in, 1, dw, in, NULL, accumulate);
    if (!accumulate)
        cudaCheck(c, cudaMemsetAsync(dw, 0, (size_t)in * out * sizeof(float), c->stream));
    if (B <= 0 || in <= 0 || out <= 0)
        return 0;
    long total = (long)out * in * ((B + ATOMIC_CHUNK - 1) / ATOMIC_CHUNK);
    weight_atomic<<<repro_cuda_blocks(total), REPRO_CUDA_THREADS, 0, c->stream>>>(dy, x, dw, B,
                                                                                 in, out);
    launchCheck(c);
    return 0;
}

void repro_cuda_linear_backward_weight(void *ctx, int variant, const float *dy, const float *x,
                                       float *dw, int B, int in, int out, int accumulate)
{
    backward_weight(repro_cuda(ctx), variant, dy, x, dw, B, in, out, accumulate);
}

/* db[o] (+)= sum over b ascending of dy[b][o]: one thread per column. */
__global__ void bias_ordered(const float *dy, float *db, int B, int out, int accumulate)
{
    REPRO_CUDA_FOR(o, out)
    {
        float acc = accumulate ? db[o] : 0.0f;
        for (long b = 0; b < B; b++)
            acc = acc + dy[b * out + o];
        db[o] = acc;
    }
}

__global__ void bias_atomic(const float *dy, float *db, int B, int out)
{
    long chunks = (B + ATOMIC_CHUNK - 1) / ATOMIC_CHUNK;
    REPRO_CUDA_FOR(t, (long)out * chunks)
    {
        long j = t % chunks, o = t / chunks;
        long b1 = (j + 1) * ATOMIC_CHUNK < B ? (j + 1) * ATOMIC_CHUNK : B;
        float part = 0.0f;
        for (long b = j * ATOMIC_CHUNK; b < b1; b++)
            part = part + dy[b * out + o];
        atomicAdd(&db[o], part);
    }
}

static int backward_bias(repro_cuda_ctx *c, int variant, const float *dy, float *db, int B,
                         int out, int accumulate)
{
    if (out <= 0)
        return 0;
    if (variant == REPRO_VARIANT_ORDERED) {
        bias_ordered<<<repro_cuda_blocks(out), REPRO_CUDA_THREADS, 0, c->stream>>>(dy, db, B, out,
                                                                                  accumulate);
        launchCheck(c);
        return 0;
    }
    if (!accumulate)
        cudaCheck(c, cudaMemsetAsync(db, 0, (size_t)out * sizeof(float), c->stream));
    if (B <= 0)
        return 0;
    long total = (long)out * ((B + ATOMIC_CHUNK - 1) / ATOMIC_CHUNK);
    bias_atomic<<<repro_cuda_blocks(total), REPRO_CUDA_THREADS, 0, c->stream>>>(dy, db, B, out);
    launchCheck(c);
    return 0;
}

void repro_cuda_linear_backward_bias(void *ctx, int variant, const float *dy, float *db, int B,
                                     int out, int accumulate)
{
    backward_bias(repro_cuda(ctx), variant, dy, db, B, out, accumulate);
}
