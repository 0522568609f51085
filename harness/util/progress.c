/* The progress line (see progress.h). */
#include "util/progress.h"

#include <stdarg.h>
#include <time.h>
#include <unistd.h>

double repro_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void repro_progress_init(repro_progress *p, FILE *out, long total, long every, int quiet)
{
    p->out = quiet ? NULL : out;
    p->tty = out && isatty(fileno(out));
    p->total = total;
    p->every = every > 0 ? every : 1;
    p->start = repro_now();
    p->last_draw = 0;
}

void repro_progress_update(repro_progress *p, long step, double loss)
{
    if (!p->out)
        return;
    double now = repro_now();
    double rate = step / (now - p->start + 1e-9);
    if (p->tty) {
        if (now - p->last_draw < 0.1 && step != p->total)
            return; /* ten redraws a second is plenty */
        p->last_draw = now;
        int width = 30, done = (int)(width * step / (p->total ? p->total : 1));
        fprintf(p->out, "\r[%.*s%*s] step %ld/%ld  loss %.4f  %.1f steps/s ", done,
                "##############################", width - done, "", step, p->total, loss, rate);
        fflush(p->out);
    } else if (step % p->every == 0 || step == p->total) {
        fprintf(p->out, "step %ld/%ld loss %.6f %.1f steps/s\n", step, p->total, loss, rate);
    }
}

void repro_progress_finish(repro_progress *p)
{
    if (p->out && p->tty)
        fputc('\n', p->out);
}

void repro_progress_note(int quiet, const char *what, const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "repro: %s: ", what);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
