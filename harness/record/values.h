/* Tensor values beside a trace: a trace holds digests, so a comparison
 * under a tolerance (`repro diff --tolerance`) needs the values too. They
 * are written in the layout of `repro run --dump`, DIR/step-NNNNNN/NAME.npy
 * (DIR is `dump/` beside the trace unless the program names another), so
 * one reader serves the built-in workload, C programs and the Python
 * client. */
#ifndef REPRO_VALUES_H
#define REPRO_VALUES_H

#include <stddef.h>

/* "dump" in the directory of trace_path into buf. */
void repro_values_default_dir(char *buf, size_t len, const char *trace_path);

/* The file of one tensor's values at a step into buf. */
void repro_values_path(char *buf, size_t len, const char *dir, long step, const char *name);

/* Writes one tensor (creating DIR and its step directory). A dtype .npy
 * cannot hold here (f16, bf16) is skipped: 1, nothing written, and a
 * tolerance comparison then says it has no values. 0 written, -1 error
 * slot (REPRO_EIO). */
int repro_values_write(const char *dir, long step, const char *name, const char *dtype, int ndim,
                       const long *shape, const void *data, size_t nbytes);

#endif
