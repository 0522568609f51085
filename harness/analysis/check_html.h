/* `repro check --report FILE.html`: the check as one self-contained HTML
 * page a person opens in a browser. Everything is inline (styles, the
 * charts as <svg> elements); nothing is fetched, no script runs. Sections:
 * the verdict per scope and per run, the divergence of each failing
 * comparison (its curve, the first divergent tensors and op outputs, the
 * element-level detail, the full text report), the golden's comparison and
 * history (`repro log`), the memory timeline, the environment fingerprint
 * and the runs' timing. A check cut short (a signal, a run that failed)
 * still gets its page, marked as cut, with what it had. Every string from
 * outside the code (names, commit subjects, paths, messages) is escaped
 * (util/html.h). */
#ifndef REPRO_CHECK_HTML_H
#define REPRO_CHECK_HTML_H

#include <jansson.h>
#include <stdio.h>

#include "analysis/multirun.h"
#include "record/env.h"

typedef struct {
    const char *title;          /* the experiment (or program) as given */
    const char *command;        /* the command line, for the record (may be NULL) */
    const repro_multirun *m;    /* the runs: plan (states, timing) and, once
                                   compared, traces and divergences */
    int compared;               /* m->traces and m->divs hold the comparison */
    int exit_code;              /* the check's */
    const char *verdict;        /* the verdict line as printed */
    const char *cut;            /* NULL, or why the check stopped before its end */
    int signal;                 /* the signal that interrupted it (0: none) */
    int golden_compared;        /* run 1 was compared with a golden */
    int golden_rc;              /* its result: 0 match (or none), 1 differs, else error */
    const char *golden_text;    /* the golden comparison's text report (NULL: none) */
    const char *unexercised;    /* the scopes whose runs did not differ in their count */
    const json_t *history;      /* repro_golden_log's document, or NULL */
    const char *history_note;   /* why there is no history (NULL: none asked) */
    const repro_env *env;       /* the environment fingerprint (NULL: unknown) */
    const char *env_source;     /* where it comes from ("run 1's trace header") */
    const char *memory_svg;     /* the memory timeline, an SVG document (NULL: none) */
    const char *memory_note;    /* why there is none, or what it shows */
    double wall_s;              /* the whole check, seconds */
    const char *started_at;     /* when it started, ISO 8601 UTC */
} repro_check_html;

/* Writes the page to f. */
void repro_check_html_write(FILE *f, const repro_check_html *r);

/* The section of one failing comparison (run idx against run 1), used by
 * the page (check_html_div.c). */
void repro_check_html_divergence(FILE *f, const repro_multirun *m, int idx);

#endif
