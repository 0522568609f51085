/* `repro screen`'s report (screen_print.c): a line per rank, the summary,
 * JSON, JUnit, and the exit code the tally implies. */
#ifndef REPRO_CLI_SCREEN_PRINT_H
#define REPRO_CLI_SCREEN_PRINT_H

#include <stdio.h>

#include "core/config.h"
#include "golden/screen.h"

/* 1 when a rank diverged in any repeat or ranks disagreed with no
 * majority, else 3 when a rank could not be tested, else 0. */
int repro_screen_exit_code(const repro_screen_result *r);
void repro_screen_print_text(FILE *out, const repro_config *cfg, const repro_screen_result *r);
void repro_screen_print_json(FILE *out, const repro_config *cfg, const repro_screen_result *r,
                             int exit_code);
/* One case per rank: failed when it diverged, errored when it could not be
 * tested. 0 or -1 (error slot). */
int repro_screen_junit(const char *path, const repro_config *cfg, const repro_screen_result *r);

#endif
