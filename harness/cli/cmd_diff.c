/* `repro diff A B`: compares two traces and reports where they part. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "analysis/compare.h"
#include "analysis/tol_diff.h"
#include "util/error.h"

static const char synopsis[] =
    "usage: repro diff A B [--json] [--plot FILE.svg]\n"
    "       repro diff A B --tolerance SPEC... [--map FILE] [--json]\n"
    "\n"
    "Compares two traces (or a trace and a golden) of the same experiment:\n"
    "the first divergent step (binary search over the chain digests), the\n"
    "tensors that differ there in step-digest order (the first is the likely\n"
    "origin) with their stats, and the divergence curve over the common steps.\n"
    "\n"
    "With --tolerance (or --map), the traces may come from different producers\n"
    "(a C port and its PyTorch original): at every step with tensor detail on\n"
    "both sides, each tensor of A is compared with B's from the values written\n"
    "beside each trace (dump/step-NNNNNN/NAME.npy), and the report gives per\n"
    "tensor and step the max ULP and relative error, the first step past the\n"
    "tolerance, and \"within tolerance\" or \"diverged at step S\"\n"
    "(docs/tolerance.md).\n";

static const char epilogue[] =
    "\n"
    "Exit: 0 identical (with --tolerance: within tolerance), 1 different\n"
    "(diverged), 2 bad input (unreadable or truncated trace, different\n"
    "experiments or configs; with --tolerance: a SPEC or map line that does not\n"
    "parse, a mapped tensor in neither trace, a dtype or shape that differs,\n"
    "missing values, different steps), 3 cannot write the output.\n";

enum { O_JSON = 1, O_PLOT, O_TOL, O_MAP };

static const repro_cli_opt own_opts[] = {
    {"json", 0, NULL, "the report as one JSON document on stdout", O_JSON},
    {"plot", 0, "FILE.svg", "also write the divergence curve as an SVG chart", O_PLOT},
    {"tolerance", 0, "SPEC",
     "compare values under a tolerance: ulp:N[,atol:Y], rtol:X[,atol:Y],\n"
     "atol:Y or exact; GLOB=RULE for some tensors ('grad.*=ulp:64');\n"
     "repeatable", O_TOL},
    {"map", 0, "FILE", "B's tensor names as A's, one 'B_NAME = A_NAME' a line", O_MAP},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_diff_spec = {"diff", REPRO_CLI_DIFF, synopsis, own_opts, epilogue};

typedef struct {
    int json;
    const char *plot;
    int tolerant; /* --tolerance or --map given */
    repro_tolerance tol;
    const char *map;
} diff_opts;

static int diff_option(void *ctx, int id, const char *v)
{
    diff_opts *o = ctx;
    if (id == O_JSON) {
        o->json = 1;
    } else if (id == O_TOL) {
        o->tolerant = 1;
        return repro_tolerance_add(&o->tol, v);
    } else if (id == O_MAP) {
        o->tolerant = 1;
        if (!v[0])
            return repro_error_set(REPRO_EINVAL, "diff: --map needs a file name");
        o->map = v;
    } else if (!v[0])
        return repro_error_set(REPRO_EINVAL, "diff: --plot needs a file name");
    else
        o->plot = v;
    return 0;
}

/* --tolerance / --map: the values of two traces under a tolerance. */
static int tolerance_diff(const char *path_a, const char *path_b, diff_opts *o)
{
    static repro_trace a, b;
    repro_tensor_map map;
    repro_tol_result r;
    int rc;
    if (o->plot) {
        repro_error_set(REPRO_EINVAL, "diff: --plot draws the bitwise comparison's curve; it "
                        "does not go with --tolerance or --map");
        return repro_report_error();
    }
    memset(&map, 0, sizeof map);
    if (o->map && repro_tensor_map_load(&map, o->map))
        return repro_report_error();
    if (repro_tol_diff_files(path_a, path_b, &o->tol, &map, &a, &b, &r)) {
        rc = repro_report_error();
        goto done;
    }
    if (o->json ? repro_tol_report_json(stdout, &a, &b, &o->tol, &map, &r)
                : (repro_tol_report_text(stdout, &a, &b, &o->tol, &map, &r), 0))
        rc = repro_report_error();
    else
        rc = repro_finish_stdout(r.first_past ? REPRO_EXIT_MISMATCH : REPRO_EXIT_OK);
    repro_tol_result_release(&r);
done:
    repro_tensor_map_release(&map);
    repro_trace_release(&a);
    repro_trace_release(&b);
    return rc;
}

int repro_cmd_diff(int argc, char **argv)
{
    static diff_opts o; /* the tolerance table: keep it off the stack */
    memset(&o, 0, sizeof o);
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_diff_spec, argc, argv, &co, diff_option, &o);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed || repro_cli_operands(&p, 2, 2, "two traces"))
        return repro_report_error();
    if (o.tolerant)
        return tolerance_diff(p.args[0], p.args[1], &o);
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
