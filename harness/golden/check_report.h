/* `repro check --report FILE`: what the page needs beyond the check's own
 * results (analysis/check_html.h) — the golden's history, the environment
 * fingerprint — gathered, and the page written to the file the check
 * opened before its first run (so a bad path fails before any training). */
#ifndef REPRO_CHECK_REPORT_H
#define REPRO_CHECK_REPORT_H

#include "analysis/check_html.h"
#include "util/outpath.h"

/* Where the goldens are (check_golden.h: exp_file or program) and their
 * name ("" for a program: the name it records). */
typedef struct {
    const char *exp_file;
    char *const *program;
    const char *golden_name;
} repro_check_report_src;

/* Fills h's history (at most the newest 20 commits of `repro log`) and
 * environment (run 1's trace header when it was read, else this process),
 * unless h has them already, writes the page into out and commits it.
 * 0, or -1 with the error slot set (out given up: the temporary file
 * removed). A history that cannot be had is a note on the page, never an
 * error. */
int repro_check_report_write(repro_outfile *out, repro_check_html *h,
                             const repro_check_report_src *src);

#endif
