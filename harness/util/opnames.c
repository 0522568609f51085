/* Op-output names and the variant ops behind them (see opnames.h). */
#include "util/opnames.h"

#include <stdio.h>
#include <string.h>

int repro_op_split(const char *name, char *phase, char *layer, char *output, int len)
{
    const char *d1 = strchr(name, '.');
    if (!d1 || (d1 - name != 3) || (strncmp(name, "fwd", 3) && strncmp(name, "bwd", 3)))
        return -1;
    const char *d2 = strchr(d1 + 1, '.');
    snprintf(phase, (size_t)len, "%.3s", name);
    if (d2) {
        snprintf(layer, (size_t)len, "%.*s", (int)(d2 - d1 - 1), d1 + 1);
        snprintf(output, (size_t)len, "%s", d2 + 1);
    } else {
        snprintf(layer, (size_t)len, "%s", d1 + 1);
        output[0] = '\0';
    }
    return 0;
}

static int starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

const char *repro_op_variant(const char *name)
{
    char phase[32], layer[32], out[32];
    if (repro_op_split(name, phase, layer, out, sizeof phase))
        return NULL;
    int fwd = !strcmp(phase, "fwd");
    if (!strcmp(layer, "class_features"))
        return "index_add";
    if (starts(layer, "fc"))
        return fwd ? "linear.fwd"
               : !strcmp(out, "dw") ? "linear.bwd_weight"
               : !strcmp(out, "db") ? "linear.bwd_bias" : "linear.bwd_data";
    if (starts(layer, "conv"))
        return fwd ? "conv2d.fwd"
               : (!strcmp(out, "dw") || !strcmp(out, "db")) ? "conv2d.bwd_filter"
                                                            : "conv2d.bwd_data";
    if (starts(layer, "relu"))
        return "relu";
    if (starts(layer, "pool"))
        return fwd ? "maxpool.fwd" : "maxpool.bwd";
    if (starts(layer, "drop"))
        return "dropout";
    return NULL;
}

int repro_op_matches(const char *spec, const char *name)
{
    if (!strcmp(spec, name))
        return 1;
    const char *v = repro_op_variant(name);
    return v && !strcmp(v, spec);
}
