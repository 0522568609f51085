/* Helpers shared by the test suites: temporary files and running the repro
 * binary as a user would. */
#ifndef REPRO_TESTUTIL_H
#define REPRO_TESTUTIL_H

#include <stddef.h>

#include "kernels/isa.h"

/* Every file a test writes goes under one directory per `check_all` run
 * ($REPRO_TEST_TMP, made by tests/check_main.c and removed when the run
 * passes), so a run leaves nothing behind in /tmp. tu_tmp_template fills
 * buf with "<that directory>/<tag>-XXXXXX", a template for mkdtemp or
 * mkstemp; TU_TMP_LEN holds any of them. */
#define TU_TMP_LEN 96
void tu_tmp_template(char *buf, size_t len, const char *tag);

/* Holds this process to its first n allowed CPUs (fewer if it has fewer),
 * so that a test sees the same "every CPU busy" on any machine; restore
 * puts the mask back. The mask is a cpu_set_t behind an opaque buffer. */
typedef struct {
    unsigned long bits[1024 / (8 * sizeof(unsigned long))];
} tu_cpu_mask;
void tu_hold_to_cpus(int n, tu_cpu_mask *saved);
void tu_restore_cpus(const tu_cpu_mask *saved);

/* Writes `text` to a new file in a fresh temporary directory; returns its
 * path (static storage per call site is the caller's job: copy it). */
void tu_write_temp(char *path_out, size_t len, const char *name, const char *text);

/* Runs `$REPRO_BIN args` through /bin/sh with stdout and stderr captured;
 * returns the exit status, fills out/err (NUL-terminated, truncated). */
int tu_run_repro(const char *args, char *out, size_t outlen, char *err, size_t errlen);

/* Runs `$REPRO_BIN args` (through /bin/sh) in directory `cwd` with its
 * file-size limit (RLIMIT_FSIZE) at fsize_bytes — a full disk, as far as
 * the files it writes can tell — and its stdout and stderr together in
 * `out` (a pipe: not limited). Returns the exit status (128 + signal). */
int tu_run_repro_fsize(const char *cwd, unsigned long fsize_bytes, const char *args, char *out,
                       size_t outlen);

/* The vector paths this CPU has (kernels/isa.h), into out[REPRO_ISA_COUNT];
 * returns how many. Tests that run each restore repro_isa_best() after. */
int tu_isa_paths(repro_isa *out);

/* The file at path into buf (at most len - 1 bytes, NUL-terminated; "" when
 * it cannot be read). */
void tu_slurp(const char *path, char *buf, size_t len);

/* The compiler flags that build and link a program against the staged
 * install (REPRO_STAGE: headers, librepro, its run path), with the
 * sanitizer runtime a sanitizer build of librepro needs in the program too.
 * Fails the test when REPRO_STAGE is not set. */
const char *tu_stage_flags(void);

/* A test (or part of one) that cannot run here: says so on stderr as
 * "<suite>: skipped: <why>" and, when $REPRO_SKIP_LOG names a file (`make
 * check` sets it), appends "<suite>\t<why>" to it, one line a call, so the
 * run ends with a count of what was skipped and why
 * (scripts/skip-summary.sh). A skip is never silent. */
void tu_skip(const char *suite, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Why /usr/bin/python3 cannot run the Python client's tests here with
 * `module` ("numpy", "torch") importable: "a sanitizer build (...)" when
 * REPRO_LIB is set empty (python3 cannot load an ASan librepro), "no
 * /usr/bin/python3", "no torch for /usr/bin/python3"; "" when it can. */
const char *tu_no_python(const char *module);

#endif
