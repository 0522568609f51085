/* cuDNN's forward convolution algorithms as repro_conv_algo ids
 * REPRO_CONV_CUDNN_BASE + cudnnConvolutionFwdAlgo_t.
 *
 *  - Eligibility, determinism and workspace come from
 *    cudnnGetConvolutionForwardAlgorithm_v7's perf results for the shape
 *    (cached per shape), all of them: the query asks for
 *    cudnnGetConvolutionForwardAlgorithmMaxCount results, since one
 *    algorithm may appear once per math type and TF32 entries alone could
 *    fill a shorter list. cudnn_admit.h's rule admits a result or says why
 *    it is dropped (repro_cuda_cudnn_report lists both); an algorithm is
 *    eligible when a result of it is admitted, deterministic when that
 *    result's determinism is CUDNN_DETERMINISTIC. deterministic = on admits
 *    only those.
 *  - benchmark = off: the heuristic's first eligible result;
 *    benchmark = on: cudnnFindConvolutionForwardAlgorithmEx on the real
 *    buffers, the fastest eligible result, every timed one's time reported
 *    (microseconds) so the trace records them as it records the CPU's;
 *    with no admissible cuDNN algorithm, our own direct kernel.
 *  - Math type CUDNN_FMA_MATH: FP32 FMA kernels only, never TF32 tensor
 *    cores, so the precision is float's (the rounding is cuDNN's own). The
 *    descriptor asks for it; a perf result may still name another math
 *    type (the one the algorithm was run with), so only results whose
 *    mathType is CUDNN_FMA_MATH are admitted, and the descriptor's math
 *    type is set from the chosen result before the convolution runs.
 *  - Workspace: cudnnGetConvolutionForwardWorkspaceSize for the algorithm
 *    (with its result's math type), not the heuristic's `memory` field.
 *  - The bias is added by our kernel after cuDNN's y = conv(x, w): y + b[k],
 *    one rounding per element.
 * The choice is returned to the harness (core/algo_select.c), which writes
 * it into the trace; `--algo-lock` replays it by name. */
#include "ctx.cuh"

#include <stdio.h>
#include <string.h>

static int set_descriptors(repro_cuda_ctx *c, const repro_conv_shape *s, cudnnMathType_t math)
{
    cudnnCheck(c, cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->B, s->C,
                                             s->H, s->W));
    cudnnCheck(c, cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->K, s->C,
                                             s->R, s->R));
    cudnnCheck(c, cudnnSetConvolution2dDescriptor(c->convd, s->pad, s->pad, 1, 1, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    cudnnCheck(c, cudnnSetConvolutionMathType(c->convd, math));
    cudnnCheck(c, cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->B, s->K,
                                             repro_conv_oh(s), repro_conv_ow(s)));
    return 0;
}

static int same_shape(const repro_conv_shape *a, const repro_conv_shape *b)
{
    return a->B == b->B && a->C == b->C && a->H == b->H && a->W == b->W && a->K == b->K &&
           a->R == b->R && a->pad == b->pad;
}

/* An admitted math type: FP32 FMA only (never TF32, never a down-conversion). */
static int fma_math(cudnnMathType_t m)
{
    return m == CUDNN_FMA_MATH;
}

/* How many results to ask cuDNN for: all it has (its count), within the
 * room of the cache. */
static int result_count(repro_cuda_ctx *c, int *max_count)
{
    *max_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    if (cudnnGetConvolutionForwardAlgorithmMaxCount(c->cudnn, max_count) != CUDNN_STATUS_SUCCESS ||
        *max_count < 1)
        *max_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return *max_count < REPRO_CUDA_CUDNN_RESULTS ? *max_count : REPRO_CUDA_CUDNN_RESULTS;
}

/* The admission rule's view of a perf result (ws_known: a workspace size). */
static repro_cudnn_result as_result(const cudnnConvolutionFwdAlgoPerf_t *p, int ws_known)
{
    repro_cudnn_result r = {(int)p->algo, p->status == CUDNN_STATUS_SUCCESS,
                            fma_math(p->mathType), ws_known};
    return r;
}

/* cuDNN's workspace size for p's algorithm on s with p's math type. A
 * question, like the heuristic's: a failure makes the result ineligible and
 * is not kept as the context's error. */
static int workspace_size(repro_cuda_ctx *c, const repro_conv_shape *s,
                          const cudnnConvolutionFwdAlgoPerf_t *p, size_t *bytes)
{
    if (p->status != CUDNN_STATUS_SUCCESS || !fma_math(p->mathType))
        return -1;
    int had_error = c->err[0] != '\0';
    int rc = set_descriptors(c, s, p->mathType) ||
             cudnnGetConvolutionForwardWorkspaceSize(c->cudnn, c->xd, c->wd, c->convd, c->yd,
                                                     p->algo, bytes) != CUDNN_STATUS_SUCCESS;
    if (!had_error)
        c->err[0] = '\0';
    return rc ? -1 : 0;
}

/* The heuristic's verdicts for s, from the cache or asked now; NULL when
 * cuDNN has none for s. A question, not an operation: a failure here makes
 * cuDNN's algorithms ineligible for s and is not kept as the context's
 * error (the own kernels still run). */
static repro_cuda_shape_info *shape_info(repro_cuda_ctx *c, const repro_conv_shape *s)
{
    for (int i = 0; i < REPRO_CUDA_SHAPE_CACHE; i++)
        if (c->shapes[i].valid && same_shape(&c->shapes[i].s, s))
            return &c->shapes[i];
    int had_error = c->err[0] != '\0';
    repro_cuda_shape_info *si = &c->shapes[c->next_shape];
    if (repro_conv_oh(s) <= 0 || repro_conv_ow(s) <= 0 || set_descriptors(c, s, CUDNN_FMA_MATH))
        goto none;
    c->next_shape = (c->next_shape + 1) % REPRO_CUDA_SHAPE_CACHE;
    memset(si, 0, sizeof *si);
    si->s = *s;
    if (cudnnGetConvolutionForwardAlgorithm_v7(c->cudnn, c->xd, c->wd, c->convd, c->yd,
                                               result_count(c, &si->max_count), &si->nperf,
                                               si->perf) != CUDNN_STATUS_SUCCESS)
        goto none;
    for (int i = 0; i < si->nperf; i++)
        si->res[i] = as_result(&si->perf[i], workspace_size(c, s, &si->perf[i], &si->ws[i]) == 0);
    si->valid = 1;
    return si;
none:
    if (!had_error)
        c->err[0] = '\0';
    return NULL;
}

int repro_cuda_cudnn_eligible(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                              int *deterministic, size_t *workspace)
{
    int algo = (int)a - REPRO_CONV_CUDNN_BASE;
    if (algo < 0 || algo >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
        return 0;
    repro_cuda_shape_info *si = shape_info(c, s);
    for (int i = 0; si && i < si->nperf; i++)
        if ((int)si->perf[i].algo == algo && !repro_cudnn_drop_reason(si->res, i)) {
            *deterministic = si->perf[i].determinism == CUDNN_DETERMINISTIC;
            *workspace = si->ws[i];
            return 1;
        }
    return 0;
}

/* The math type of algorithm a's admitted result for s (CUDNN_FMA_MATH). */
static cudnnMathType_t result_math(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s)
{
    repro_cuda_shape_info *si = shape_info(c, s);
    for (int i = 0; si && i < si->nperf; i++)
        if ((int)si->perf[i].algo == (int)a - REPRO_CONV_CUDNN_BASE &&
            !repro_cudnn_drop_reason(si->res, i))
            return si->perf[i].mathType;
    return CUDNN_FMA_MATH;
}

__global__ void add_bias(long n, long plane, int K, const float *b, float *y)
{
    REPRO_CUDA_FOR(i, n)
    {
        y[i] = y[i] + b[(i / plane) % K];
    }
}

int repro_cuda_cudnn_forward(repro_cuda_ctx *c, repro_conv_algo a, const repro_conv_shape *s,
                             const float *x, const float *w, const float *b, float *y,
                             void *workspace)
{
    int det;
    size_t ws = 0;
    if (!repro_cuda_cudnn_eligible(c, a, s, &det, &ws)) {
        char why[200];
        snprintf(why, sizeof why,
                 "%s is not eligible for B%d C%d H%d W%d K%d R%d pad%d: refused (no other "
                 "algorithm runs under its name)",
                 repro_conv_algo_name(a), s->B, s->C, s->H, s->W, s->K, s->R, s->pad);
        return repro_cuda_fail(c, __FILE__, __LINE__, "cudnn forward", why);
    }
    if (set_descriptors(c, s, result_math(c, a, s)))
        return -1;
    const float one = 1.0f, zero = 0.0f;
    cudnnCheck(c, cudnnConvolutionForward(c->cudnn, &one, c->xd, x, c->wd, w, c->convd,
                                          (cudnnConvolutionFwdAlgo_t)((int)a - REPRO_CONV_CUDNN_BASE),
                                          workspace, ws, &zero, c->yd, y));
    if (b) {
        long plane = (long)repro_conv_oh(s) * repro_conv_ow(s), n = (long)s->B * s->K * plane;
        add_bias<<<repro_cuda_blocks(n), REPRO_CUDA_THREADS, 0, c->stream>>>(n, plane, s->K, b, y);
        launchCheck(c);
    }
    return 0;
}

/* Admitted: it ran (or would), FMA math, its workspace (cuDNN's size for
 * it, `need`) fits, and deterministic where that is required. */
static int admitted(const cudnnConvolutionFwdAlgoPerf_t *p, int deterministic_only, size_t need,
                    size_t ws)
{
    return p->status == CUDNN_STATUS_SUCCESS && fma_math(p->mathType) && need <= ws &&
           (!deterministic_only || p->determinism == CUDNN_DETERMINISTIC);
}

int repro_cuda_conv_algo_choose(void *ctx, const repro_conv_shape *s, int benchmark,
                                int deterministic_only, const float *x, const float *w,
                                const float *b, float *y, void *workspace,
                                size_t workspace_bytes, double *time_us)
{
    (void)b;
    repro_cuda_ctx *c = repro_cuda(ctx);
    repro_cuda_shape_info *si = shape_info(c, s);
    /* cuDNN with nothing admissible for s: our direct kernel (deterministic,
     * always eligible) rather than no convolution at all */
    if (!si)
        return REPRO_CONV_DIRECT;
    if (!benchmark) {
        for (int i = 0; i < si->nperf; i++) /* best first */
            if (!repro_cudnn_drop_reason(si->res, i) &&
                admitted(&si->perf[i], deterministic_only, si->ws[i], workspace_bytes))
                return REPRO_CONV_CUDNN_BASE + (int)si->perf[i].algo;
        return REPRO_CONV_DIRECT;
    }
    if (set_descriptors(c, s, CUDNN_FMA_MATH))
        return -1;
    cudnnConvolutionFwdAlgoPerf_t perf[REPRO_CUDA_CUDNN_RESULTS];
    int n = 0, max_count;
    cudnnCheck(c, cudnnFindConvolutionForwardAlgorithmEx(c->cudnn, c->xd, x, c->wd, w, c->convd,
                                                         c->yd, y, result_count(c, &max_count), &n,
                                                         perf, workspace, workspace_bytes));
    int best = -1;
    for (int i = 0; i < n; i++) { /* sorted fastest first */
        size_t need = 0;
        if (workspace_size(c, s, &perf[i], &need) ||
            !admitted(&perf[i], deterministic_only, need, workspace_bytes))
            continue;
        int id = REPRO_CONV_CUDNN_BASE + (int)perf[i].algo;
        time_us[id] = (double)perf[i].time * 1000.0;
        if (best < 0)
            best = id;
    }
    return best < 0 ? REPRO_CONV_DIRECT : best;
}

static const char *math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default math";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op math";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op math with conversion";
    case CUDNN_FMA_MATH: return "FMA math";
    default: return "unknown math";
    }
}

int repro_cuda_cudnn_report(void *ctx, const repro_conv_shape *s, char *buf, size_t len)
{
    repro_cuda_ctx *c = repro_cuda(ctx);
    repro_cuda_shape_info *si = shape_info(c, s);
    size_t at = 0;
    buf[0] = '\0';
    if (!si) {
        snprintf(buf, len, "cuDNN gave no results for this shape\n");
        return 0;
    }
    at += (size_t)snprintf(buf, len, "cuDNN returned %d result%s (it has %d)\n", si->nperf,
                           si->nperf == 1 ? "" : "s", si->max_count);
    for (int i = 0; i < si->nperf && at < len; i++) {
        const cudnnConvolutionFwdAlgoPerf_t *p = &si->perf[i];
        const char *why = repro_cudnn_drop_reason(si->res, i);
        at += (size_t)snprintf(buf + at, len - at, "  %s, %s, %s, workspace %zu B: %s%s\n",
                               repro_conv_algo_name((repro_conv_algo)(REPRO_CONV_CUDNN_BASE + (int)p->algo)),
                               math_name(p->mathType),
                               p->determinism == CUDNN_DETERMINISTIC ? "deterministic"
                                                                     : "nondeterministic",
                               si->res[i].ws_known ? si->ws[i] : 0, why ? "dropped: " : "admitted",
                               why ? why : "");
    }
    return repro_cudnn_admitted(si->res, si->nperf);
}
