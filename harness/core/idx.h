/* Reader for the IDX format (MNIST, Fashion-MNIST): magic 00 00 TYPE NDIM,
 * NDIM big-endian u32 sizes, then the data. Only what repro needs: TYPE 0x08
 * (unsigned byte). */
#ifndef REPRO_IDX_H
#define REPRO_IDX_H

#include <stddef.h>
#include <stdint.h>

#define REPRO_IDX_MAX_DIMS 4

typedef struct {
    int ndim;
    uint32_t dims[REPRO_IDX_MAX_DIMS];
    size_t count;  /* product of dims */
    uint8_t *data; /* count bytes */
} repro_idx;

/* Returns 0, or -1 with the error slot set (exit code 2, message
 * "PATH: what is wrong"). Trailing bytes after the data are an error too. */
int repro_idx_read(repro_idx *out, const char *path);
void repro_idx_release(repro_idx *idx);

#endif
