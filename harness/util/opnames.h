/* Op outputs as the trace names them ("fwd.conv1", "bwd.fc2.dw", ...) and
 * the kernel-variant op that produced each ("conv2d.fwd",
 * "linear.bwd_weight", ...): how bisect goes from a divergent op to the
 * variant responsible, and how --quarantine names what it substitutes. */
#ifndef REPRO_OPNAMES_H
#define REPRO_OPNAMES_H

/* The registry op ("linear.bwd_weight") that produces the op output `name`,
 * or NULL if unknown. */
const char *repro_op_variant(const char *name);
/* Splits "bwd.fc2.dw" into phase ("bwd"), layer ("fc2") and output ("dw",
 * or "" for forward outputs). Returns 0, or -1 if it is not an op name. */
int repro_op_split(const char *name, char *phase, char *layer, char *output, int len);
/* 1 if the op output `name` is selected by `spec`: the same name, or the
 * registry op that produces it ("linear.bwd_weight" selects bwd.fc*.dw). */
int repro_op_matches(const char *spec, const char *name);

#endif
