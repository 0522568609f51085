/* The experiment half of `repro run` (run_train.c): a training session
 * driven from the command line. */
#ifndef REPRO_CLI_RUN_TRAIN_H
#define REPRO_CLI_RUN_TRAIN_H

#include "cli/cli.h"
#include "core/session.h"

/* Trains cfg (loaded and validated) with the session options the command
 * line gave: a launch of cfg's ranks when it has more than one and this
 * process is not in an MPI job, else this process's session. Returns the
 * exit code (errors reported). argv: the command line, relaunched as is.
 * memtl_path: --memory-timeline's file (rank 0 writes it, also when the
 * run fails: what was recorded, marked cut), or NULL. */
int repro_run_train(int argc, char **argv, repro_common *co, repro_session_opts *so,
                    repro_config *cfg, const char *memtl_path);

#endif
