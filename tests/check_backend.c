/* Tests for the backend seam (kernels/backend.h): the CPU backend found by
 * name (an unknown name is not), its table complete, and every entry,
 * called through the table on backend memory, bitwise equal to the CPU
 * kernel it wraps called directly (small shapes, Philox-seeded inputs, 1
 * and 3 threads; the atomic variants with 1 thread, where they are
 * deterministic: shapes big enough that their sums round unlike the
 * ordered ones, except index_add's, whose 1-thread order is the ordered
 * one by construction). */
#include <check.h>
#include <stdatomic.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/backend.h"
#include "kernels/cpu/atomic.h"
#include "kernels/cpu/conv_algos.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/philox.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/precision.h"

/* The table on `threads` threads, and a pool of as many for direct calls. */
typedef struct {
    const repro_backend *be;
    void *ctx;
    repro_pool *pool;
} fx;

static void fx_open(fx *f, int threads)
{
    char why[128] = "";
    f->be = repro_backend_get("cpu");
    ck_assert_ptr_nonnull(f->be);
    repro_backend_options o = {.threads = threads};
    ck_assert_msg(f->be->create(&f->ctx, &o, why, sizeof why) == 0, "%s", why);
    ck_assert_int_eq(repro_pool_new(&f->pool, threads), 0);
}

static void fx_close(fx *f)
{
    f->be->destroy(f->ctx);
    repro_pool_free(f->pool);
}

/* n floats uniform in [-1, 1) from Philox stream `key` (host memory). */
static float *rnd(long n, uint64_t key)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (long i = 0; i < n; i++)
        p[i] = 2.0f * repro_u32_to_unit(repro_philox_at(key, (uint64_t)i, 0).v[0]) - 1.0f;
    return p;
}

/* Backend memory holding a copy of host[0..bytes). */
static void *up(fx *f, const void *host, size_t bytes)
{
    void *d = f->be->alloc(f->ctx, bytes);
    ck_assert_ptr_nonnull(d);
    f->be->copy_h2d(f->ctx, d, host, bytes);
    return d;
}

/* The backend buffer d equals host[0..bytes) bit for bit; frees d. */
static void same(fx *f, void *d, const void *host, size_t bytes)
{
    void *h = malloc(bytes);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(f->be->synchronize(f->ctx), 0);
    f->be->copy_d2h(f->ctx, h, d, bytes);
    ck_assert_msg(memcmp(h, host, bytes) == 0, "table and direct call differ");
    free(h);
    f->be->free(f->ctx, d);
}

static const int threads[] = {1, 3};
#define NT ((int)(sizeof threads / sizeof threads[0]))
#define FB(n) ((size_t)(n) * sizeof(float))

START_TEST(test_lookup_by_name)
{
    const repro_backend *cpu = repro_backend_get("cpu");
    ck_assert_ptr_nonnull(cpu);
    ck_assert_ptr_eq(cpu, &repro_backend_cpu);
    ck_assert_str_eq(cpu->name, "cpu");
    ck_assert_int_eq(cpu->host_memory, 1);
    ck_assert_ptr_null(repro_backend_get("no-such-backend"));
    ck_assert_ptr_null(repro_backend_get("CPU"));
    ck_assert_ptr_null(repro_backend_get(""));
    ck_assert_ptr_null(repro_backend_get(NULL));
    const repro_backend *const *all = repro_backend_list();
    ck_assert_ptr_eq(all[0], cpu);
    for (int i = 0; all[i]; i++)
        ck_assert_ptr_eq(repro_backend_get(all[i]->name), all[i]);
}
END_TEST

/* The entries added for device backends, on the CPU: every algorithm is
 * deterministic, memory figures count what is allocated and freed, and
 * there is no device to describe (with a reason). tensor_leaves is tested
 * against OpenSSL in check_sha256_shared.c. */
/* set_idle_work lends the kernel threads (2 here: one besides the
 * caller) while they wait; stopping it returns with no call in progress.
 * The pool's own test (check_pool.c) covers jobs interleaved with it. */
static int idle_count(void *arg)
{
    atomic_long *n = arg;
    return atomic_fetch_add(n, 1) < 100000;
}

START_TEST(test_set_idle_work)
{
    const repro_backend *b = &repro_backend_cpu;
    repro_backend_options opt = {2, 0};
    char why[256] = "";
    void *ctx = NULL;
    ck_assert_int_eq(b->create(&ctx, &opt, why, sizeof why), 0);
    atomic_long n = 0;
    b->set_idle_work(ctx, idle_count, &n);
    /* A wall-clock deadline, not a count of sleeps: on a loaded machine the
     * kernel thread may not be scheduled for seconds. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        usleep(100);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (atomic_load(&n) < 100 && t.tv_sec - t0.tv_sec < 30);
    b->set_idle_work(ctx, NULL, NULL);
    long seen = atomic_load(&n);
    ck_assert_int_ge(seen, 100);
    usleep(1000);
    ck_assert_int_eq(atomic_load(&n), seen);
    b->destroy(ctx);
}
END_TEST

START_TEST(test_device_entries_on_cpu)
{
    const repro_backend *b = &repro_backend_cpu;
    repro_backend_options opt = {1, 0};
    char why[256] = "";
    void *ctx = NULL;
    ck_assert_int_eq(b->create(&ctx, &opt, why, sizeof why), 0);
    ck_assert_ptr_nonnull(ctx);
    repro_conv_shape s = {2, 3, 8, 8, 4, 3, 1};
    for (int a = 0; a < REPRO_CONV_NALGOS; a++)
        if (b->conv_algo_eligible(ctx, (repro_conv_algo)a, &s))
            ck_assert(b->conv_algo_deterministic(ctx, (repro_conv_algo)a, &s));
    repro_memory_stats m0, m1;
    b->memory_stats(ctx, &m0);
    void *p = b->alloc(ctx, 4096);
    ck_assert_ptr_nonnull(p);
    b->memory_stats(ctx, &m1);
    ck_assert_uint_ge(m1.in_use, m0.in_use);
    ck_assert_uint_ge(m1.peak, m1.in_use);
    b->free(ctx, p);
    b->empty_cache(ctx);
    b->set_idle_work(ctx, NULL, NULL); /* a 1-thread context lends nothing: a no-op */
    repro_device_info info;
    char dwhy[256] = "";
    (void)b->describe_device(0, &info, dwhy, sizeof dwhy);
    b->destroy(ctx);
}
END_TEST

START_TEST(test_table_complete)
{
    const repro_backend *b = &repro_backend_cpu;
    int n = 0;
#define ENTRY(e) (ck_assert_msg(b->e != NULL, "cpu backend lacks " #e), n++)
    ENTRY(create), ENTRY(destroy), ENTRY(synchronize), ENTRY(last_error);
    ENTRY(alloc), ENTRY(free), ENTRY(copy_h2d), ENTRY(copy_d2h), ENTRY(copy_d2d), ENTRY(zero);
    ENTRY(linear_workspace_bytes), ENTRY(linear_forward), ENTRY(linear_backward_data);
    ENTRY(linear_backward_weight), ENTRY(linear_backward_bias);
    ENTRY(linear_backward_weight_sharded); /* optional; the CPU's is tested in check_kernels.c */
    ENTRY(conv_algo_eligible), ENTRY(conv_workspace_bytes), ENTRY(conv2d_forward);
    ENTRY(conv2d_backward_data), ENTRY(conv2d_backward_filter);
    ENTRY(conv2d_backward_filter_sharded); /* optional; the CPU's is tested in check_kernels.c */
    ENTRY(relu_forward), ENTRY(relu_backward), ENTRY(maxpool2d_forward);
    ENTRY(maxpool2d_backward), ENTRY(dropout_forward), ENTRY(dropout_backward);
    ENTRY(maxpool2d_relu_forward), ENTRY(maxpool2d_relu_backward); /* optional; the CPU's are
                                                                     tested in check_kernels.c */
    ENTRY(softmax_xent_forward), ENTRY(softmax_xent_backward), ENTRY(sgd_step);
    ENTRY(adamw_step), ENTRY(index_add), ENTRY(round_to), ENTRY(div_scalar);
    ENTRY(mul_scalar), ENTRY(add), ENTRY(unscale_check);
    ENTRY(conv_algo_deterministic), ENTRY(tensor_leaves), ENTRY(memory_stats);
    ENTRY(empty_cache), ENTRY(set_idle_work), ENTRY(describe_device);
    /* The CPU has no algorithm chooser of its own: the harness's rule and
     * timing choose (core/algo_select.c); a device backend fills it. */
    ck_assert_ptr_null(b->conv_algo_choose);
    n++;
#undef ENTRY
    /* Every entry of the struct is listed (and tested below): a new entry
     * without a test changes the count. */
    size_t entries = (sizeof(repro_backend) - offsetof(repro_backend, create)) /
                     sizeof(void (*)(void));
    ck_assert_int_eq(n, (int)entries);
}
END_TEST

START_TEST(test_context_and_memory)
{
    const repro_backend *b = &repro_backend_cpu;
    void *ctx = NULL;
    char why[128] = "";
    repro_backend_options bad = {.threads = 0};
    ck_assert_int_ne(b->create(&ctx, &bad, why, sizeof why), 0);
    ck_assert_ptr_null(ctx);
    ck_assert(why[0] != '\0');
    fx f;
    fx_open(&f, 2);
    ck_assert_int_eq(b->synchronize(f.ctx), 0);
    ck_assert_str_eq(b->last_error(f.ctx), "");
    float *h = rnd(1000, 1), *back = malloc(FB(1000));
    float *d = b->alloc(f.ctx, FB(1000)), *d2 = b->alloc(f.ctx, FB(1000));
    ck_assert(d && d2 && back);
    ck_assert_int_eq((int)((uintptr_t)d % 64), 0);
    b->copy_h2d(f.ctx, d, h, FB(1000));
    b->copy_d2d(f.ctx, d2, d, FB(1000));
    b->copy_d2h(f.ctx, back, d2, FB(1000));
    ck_assert(memcmp(back, h, FB(1000)) == 0);
    b->zero(f.ctx, d2, FB(1000));
    b->copy_d2h(f.ctx, back, d2, FB(1000));
    for (int i = 0; i < 1000; i++)
        ck_assert(back[i] == 0.0f && !signbit(back[i]));
    b->free(f.ctx, d);
    b->free(f.ctx, d2);
    b->free(f.ctx, NULL);
    b->destroy(NULL);
    free(h), free(back);
    fx_close(&f);
}
END_TEST

START_TEST(test_linear)
{
    enum { B = 29, IN = 7, OUT = 16 }; /* 8 atomic chunks: their sums round unlike ordered */
    for (int t = 0; t < NT; t++) {
        fx f;
        fx_open(&f, threads[t]);
        const repro_backend *b = f.be;
        float *x = rnd(B * IN, 10), *w = rnd(OUT * IN, 11), *bias = rnd(OUT, 12);
        float *dy = rnd(B * OUT, 13), *y = rnd(B * OUT, 14), *dx = rnd(B * IN, 15);
        size_t wsb = b->linear_workspace_bytes(f.ctx, B, IN, OUT);
        ck_assert_uint_eq(wsb, FB(IN * OUT));
        float *scratch = malloc(wsb);
        void *dws = b->alloc(f.ctx, wsb);
        float *dxx = up(&f, x, FB(B * IN)), *dw = up(&f, w, FB(OUT * IN));
        float *db = up(&f, bias, FB(OUT)), *ddy = up(&f, dy, FB(B * OUT));
        float *dyy = up(&f, y, FB(B * OUT)), *ddx = up(&f, dx, FB(B * IN));
        repro_linear_forward(f.pool, x, w, bias, y, B, IN, OUT, scratch);
        b->linear_forward(f.ctx, REPRO_VARIANT_ORDERED, dxx, dw, db, dyy, B, IN, OUT, dws);
        same(&f, dyy, y, FB(B * OUT));
        repro_linear_backward_data(f.pool, dy, w, dx, B, IN, OUT);
        b->linear_backward_data(f.ctx, ddy, dw, ddx, B, IN, OUT);
        same(&f, ddx, dx, FB(B * IN));
        for (int v = 0; v < 2 && !(v && threads[t] > 1); v++)
            for (int acc = 0; acc < 2; acc++) {
                float *gw = rnd(OUT * IN, 16), *gb = rnd(OUT, 17);
                float *dgw = up(&f, gw, FB(OUT * IN)), *dgb = up(&f, gb, FB(OUT));
                if (v) {
                    repro_linear_backward_weight_atomic(f.pool, dy, x, gw, B, IN, OUT, acc);
                    repro_linear_backward_bias_atomic(f.pool, dy, gb, B, OUT, acc);
                } else {
                    repro_linear_backward_weight(f.pool, dy, x, gw, B, IN, OUT, acc);
                    repro_linear_backward_bias(f.pool, dy, gb, B, OUT, acc);
                }
                b->linear_backward_weight(f.ctx, v, ddy, dxx, dgw, B, IN, OUT, acc);
                b->linear_backward_bias(f.ctx, v, ddy, dgb, B, OUT, acc);
                same(&f, dgw, gw, FB(OUT * IN));
                same(&f, dgb, gb, FB(OUT));
                free(gw), free(gb);
            }
        b->free(f.ctx, dxx), b->free(f.ctx, dw), b->free(f.ctx, db), b->free(f.ctx, ddy);
        b->free(f.ctx, dws);
        free(x), free(w), free(bias), free(dy), free(y), free(dx), free(scratch);
        fx_close(&f);
    }
}
END_TEST

static long conv_xn(const repro_conv_shape *s) { return (long)s->B * s->C * s->H * s->W; }
static long conv_wn(const repro_conv_shape *s) { return (long)s->K * s->C * s->R * s->R; }
static long conv_yn(const repro_conv_shape *s)
{
    return (long)s->B * s->K * repro_conv_oh(s) * repro_conv_ow(s);
}

/* Forward by every algorithm, eligibility and workspace size. */
static void conv_forward(fx *f, const repro_conv_shape *s, const float *x, const float *w,
                         const float *bias, float *dxx, float *dw, float *db)
{
    for (int a = 0; a < REPRO_CONV_NALGOS; a++) {
        repro_conv_algo al = (repro_conv_algo)a;
        ck_assert_int_eq(f->be->conv_algo_eligible(f->ctx, al, s),
                         repro_conv_algo_eligible(al, s));
        size_t wsb = f->be->conv_workspace_bytes(f->ctx, al, s);
        ck_assert_uint_eq(wsb, FB(repro_conv_workspace_floats(al, s)));
        if (!repro_conv_algo_eligible(al, s))
            continue;
        float *ws = malloc(wsb ? wsb : 1), *y = rnd(conv_yn(s), 30);
        void *dws = wsb ? f->be->alloc(f->ctx, wsb) : NULL;
        float *dy = up(f, y, FB(conv_yn(s)));
        repro_conv2d_forward_algo(f->pool, al, s, x, w, bias, y, ws);
        f->be->conv2d_forward(f->ctx, al, s, dxx, dw, db, dy, dws);
        same(f, dy, y, FB(conv_yn(s)));
        f->be->free(f->ctx, dws);
        free(ws), free(y);
    }
}

/* Backward filter: both variants (atomic with 1 thread only), accumulate
 * or not, with and without the bias gradient. */
static void conv_filter(fx *f, int nthreads, const repro_conv_shape *s, const float *x,
                        const float *g, float *dxx, float *dg)
{
    for (int v = 0; v < 2 && !(v && nthreads > 1); v++)
        for (int acc = 0; acc < 2; acc++)
            for (int withb = 0; withb < 2; withb++) {
                float *gw = rnd(conv_wn(s), 31), *gb = rnd(s->K, 32);
                float *dgw = up(f, gw, FB(conv_wn(s))), *dgb = up(f, gb, FB(s->K));
                if (v)
                    repro_conv2d_backward_filter_atomic(f->pool, s, g, x, gw, withb ? gb : NULL,
                                                        acc);
                else
                    repro_conv2d_backward_filter(f->pool, s, g, x, gw, withb ? gb : NULL, acc);
                f->be->conv2d_backward_filter(f->ctx, v, s, dg, dxx, dgw, withb ? dgb : NULL,
                                              acc);
                same(f, dgw, gw, FB(conv_wn(s)));
                same(f, dgb, gb, FB(s->K));
                free(gw), free(gb);
            }
}

START_TEST(test_conv2d)
{
    static const repro_conv_shape shapes[] = {{2, 3, 7, 6, 4, 3, 1}, {2, 2, 6, 6, 3, 2, 0}};
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < 2; k++) {
            const repro_conv_shape *s = &shapes[k];
            fx f;
            fx_open(&f, threads[t]);
            float *x = rnd(conv_xn(s), 20), *w = rnd(conv_wn(s), 21), *bias = rnd(s->K, 22);
            float *g = rnd(conv_yn(s), 23), *dx = rnd(conv_xn(s), 24);
            float *dxx = up(&f, x, FB(conv_xn(s))), *dw = up(&f, w, FB(conv_wn(s)));
            float *db = up(&f, bias, FB(s->K)), *dg = up(&f, g, FB(conv_yn(s)));
            float *ddx = up(&f, dx, FB(conv_xn(s)));
            conv_forward(&f, s, x, w, bias, dxx, dw, db);
            repro_conv2d_backward_data(f.pool, s, g, w, dx);
            f.be->conv2d_backward_data(f.ctx, s, dg, dw, ddx);
            same(&f, ddx, dx, FB(conv_xn(s)));
            conv_filter(&f, threads[t], s, x, g, dxx, dg);
            f.be->free(f.ctx, dxx), f.be->free(f.ctx, dw), f.be->free(f.ctx, db);
            f.be->free(f.ctx, dg);
            free(x), free(w), free(bias), free(g), free(dx);
            fx_close(&f);
        }
}
END_TEST

START_TEST(test_relu_maxpool)
{
    enum { B = 2, C = 3, H = 6, W = 5, K = 2, N = B * C * H * W, NO = B * C * (H / K) * (W / K) };
    for (int t = 0; t < NT; t++) {
        fx f;
        fx_open(&f, threads[t]);
        const repro_backend *b = f.be;
        float *x = rnd(N, 40), *dy = rnd(N, 41), *y = rnd(N, 42), *dx = rnd(N, 43);
        x[3] = NAN; /* a NaN passes ReLU and wins its pooling window */
        float *dxx = up(&f, x, FB(N)), *ddy = up(&f, dy, FB(N));
        float *dyy = up(&f, y, FB(N)), *ddx = up(&f, dx, FB(N));
        repro_relu_forward(f.pool, x, y, N);
        b->relu_forward(f.ctx, dxx, dyy, N);
        repro_relu_backward(f.pool, y, dy, dx, N);
        b->relu_backward(f.ctx, dyy, ddy, ddx, N);
        same(&f, ddx, dx, FB(N));
        same(&f, dyy, y, FB(N));
        float *py = rnd(NO, 44), *pdy = rnd(NO, 45), *pdx = rnd(N, 46);
        int32_t am[NO];
        memset(am, 0x55, sizeof am);
        float *dpy = up(&f, py, FB(NO)), *dpdy = up(&f, pdy, FB(NO)), *dpdx = up(&f, pdx, FB(N));
        int32_t *dam = up(&f, am, sizeof am);
        repro_maxpool2d_forward(f.pool, B, C, H, W, K, x, py, am);
        b->maxpool2d_forward(f.ctx, B, C, H, W, K, dxx, dpy, dam);
        repro_maxpool2d_backward(f.pool, B, C, H, W, K, am, pdy, pdx);
        b->maxpool2d_backward(f.ctx, B, C, H, W, K, dam, dpdy, dpdx);
        same(&f, dpy, py, FB(NO));
        same(&f, dam, am, sizeof am);
        same(&f, dpdx, pdx, FB(N));
        b->free(f.ctx, dxx), b->free(f.ctx, ddy), b->free(f.ctx, dpdy);
        free(x), free(dy), free(y), free(dx), free(py), free(pdy), free(pdx);
        fx_close(&f);
    }
}
END_TEST

START_TEST(test_dropout)
{
    enum { N = 40000 }; /* more than one chunk of the CPU kernel */
    static const float ps[] = {0.0f, 0.25f};
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < 2; k++) {
            fx f;
            fx_open(&f, threads[t]);
            float *x = rnd(N, 50), *y = rnd(N, 51), *dy = rnd(N, 52), *dx = rnd(N, 53);
            uint8_t *mask = malloc(N);
            memset(mask, 7, N);
            float *dxx = up(&f, x, FB(N)), *dyy = up(&f, y, FB(N)), *ddy = up(&f, dy, FB(N));
            float *ddx = up(&f, dx, FB(N));
            uint8_t *dmask = up(&f, mask, N);
            repro_dropout_forward(f.pool, x, y, mask, N, ps[k], 0x1234);
            f.be->dropout_forward(f.ctx, dxx, dyy, dmask, N, ps[k], 0x1234);
            repro_dropout_backward(f.pool, dy, mask, dx, N, ps[k]);
            f.be->dropout_backward(f.ctx, ddy, dmask, ddx, N, ps[k]);
            same(&f, dyy, y, FB(N));
            same(&f, dmask, mask, N);
            same(&f, ddx, dx, FB(N));
            f.be->free(f.ctx, dxx), f.be->free(f.ctx, ddy);
            free(x), free(y), free(dy), free(dx), free(mask);
            fx_close(&f);
        }
}
END_TEST

START_TEST(test_softmax_xent)
{
    enum { B = 6, C = 10 };
    fx f;
    fx_open(&f, 2);
    float *z = rnd(B * C, 60), *probs = rnd(B * C, 61), *dz = rnd(B * C, 62);
    int32_t labels[B] = {0, 9, 3, 3, 7, 1};
    float *dzz = up(&f, z, FB(B * C)), *dprobs = up(&f, probs, FB(B * C));
    float *ddz = up(&f, dz, FB(B * C));
    int32_t *dl = up(&f, labels, sizeof labels);
    double want = repro_softmax_xent_forward(z, labels, probs, B, C);
    double got = f.be->softmax_xent_forward(f.ctx, dzz, dl, dprobs, B, C);
    ck_assert(memcmp(&want, &got, sizeof want) == 0);
    repro_softmax_xent_backward(probs, labels, dz, B, C);
    f.be->softmax_xent_backward(f.ctx, dprobs, dl, ddz, B, C);
    same(&f, dprobs, probs, FB(B * C));
    same(&f, ddz, dz, FB(B * C));
    f.be->free(f.ctx, dzz), f.be->free(f.ctx, dl);
    free(z), free(probs), free(dz);
    fx_close(&f);
}
END_TEST

START_TEST(test_optimizers)
{
    enum { N = 20000 };
    for (int t = 0; t < NT; t++) {
        fx f;
        fx_open(&f, threads[t]);
        float *g = rnd(N, 70), *dg = up(&f, g, FB(N));
        for (int first = 0; first < 2; first++) {
            float *p = rnd(N, 71), *buf = rnd(N, 72);
            float *dp = up(&f, p, FB(N)), *dbuf = up(&f, buf, FB(N));
            repro_sgd_step(f.pool, p, g, buf, N, 0.05f, 0.9f, 0.01f, first);
            f.be->sgd_step(f.ctx, dp, dg, dbuf, N, 0.05f, 0.9f, 0.01f, first);
            same(&f, dp, p, FB(N));
            same(&f, dbuf, buf, FB(N));
            free(p), free(buf);
        }
        float *p = rnd(N, 73), *m = rnd(N, 74), *v = rnd(N, 75);
        for (long i = 0; i < N; i++)
            v[i] = v[i] * v[i]; /* a second moment is >= 0 */
        float *dp = up(&f, p, FB(N)), *dm = up(&f, m, FB(N)), *dv = up(&f, v, FB(N));
        double bc1 = 1.0 - 0.9 * 0.9 * 0.9, bc2 = 1.0 - 0.999 * 0.999 * 0.999;
        repro_adamw_step(f.pool, p, g, m, v, N, 0.003f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2);
        f.be->adamw_step(f.ctx, dp, dg, dm, dv, N, 0.003f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2);
        same(&f, dp, p, FB(N));
        same(&f, dm, m, FB(N));
        same(&f, dv, v, FB(N));
        f.be->free(f.ctx, dg);
        free(g), free(p), free(m), free(v);
        fx_close(&f);
    }
}
END_TEST

START_TEST(test_index_add)
{
    enum { N = 23, W = 9, ROWS = 4 };
    int32_t index[N];
    for (int i = 0; i < N; i++)
        index[i] = (int32_t)(repro_philox_at(80, (uint64_t)i, 0).v[0] % ROWS);
    for (int t = 0; t < NT; t++)
        for (int v = 0; v < 2 && !(v && threads[t] > 1); v++) {
            fx f;
            fx_open(&f, threads[t]);
            float *src = rnd(N * W, 81), *out = rnd(ROWS * W, 82);
            float *dsrc = up(&f, src, FB(N * W)), *dout = up(&f, out, FB(ROWS * W));
            int32_t *didx = up(&f, index, sizeof index);
            if (v)
                repro_index_add_atomic(f.pool, out, ROWS, index, src, N, W);
            else
                repro_index_add(f.pool, out, ROWS, index, src, N, W);
            f.be->index_add(f.ctx, v, dout, ROWS, didx, dsrc, N, W);
            same(&f, dout, out, FB(ROWS * W));
            f.be->free(f.ctx, dsrc), f.be->free(f.ctx, didx);
            free(src), free(out);
            fx_close(&f);
        }
}
END_TEST

START_TEST(test_mixed_precision)
{
    enum { N = 1000 };
    fx f;
    fx_open(&f, 2);
    const repro_backend *b = f.be;
    for (int fmt = REPRO_ROUND_BF16; fmt <= REPRO_ROUND_FP16; fmt++) {
        float *x = rnd(N, 90 + (uint64_t)fmt);
        x[0] = 70000.0f, x[1] = 1e-30f, x[2] = NAN; /* fp16 overflow, subnormals, NaN */
        float *dx = up(&f, x, FB(N));
        repro_round_buffer(x, N, fmt);
        b->round_to(f.ctx, dx, N, fmt);
        same(&f, dx, x, FB(N));
        free(x);
    }
    float *x = rnd(N, 95), *y = rnd(N, 96);
    float *dx = up(&f, x, FB(N)), *dy = up(&f, y, FB(N));
    repro_div_scalar(x, N, 3.0f);
    b->div_scalar(f.ctx, dx, N, 3.0f);
    repro_mul_scalar(x, N, 65536.0f);
    b->mul_scalar(f.ctx, dx, N, 65536.0f);
    repro_add_into(y, x, N);
    b->add(f.ctx, dy, dx, N);
    ck_assert_int_eq(repro_unscale_check(x, N, 1.0f / 65536.0f), 0);
    ck_assert_int_eq(b->unscale_check(f.ctx, dx, N, 1.0f / 65536.0f), 0);
    x[N - 1] = INFINITY;
    b->copy_h2d(f.ctx, dx + N - 1, &x[N - 1], sizeof(float));
    ck_assert_int_eq(repro_unscale_check(x, N, 0.5f), 1);
    ck_assert_int_eq(b->unscale_check(f.ctx, dx, N, 0.5f), 1);
    same(&f, dx, x, FB(N));
    same(&f, dy, y, FB(N));
    free(x), free(y);
    fx_close(&f);
}
END_TEST

Suite *backend_suite(void)
{
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("backend");
    tcase_add_test(tc, test_lookup_by_name);
    tcase_add_test(tc, test_table_complete);
    tcase_add_test(tc, test_device_entries_on_cpu);
    tcase_add_test(tc, test_set_idle_work);
    tcase_add_test(tc, test_context_and_memory);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_conv2d);
    tcase_add_test(tc, test_relu_maxpool);
    tcase_add_test(tc, test_dropout);
    tcase_add_test(tc, test_softmax_xent);
    tcase_add_test(tc, test_optimizers);
    tcase_add_test(tc, test_index_add);
    tcase_add_test(tc, test_mixed_precision);
    suite_add_tcase(s, tc);
    return s;
}
