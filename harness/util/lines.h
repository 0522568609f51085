/* A line reader for untrusted text files (traces, goldens, algorithm locks)
 * that never holds more than one bounded line: a line is refused as soon as
 * it passes the limit while being read, not after getline() has pulled
 * the whole of it (a 300 MB line used to cost 300 MB before it was
 * refused). Opens regular files only (fsutil.h). */
#ifndef REPRO_LINES_H
#define REPRO_LINES_H

#include <stddef.h>

typedef struct {
    int fd;
    size_t max;      /* longest line accepted, without its '\n' */
    char *buf;       /* unconsumed bytes buf[beg..end), plus room for a NUL */
    size_t cap, beg, end, scan;
    int eof;
} repro_lines;

enum {
    REPRO_LINES_END = 0,      /* no more lines */
    REPRO_LINES_OK = 1,       /* a line */
    REPRO_LINES_ERROR = -1,   /* read error: errno says which */
    REPRO_LINES_TOO_LONG = -2 /* the line passed `max` bytes; nothing more is read */
};

/* Opens path (regular files only; `what` names it in messages, see
 * repro_open_regular). Returns 0, or -1 with the error slot set. */
int repro_lines_open(repro_lines *r, const char *path, const char *what, size_t max);
/* The next line, without its '\n', NUL-terminated at *len (it may hold
 * NUL bytes before that: compare strlen with *len). *complete is 0 for a
 * last line that has no '\n'. The line lives in the reader's buffer until
 * the next call. Returns a REPRO_LINES_* value. Memory stays under
 * max + 64 KiB whatever the file holds. */
int repro_lines_next(repro_lines *r, char **line, size_t *len, int *complete);
void repro_lines_close(repro_lines *r);

#endif
