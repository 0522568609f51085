/* Datasets: 28x28 grey images with labels 0..9, in memory as bytes (the
 * MNIST layout), from the seeded synthetic generator or from IDX files. */
#ifndef REPRO_DATASET_H
#define REPRO_DATASET_H

#include <stdint.h>

#define REPRO_IMG_ROWS 28
#define REPRO_IMG_COLS 28
#define REPRO_IMG_PIXELS (REPRO_IMG_ROWS * REPRO_IMG_COLS)
#define REPRO_CLASSES 10

typedef struct {
    int n;               /* samples */
    uint8_t *images;     /* n x 28 x 28, row-major */
    uint8_t *labels;     /* n, each < REPRO_CLASSES */
} repro_dataset;

enum { REPRO_SPLIT_TRAIN = 0, REPRO_SPLIT_TEST = 1 };

/* A learnable synthetic set generated from `seed`: each class has a
 * prototype image (strokes/blobs drawn from stream
 * derive(seed, DATA_PROTO, 0,0,0, class)) shared by both splits; sample j of
 * `split` draws its label, shift, contrast and noise from
 * derive(seed, DATA_SAMPLE, split, 0, 0, j). No libm: bits identical everywhere.
 * Returns 0, or -1 with the error slot set. */
int repro_dataset_synthetic(repro_dataset *out, uint64_t seed, int split, int n);

/* Loads an IDX image file (ubyte, n x 28 x 28) and an IDX label file (ubyte,
 * n, values < 10). Malformed files (bad magic, wrong type or dimensions,
 * truncated, count mismatch, label out of range) fail with exit code 2 and a
 * message naming the file. */
int repro_dataset_load_idx(repro_dataset *out, const char *images_path, const char *labels_path);

void repro_dataset_release(repro_dataset *ds);

#endif
