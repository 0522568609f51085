/* GPU check of the CUDA backend: every op against its CPU reference (the
 * CPU backend on the same inputs), device hashing against the host's
 * digest, device Philox (through dropout's mask) against the CPU's, the
 * atomic variants against the ordered result, and cuDNN's algorithm choice
 * (heuristic and cudnnFind). Run by tests/gpu/run.sh on a machine with a
 * GPU, one group per process (`check_cuda_ops GROUP`; `--list` names the
 * groups): a CUDA or cuDNN error is sticky for the process that met it, so
 * one failing group cannot turn the next ones into "device error".
 *
 * Tolerance: our own kernels follow the CPU's per-element order with the
 * same rounding (--fmad=false), so they must be BITWISE equal (tolerance
 * 0), with one exception: NaN. A GPU returns the canonical NaN (0x7fffffff)
 * where the CPU propagates the input's payload (relu compiles to
 * FMNMX.NAN), and NaN payloads are not promised on the GPU
 * (kernels/cuda/README.md), so any NaN equals any NaN in float
 * comparisons; how many NaN payloads differed is printed. cuDNN's
 * algorithms and the atomic variants round their own way: each element
 * must lie within 1e-5 * (sum of |terms| + 1e-30) of the CPU value, and a
 * NaN where the CPU has a number fails. Output buffers are poisoned before
 * an op overwrites them, so an element it leaves unwritten fails instead of
 * being judged on an earlier op's output. The judgements are
 * tests/gpu/ops_compare.h (tested on the CPU by tests/check_gpu_compare.c);
 * built with -DREPRO_GPU_FAKE_DEVICE, this program runs against
 * tests/gpu/fake_device.c, a faulty stand-in, on any machine.
 *
 * Built two ways: against librepro (the tensor digest also through the
 * library's libxxhash and OpenSSL paths), or with -DREPRO_GPU_STANDALONE
 * against the kernels alone (run.sh's fallback on a machine without our
 * build deps: the host leaf digests through kernels/shared/xxh3.h and
 * sha256.h).
 *
 * Prints one line per check and a summary. Exit 0 all passed, 1 some
 * failed, 2 usage, 3 no CUDA device or driver, 4 cuDNN unusable (its
 * cudnnCreate failed). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/shared/sha256.h"
#include "kernels/shared/xxh3.h"
#include "repro/digest.h"
#include "tests/gpu/ops_compare.h"

/* The device under test: the CUDA backend, or, built with
 * -DREPRO_GPU_FAKE_DEVICE, tests/gpu/fake_device.c's stand-in on the CPU,
 * whose faults prove on any machine that each check below can fail. */
#ifdef REPRO_GPU_FAKE_DEVICE
#include "tests/gpu/fake_device.h"
#define device_backend() repro_gpu_fake_device()
#define cudnn_report repro_gpu_fake_cudnn_report
#else
#include "kernels/cuda/entries.h"
#define device_backend() repro_backend_get("cuda")
#define cudnn_report repro_cuda_cudnn_report
#endif

static const repro_backend *cpu, *gpu;
static void *cc, *gc; /* contexts */
static int failed, passed;

static void report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "\xe2\x9c\x93" : "\xe2\x9c\x97");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    ok ? passed++ : failed++;
    fflush(stdout);
}

static uint32_t rng_state = 12345;
static float frand(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((int32_t)(rng_state >> 8) - (1 << 23)) / (float)(1 << 23);
}

static float *hrand(size_t n)
{
    float *p = malloc(n * sizeof *p + 4);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* A device copy of host data. */
static void *up(const void *h, size_t bytes)
{
    void *d = gpu->alloc(gc, bytes ? bytes : 4);
    gpu->copy_h2d(gc, d, h, bytes);
    return d;
}

static void *down(const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 4);
    gpu->copy_d2h(gc, h, d, bytes);
    return h;
}

/* A device buffer of n words filled with the poison (ops_compare.h):
 * whatever of it an op leaves unwritten is caught, instead of being judged
 * on what an earlier op or algorithm left there. */
static void poison(void *d, size_t words)
{
#ifdef REPRO_GPU_FAKE_DEVICE
    if (!repro_gpu_fake_poison_on()) /* the poison's own negative control */
        return;
#endif
    uint32_t *h = malloc(words * 4 + 4);
    gpu_poison_fill(h, words);
    gpu->copy_h2d(gc, d, h, words * 4);
    free(h);
}

/* Bitwise comparison of bytes/4 words; as_float: any NaN equals any NaN
 * (payloads not promised on the GPU), the poison excepted. Reports and
 * frees got. */
static void compare_words(const char *what, const void *want, void *got, size_t bytes,
                          int as_float)
{
    gpu_compare_result r = gpu_compare_words(want, got, bytes / 4, as_float);
    uint32_t a_first = 0, b_first = 0;
    if (r.differ) {
        memcpy(&a_first, (const char *)want + 4 * r.first, 4);
        memcpy(&b_first, (const char *)got + 4 * r.first, 4);
    }
    char nan_note[96] = "", unwritten[64] = "";
    if (r.nan_payloads)
        snprintf(nan_note, sizeof nan_note, "; %zu NaN payload%s differ (not promised)",
                 r.nan_payloads, r.nan_payloads == 1 ? "" : "s");
    if (r.unwritten)
        snprintf(unwritten, sizeof unwritten, ", %zu never written (still the poison)",
                 r.unwritten);
    if (gpu->synchronize(gc))
        report(0, "%s: device error: %s", what, gpu->last_error(gc));
    else if (r.differ)
        report(0, "%s: %zu of %zu elements differ from the CPU%s (first at %zu: %08x vs %08x), "
                  "tolerance 0 (bitwise%s)%s", what, r.differ, r.n, unwritten, r.first,
               a_first, b_first, as_float ? ", any NaN = any NaN" : "", nan_note);
    else
        report(1, "%s: bitwise equal to the CPU (%zu elements%s)%s", what, r.n,
               as_float ? ", any NaN = any NaN" : "", nan_note);
    free(got);
}

/* floats: bitwise, NaN = NaN */
static void expect_bits(const char *what, const void *want, void *got, size_t bytes)
{
    compare_words(what, want, got, bytes, 1);
}

/* integers (argmax, masks as words): bitwise */
static void expect_words(const char *what, const void *want, void *got, size_t bytes)
{
    compare_words(what, want, got, bytes, 0);
}

/* Within tol * bound[i] (bound = sum of |terms| per element); a NaN or an
 * unwritten element where the CPU has a number fails (ops_compare.h).
 * Reports and frees got. */
static void expect_close(const char *what, const float *want, float *got, const double *bound,
                         size_t n, double tol)
{
    gpu_compare_result r = gpu_compare_close(want, got, bound, n, tol);
    char why[160] = "";
    if (r.differ)
        snprintf(why, sizeof why, " (first at %zu: CPU %.9g, GPU %.9g; %zu NaN where the CPU's "
                                  "is not, %zu never written)",
                 r.first, want[r.first], got[r.first], r.nan_vs_finite, r.unwritten);
    if (gpu->synchronize(gc))
        report(0, "%s: device error: %s", what, gpu->last_error(gc));
    else
        report(r.differ == 0, "%s: %zu of %zu elements outside %.0e * sum|terms| (worst %.2e)%s",
               what, r.differ, n, tol, r.worst, why);
    free(got);
}

/* ---- linear ------------------------------------------------------------------ */
static void check_linear(void)
{
    int B = 37, in = 301, out = 67;
    float *x = hrand((size_t)B * in), *w = hrand((size_t)out * in), *b = hrand(out);
    float *dy = hrand((size_t)B * out), *y = malloc((size_t)B * out * 4);
    float *dx = malloc((size_t)B * in * 4), *dw = hrand((size_t)out * in), *db = hrand(out);
    float *ws = malloc(cpu->linear_workspace_bytes(cc, B, in, out) + 4);
    float *dwg0 = up(dw, (size_t)out * in * 4), *dbg0 = up(db, out * 4);
    float *gx = up(x, (size_t)B * in * 4), *gw = up(w, (size_t)out * in * 4), *gb = up(b, out * 4);
    float *gdy = up(dy, (size_t)B * out * 4), *gy = gpu->alloc(gc, (size_t)B * out * 4);
    float *gdx = gpu->alloc(gc, (size_t)B * in * 4);
    cpu->linear_forward(cc, REPRO_VARIANT_ORDERED, x, w, b, y, B, in, out, ws);
    poison(gy, (size_t)B * out);
    gpu->linear_forward(gc, REPRO_VARIANT_ORDERED, gx, gw, gb, gy, B, in, out, NULL);
    expect_bits("linear.fwd", y, down(gy, (size_t)B * out * 4), (size_t)B * out * 4);
    /* split-K at 1, 4 and 2 chunks (B = 37, 5, 9 rows): the CPU's bits */
    for (int rows = B; rows > 0; rows = rows == B ? 5 : rows == 5 ? 9 : 0) {
        char what[64];
        snprintf(what, sizeof what, "linear.fwd splitk (%d rows, %d chunks)", rows,
                 repro_splitk_chunks(rows));
        cpu->linear_forward(cc, REPRO_VARIANT_SPLITK, x, w, b, y, rows, in, out, ws);
        poison(gy, (size_t)B * out);
        gpu->linear_forward(gc, REPRO_VARIANT_SPLITK, gx, gw, gb, gy, rows, in, out, NULL);
        expect_bits(what, y, down(gy, (size_t)rows * out * 4), (size_t)rows * out * 4);
    }
    cpu->linear_backward_data(cc, dy, w, dx, B, in, out);
    poison(gdx, (size_t)B * in);
    gpu->linear_backward_data(gc, gdy, gw, gdx, B, in, out);
    expect_bits("linear.bwd_data", dx, down(gdx, (size_t)B * in * 4), (size_t)B * in * 4);
    for (int acc = 0; acc < 2; acc++) { /* overwrite, then accumulate onto the result */
        cpu->linear_backward_weight(cc, 0, dy, x, dw, B, in, out, acc);
        gpu->linear_backward_weight(gc, 0, gdy, gx, dwg0, B, in, out, acc);
        expect_bits(acc ? "linear.bwd_weight ordered (accumulate)" : "linear.bwd_weight ordered",
                    dw, down(dwg0, (size_t)out * in * 4), (size_t)out * in * 4);
        cpu->linear_backward_bias(cc, 0, dy, db, B, out, acc);
        gpu->linear_backward_bias(gc, 0, gdy, dbg0, B, out, acc);
        expect_bits(acc ? "linear.bwd_bias ordered (accumulate)" : "linear.bwd_bias ordered", db,
                    down(dbg0, out * 4), out * 4);
    }
    /* atomic: close to the ordered CPU result */
    double *bound = calloc((size_t)out * in, sizeof *bound);
    for (int bb = 0; bb < B; bb++)
        for (int o = 0; o < out; o++)
            for (int i = 0; i < in; i++)
                bound[o * in + i] += fabs((double)dy[bb * out + o] * x[bb * in + i]);
    cpu->linear_backward_weight(cc, 0, dy, x, dw, B, in, out, 0);
    poison(dwg0, (size_t)out * in);
    gpu->linear_backward_weight(gc, REPRO_VARIANT_ATOMIC, gdy, gx, dwg0, B, in, out, 0);
    expect_close("linear.bwd_weight atomic", dw, down(dwg0, (size_t)out * in * 4), bound,
                 (size_t)out * in, 1e-5);
    double *bbound = calloc(out, sizeof *bbound); /* sum of |dy| per output */
    for (int bb = 0; bb < B; bb++)
        for (int o = 0; o < out; o++)
            bbound[o] += fabs((double)dy[bb * out + o]);
    cpu->linear_backward_bias(cc, 0, dy, db, B, out, 0);
    poison(dbg0, out);
    gpu->linear_backward_bias(gc, REPRO_VARIANT_ATOMIC, gdy, dbg0, B, out, 0);
    expect_close("linear.bwd_bias atomic", db, down(dbg0, out * 4), bbound, out, 1e-5);
    free(bound), free(bbound);
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db), free(ws);
    gpu->free(gc, gx), gpu->free(gc, gw), gpu->free(gc, gb), gpu->free(gc, gdy);
    gpu->free(gc, gy), gpu->free(gc, gdx), gpu->free(gc, dwg0), gpu->free(gc, dbg0);
}

/* ---- conv ---------------------------------------------------------------------- */
/* conv2d.bwd_filter ATOMIC (dw and db) within 1e-5 * sum|terms| of the
 * CPU's direct result; gdw, gdb are scratch. */
static void check_conv_filter_atomic(const repro_conv_shape *s, const float *x, const float *dy,
                                     const float *gx, const float *gdy, float *gdw, float *gdb)
{
    size_t nw = (size_t)s->K * s->C * s->R * s->R;
    long OH = repro_conv_oh(s), OW = repro_conv_ow(s);
    float *dw = malloc(nw * 4), *db = malloc(s->K * 4);
    double *wbound = calloc(nw, sizeof *wbound), *bbound = calloc(s->K, sizeof *bbound);
    for (int bb = 0; bb < s->B; bb++)
        for (int k = 0; k < s->K; k++)
            for (long oy = 0; oy < OH; oy++)
                for (long ox = 0; ox < OW; ox++) {
                    double g = fabs((double)dy[((bb * s->K + k) * OH + oy) * OW + ox]);
                    bbound[k] += g;
                    for (int c = 0; c < s->C; c++)
                        for (int ry = 0; ry < s->R; ry++)
                            for (int rx = 0; rx < s->R; rx++) {
                                long iy = oy + ry - s->pad, ix = ox + rx - s->pad;
                                if (iy >= 0 && iy < s->H && ix >= 0 && ix < s->W)
                                    wbound[((k * s->C + c) * s->R + ry) * s->R + rx] +=
                                        g * fabs(x[((bb * s->C + c) * s->H + iy) * s->W + ix]);
                            }
                }
    cpu->conv2d_backward_filter(cc, 0, s, dy, x, dw, db, 0);
    poison(gdw, nw), poison(gdb, s->K);
    gpu->conv2d_backward_filter(gc, REPRO_VARIANT_ATOMIC, s, gdy, gx, gdw, gdb, 0);
    expect_close("conv2d.bwd_filter atomic (dw)", dw, down(gdw, nw * 4), wbound, nw, 1e-5);
    expect_close("conv2d.bwd_filter atomic (db)", db, down(gdb, s->K * 4), bbound, s->K, 1e-5);
    free(dw), free(db), free(wbound), free(bbound);
}

static void check_conv_shape(repro_conv_shape s)
{
    size_t nx = (size_t)s.B * s.C * s.H * s.W, nw = (size_t)s.K * s.C * s.R * s.R;
    size_t ny = (size_t)s.B * s.K * repro_conv_oh(&s) * repro_conv_ow(&s);
    float *x = hrand(nx), *w = hrand(nw), *b = hrand(s.K), *y = malloc(ny * 4), *ya = malloc(ny * 4);
    float *dy = hrand(ny), *dx = malloc(nx * 4), *dw = malloc(nw * 4), *db = malloc(s.K * 4);
    float *gx = up(x, nx * 4), *gw = up(w, nw * 4), *gb = up(b, s.K * 4), *gy = gpu->alloc(gc, ny * 4);
    float *gdy = up(dy, ny * 4), *gdx = gpu->alloc(gc, nx * 4), *gdw = gpu->alloc(gc, nw * 4);
    float *gdb = gpu->alloc(gc, s.K * 4);
    char what[160];
    size_t wsmax = 4;
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++)
        if (gpu->conv_algo_eligible(gc, (repro_conv_algo)a, &s) &&
            gpu->conv_workspace_bytes(gc, (repro_conv_algo)a, &s) > wsmax)
            wsmax = gpu->conv_workspace_bytes(gc, (repro_conv_algo)a, &s);
    void *gws = gpu->alloc(gc, wsmax);
    float *cws = malloc(cpu->conv_workspace_bytes(cc, REPRO_CONV_IM2COL, &s) +
                        cpu->conv_workspace_bytes(cc, REPRO_CONV_WINOGRAD, &s) + 4);
    double *bound = calloc(ny, sizeof *bound);
    long OH = repro_conv_oh(&s), OW = repro_conv_ow(&s);
    for (long i = 0; i < (long)ny; i++) { /* sum of |terms| per output */
        long ox = i % OW, oy = (i / OW) % OH, k = (i / (OW * OH)) % s.K, bb = i / (OW * OH * s.K);
        double t = fabs(b[k]);
        for (int c = 0; c < s.C; c++)
            for (int ry = 0; ry < s.R; ry++)
                for (int rx = 0; rx < s.R; rx++) {
                    long iy = oy + ry - s.pad, ix = ox + rx - s.pad;
                    if (iy >= 0 && iy < s.H && ix >= 0 && ix < s.W)
                        t += fabs((double)w[((k * s.C + c) * s.R + ry) * s.R + rx] *
                                  x[((bb * s.C + c) * s.H + iy) * s.W + ix]);
                }
        bound[i] = t;
    }
    cpu->conv2d_forward(cc, REPRO_CONV_DIRECT, &s, x, w, b, y, NULL);
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++) {
        if (!gpu->conv_algo_eligible(gc, (repro_conv_algo)a, &s))
            continue;
        poison(gy, ny); /* each algorithm judged on its own output */
        gpu->conv2d_forward(gc, (repro_conv_algo)a, &s, gx, gw, gb, gy, gws);
        snprintf(what, sizeof what, "conv2d.fwd %s (B%d C%d %dx%d K%d R%d pad%d%s)",
                 repro_conv_algo_name((repro_conv_algo)a), s.B, s.C, s.H, s.W, s.K, s.R, s.pad,
                 gpu->conv_algo_deterministic(gc, (repro_conv_algo)a, &s) ? "" : ", nondeterministic");
        if (a < REPRO_CONV_NALGOS) { /* ours: the CPU algorithm's bits */
            cpu->conv2d_forward(cc, (repro_conv_algo)a, &s, x, w, b, ya, cws);
            expect_bits(what, ya, down(gy, ny * 4), ny * 4);
        } else {
            expect_close(what, y, down(gy, ny * 4), bound, ny, 1e-5);
        }
    }
    cpu->conv2d_backward_data(cc, &s, dy, w, dx);
    poison(gdx, nx);
    gpu->conv2d_backward_data(gc, &s, gdy, gw, gdx);
    expect_bits("conv2d.bwd_data", dx, down(gdx, nx * 4), nx * 4);
    cpu->conv2d_backward_filter(cc, 0, &s, dy, x, dw, db, 0);
    poison(gdw, nw), poison(gdb, s.K);
    gpu->conv2d_backward_filter(gc, 0, &s, gdy, gx, gdw, gdb, 0);
    expect_bits("conv2d.bwd_filter direct (dw)", dw, down(gdw, nw * 4), nw * 4);
    expect_bits("conv2d.bwd_filter direct (db)", db, down(gdb, s.K * 4), s.K * 4);
    cpu->conv2d_backward_filter(cc, 0, &s, dy, x, dw, db, 1);
    gpu->conv2d_backward_filter(gc, 0, &s, gdy, gx, gdw, gdb, 1);
    expect_bits("conv2d.bwd_filter direct (accumulate)", dw, down(gdw, nw * 4), nw * 4);
    check_conv_filter_atomic(&s, x, dy, gx, gdy, gdw, gdb);
    free(x), free(w), free(b), free(y), free(ya), free(dy), free(dx), free(dw), free(db);
    free(cws), free(bound);
    gpu->free(gc, gx), gpu->free(gc, gw), gpu->free(gc, gb), gpu->free(gc, gy);
    gpu->free(gc, gdy), gpu->free(gc, gdx), gpu->free(gc, gdw), gpu->free(gc, gdb);
    gpu->free(gc, gws);
}

/* ---- pointwise, loss, optimizers, precision ------------------------------------------ */
static void check_pointwise(void)
{
    long n = 100003;
    float *x = hrand(n), *g = hrand(n), *y = malloc(n * 4), *dx = malloc(n * 4);
    x[5] = NAN, x[6] = -0.0f, x[7] = INFINITY, x[8] = 1e-40f;
    float *gx = up(x, n * 4), *gg = up(g, n * 4), *gy = gpu->alloc(gc, n * 4);
    float *gdx = gpu->alloc(gc, n * 4);
    cpu->relu_forward(cc, x, y, n);
    gpu->relu_forward(gc, gx, gy, n);
    expect_bits("relu.fwd", y, down(gy, n * 4), n * 4);
    cpu->relu_backward(cc, y, g, dx, n);
    gpu->relu_backward(gc, gy, gg, gdx, n);
    expect_bits("relu.bwd", dx, down(gdx, n * 4), n * 4);
    /* dropout: the mask is Philox word 0 per element (device Philox = CPU Philox) */
    uint8_t *mask = malloc(n), *gmask = gpu->alloc(gc, n);
    static const uint64_t keys[] = {0, 1, 0x0123456789abcdefULL, ~0ULL};
    static const float ps[] = {0.5f, 0.1f, 0.9f};
    for (int k = 0; k < 4; k++) {
        float p = ps[k % 3];
        cpu->dropout_forward(cc, x, y, mask, n, p, keys[k]);
        gpu->dropout_forward(gc, gx, gy, gmask, n, p, keys[k]);
        uint8_t *hm = down(gmask, n);
        long diff = 0;
        for (long i = 0; i < n; i++)
            diff += hm[i] != mask[i];
        free(hm);
        report(diff == 0, "philox: device dropout mask = CPU mask for key %016llx, p %.1f "
                          "(%ld of %ld differ)", (unsigned long long)keys[k], p, diff, n);
        expect_bits("dropout.fwd", y, down(gy, n * 4), n * 4);
    }
    cpu->dropout_backward(cc, g, mask, dx, n, 0.9f);
    gpu->dropout_backward(gc, gg, gmask, gdx, n, 0.9f);
    expect_bits("dropout.bwd", dx, down(gdx, n * 4), n * 4);
    /* maxpool 2x2 on 7 planes of 13x15 (odd edges) */
    int B = 7, C = 1, H = 13, W = 15, k = 2, nout = B * C * (H / k) * (W / k);
    int32_t *am = malloc(nout * 4), *gam = gpu->alloc(gc, nout * 4);
    cpu->maxpool2d_forward(cc, B, C, H, W, k, x, y, am);
    gpu->maxpool2d_forward(gc, B, C, H, W, k, gx, gy, gam);
    expect_bits("maxpool.fwd", y, down(gy, nout * 4), nout * 4);
    expect_words("maxpool.fwd argmax", am, down(gam, nout * 4), nout * 4);
    cpu->maxpool2d_backward(cc, B, C, H, W, k, am, g, dx);
    gpu->maxpool2d_backward(gc, B, C, H, W, k, gam, gg, gdx);
    expect_bits("maxpool.bwd", dx, down(gdx, (size_t)B * C * H * W * 4), (size_t)B * C * H * W * 4);
    /* optimizers: several steps on the same state */
    float *p = hrand(n), *buf = hrand(n), *m = hrand(n), *v = malloc(n * 4);
    for (long i = 0; i < n; i++)
        v[i] = fabsf(frand());
    float *gp = up(p, n * 4), *gbuf = up(buf, n * 4), *gm = up(m, n * 4), *gv = up(v, n * 4);
    for (int t = 0; t < 3; t++) {
        cpu->sgd_step(cc, p, g, buf, n, 0.05f, 0.9f, 1e-4f, t == 0);
        gpu->sgd_step(gc, gp, gg, gbuf, n, 0.05f, 0.9f, 1e-4f, t == 0);
    }
    expect_bits("sgd (3 steps): p", p, down(gp, n * 4), n * 4);
    expect_bits("sgd (3 steps): momentum", buf, down(gbuf, n * 4), n * 4);
    double b1 = 1, b2 = 1;
    for (int t = 0; t < 3; t++) {
        b1 *= 0.9, b2 *= 0.999;
        cpu->adamw_step(cc, p, g, m, v, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1 - b1, 1 - b2);
        gpu->adamw_step(gc, gp, gg, gm, gv, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1 - b1, 1 - b2);
    }
    expect_bits("adamw (3 steps): p", p, down(gp, n * 4), n * 4);
    expect_bits("adamw (3 steps): exp_avg_sq", v, down(gv, n * 4), n * 4);
    /* precision and the step kernels */
    for (int f = 1; f <= 2; f++) {
        memcpy(y, x, n * 4);
        gpu->copy_d2d(gc, gy, gx, n * 4);
        cpu->round_to(cc, y, n, f);
        gpu->round_to(gc, gy, n, f);
        expect_bits(f == 1 ? "round_to bf16" : "round_to fp16", y, down(gy, n * 4), n * 4);
    }
    cpu->div_scalar(cc, y, n, 3.0f), gpu->div_scalar(gc, gy, n, 3.0f);
    cpu->mul_scalar(cc, y, n, 65536.0f), gpu->mul_scalar(gc, gy, n, 65536.0f);
    cpu->add(cc, y, g, n), gpu->add(gc, gy, gg, n);
    expect_bits("div_scalar, mul_scalar, add", y, down(gy, n * 4), n * 4);
    int fc = cpu->unscale_check(cc, y, n, 1.0f / 65536.0f);
    int fg = gpu->unscale_check(gc, gy, n, 1.0f / 65536.0f);
    report(fc == fg, "unscale_check: found-inf %d on the CPU, %d on the GPU", fc, fg);
    expect_bits("unscale_check values", y, down(gy, n * 4), n * 4);
    free(x), free(g), free(y), free(dx), free(mask), free(am), free(p), free(buf), free(m), free(v);
    gpu->free(gc, gx), gpu->free(gc, gg), gpu->free(gc, gy), gpu->free(gc, gdx);
    gpu->free(gc, gmask), gpu->free(gc, gam), gpu->free(gc, gp), gpu->free(gc, gbuf);
    gpu->free(gc, gm), gpu->free(gc, gv);
}

static void check_softmax(void)
{
    int B = 100, C = 10;
    float *z = hrand((size_t)B * C), *pr = malloc(B * C * 4), *dl = malloc(B * C * 4);
    int32_t *lab = malloc(B * 4);
    for (int i = 0; i < B * C; i++)
        z[i] *= 20.0f;
    for (int i = 0; i < B; i++)
        lab[i] = (i * 7) % C;
    float *gz = up(z, B * C * 4), *gpr = gpu->alloc(gc, B * C * 4), *gdl = gpu->alloc(gc, B * C * 4);
    int32_t *glab = up(lab, B * 4);
    double lc = cpu->softmax_xent_forward(cc, z, lab, pr, B, C);
    double lg = gpu->softmax_xent_forward(gc, gz, glab, gpr, B, C);
    report(memcmp(&lc, &lg, 8) == 0, "softmax_xent.fwd loss: CPU %.17g, GPU %.17g (bitwise)", lc, lg);
    expect_bits("softmax_xent.fwd probs", pr, down(gpr, B * C * 4), B * C * 4);
    cpu->softmax_xent_backward(cc, pr, lab, dl, B, C);
    gpu->softmax_xent_backward(gc, gpr, glab, gdl, B, C);
    expect_bits("softmax_xent.bwd", dl, down(gdl, B * C * 4), B * C * 4);
    free(z), free(pr), free(dl), free(lab);
    gpu->free(gc, gz), gpu->free(gc, gpr), gpu->free(gc, gdl), gpu->free(gc, glab);
}

/* index_add ordered bitwise; ATOMIC under contention: repeated runs differ. */
static void check_index_add(void)
{
    long n = 4096;
    int width = 64, nrows = 10;
    float *src = hrand((size_t)n * width), *out = calloc((size_t)nrows * width, 4);
    int32_t *idx = malloc(n * 4);
    for (long i = 0; i < n; i++)
        idx[i] = (int32_t)((i * 3) % nrows);
    float *gsrc = up(src, (size_t)n * width * 4), *gout = gpu->alloc(gc, (size_t)nrows * width * 4);
    int32_t *gidx = up(idx, n * 4);
    cpu->index_add(cc, 0, out, nrows, idx, src, n, width);
    gpu->zero(gc, gout, (size_t)nrows * width * 4);
    gpu->index_add(gc, 0, gout, nrows, gidx, gsrc, n, width);
    expect_bits("index_add ordered", out, down(gout, (size_t)nrows * width * 4),
                (size_t)nrows * width * 4);
    /* contention: every input into row 0, 20 runs. Each result must be
     * close to the ordered sum (a check); whether repeats differ is
     * informational: a nondeterministic variant may still agree by chance. */
    for (long i = 0; i < n; i++)
        idx[i] = 0;
    gpu->copy_h2d(gc, gidx, idx, n * 4);
    memset(out, 0, (size_t)nrows * width * 4);
    cpu->index_add(cc, 0, out, nrows, idx, src, n, width);
    double bound[64] = {0};
    for (long i = 0; i < n; i++)
        for (int j = 0; j < width; j++)
            bound[j] += fabs((double)src[i * width + j]);
    float first[64], cur[64];
    int distinct = 1;
    for (int r = 0; r < 20; r++) {
        gpu->zero(gc, gout, (size_t)nrows * width * 4);
        gpu->index_add(gc, REPRO_VARIANT_ATOMIC, gout, nrows, gidx, gsrc, n, width);
        gpu->copy_d2h(gc, r ? cur : first, gout, sizeof first);
        if (r && memcmp(cur, first, sizeof cur))
            distinct++;
    }
    float *got = malloc(sizeof first);
    memcpy(got, first, sizeof first);
    expect_close("index_add atomic under contention (4096 inputs into one row)", out, got, bound,
                 (size_t)width, 1e-5);
    printf("info: index_add atomic under contention: %d of 19 repeats differ from the first "
           "(nondeterministic, as registered; informational: agreeing by chance is possible)\n",
           distinct - 1);
    free(src), free(out), free(idx);
    gpu->free(gc, gsrc), gpu->free(gc, gout), gpu->free(gc, gidx);
}

/* The host's leaf digest from the shared code (the device runs the same):
 * XXH3-128 (16 bytes, 16 zero) for fn 0, SHA-256 for fn 1. */
static void host_leaf(int fn, const uint8_t *p, size_t len, uint8_t *slot)
{
    if (fn == 1) {
        repro_hd_sha256(p, len, slot);
        return;
    }
    repro_hd_xxh3_128(p, len, slot);
    memset(slot + 16, 0, 16);
}

/* Device leaf digests and stats = the host's digest and the CPU backend's
 * stats, under each digest function (XXH3-128, the default, and SHA-256). */
static void check_hashing(void)
{
    static const size_t counts[] = {0, 1, 1023, 1024, 1025, 250000};
    static const char *const fname[2] = {"XXH3-128", "SHA-256"};
    for (int fn = 0; fn < 2; fn++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
            size_t n = counts[k], bytes = n * 4, nl = repro_leaf_count(bytes);
            float *x = hrand(n);
            if (n > 10)
                x[3] = NAN, x[9] = -INFINITY;
            void *gx = up(x, bytes);
            uint8_t *lg = malloc(32 * nl + 32), *lc = malloc(32 * nl + 32);
            repro_buffer_stats sg, sc;
            int rc = gpu->tensor_leaves(gc, fn, gx, bytes, lg, &sg);
            cpu->tensor_leaves(cc, fn, x, bytes, lc, &sc);
            /* the host's leaf digests, from the shared code */
            uint8_t *lh = malloc(32 * nl + 32);
            for (size_t i = 0; i < nl; i++) {
                size_t off = i * REPRO_LEAF_BYTES;
                size_t len = bytes - off < REPRO_LEAF_BYTES ? bytes - off : REPRO_LEAF_BYTES;
                host_leaf(fn, (const uint8_t *)x + off, len, lh + 32 * i);
            }
            report(rc == 0 && !memcmp(lg, lh, 32 * nl) && !memcmp(lc, lh, 32 * nl),
                   "device leaf digests = host leaf digests (shared %s; %zu floats, %zu leaves)",
                   fname[fn], n, nl);
            free(lh);
#ifndef REPRO_GPU_STANDALONE
            /* and the tensor digest: the library's (libxxhash or OpenSSL)
             * over the bytes = the one built from the device's leaves */
            int64_t shape[1] = {(int64_t)n};
            repro_digest host, dev;
            repro_tensor_digest_bytes_fn((repro_digest_fn)fn, &host, "t", "f32", 1, shape, x,
                                         bytes);
            repro_tensor_digest_from_leaves_fn((repro_digest_fn)fn, &dev, "t", "f32", 1, shape,
                                               bytes, (const repro_digest *)lg);
            report(rc == 0 && repro_digest_eq(&host, &dev),
                   "device tensor digest = host digest (%s; %zu floats, %zu leaves)", fname[fn],
                   n, nl);
#endif
            int same_stats = !memcmp(&sg.l2, &sc.l2, 8) && !memcmp(&sg.sum, &sc.sum, 8) &&
                             !memcmp(&sg.max_abs, &sc.max_abs, 8) && sg.nonfinite == sc.nonfinite;
            report(rc == 0 && same_stats, "device stats = host stats, bitwise (%zu floats)", n);
            free(x), free(lg), free(lc);
            gpu->free(gc, gx);
        }
}

/* cuDNN's own choice (conv_algo_choose): the heuristic (benchmark = 0)
 * and cudnnFindConvolutionForwardAlgorithmEx (benchmark = 1), each with
 * and without deterministic_only. The pick is judged against what the
 * chooser reported (gpu_pick_sound: eligible, deterministic where
 * required; by timing, every timed algorithm admissible and the pick the
 * fastest of them), and its output must be within tolerance of the CPU's.
 * cuDNN's results for the shape are listed, admitted or dropped and why;
 * it must offer at least one admissible algorithm, or its path is
 * untested. */
static void check_cudnn_choice(repro_conv_shape s)
{
    size_t nx = (size_t)s.B * s.C * s.H * s.W, nw = (size_t)s.K * s.C * s.R * s.R;
    size_t ny = (size_t)s.B * s.K * repro_conv_oh(&s) * repro_conv_ow(&s);
    float *x = hrand(nx), *w = hrand(nw), *b = hrand(s.K), *y = malloc(ny * 4);
    float *gx = up(x, nx * 4), *gw = up(w, nw * 4), *gb = up(b, s.K * 4), *gy = gpu->alloc(gc, ny * 4);
    int ncudnn = 0;
    size_t wsmax = 4;
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++) {
        if (!gpu->conv_algo_eligible(gc, (repro_conv_algo)a, &s))
            continue;
        ncudnn += a >= REPRO_CONV_CUDNN_BASE;
        if (gpu->conv_workspace_bytes(gc, (repro_conv_algo)a, &s) > wsmax)
            wsmax = gpu->conv_workspace_bytes(gc, (repro_conv_algo)a, &s);
    }
    char results[8192];
    int admitted = cudnn_report(gc, &s, results, sizeof results);
    printf("info: cuDNN's results for B%d C%d %dx%d K%d R%d, %d admitted:\n", s.B, s.C, s.H, s.W,
           s.K, s.R, admitted);
    for (char *line = strtok(results, "\n"); line; line = strtok(NULL, "\n"))
        printf("info:   %s\n", line);
    report(ncudnn > 0, "cudnn: %d cuDNN algorithm%s eligible for B%d C%d %dx%d K%d R%d (FMA math, "
                       "workspace from cudnnGetConvolutionForwardWorkspaceSize)",
           ncudnn, ncudnn == 1 ? "" : "s", s.B, s.C, s.H, s.W, s.K, s.R);
    void *gws = gpu->alloc(gc, wsmax);
    double *bound = calloc(ny, sizeof *bound);
    long OH = repro_conv_oh(&s), OW = repro_conv_ow(&s);
    for (long i = 0; i < (long)ny; i++) {
        long ox = i % OW, oy = (i / OW) % OH, k = (i / (OW * OH)) % s.K, bb = i / (OW * OH * s.K);
        double t = fabs(b[k]);
        for (int c = 0; c < s.C; c++)
            for (int ry = 0; ry < s.R; ry++)
                for (int rx = 0; rx < s.R; rx++) {
                    long iy = oy + ry - s.pad, ix = ox + rx - s.pad;
                    if (iy >= 0 && iy < s.H && ix >= 0 && ix < s.W)
                        t += fabs((double)w[((k * s.C + c) * s.R + ry) * s.R + rx] *
                                  x[((bb * s.C + c) * s.H + iy) * s.W + ix]);
                }
        bound[i] = t;
    }
    cpu->conv2d_forward(cc, REPRO_CONV_DIRECT, &s, x, w, b, y, NULL);
    for (int bench = 0; bench < 2; bench++)
        for (int det = 1; det >= 0; det--) {
            double time_us[REPRO_CONV_ALGO_LIMIT];
            for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++)
                time_us[a] = -1;
            int a = gpu->conv_algo_choose(gc, &s, bench, det, gx, gw, gb, gy, gws, wsmax, time_us);
            const char *how = bench ? "cudnnFind" : "heuristic";
            const char *mode = det ? "deterministic only" : "any";
            if (a < 0) {
                report(0, "conv_algo_choose %s (%s): failed: %s", how, mode, gpu->last_error(gc));
                continue;
            }
            int timed = 0, eligible[REPRO_CONV_ALGO_LIMIT], deterministic[REPRO_CONV_ALGO_LIMIT];
            for (int t = 0; t < REPRO_CONV_ALGO_LIMIT; t++) {
                timed += time_us[t] >= 0;
                eligible[t] = gpu->conv_algo_eligible(gc, (repro_conv_algo)t, &s);
                deterministic[t] = gpu->conv_algo_deterministic(gc, (repro_conv_algo)t, &s);
            }
            char why[160];
            int ok = gpu_pick_sound(a, bench, det, time_us, eligible, deterministic,
                                    REPRO_CONV_ALGO_LIMIT, REPRO_CONV_CUDNN_BASE, why, sizeof why);
            report(ok, "conv_algo_choose %s (%s): %s: %s (%d algorithm%s timed%s)", how, mode,
                   repro_conv_algo_name((repro_conv_algo)a),
                   ok ? (det ? "eligible, deterministic" : "eligible") : why, timed,
                   timed == 1 ? "" : "s",
                   ok && bench && timed ? ", the pick the fastest of them" : "");
            if (bench)
                report(timed > 0, "cudnnFind timed %d admissible algorithm%s", timed,
                       timed == 1 ? "" : "s");
            char what[128];
            snprintf(what, sizeof what, "conv2d.fwd with the %s choice (%s, %s)", how, mode,
                     repro_conv_algo_name((repro_conv_algo)a));
            poison(gy, ny); /* not what cudnnFind or the previous pick left there */
            gpu->conv2d_forward(gc, (repro_conv_algo)a, &s, gx, gw, gb, gy, gws);
            expect_close(what, y, down(gy, ny * 4), bound, ny, 1e-5);
        }
    free(x), free(w), free(b), free(y), free(bound);
    gpu->free(gc, gx), gpu->free(gc, gw), gpu->free(gc, gb), gpu->free(gc, gy), gpu->free(gc, gws);
}

static void group_conv(void)
{
    check_conv_shape((repro_conv_shape){64, 1, 28, 28, 8, 3, 0});
    check_conv_shape((repro_conv_shape){64, 8, 13, 13, 16, 3, 0});
    check_conv_shape((repro_conv_shape){5, 3, 9, 11, 4, 3, 1});
    check_conv_shape((repro_conv_shape){3, 4, 8, 8, 5, 5, 2});
}

static void group_cudnn(void)
{
    check_cudnn_choice((repro_conv_shape){64, 1, 28, 28, 8, 3, 0});
    check_cudnn_choice((repro_conv_shape){64, 8, 13, 13, 16, 3, 0});
}

/* An ineligible cuDNN algorithm must be refused (an error, the output
 * untouched), never computed by another kernel under its name: the trace
 * would record an algorithm that did not run. The refusal is the
 * context's sticky error, so this group runs last in its own process
 * (main expects its error). A 7x7 filter: cuDNN's Winograd algorithms take
 * 3x3 (and 5x5) only, so one id at least is ineligible. */
static void group_refusal(void)
{
    repro_conv_shape s = {2, 3, 12, 12, 4, 7, 3};
    int a = REPRO_CONV_CUDNN_BASE;
    while (a < REPRO_CONV_ALGO_LIMIT && gpu->conv_algo_eligible(gc, (repro_conv_algo)a, &s))
        a++;
    if (a == REPRO_CONV_ALGO_LIMIT) {
        report(0, "refusal: every cuDNN algorithm is eligible for B2 C3 12x12 K4 R7: the refusal "
                  "of an ineligible one cannot be exercised");
        return;
    }
    size_t nx = (size_t)s.B * s.C * s.H * s.W, nw = (size_t)s.K * s.C * s.R * s.R;
    size_t ny = (size_t)s.B * s.K * repro_conv_oh(&s) * repro_conv_ow(&s);
    float *x = hrand(nx), *w = hrand(nw), *b = hrand(s.K);
    float *gx = up(x, nx * 4), *gw = up(w, nw * 4), *gb = up(b, s.K * 4), *gy = gpu->alloc(gc, ny * 4);
    void *gws = gpu->alloc(gc, 4);
    if (gpu->synchronize(gc)) {
        report(0, "refusal: device error before the check: %s", gpu->last_error(gc));
        free(x), free(w), free(b);
        return;
    }
    poison(gy, ny);
    gpu->conv2d_forward(gc, (repro_conv_algo)a, &s, gx, gw, gb, gy, gws);
    int refused = gpu->synchronize(gc) != 0;
    float *got = calloc(ny, 4);
    gpu->copy_d2h(gc, got, gy, ny * 4);
    float *want = malloc(ny * 4);
    gpu_poison_fill(want, ny);
    gpu_compare_result r = gpu_compare_words(want, got, ny, 0);
    report(refused && r.differ == 0,
           "refusal: ineligible %s for B2 C3 12x12 K4 R7: %s; output %s", repro_conv_algo_name(a),
           refused ? gpu->last_error(gc) : "NOT refused (it ran something under its name)",
           r.differ ? "WRITTEN" : "untouched");
    free(x), free(w), free(b), free(got), free(want);
    gpu->free(gc, gx), gpu->free(gc, gw), gpu->free(gc, gb), gpu->free(gc, gy), gpu->free(gc, gws);
}

static void group_memory(void)
{
    /* something to cache first: a few allocations of assorted sizes */
    void *p[4];
    for (int i = 0; i < 4; i++)
        p[i] = gpu->alloc(gc, (size_t)4096 << (3 * i));
    for (int i = 0; i < 4; i++)
        gpu->free(gc, p[i]);
    repro_memory_stats ms;
    gpu->memory_stats(gc, &ms);
    printf("memory: %zu B in use, peak %zu B, %zu B cached, %zu B pinned\n", ms.in_use, ms.peak,
           ms.cached, ms.pinned);
    report(ms.cached > 0, "caching allocator: %zu B cached after freeing", ms.cached);
    gpu->empty_cache(gc);
    gpu->memory_stats(gc, &ms);
    report(ms.cached == 0, "empty_cache: %zu B cached after it", ms.cached);
#ifndef REPRO_GPU_FAKE_DEVICE /* the CPU posing as a device has no device memory */
    report(ms.device_total > 0 && ms.device_free <= ms.device_total,
           "cudaMemGetInfo beside the cache: %zu B free of %zu B", ms.device_free,
           ms.device_total);
#endif
}

/* ends_in_error: the group leaves the context's sticky error on purpose
 * (and judges it itself); it runs last. */
static const struct {
    const char *name;
    void (*run)(void);
    int ends_in_error;
} groups[] = {
    {"linear", check_linear, 0},       {"conv", group_conv, 0},
    {"cudnn", group_cudnn, 0},         {"pointwise", check_pointwise, 0},
    {"softmax", check_softmax, 0},     {"index_add", check_index_add, 0},
    {"hashing", check_hashing, 0},     {"memory", group_memory, 0},
    {"refusal", group_refusal, 1},
};
enum { NGROUPS = sizeof groups / sizeof *groups };

/* 3: no CUDA device or driver; 4: cuDNN unusable (the why names it). */
static int unavailable(const char *why)
{
    printf("no GPU check: cuda backend unavailable: %s\n", why);
    return strstr(why, "cudnn") || strstr(why, "CUDNN") ? 4 : 3;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int g = 0; g < NGROUPS; g++)
            printf("%s\n", groups[g].name);
        return 0;
    }
    int run[NGROUPS] = {0};
    for (int i = 1; i < argc; i++) {
        int g = 0;
        while (g < NGROUPS && strcmp(argv[i], groups[g].name))
            g++;
        if (g == NGROUPS) {
            fprintf(stderr, "check_cuda_ops: no group %s (--list names them)\n", argv[i]);
            return 2;
        }
        run[g] = 1;
    }
    for (int g = 0; g < NGROUPS && argc == 1; g++)
        run[g] = 1;
    cpu = repro_backend_get("cpu");
    gpu = device_backend();
    if (!gpu) {
        printf("no GPU check: %s\n", repro_backend_missing("cuda"));
        return 3;
    }
    char why[256];
    repro_backend_options o = {.threads = 1, .device = 0};
    printf("reaching the device: creating the cuda backend\n");
    fflush(stdout);
    if (gpu->create(&gc, &o, why, sizeof why))
        return unavailable(why);
    if (cpu->create(&cc, &o, why, sizeof why)) {
        printf("cpu backend: %s\n", why);
        return 1;
    }
    repro_device_info d;
    if (gpu->describe_device(0, &d, why, sizeof why) == 0)
        printf("device: %s, %d SMs, cc %d.%d, driver %s, CUDA %s, cuDNN %s\n", d.name, d.sm_count,
               d.cc_major, d.cc_minor, d.driver, d.runtime, d.cudnn);
    for (int g = 0; g < NGROUPS; g++) {
        if (!run[g])
            continue;
        printf("group %s\n", groups[g].name);
        groups[g].run();
        /* a sticky error ends this process: later groups would only repeat it */
        if (groups[g].ends_in_error)
            break;
        if (gpu->synchronize(gc)) {
            report(0, "group %s: device error: %s (later groups of this process skipped)",
                   groups[g].name, gpu->last_error(gc));
            break;
        }
    }
    gpu->destroy(gc);
    cpu->destroy(cc);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
