/* `repro diff A B`: compares two traces and reports where they part. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/compare.h"
#include "util/error.h"

const char repro_diff_usage[] =
    "usage: repro diff A B [--json] [--plot FILE.svg]\n"
    "\n"
    "Compares two traces (or a trace and a golden) of the same experiment:\n"
    "the first divergent step (binary search over the chain digests), the\n"
    "tensors that differ there in step-digest order (the first is the likely\n"
    "origin) with their stats, and the divergence curve over the common steps.\n"
    "\n"
    "  --json            the report as one JSON document on stdout\n"
    "  --plot FILE.svg   also write the divergence curve as an SVG chart\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit: 0 identical, 1 different, 2 bad input (unreadable or truncated trace,\n"
    "different experiments or configs), 3 cannot write the output.\n";

/* A trace without a trailer is a run that did not finish: comparing it
 * would report a difference that is only a crash, so it is an input error. */
static int check_finished(const repro_trace *t)
{
    if (t->has_trailer)
        return 0;
    long line = t->nsteps ? t->steps[t->nsteps - 1].line : 1;
    return repro_error_set(
        REPRO_EXIT_USAGE, "%s: truncated trace (no trailer after line %ld): the run did not finish",
        t->path, line);
}

int repro_cmd_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *plot = NULL;
    int json = 0, npaths = 0, only_paths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_paths || a[0] != '-' || !a[1]) {
            if (npaths < 2)
                paths[npaths] = a;
            npaths++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(repro_diff_usage, stdout);
            return repro_finish_stdout(0);
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--plot") || !strncmp(a, "--plot=", 7)) {
            plot = a[6] == '=' ? a + 7 : i + 1 < argc ? argv[++i] : NULL;
            if (!plot || !*plot) {
                repro_error_set(REPRO_EINVAL, "diff: --plot needs a file name");
                return repro_report_error();
            }
        } else if (!strcmp(a, "--")) {
            only_paths = 1;
        } else {
            repro_error_set(REPRO_EINVAL, "diff: unknown option '%s' (see `repro help diff`)",
                            a);
            return repro_report_error();
        }
    }
    if (npaths != 2) {
        repro_error_set(REPRO_EINVAL,
                        "diff: expected two traces, got %d (see `repro help diff`)", npaths);
        return repro_report_error();
    }

    static repro_trace a, b; /* large (paths, flags): keep them off the stack */
    repro_divergence d;
    int rc;
    if (repro_trace_read(&a, paths[0]))
        return repro_report_error();
    if (repro_trace_read(&b, paths[1])) {
        repro_trace_release(&a);
        return repro_report_error();
    }
    if (check_finished(&a) || check_finished(&b) || repro_compare_traces(&a, &b, &d)) {
        rc = repro_report_error();
        goto cleanup_traces;
    }
    if (json) {
        if (repro_report_json(stdout, &a, &b, &d)) {
            rc = repro_report_error();
            goto cleanup;
        }
    } else {
        repro_report_text(stdout, &a, &b, &d);
    }
    rc = d.identical ? REPRO_EXIT_OK : REPRO_EXIT_MISMATCH;
    if (plot) {
        char title[300];
        snprintf(title, sizeof title, "repro diff: %s%s", a.experiment,
                 d.identical ? " (identical)" : "");
        if (repro_plot_svg(plot, &d, title)) {
            rc = repro_report_error();
            goto cleanup;
        }
    }
    rc = repro_finish_stdout(rc);
cleanup:
    repro_divergence_release(&d);
cleanup_traces:
    repro_trace_release(&a);
    repro_trace_release(&b);
    return rc;
}
