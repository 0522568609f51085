/* The live progress line of the runs in flight (see run_progress.h). */
#include "analysis/run_progress.h"

#include <pthread.h>
#include <stdio.h>

#include "analysis/multirun.h"
#include "util/progress.h"

/* The runs on the line, in the order they joined. One lock guards the
 * slots and the drawing, so two runs' ticks never interleave a line. */
static struct {
    pthread_mutex_t lock;
    repro_run_progress *slot[REPRO_MULTIRUN_MAX];
    int n;
    int drawn; /* a line is on the terminal */
} board = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0};

static void clear_line(void)
{
    if (board.drawn) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        board.drawn = 0;
    }
}

void repro_run_progress_hold(void)
{
    pthread_mutex_lock(&board.lock);
    clear_line();
}

void repro_run_progress_release(void)
{
    pthread_mutex_unlock(&board.lock);
}

void repro_run_progress_join(repro_run_progress *p)
{
    pthread_mutex_lock(&board.lock);
    if (board.n < REPRO_MULTIRUN_MAX)
        board.slot[board.n++] = p;
    pthread_mutex_unlock(&board.lock);
}

void repro_run_progress_leave(repro_run_progress *p)
{
    pthread_mutex_lock(&board.lock);
    int k = 0;
    for (int i = 0; i < board.n; i++)
        if (board.slot[i] != p)
            board.slot[k++] = board.slot[i];
    board.n = k;
    if (k == 0) /* the last one out clears the line */
        clear_line();
    pthread_mutex_unlock(&board.lock);
}

/* Counts the trace lines written since the last read (the header is
 * line 1, then one per step). */
static void read_on(repro_run_progress *p)
{
    FILE *f = fopen(p->trace, "r");
    if (f && fseeko(f, p->read_to, SEEK_SET) == 0) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
            for (size_t i = 0; i < n; i++)
                p->steps += buf[i] == '\n';
            p->read_to += (off_t)n;
        }
    }
    if (f)
        fclose(f);
}

/* The header is not a step, nor is the trailer at the end. */
static long steps_done(const repro_run_progress *p)
{
    long done = p->steps > 1 ? p->steps - 1 : 0;
    return p->total > 0 && done > p->total ? p->total : done;
}

/* "run 1: step 40/300 | run 2: step 38/300, ETA 3 s": the ETA is the
 * latest of the runs' (each from its own pace), or elapsed seconds when
 * no run knows its total yet. */
static void draw(void)
{
    char line[512];
    size_t len = 0;
    double eta = -1, el = 0, now = repro_now();
    for (int i = 0; i < board.n && len < sizeof line - 1; i++) {
        const repro_run_progress *p = board.slot[i];
        long done = steps_done(p);
        double t = now - p->start;
        el = t > el ? t : el;
        int w = p->total > 0 ? snprintf(line + len, sizeof line - len, "%s%s: step %ld/%ld",
                                        i ? " | " : "", p->what, done, p->total)
                             : snprintf(line + len, sizeof line - len, "%s%s: step %ld",
                                        i ? " | " : "", p->what, done);
        len += w > 0 ? (size_t)w : 0;
        if (p->total > 0 && done > 0) {
            double e = t / (double)done * (double)(p->total - done); /* >= 0 */
            eta = e > eta ? e : eta;
        }
    }
    if (len >= sizeof line)
        len = sizeof line - 1;
    line[len] = '\0';
    if (eta >= 0)
        fprintf(stderr, "\r\033[K  %s, ETA %.0f s", line, eta);
    else
        fprintf(stderr, "\r\033[K  %s, %.0f s", line, el);
    fflush(stderr);
    board.drawn = 1;
}

void repro_run_progress_tick(void *arg)
{
    repro_run_progress *p = arg;
    pthread_mutex_lock(&board.lock);
    read_on(p);
    draw();
    pthread_mutex_unlock(&board.lock);
}
