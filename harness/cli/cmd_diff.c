/* `repro diff A B`: compares two traces and reports where they part. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/compare.h"
#include "util/error.h"

static const char synopsis[] =
    "usage: repro diff A B [--json] [--plot FILE.svg]\n"
    "\n"
    "Compares two traces (or a trace and a golden) of the same experiment:\n"
    "the first divergent step (binary search over the chain digests), the\n"
    "tensors that differ there in step-digest order (the first is the likely\n"
    "origin) with their stats, and the divergence curve over the common steps.\n";

static const char epilogue[] =
    "\n"
    "Exit: 0 identical, 1 different, 2 bad input (unreadable or truncated trace,\n"
    "different experiments or configs), 3 cannot write the output.\n";

enum { O_JSON = 1, O_PLOT };

static const repro_cli_opt own_opts[] = {
    {"json", 0, NULL, "the report as one JSON document on stdout", O_JSON},
    {"plot", 0, "FILE.svg", "also write the divergence curve as an SVG chart", O_PLOT},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_diff_spec = {"diff", REPRO_CLI_DIFF, synopsis, own_opts, epilogue};

typedef struct {
    int json;
    const char *plot;
} diff_opts;

static int diff_option(void *ctx, int id, const char *v)
{
    diff_opts *o = ctx;
    if (id == O_JSON)
        o->json = 1;
    else if (!v[0])
        return repro_error_set(REPRO_EINVAL, "diff: --plot needs a file name");
    else
        o->plot = v;
    return 0;
}

int repro_cmd_diff(int argc, char **argv)
{
    diff_opts o = {0, NULL};
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_diff_spec, argc, argv, &co, diff_option, &o);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed || repro_cli_operands(&p, 2, 2, "two traces"))
        return repro_report_error();
    const char *paths[2] = {p.args[0], p.args[1]}, *plot = o.plot;
    int json = o.json;

    static repro_trace a, b; /* large (paths, flags): keep them off the stack */
    repro_divergence d;
    int rc;
    /* Streamed: one step of each in memory, whatever their length. */
    if (repro_compare_files(paths[0], paths[1], &a, &b, 1, 1, &d)) {
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
