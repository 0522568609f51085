/* Tensor dumps as .npy (NumPy format 1.0), so numpy.load and torch can open
 * what repro saw. */
#ifndef REPRO_NPY_H
#define REPRO_NPY_H

#include <stddef.h>

/* dtype: "f32", "i32", "u32", "f64", "i64" or "u8" (written little-endian:
 * '<f4', '<i4', '<u4', '<f8', '<i8', '|u1').
 * ndim 0 writes a scalar. Returns 0 or -1 (error slot, exit 3). */
int repro_npy_write(const char *path, const char *dtype, int ndim, const long *shape,
                    const void *data, size_t nbytes);

/* Reads a little-endian 4-byte-element .npy as written above: returns the
 * data (malloc'd) and its byte count, or NULL with the error slot set. */
void *repro_npy_read(const char *path, size_t *nbytes);

/* A .npy file read with its header: dtype as the trace names it ("f32",
 * "f64", "i32", "u32", "i64", "u8"; little-endian, C order), shape, data. */
typedef struct {
    char dtype[8];
    int ndim;
    long shape[8];
    void *data; /* malloc'd; nbytes = product(shape) * element size */
    size_t nbytes;
} repro_npy;
/* Reads and checks it (a header that does not parse, Fortran order, a
 * byte order or dtype other than the above, data shorter or longer than the
 * shape says: REPRO_EINVAL naming the file). 0 or -1 (error slot). */
int repro_npy_load(const char *path, repro_npy *out);
void repro_npy_free(repro_npy *n);
#endif
