/* Op-level bisect (`repro bisect EXP`, without --commits): locates the first
 * divergent op and the kernel variant(s) responsible. cmd_bisect.c hands it
 * every invocation that has no --commits option. */
#ifndef REPRO_BISECT_OPS_H
#define REPRO_BISECT_OPS_H

/* argv[0] is "bisect", as for any command; returns an exit code. */
int repro_bisect_ops_main(int argc, char **argv);

#endif
