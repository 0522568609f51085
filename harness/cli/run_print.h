/* What `repro run EXP` prints of a training session (core/session.h): the
 * header before the steps, the summary after them, as text or --json. */
#ifndef REPRO_CLI_RUN_PRINT_H
#define REPRO_CLI_RUN_PRINT_H

#include "core/session.h"

/* The experiment, model, precision and memory lines (none under --json:
 * the summary is one document); on stderr, a warning naming the
 * nondeterministic kernel variants in use when the config asks for one. */
void repro_run_print_header(const repro_session *s, int json);
/* After repro_session_finish, on rank 0: losses, the held-out eval, speed,
 * every rank's time and memory, the trace, the final chain digest. 0, or
 * -1 with the error slot set. */
int repro_run_print_summary(const repro_session *s, int json);

#endif
