/* Bounded capture of a child's output (see capture.h). Each stream keeps
 * its first `limit` bytes in the file as they come, and its last `limit`
 * bytes in a ring (allocated only once the head is full), written after
 * the note when the child is done: memory is one ring per noisy stream,
 * and the file never holds more than twice the limit and a line. */
#include "util/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"

typedef struct {
    int rd;             /* the pipe's read end; -1 at end of file */
    int file;           /* where the kept bytes go */
    uint64_t total;     /* bytes the child wrote */
    uint64_t head;      /* of them, written to the file as they came */
    char *ring;         /* the last `limit` bytes after the head */
    size_t ring_pos;    /* where the next byte goes */
    uint64_t ring_fill; /* bytes in the ring (<= limit) */
    int unbounded;      /* the ring could not be had: everything goes to the file */
} stream;

struct repro_capture {
    uint64_t limit;
    int n;              /* 1 (stderr shares stdout's file) or 2 */
    stream s[2];
};

static void put(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* a full disk: what the child sees of it is our business no more */
        p += w;
        n -= (size_t)w;
    }
}

static void keep(stream *s, uint64_t limit, const char *p, size_t n)
{
    s->total += n;
    if (s->head < limit) {
        size_t h = (size_t)(limit - s->head < n ? limit - s->head : n);
        put(s->file, p, h);
        s->head += h;
        p += h;
        n -= h;
    }
    if (n == 0)
        return;
    if (!s->ring && !s->unbounded && !(s->ring = malloc((size_t)limit)))
        s->unbounded = 1;
    if (s->unbounded) {
        put(s->file, p, n);
        s->head += n;
        return;
    }
    if (n > limit) { /* only the last `limit` bytes of this read can survive */
        p += n - limit;
        n = (size_t)limit;
    }
    size_t first = (size_t)limit - s->ring_pos < n ? (size_t)limit - s->ring_pos : n;
    memcpy(s->ring + s->ring_pos, p, first);
    memcpy(s->ring, p + first, n - first);
    s->ring_pos = (s->ring_pos + n) % (size_t)limit;
    s->ring_fill = s->ring_fill + n < limit ? s->ring_fill + n : limit;
}

/* Reads what the pipe holds now (at most 4 MiB a call, so that a flood
 * does not starve the caller's loop). */
static void drain(stream *s, uint64_t limit)
{
    static _Thread_local char buf[1 << 16];
    for (int i = 0; s->rd >= 0 && i < 64; i++) {
        ssize_t r = read(s->rd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) /* EAGAIN: empty for now */
            return;
        if (r == 0) {
            close(s->rd);
            s->rd = -1;
            return;
        }
        keep(s, limit, buf, (size_t)r);
    }
}

repro_capture *repro_capture_open(int fds[3], uint64_t limit)
{
    repro_capture *cap = calloc(1, sizeof *cap);
    int pfd[2][2] = {{-1, -1}, {-1, -1}};
    int shared = fds[2] == fds[1];
    int n = shared ? 1 : 2;
    int ok = cap != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = pipe2(pfd[i], O_CLOEXEC) == 0 && fcntl(pfd[i][0], F_SETFL, O_NONBLOCK) == 0;
    if (!ok) {
        int e = errno;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 2; k++)
                if (pfd[i][k] >= 0)
                    close(pfd[i][k]);
        if (!shared)
            close(fds[2]);
        close(fds[1]);
        free(cap);
        errno = e;
        repro_error_set_errno(REPRO_EIO, "cannot capture a child's output");
        return NULL;
    }
    cap->limit = limit;
    cap->n = n;
    for (int i = 0; i < n; i++) {
        cap->s[i].rd = pfd[i][0];
        cap->s[i].file = fds[1 + i];
    }
    fds[1] = pfd[0][1];
    fds[2] = shared ? pfd[0][1] : pfd[1][1];
    return cap;
}

void repro_capture_pump(repro_capture *cap, int ms)
{
    struct pollfd p[2];
    int n = 0;
    for (int i = 0; i < cap->n; i++)
        if (cap->s[i].rd >= 0)
            p[n++] = (struct pollfd){.fd = cap->s[i].rd, .events = POLLIN};
    if (n == 0 || poll(p, (nfds_t)n, ms) <= 0) {
        if (n == 0 && ms > 0)
            poll(NULL, 0, ms); /* nothing to read: still the caller's nap */
        return;
    }
    for (int i = 0; i < cap->n; i++)
        drain(&cap->s[i], cap->limit);
}

static void finish_stream(stream *s, uint64_t limit)
{
    while (s->rd >= 0) {
        uint64_t before = s->total;
        drain(s, limit);
        if (s->rd >= 0 && s->total == before)
            break; /* empty, yet held open: by a process outside the group */
    }
    if (s->rd >= 0)
        close(s->rd);
    uint64_t dropped = s->total - s->head - s->ring_fill;
    if (dropped > 0) {
        char note[200];
        int len = snprintf(note, sizeof note,
                           "\n[repro: %" PRIu64 " bytes of output dropped here; the first and "
                           "the last %" PRIu64 " bytes are kept (REPRO_CAPTURE_LIMIT)]\n",
                           dropped, limit);
        put(s->file, note, (size_t)len);
    }
    if (s->ring_fill == limit) { /* wrapped: the oldest byte is at ring_pos */
        put(s->file, s->ring + s->ring_pos, (size_t)limit - s->ring_pos);
        put(s->file, s->ring, s->ring_pos);
    } else if (s->ring_fill) {
        put(s->file, s->ring, (size_t)s->ring_fill);
    }
    free(s->ring);
    close(s->file);
}

void repro_capture_finish(repro_capture *cap)
{
    if (!cap)
        return;
    for (int i = 0; i < cap->n; i++)
        finish_stream(&cap->s[i], cap->limit);
    free(cap);
}
