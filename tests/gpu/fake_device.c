/* The fake device (fake_device.h): the CPU backend, with two stand-in
 * "cuDNN" algorithms for every shape:
 *   cudnn_implicit_gemm            deterministic, computed in im2col's order,
 *                                  "timed" at 20 us by cudnnFind;
 *   cudnn_implicit_precomp_gemm    nondeterministic, computed in direct's
 *                                  order, "timed" at 10 us;
 * every other cuDNN id ineligible and refused, as kernels/cuda/conv.cu
 * refuses it. Honest (no fault), check_cuda_ops passes on it. Each fault of
 * $REPRO_GPU_FAKE_FAULT is one way a device could be wrong that a check
 * must catch:
 *   nan               precomp_gemm returns one NaN where the CPU's value
 *                     is finite;
 *   unwritten         precomp_gemm writes nothing (its output is what was
 *                     there before: the previous algorithm's, or poison);
 *   ineligible_runs   an ineligible cuDNN id runs the direct kernel instead
 *                     of being refused (conv.cu before issue 47);
 *   slow_pick         cudnnFind picks a timed algorithm slower than another;
 *   timed_ineligible  cudnnFind reports a time for an ineligible algorithm. */
#include "tests/gpu/fake_device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cudnn_admit.h"

#define GEMM REPRO_CONV_CUDNN_IMPLICIT_GEMM
#define PRECOMP REPRO_CONV_CUDNN_IMPLICIT_PRECOMP_GEMM

static const repro_backend *cpu;
static repro_backend fake;
static char fake_err[256]; /* the sticky error, as the CUDA context's */

static int fault(const char *name)
{
    const char *f = getenv("REPRO_GPU_FAKE_FAULT");
    return f && !strcmp(f, name);
}

static int fake_synchronize(void *ctx)
{
    return fake_err[0] ? -1 : cpu->synchronize(ctx);
}

static const char *fake_last_error(void *ctx)
{
    return fake_err[0] ? fake_err : cpu->last_error(ctx);
}

static int stand_in(int a)
{
    return a == GEMM || a == PRECOMP;
}

static int fake_eligible(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    return (int)a < REPRO_CONV_NALGOS ? cpu->conv_algo_eligible(ctx, a, s) : stand_in(a);
}

static int fake_deterministic(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    return (int)a < REPRO_CONV_NALGOS ? cpu->conv_algo_deterministic(ctx, a, s) : a == GEMM;
}

static size_t fake_workspace(void *ctx, repro_conv_algo a, const repro_conv_shape *s)
{
    if ((int)a < REPRO_CONV_NALGOS)
        return cpu->conv_workspace_bytes(ctx, a, s);
    return stand_in(a) ? cpu->conv_workspace_bytes(ctx, REPRO_CONV_IM2COL, s) : 0;
}

static void fake_forward(void *ctx, repro_conv_algo a, const repro_conv_shape *s, const float *x,
                         const float *w, const float *b, float *y, void *workspace)
{
    if ((int)a < REPRO_CONV_CUDNN_BASE || (int)a >= REPRO_CONV_ALGO_LIMIT) {
        cpu->conv2d_forward(ctx, a, s, x, w, b, y, workspace);
        return;
    }
    if (!stand_in(a)) {
        if (fault("ineligible_runs"))
            cpu->conv2d_forward(ctx, REPRO_CONV_DIRECT, s, x, w, b, y, workspace);
        else if (!fake_err[0])
            snprintf(fake_err, sizeof fake_err, "fake cudnn forward: %s is not eligible: refused",
                     repro_conv_algo_name(a));
        return;
    }
    if (a == PRECOMP && fault("unwritten"))
        return;
    cpu->conv2d_forward(ctx, a == GEMM ? REPRO_CONV_IM2COL : REPRO_CONV_DIRECT, s, x, w, b, y,
                        workspace);
    if (a == PRECOMP && fault("nan"))
        y[7] = NAN;
}

static int fake_choose(void *ctx, const repro_conv_shape *s, int benchmark, int deterministic_only,
                       const float *x, const float *w, const float *b, float *y, void *workspace,
                       size_t workspace_bytes, double *time_us)
{
    (void)ctx, (void)s, (void)x, (void)w, (void)b, (void)y, (void)workspace,
        (void)workspace_bytes;
    if (!benchmark) /* the heuristic's order, best first: precomp, then gemm */
        return deterministic_only ? GEMM : PRECOMP;
    time_us[GEMM] = 20;
    if (!deterministic_only)
        time_us[PRECOMP] = 10;
    if (fault("timed_ineligible"))
        time_us[REPRO_CONV_CUDNN_WINOGRAD] = 30;
    if (deterministic_only || fault("slow_pick"))
        return GEMM;
    return PRECOMP;
}

/* The stand-in's results, best first, as cuDNN lists them: precomp_gemm
 * once with TF32 math (dropped) and once with FMA, gemm with FMA, winograd
 * unsupported (dropped). */
int repro_gpu_fake_cudnn_report(void *ctx, const repro_conv_shape *s, char *buf, size_t len)
{
    (void)ctx, (void)s;
    static const repro_cudnn_result res[] = {
        {PRECOMP - REPRO_CONV_CUDNN_BASE, 1, 0, 1},
        {PRECOMP - REPRO_CONV_CUDNN_BASE, 1, 1, 1},
        {GEMM - REPRO_CONV_CUDNN_BASE, 1, 1, 1},
        {REPRO_CONV_CUDNN_WINOGRAD - REPRO_CONV_CUDNN_BASE, 0, 1, 0},
    };
    int n = (int)(sizeof res / sizeof *res);
    size_t at = (size_t)snprintf(buf, len, "the fake device returned %d results\n", n);
    for (int i = 0; i < n && at < len; i++) {
        const char *why = repro_cudnn_drop_reason(res, i);
        at += (size_t)snprintf(buf + at, len - at, "  %s, %s: %s%s\n",
                               repro_conv_algo_name((repro_conv_algo)(REPRO_CONV_CUDNN_BASE +
                                                                      res[i].algo)),
                               res[i].fma_math ? "FMA math" : "tensor-op math",
                               why ? "dropped: " : "admitted", why ? why : "");
    }
    return repro_cudnn_admitted(res, n);
}

/* The CUDA backend needs no workspace for linear (the check passes NULL);
 * the CPU's split-K does. */
static void fake_linear_forward(void *ctx, int variant, const float *x, const float *w,
                                const float *b, float *y, int B, int in, int out, void *workspace)
{
    void *ws = workspace ? workspace : malloc(cpu->linear_workspace_bytes(ctx, B, in, out) + 4);
    cpu->linear_forward(ctx, variant, x, w, b, y, B, in, out, ws);
    if (ws != workspace)
        free(ws);
}

static int fake_describe(int device, repro_device_info *out, char *why, size_t why_len)
{
    (void)device, (void)why, (void)why_len;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "fake device (the CPU backend, fault %s)",
             getenv("REPRO_GPU_FAKE_FAULT") ? getenv("REPRO_GPU_FAKE_FAULT") : "none");
    snprintf(out->driver, sizeof out->driver, "-");
    snprintf(out->runtime, sizeof out->runtime, "-");
    snprintf(out->cudnn, sizeof out->cudnn, "-");
    return 0;
}

const repro_backend *repro_gpu_fake_device(void)
{
    cpu = repro_backend_get("cpu");
    fake = *cpu;
    fake.name = "fake-cuda";
    fake.synchronize = fake_synchronize;
    fake.last_error = fake_last_error;
    fake.conv_algo_eligible = fake_eligible;
    fake.conv_algo_deterministic = fake_deterministic;
    fake.conv_workspace_bytes = fake_workspace;
    fake.conv2d_forward = fake_forward;
    fake.conv_algo_choose = fake_choose;
    fake.describe_device = fake_describe;
    fake.linear_forward = fake_linear_forward;
    return &fake;
}

int repro_gpu_fake_poison_on(void)
{
    return getenv("REPRO_GPU_FAKE_NO_POISON") == NULL;
}
