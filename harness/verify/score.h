/* The host's score (`repro verify --score CMD`): the host's own evaluator,
 * run as the host, outside the participant's sandbox, with the re-run's
 * declared outputs as its arguments (`CMD OUTPUT...`: an argument vector,
 * never a shell), printing one number on stdout. The number a leaderboard
 * uses comes from here, never from the participant's code. */
#ifndef REPRO_SCORE_H
#define REPRO_SCORE_H

#include <jansson.h>

/* Runs cmd on the paths (a JSON array of strings) with a time limit
 * (0: none), its output in dir. 0 with the number as printed (trimmed) in
 * text and its value, or -1 (REPRO_EIO: the evaluator is the host's, so
 * its failure is the host's) naming the command and what it said. */
int repro_score_run(const char *cmd, const json_t *paths, double timeout_s, const char *dir,
                    char text[32], double *value);

#endif
