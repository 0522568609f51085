/* Bounded line reading over read(2) (see lines.h). */
#include "util/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

#define CHUNK ((size_t)64 << 10)

int repro_lines_open(repro_lines *r, const char *path, const char *what, size_t max)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->max = max;
    if (repro_open_regular(path, what, &r->fd))
        return -1;
    return 0;
}

/* Makes room to read into: moves the unconsumed bytes to the front, then
 * grows the buffer, never past what one line of `max` bytes, its '\n' and
 * a NUL need plus one read. */
static int make_room(repro_lines *r)
{
    if (r->beg > 0) {
        memmove(r->buf, r->buf + r->beg, r->end - r->beg);
        r->end -= r->beg;
        r->scan -= r->beg;
        r->beg = 0;
    }
    if (r->cap - r->end > 1)
        return 0;
    size_t limit = r->max + 2 + CHUNK;
    size_t ncap = r->cap ? r->cap * 2 : CHUNK;
    if (ncap > limit)
        ncap = limit;
    if (ncap <= r->cap)
        return 0; /* full at the limit: the caller finds the line too long */
    char *n = realloc(r->buf, ncap);
    if (!n) {
        errno = ENOMEM;
        return -1;
    }
    r->buf = n;
    r->cap = ncap;
    return 0;
}

int repro_lines_next(repro_lines *r, char **line, size_t *len, int *complete)
{
    for (;;) {
        char *nl = r->scan < r->end ? memchr(r->buf + r->scan, '\n', r->end - r->scan) : NULL;
        size_t have = (nl ? (size_t)(nl - r->buf) : r->end) - r->beg;
        if (have > r->max)
            return REPRO_LINES_TOO_LONG;
        if (nl || (r->eof && r->end > r->beg)) {
            *line = r->buf + r->beg;
            *len = have;
            *complete = nl != NULL;
            r->buf[r->beg + have] = '\0'; /* the '\n', or the spare byte past end */
            r->beg += have + (nl != NULL);
            r->scan = r->beg;
            return REPRO_LINES_OK;
        }
        if (r->eof)
            return REPRO_LINES_END;
        r->scan = r->end;
        if (make_room(r))
            return REPRO_LINES_ERROR;
        if (r->cap - r->end <= 1)
            return REPRO_LINES_TOO_LONG;
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return REPRO_LINES_ERROR;
        if (n == 0)
            r->eof = 1;
        r->end += (size_t)n;
    }
}

void repro_lines_close(repro_lines *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}
