/* Golden records: a trace blessed as the reference for (experiment,
 * environment class), at golden/<experiment>/<class>.jsonl in the work
 * tree, in the trace format with a "golden" object added to its header
 * (commit blessed at, dirty state, tree ids of the numerics paths). */
#ifndef REPRO_GOLDEN_H
#define REPRO_GOLDEN_H

#include <jansson.h>
#include <stddef.h>

/* The paths whose content can change the numerics: their tree ids go into
 * the golden, and commits touching them are reported on a mismatch. The
 * experiment file is added per experiment. */
extern const char *const repro_numerics_paths[];
extern const int repro_numerics_npaths;

/* "<root>/golden/<experiment>/<class>.jsonl"; root may be "" (cwd). */
void repro_golden_path(const char *root, const char *experiment, const char *env_class, char *buf,
                       size_t len);
/* A golden name given on the command line (--name): letters, digits,
 * '.', '_' and '-', not starting with '.', at most 100 bytes, so it is
 * one directory under golden/. 0 or -1 (REPRO_EINVAL). */
int repro_golden_name_check(const char *name);

/* Installs src_trace as the golden at dest, atomically: takes flock(2) on
 * dest.lock (a concurrent bless waits up to wait_s seconds, then fails with
 * exit 3; the kernel drops the lock when its holder dies, so a killed bless
 * blocks nobody), writes the trace with `golden` added to its header to a
 * temporary file dest.XXXXXX.tmp, fsyncs it, renames it over dest and
 * fsyncs the directory. On any failure the old golden is left intact and
 * the temporary removed; temporaries of a killed bless are removed by the
 * next. Creates golden/.gitignore (*.lock, *.tmp) when missing. */
int repro_golden_install(const char *src_trace, const char *dest, json_t *golden, int wait_s);

/* The environment classes that have a golden for `experiment` (file stems
 * in golden/<experiment>/), sorted. Returns the count (>= 0), or -1. */
int repro_golden_classes(const char *root, const char *experiment, char ***classes);
void repro_golden_classes_free(char **classes, int n);

#endif
