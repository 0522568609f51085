/* The golden's history (`repro log`, and the history section of `repro
 * check --report`): every commit that changed golden/<name>/, newest
 * first, with the final chain digest each environment class's golden had
 * there: the points in history where the numerics changed. */
#ifndef REPRO_GOLDEN_LOG_H
#define REPRO_GOLDEN_LOG_H

#include <jansson.h>

/* The history of the goldens named `name` in the repository of exp_file or
 * program (golden_program.h: repro_golden_open_repo), at most max commits
 * (0: all). *out gets `repro log --json`'s document (a new reference):
 *   {"experiment": name, "commits": [{"commit": id, "time": iso,
 *     "summary": text, "chains": {class: hex or ""}}, ...],
 *    "incomplete": bool, "note": why (when the walk says)}
 * An empty name means the name the program records. 0, or -1 with the
 * error slot set (exit 3: not a git repository). */
int repro_golden_log(const char *exp_file, char *const *program, const char *name, long max,
                     json_t **out);

#endif
