/* `repro kernels`: lists the kernel-variant registry (kernels/variants.c):
 * every implementation of every op, whether it is deterministic and whether
 * it is batch-invariant, so a user can see what `deterministic = on`
 * refuses, what `check --batch-invariance` would catch, and why. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/error.h"
#include "kernels/variants.h"

static const char synopsis[] =
    "usage: repro kernels [--json]\n"
    "\n"
    "Lists the kernel variants: for each op, every implementation, whether it\n"
    "is deterministic (bitwise identical run to run and for any thread count),\n"
    "whether it is batch-invariant (a sample's output row has the same bits\n"
    "whatever else shares its batch: `repro check --batch-invariance`; n/a for\n"
    "outputs that sum over the batch or update parameters), and why.\n"
    "Nondeterministic variants accumulate partial sums atomically in the order\n"
    "threads arrive (the CPU analogue of GPU atomicAdd); with deterministic = on\n"
    "an experiment may not select them. linear.fwd = splitk is deterministic but\n"
    "not batch-invariant: its split of the reduction depends on the batch size.\n";

enum { O_JSON = 1 };

static const repro_cli_opt own_opts[] = {
    {"json", 0, NULL,
     "a JSON array of {\"op\", \"variant\", \"deterministic\",\n\"batch_invariant\" (true, "
     "false or null for n/a), \"why\"}",
     O_JSON},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_kernels_spec = {"kernels", REPRO_CLI_KERNELS, synopsis, own_opts,
                                           NULL};

static int kernels_option(void *ctx, int id, const char *v)
{
    (void)id, (void)v;
    *(int *)ctx = 1; /* --json, the only one */
    return 0;
}

static const char *batch_word(int b)
{
    return b == REPRO_BATCH_NA ? "n/a" : b ? "yes" : "no";
}

static void print_text(void)
{
    int wop = (int)strlen("op"), wvar = (int)strlen("variant");
    for (const repro_variant_info *v = repro_variants; v->op; v++) {
        if ((int)strlen(v->op) > wop)
            wop = (int)strlen(v->op);
        if ((int)strlen(v->variant) > wvar)
            wvar = (int)strlen(v->variant);
    }
    printf("%-*s  %-*s  %-3s  %-15s  %s\n", wop, "op", wvar, "variant", "det", "batch-invariant",
           "why");
    for (const repro_variant_info *v = repro_variants; v->op; v++)
        printf("%-*s  %-*s  %-3s  %-15s  %s\n", wop, v->op, wvar, v->variant,
               v->deterministic ? "yes" : "no", batch_word(v->batch_invariant), v->why);
}

static int print_json(void)
{
    json_t *a = json_array();
    for (const repro_variant_info *v = repro_variants; a && v->op; v++) {
        json_t *bi = v->batch_invariant == REPRO_BATCH_NA ? json_null()
                                                            : json_boolean(v->batch_invariant);
        if (json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:o, s:s}", "op", v->op,
                                               "variant", v->variant, "deterministic",
                                               v->deterministic, "batch_invariant", bi, "why",
                                               v->why))) {
            json_decref(a);
            a = NULL;
        }
    }
    char *s = a ? json_dumps(a, JSON_INDENT(2) | JSON_ENSURE_ASCII) : NULL;
    json_decref(a);
    if (!s)
        return repro_error_set(REPRO_EIO, "kernels: cannot encode JSON");
    puts(s);
    free(s);
    return 0;
}

int repro_cmd_kernels(int argc, char **argv)
{
    int json = 0;
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_kernels_spec, argc, argv, &co, kernels_option, &json);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed || repro_cli_operands(&p, 0, 0, "no operands"))
        return repro_report_error();
    if (json) {
        if (print_json())
            return repro_report_error();
    } else {
        print_text();
    }
    return repro_finish_stdout(0);
}
