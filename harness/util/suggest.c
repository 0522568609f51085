/* "Did you mean" (suggest.h): optimal string alignment distance, small
 * words only (commands, options, config keys). */
#include "util/suggest.h"

#include <stdio.h>
#include <string.h>

enum { MAXLEN = 64 };

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAXLEN || m >= MAXLEN)
        return (size_t)-1;
    size_t d[MAXLEN][MAXLEN];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    return d[n][m];
}

const char *repro_suggest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1, len = strlen(word);
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        size_t d = distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best && best_d > 0 && best_d <= 2 && 2 * best_d < len + 1 ? best : NULL;
}

const char *repro_suggest_phrase(char *buf, size_t len, const char *word,
                                 const char *const *candidates, size_t n)
{
    const char *s = repro_suggest(word, candidates, n);
    if (s)
        snprintf(buf, len, " (did you mean '%s'?)", s);
    else if (len)
        buf[0] = '\0';
    return buf;
}
