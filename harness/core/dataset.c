/* Datasets in memory (see dataset.h): the seeded synthetic generator and the
 * IDX (MNIST-layout) loader.
 *
 * Determinism: the synthetic set uses only integer arithmetic and IEEE
 * float +, -, *, / (no libm, compiled with -ffp-contract=off), every random
 * number comes from a counter-based Philox stream keyed per class or per
 * sample, so sample j of a split is a pure function of (seed, split, j): the
 * same bytes on every machine, whatever n or generation order. */
#include "core/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "core/idx.h"
#include "kernels/philox.h"
#include "util/seeds.h"

#define MAX_SYNTHETIC ((int)1 << 24)
#define SHIFT_MAX 2          /* per-sample translation, pixels per axis */
#define NOISE_STD 0.3f       /* on the 0..1 pixel scale */
#define DISTRACT_MAX 0.8f    /* weight of another class's prototype, times contrast */

/* Uniform integer in [0, n) from one 32-bit draw (multiply-high, no division). */
static uint32_t below32(uint32_t u, uint32_t n)
{
    return (uint32_t)(((uint64_t)u * n) >> 32);
}

/* A normal-ish number from one 32-bit word: Irwin-Hall sum of its four bytes
 * (each uniform on 0..255, variance 65535/12), centred and scaled to unit
 * variance. Four per Philox block instead of repro_philox_normal's one: the
 * noise is quantized to 8 bits anyway, and this makes generation 4x faster
 * (10,000 samples in tens of ms). Integer sum, then one float multiply: the
 * same bits everywhere. */
static float byte_normal(uint32_t u)
{
    int s = (int)(u & 0xff) + (int)(u >> 8 & 0xff) + (int)(u >> 16 & 0xff) + (int)(u >> 24);
    return (float)(s - 510) * 0.0067658f; /* 1 / sqrt(4 * 65535 / 12) */
}

/* Class prototypes: 3-5 strokes or blobs inside the central 20x20 area, each
 * with a compact polynomial falloff (1 - d^2/r^2)^2, combined by max. */
static void make_prototype(uint64_t seed, int cls, float *proto)
{
    repro_rng rng;
    repro_rng_init(&rng, repro_seed_derive(seed, REPRO_PURPOSE_DATA_PROTO, 0, 0, 0, (uint32_t)cls));
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        proto[i] = 0.0f;
    int strokes = 3 + (int)repro_rng_below(&rng, 3);
    for (int s = 0; s < strokes; s++) {
        /* Endpoints in [5, 23): with the stroke radius and the +-2 px sample
         * shift, ink stays inside the image. */
        float ax = 5.0f + 18.0f * repro_rng_unit(&rng);
        float ay = 5.0f + 18.0f * repro_rng_unit(&rng);
        float bx = 5.0f + 18.0f * repro_rng_unit(&rng);
        float by = 5.0f + 18.0f * repro_rng_unit(&rng);
        float r = 1.6f + 1.0f * repro_rng_unit(&rng);
        if (repro_rng_below(&rng, 4) == 0) { /* a blob: a fat zero-length stroke */
            bx = ax;
            by = ay;
            r += 1.0f;
        }
        float ex = bx - ax, ey = by - ay;
        float len2 = ex * ex + ey * ey;
        float r2 = r * r;
        for (int y = 0; y < REPRO_IMG_ROWS; y++) {
            for (int x = 0; x < REPRO_IMG_COLS; x++) {
                float px = (float)x + 0.5f - ax, py = (float)y + 0.5f - ay;
                float t = 0.0f;
                if (len2 > 0.0f) {
                    t = (px * ex + py * ey) / len2;
                    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
                }
                float dx = px - t * ex, dy = py - t * ey;
                float u = (dx * dx + dy * dy) / r2;
                if (u < 1.0f) {
                    float v = (1.0f - u) * (1.0f - u);
                    float *p = &proto[y * REPRO_IMG_COLS + x];
                    if (v > *p)
                        *p = v;
                }
            }
        }
    }
}

static void make_sample(uint64_t key, const float *protos, uint8_t *img, uint8_t *label)
{
    /* Block 0: label, shift y, shift x, contrast. Blocks 1..196: the noise,
     * four pixels per block in row-major order. Counter-addressed, so no
     * draw depends on how many came before. */
    repro_philox_ctr b = repro_philox_at(key, 0, 0);
    int cls = (int)below32(b.v[0], REPRO_CLASSES);
    int dy = (int)below32(b.v[1], 2 * SHIFT_MAX + 1) - SHIFT_MAX;
    int dx = (int)below32(b.v[2], 2 * SHIFT_MAX + 1) - SHIFT_MAX;
    float contrast = 0.6f + 0.4f * repro_u32_to_unit(b.v[3]);
    const float *proto = protos + cls * REPRO_IMG_PIXELS;
    *label = (uint8_t)cls;
    /* Block 197 (after the noise): a faint distractor, another class's
     * prototype at weight 0..DISTRACT_MAX of this sample's contrast, so
     * classes overlap and accuracy stays informative instead of 100%. */
    repro_philox_ctr d = repro_philox_at(key, 1 + REPRO_IMG_PIXELS / 4, 0);
    int other = (cls + 1 + (int)below32(d.v[0], REPRO_CLASSES - 1)) % REPRO_CLASSES;
    float dweight = contrast * DISTRACT_MAX * repro_u32_to_unit(d.v[1]);
    const float *dproto = protos + other * REPRO_IMG_PIXELS;

    /* Word k of block 1 + j is words[4 * j + k] = pixel 4 * j + k's noise
     * (repro_philox_blocks: all the blocks at once, on the vector path). */
    uint32_t words[REPRO_IMG_PIXELS];
    repro_philox_blocks(key, 1, REPRO_IMG_PIXELS / 4, words);
    float v[REPRO_IMG_PIXELS];
    for (int i = 0; i < REPRO_IMG_PIXELS; i++)
        v[i] = NOISE_STD * byte_normal(words[i]);
    /* The prototypes shifted by (dy, dx): column x - dx is inside the image
     * for x in [x0, x1), so no pixel needs a test of its own. */
    int x0 = dx > 0 ? dx : 0, x1 = dx < 0 ? REPRO_IMG_COLS + dx : REPRO_IMG_COLS;
    for (int y = 0; y < REPRO_IMG_ROWS; y++) {
        int sy = y - dy;
        if (sy < 0 || sy >= REPRO_IMG_ROWS)
            continue;
        float *row = v + y * REPRO_IMG_COLS;
        const float *p = proto + sy * REPRO_IMG_COLS, *d = dproto + sy * REPRO_IMG_COLS;
        for (int x = x0; x < x1; x++) {
            row[x] += contrast * p[x - dx];
            row[x] += dweight * d[x - dx];
        }
    }
    for (int i = 0; i < REPRO_IMG_PIXELS; i++) {
        /* Round half up, then clamp to 0..255, in integers (branch-free:
         * half of the background pixels clamp, a float branch there
         * mispredicts). Truncation of t = v*255 + 0.5 is floor for t >= 0,
         * and gives <= 0 for t < 0, which clamps to 0 as clamping v first
         * would: the same bytes as clamp-then-round. */
        int q = (int)(v[i] * 255.0f + 0.5f);
        q = q < 0 ? 0 : q;
        q = q > 255 ? 255 : q;
        img[i] = (uint8_t)q;
    }
}

int repro_dataset_synthetic(repro_dataset *out, uint64_t seed, int split, int n)
{
    memset(out, 0, sizeof *out);
    if (split != REPRO_SPLIT_TRAIN && split != REPRO_SPLIT_TEST)
        return repro_error_set(REPRO_EINVAL, "synthetic dataset: bad split %d (0 train, 1 test)",
                               split);
    if (n < 1 || n > MAX_SYNTHETIC)
        return repro_error_set(REPRO_EINVAL,
                               "synthetic dataset: bad sample count %d (must be 1..%d)", n,
                               MAX_SYNTHETIC);
    float *protos = malloc(sizeof(float) * REPRO_CLASSES * REPRO_IMG_PIXELS);
    uint8_t *images = malloc((size_t)n * REPRO_IMG_PIXELS);
    uint8_t *labels = malloc((size_t)n);
    if (!protos || !images || !labels) {
        free(protos);
        free(images);
        free(labels);
        return repro_error_set(REPRO_ENOMEM, "synthetic dataset: out of memory for %d samples", n);
    }
    for (int c = 0; c < REPRO_CLASSES; c++)
        make_prototype(seed, c, protos + c * REPRO_IMG_PIXELS);
    for (int j = 0; j < n; j++) {
        uint64_t key = repro_seed_derive(seed, REPRO_PURPOSE_DATA_SAMPLE, (uint32_t)split, 0, 0,
                                         (uint32_t)j);
        make_sample(key, protos, images + (size_t)j * REPRO_IMG_PIXELS, labels + j);
    }
    free(protos);
    out->n = n;
    out->images = images;
    out->labels = labels;
    return 0;
}

int repro_dataset_load_idx(repro_dataset *out, const char *images_path, const char *labels_path)
{
    memset(out, 0, sizeof *out);
    repro_idx im, lb;
    if (repro_idx_read(&im, images_path) != 0)
        return -1;
    if (im.ndim != 3 || im.dims[1] != REPRO_IMG_ROWS || im.dims[2] != REPRO_IMG_COLS) {
        char shape[64];
        int len = 0;
        for (int d = 0; d < im.ndim; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%u", d ? " x " : "",
                            im.dims[d]);
        repro_error_set(REPRO_EINVAL,
                        "%s: wrong image dimensions %s (%d-D), expected 3-D n x 28 x 28",
                        images_path, shape, im.ndim);
        repro_idx_release(&im);
        return -1;
    }
    if (repro_idx_read(&lb, labels_path) != 0) {
        repro_idx_release(&im);
        return -1;
    }
    int rc = -1;
    if (lb.ndim != 1) {
        repro_error_set(REPRO_EINVAL, "%s: wrong label dimensions (%d-D), expected 1-D n",
                        labels_path, lb.ndim);
        goto done;
    }
    if (lb.dims[0] != im.dims[0]) {
        repro_error_set(REPRO_EINVAL, "%s: count mismatch: %u labels but %s has %u images",
                        labels_path, lb.dims[0], images_path, im.dims[0]);
        goto done;
    }
    for (size_t i = 0; i < lb.count; i++) {
        if (lb.data[i] >= REPRO_CLASSES) {
            repro_error_set(REPRO_EINVAL,
                            "%s: label out of range at index %zu: value %u (must be < %d)",
                            labels_path, i, lb.data[i], REPRO_CLASSES);
            goto done;
        }
    }
    /* The 1 GiB cap in the reader keeps n far below INT_MAX. */
    out->n = (int)im.dims[0];
    out->images = im.data;
    out->labels = lb.data;
    im.data = NULL;
    lb.data = NULL;
    rc = 0;
done:
    repro_idx_release(&im);
    repro_idx_release(&lb);
    return rc;
}

void repro_dataset_release(repro_dataset *ds)
{
    if (!ds)
        return;
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
