/* The memory timeline as one SVG image (memtl_svg.h). Each step is two
 * points on the x axis: its peak (at step - 0.5: during the backward) and
 * its end (at step: between steps), so a step that frees what it
 * allocated reads as a tooth. Long runs are binned to at most MAX_POINTS
 * steps, each bin showing its highest peak and its last end. */
#include "analysis/memtl_svg.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define W 960
#define H 540
#define LEFT 84
#define RIGHT 270  /* the legend's column */
#define BOTTOM 56
#define LANE 13
#define MAX_BINS 1000
#define OTHER REPRO_MEMTL_NCAT /* allocated beyond the recorded categories */

static const char *const cat_color[REPRO_MEMTL_NCAT + 1] = {
    "#4e79a7", "#f28e2b", "#76b7b2", "#e15759", "#ff9da7",
    "#59a14f", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"};
static const char *const mark_color[REPRO_MEMTL_NMARK] = {"#1f77b4", "#17becf", "#8c564b",
                                                          "#bcbd22", "#2ca02c", "#9467bd"};

typedef struct {
    double x;                       /* in steps */
    double cat[REPRO_MEMTL_NCAT + 1]; /* bytes, OTHER last; unknown: 0 */
    double allocated, reserved;     /* < 0: unknown */
    double m_alloc, m_reserved, m_device;
} point;

typedef struct {
    FILE *f;
    point *p;
    size_t n;
    double x0, x1, ymax;
    int top, bottom; /* the plot's pixel rows */
    unsigned marks;  /* the marks present */
    unsigned cats;   /* the categories drawn (OTHER included) */
    int clipped;     /* some line is above ymax: drawn along the top */
} plot;

static double px(const plot *pl, double x)
{
    return LEFT + (x - pl->x0) / (pl->x1 - pl->x0) * (W - LEFT - RIGHT);
}
static double py(const plot *pl, double y)
{
    return pl->bottom - y / pl->ymax * (pl->bottom - pl->top);
}

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

static double val(int64_t v) { return v < 0 ? 0.0 : (double)v; }

static void fill_point(point *q, double x, const int64_t *cats, int64_t alloc, int64_t reserved,
                       const repro_memtl_step *s)
{
    memset(q, 0, sizeof *q);
    q->x = x;
    double sum = 0;
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++)
        sum += q->cat[c] = val(cats[c]);
    q->allocated = alloc < 0 ? -1 : (double)alloc;
    q->cat[OTHER] = alloc > sum ? (double)alloc - sum : 0;
    q->reserved = reserved < 0 ? -1 : (double)reserved;
    q->m_alloc = s->measured_allocated < 0 ? -1 : (double)s->measured_allocated;
    q->m_reserved = s->measured_reserved < 0 ? -1 : (double)s->measured_reserved;
    q->m_device = s->measured_device < 0 ? -1 : (double)s->measured_device;
}

/* The points: per bin of steps its highest peak, then its last end. */
static int make_points(plot *pl, const repro_memtl *tl)
{
    size_t stride = (tl->nsteps + MAX_BINS - 1) / MAX_BINS;
    if (stride < 1)
        stride = 1;
    pl->p = calloc(2 * (tl->nsteps / stride + 2), sizeof *pl->p);
    if (!pl->p)
        return repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
    for (size_t i = 0; i < tl->nsteps; i += stride) {
        size_t end = i + stride < tl->nsteps ? i + stride : tl->nsteps, hi = i;
        for (size_t k = i; k < end; k++)
            if (tl->steps[k].peak_allocated > tl->steps[hi].peak_allocated)
                hi = k;
        const repro_memtl_step *sp = &tl->steps[hi], *se = &tl->steps[end - 1];
        if (se->step > 0 && sp->peak_allocated >= 0)
            fill_point(&pl->p[pl->n++], (double)se->step - 0.5 * (double)stride, sp->at_peak,
                       sp->peak_allocated, sp->peak_reserved, sp);
        fill_point(&pl->p[pl->n++], (double)se->step, se->at_end, se->allocated, se->reserved,
                   se);
        for (size_t k = i; k < end; k++)
            pl->marks |= tl->steps[k].marks;
    }
    return 0;
}

static void scale(plot *pl, const repro_memtl *tl)
{
    pl->x0 = pl->n ? pl->p[0].x : 0;
    pl->x1 = pl->n ? pl->p[pl->n - 1].x : 1;
    if (tl->planned_steps > pl->x1 && tl->cut)
        pl->x1 = (double)tl->planned_steps; /* a cut run: the steps it never took stay empty */
    if (pl->x1 <= pl->x0)
        pl->x1 = pl->x0 + 1;
    double core = 1, all = 1; /* the largest allocated; the largest of any line */
    pl->cats = tl->cats_known;
    for (size_t i = 0; i < pl->n; i++) {
        const point *q = &pl->p[i];
        double sum = 0;
        for (int c = 0; c <= OTHER; c++)
            sum += q->cat[c];
        double v[] = {sum, q->allocated, q->reserved, q->m_alloc, q->m_reserved, q->m_device};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            if (k < 2 && v[k] > core)
                core = v[k];
            if (v[k] > all)
                all = v[k];
        }
        if (q->cat[OTHER] > 0)
            pl->cats |= 1u << OTHER;
    }
    /* A line far above what is allocated (a CPU process's resident set:
     * libraries, datasets) would flatten the picture: it runs along the
     * top instead, and a note says how high it is. */
    pl->clipped = all > 4 * core;
    pl->ymax = (pl->clipped ? 1.6 * core : all) * 1.08;
    int lanes = 0;
    for (int b = 0; b < REPRO_MEMTL_NMARK; b++)
        lanes += (pl->marks >> b) & 1u;
    pl->top = 62 + lanes * LANE + 10;
    pl->bottom = H - BOTTOM;
}

/* y ticks: 1, 2 or 5 times a power of ten of the unit that suits ymax. */
static void axes(plot *pl)
{
    FILE *f = pl->f;
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double unit = 1;
    while (u < 4 && pl->ymax / unit >= 1024) {
        unit *= 1024;
        u++;
    }
    double span = pl->ymax / unit, mag = pow(10, floor(log10(span / 5))), step = mag;
    if (span / step > 10)
        step = 2 * mag;
    if (span / step > 10)
        step = 5 * mag;
    fprintf(f, "<g class=\"axes\" font-size=\"11\" fill=\"#333\">\n");
    for (double y = 0; y <= span + 1e-9; y += step) {
        double yy = py(pl, y * unit);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>",
                LEFT, W - RIGHT, yy, yy);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n", LEFT - 6,
                yy + 4, y, units[u]);
    }
    double xs = pl->x1 - pl->x0, xm = pow(10, floor(log10(xs / 6 > 1 ? xs / 6 : 1))), xstep = xm;
    if (xs / xstep > 8)
        xstep = 2 * xm;
    if (xs / xstep > 8)
        xstep = 5 * xm;
    for (double x = ceil(pl->x0 / xstep) * xstep; x <= pl->x1 + 1e-9; x += xstep)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>", px(pl, x),
                pl->bottom + 16, x);
    fprintf(f, "\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
            (LEFT + W - RIGHT) / 2, pl->bottom + 34);
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#333\"/>", LEFT,
            W - RIGHT, pl->bottom, pl->bottom);
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#333\"/></g>\n", LEFT,
            LEFT, pl->top, pl->bottom);
}

/* The categories stacked in their order, each a polygon between its lower
 * and upper edges. */
static void areas(plot *pl)
{
    FILE *f = pl->f;
    for (int c = 0; c <= OTHER; c++) {
        if (!((pl->cats >> c) & 1u))
            continue;
        fprintf(f, "<path class=\"area-%s\" fill=\"%s\" fill-opacity=\"0.85\" d=\"",
                c == OTHER ? "other" : repro_memtl_cat_key(c), cat_color[c]);
        for (size_t i = 0; i < pl->n; i++) { /* upper edge, left to right */
            double top = 0;
            for (int k = 0; k <= c; k++)
                top += (pl->cats >> k) & 1u ? pl->p[i].cat[k] : 0;
            fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', px(pl, pl->p[i].x), py(pl, top));
        }
        for (size_t i = pl->n; i-- > 0;) { /* lower edge, back */
            double low = 0;
            for (int k = 0; k < c; k++)
                low += (pl->cats >> k) & 1u ? pl->p[i].cat[k] : 0;
            fprintf(f, "L%.1f %.1f", px(pl, pl->p[i].x), py(pl, low));
        }
        fprintf(f, "Z\"/>\n");
    }
}

/* A polyline of one figure (offset into point), skipping unknown values. */
static void line(plot *pl, const char *cls, size_t off, const char *color, double width,
                 const char *dash)
{
    FILE *f = pl->f;
    int any = 0;
    for (size_t i = 0; i < pl->n; i++) {
        double v = *(const double *)((const char *)&pl->p[i] + off);
        if (v < 0)
            continue;
        if (v > pl->ymax)
            v = pl->ymax;
        if (!any)
            fprintf(f, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" "
                       "stroke-width=\"%g\"%s%s%s d=\"",
                    cls, color, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
                    dash ? "\"" : "");
        fprintf(f, "%c%.1f %.1f", any ? 'L' : 'M', px(pl, pl->p[i].x), py(pl, v));
        any = 1;
    }
    if (any)
        fprintf(f, "\"/>\n");
}

/* One lane of ticks per kind of mark above the plot; a checkpoint and a
 * release also get a faint line through it. */
static void marks(plot *pl, const repro_memtl *tl)
{
    FILE *f = pl->f;
    int lane = 0;
    for (int b = 0; b < REPRO_MEMTL_NMARK; b++) {
        if (!((pl->marks >> b) & 1u))
            continue;
        int y = 62 + lane++ * LANE;
        int through = b == 4 || b == 5;
        fprintf(f, "<path class=\"mark-%s\" stroke=\"%s\" stroke-width=\"1\" d=\"",
                repro_memtl_mark_key(b), mark_color[b]);
        for (size_t i = 0; i < tl->nsteps; i++)
            if ((tl->steps[i].marks >> b) & 1u) {
                double x = px(pl, (double)tl->steps[i].step);
                fprintf(f, "M%.1f %dV%d", x, y, through ? pl->bottom : y + LANE - 3);
            }
        fprintf(f, "\"%s/>\n", through ? " stroke-opacity=\"0.5\"" : "");
    }
}

/* Which lines run above the scale, and their range. */
static void clip_note(plot *pl, const repro_memtl *tl)
{
    static const char *const what[] = {"reserved", "measured allocated", "measured reserved",
                                       "device used"};
    const size_t off[] = {offsetof(point, reserved), offsetof(point, m_alloc),
                          offsetof(point, m_reserved), offsetof(point, m_device)};
    char note[512] = "";
    size_t len = 0;
    for (int k = 0; k < 4; k++) {
        double lo = -1, hi = -1;
        for (size_t i = 0; i < pl->n; i++) {
            double v = *(const double *)((const char *)&pl->p[i] + off[k]);
            if (v > pl->ymax) {
                lo = lo < 0 || v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        if (hi > 0 && len < sizeof note)
            len += (size_t)snprintf(note + len, sizeof note - len, "%s%s %.1f to %.1f MiB",
                                    len ? "; " : "", what[k], lo / 1048576.0, hi / 1048576.0);
    }
    if (!len)
        return;
    fprintf(pl->f, "<text class=\"clipped\" x=\"%d\" y=\"%d\" font-size=\"11\" "
                   "fill=\"#555\">above the scale, along the top: ",
            LEFT + 6, pl->top + 12);
    esc(pl->f, note);
    if (tl->measured[0]) {
        fprintf(pl->f, " (");
        esc(pl->f, tl->measured);
        fprintf(pl->f, ")");
    }
    fprintf(pl->f, "</text>\n");
}

static void legend_row(FILE *f, int y, const char *color, int swatch, const char *dash,
                       const char *text)
{
    int x = W - RIGHT + 16;
    if (swatch)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\"/>", x, y - 9,
                color);
    else
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s%s%s/>",
                x, x + 14, y - 4, y - 4, color, dash ? " stroke-dasharray=\"" : "",
                dash ? dash : "", dash ? "\"" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 20, y);
    esc(f, text);
    fprintf(f, "</text>\n");
}

static void legend(plot *pl, const repro_memtl *tl)
{
    FILE *f = pl->f;
    int y = 70;
    fprintf(f, "<g class=\"legend\" font-size=\"11\" fill=\"#222\">\n");
    legend_row(f, y, "#222", 0, NULL, "allocated");
    legend_row(f, y += 16, "#d62728", 0, NULL,
               strstr(tl->measured, "as reserved") ? "reserved: process resident set"
                                                   : "reserved (allocator holds)");
    int measured = 0, device = 0;
    for (size_t i = 0; i < pl->n; i++) {
        measured |= pl->p[i].m_alloc >= 0 || pl->p[i].m_reserved >= 0;
        device |= pl->p[i].m_device >= 0;
    }
    if (device)
        legend_row(f, y += 16, "#1f77b4", 0, "6 2 1 2", "device used (cudaMemGetInfo)");
    if (measured) {
        char t[128];
        snprintf(t, sizeof t, "measured: %s", tl->measured[0] ? tl->measured : "backend");
        legend_row(f, y += 16, "#555", 0, "2 2", t);
    }
    y += 8;
    for (int c = OTHER; c >= 0; c--) /* top of the stack first */
        if ((pl->cats >> c) & 1u)
            legend_row(f, y += 16, cat_color[c], 1, NULL,
                       c == OTHER ? "other (not categorized)" : repro_memtl_cat_name(c));
    y += 8;
    for (int b = 0; b < REPRO_MEMTL_NMARK; b++)
        if ((pl->marks >> b) & 1u)
            legend_row(f, y += 16, mark_color[b], 0, NULL, repro_memtl_mark_name(b));
    fprintf(f, "</g>\n");
}

static void header(plot *pl, const repro_memtl *tl)
{
    FILE *f = pl->f;
    long last = tl->nsteps ? tl->steps[tl->nsteps - 1].step : 0;
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">memory timeline: ",
            LEFT);
    esc(f, tl->title[0] ? tl->title : "run");
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" font-size=\"11\" fill=\"#555\">%s run, %ld "
               "step%s; each step: its peak, then what stays between steps</text>\n",
            LEFT, !strcmp(tl->source, "python") ? "Python-client" : "repro", last,
            last == 1 ? "" : "s");
    if (tl->cut) {
        double x = px(pl, (double)last);
        fprintf(f, "<line class=\"cut\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                   "stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n",
                x, x, pl->top, pl->bottom);
        fprintf(f, "<text class=\"cut\" x=\"%d\" y=\"54\" font-size=\"12\" fill=\"#c00\">cut at "
                   "step %ld",
                LEFT, last);
        if (tl->planned_steps > 0) /* a program that did not say how many it planned */
            fprintf(f, " of %ld", tl->planned_steps);
        fprintf(f, ": ");
        esc(f, tl->cut_reason[0] ? tl->cut_reason : "the run stopped");
        fprintf(f, "</text>\n");
    }
}

char *repro_memtl_svg(const repro_memtl *tl)
{
    char *buf = NULL;
    size_t len = 0;
    plot pl = {0};
    pl.f = open_memstream(&buf, &len);
    if (!pl.f || make_points(&pl, tl)) {
        if (pl.f)
            fclose(pl.f);
        free(buf);
        free(pl.p);
        if (!pl.f)
            repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
        return NULL;
    }
    scale(&pl, tl);
    FILE *f = pl.f;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            W, H, W, H);
    fprintf(f, "<desc>repro memory timeline: source ");
    esc(f, tl->source); /* from a client's JSON: text like any other */
    fprintf(f, ", %zu recorded steps%s</desc>\n", tl->nsteps, tl->cut ? ", cut" : "");
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    header(&pl, tl);
    axes(&pl);
    areas(&pl);
    line(&pl, "line-reserved", offsetof(point, reserved), "#d62728", 2, NULL);
    line(&pl, "line-allocated", offsetof(point, allocated), "#222", 1.5, NULL);
    line(&pl, "line-measured-reserved", offsetof(point, m_reserved), "#d62728", 1.2, "2 2");
    line(&pl, "line-measured-allocated", offsetof(point, m_alloc), "#555", 1.2, "2 2");
    line(&pl, "line-device-used", offsetof(point, m_device), "#1f77b4", 1.2, "6 2 1 2");
    marks(&pl, tl);
    if (pl.clipped)
        clip_note(&pl, tl);
    legend(&pl, tl);
    fprintf(f, "</svg>\n");
    free(pl.p);
    if (fclose(f)) {
        free(buf);
        repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
        return NULL;
    }
    return buf;
}
