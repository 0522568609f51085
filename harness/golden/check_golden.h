/* The golden half of `repro check`: compares run 1's trace with the golden
 * of this environment class; on a mismatch names the commits since the
 * blessed one that touched the numerics paths; when this class has no
 * golden, compares with the closest class by tolerance. */
#ifndef REPRO_CHECK_GOLDEN_H
#define REPRO_CHECK_GOLDEN_H

#include <jansson.h>
#include <stdio.h>

#include "record/trace.h"

enum { REPRO_GOLDEN_MATCH = 0, REPRO_GOLDEN_DIFFERS = 1 };

/* `run`: run 1's trace. `exp_file` (an experiment) or `program` (its argv,
 * `-- PROGRAM`) says where the goldens are: in the git repository that
 * holds that file or program (golden_program.h), whatever the current
 * directory; outside any repository, golden/ of the current directory.
 * `overridden`: the check changed the config with
 * --set/--seed (a golden of the committed config then does not apply).
 * Writes a text report to `out` (may be NULL) and fills `json` (may be NULL).
 * Returns 0 (matches, or no golden and !require), 1 (mismatch, or no golden
 * and require), 2 (the golden is corrupt or of another experiment), 3 or -1
 * with the error slot set. */
int repro_check_golden(const repro_trace *run, const char *experiment, const char *exp_file,
                       char *const *program, int overridden, int require, FILE *out,
                       json_t *json);

#endif
