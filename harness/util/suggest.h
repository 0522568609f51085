/* "Did you mean ...?": the closest of a list of known words to a word that
 * is not one of them (a mistyped command, option or config key). */
#ifndef REPRO_UTIL_SUGGEST_H
#define REPRO_UTIL_SUGGEST_H

#include <stddef.h>

/* The candidate closest to `word` by edit distance (insertions, deletions,
 * substitutions, adjacent swaps), if it is close enough to be a typo
 * (distance at most 2, and less than half the word), else NULL. NULL
 * entries in candidates are skipped. */
const char *repro_suggest(const char *word, const char *const *candidates, size_t n);

/* Writes " (did you mean 'X'?)" into buf when there is a suggestion, else
 * "" — for appending to an error message. */
const char *repro_suggest_phrase(char *buf, size_t len, const char *word,
                                 const char *const *candidates, size_t n);

#endif
