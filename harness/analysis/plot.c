/* The divergence curve as a standalone SVG line chart (compare.h): relative
 * difference of the parameter norm per step, log-scale y, with the first
 * divergent step marked. Plain SVG text: any browser or CI artifact viewer
 * shows it, no plotting library needed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "util/error.h"
#include "util/outpath.h"

enum { W = 760, H = 440, ML = 90, MR = 30, MT = 56, MB = 64 };
#define PW (W - ML - MR)
#define PH (H - MT - MB)

/* Writes s with XML's five special characters escaped. */
static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

typedef struct {
    double x0, x1; /* step range */
    int e0, e1;    /* log10 range; e0 is the floor where zeros are drawn */
} scale;

static double sx(const scale *s, double step)
{
    return ML + (step - s->x0) / (s->x1 - s->x0) * PW;
}

static double sy(const scale *s, double v)
{
    double e = v > 0 ? log10(v) : s->e0;
    if (e < s->e0)
        e = s->e0;
    if (e > s->e1)
        e = s->e1;
    return MT + (s->e1 - e) / (s->e1 - s->e0) * PH;
}

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) giving ~8 ticks. */
static double nice_step(double span)
{
    double raw = span / 8, mag = pow(10, floor(log10(raw)));
    double m = raw / mag;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
}

/* standalone: a file of its own (XML declaration, namespace); else an
 * <svg> element for an HTML page, which needs neither. */
static void plot(FILE *f, const repro_divergence *d, const char *title, int standalone)
{
    scale s = {0, 1, -12, -11};
    double vmin = INFINITY, vmax = 0;
    for (long i = 0; i < d->ncurve; i++) {
        double v = d->curve[i].rel_l2;
        if (i == 0 || d->curve[i].step < s.x0)
            s.x0 = (double)d->curve[i].step;
        if (i == 0 || d->curve[i].step > s.x1)
            s.x1 = (double)d->curve[i].step;
        if (isfinite(v) && v > 0) {
            vmin = fmin(vmin, v);
            vmax = fmax(vmax, v);
        }
    }
    if (d->first_step > 0 && d->ncurve > 0) {
        s.x0 = fmin(s.x0, (double)d->first_step);
        s.x1 = fmax(s.x1, (double)d->first_step);
    }
    if (s.x1 <= s.x0)
        s.x1 = s.x0 + 1;
    /* The floor sits a decade below the smallest nonzero value (at most
     * 1e-12), so only exact zeros are drawn there. */
    if (vmax > 0) {
        s.e0 = (int)fmin(-12, floor(log10(vmin)) - 1);
        s.e1 = (int)fmax(s.e0 + 1, ceil(log10(vmax)));
    }

    if (standalone)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\"", f);
    else
        fputs("<svg class=\"curve\"", f);
    fprintf(f,
            " width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", W / 2);
    xml_text(f, title ? title : "divergence curve");
    fprintf(f,
            "</text>\n<text x=\"%d\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">"
            "relative difference of %s between A and B, per step (log scale)</text>\n",
            W / 2, repro_curve_measure(d));
    if (d->ncurve == 0) {
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no data: no common step has "
                "tensor detail on both sides</text>\n</svg>\n",
                W / 2, H / 2);
        return;
    }

    /* Axes, grid and tick labels. */
    fprintf(f, "<g stroke=\"#ddd\">\n");
    int every = (s.e1 - s.e0 + 9) / 10; /* decades per y label: at most ~10 labels */
    for (int e = s.e0; e <= s.e1; e++) {
        if (e % every != 0 && e != s.e0)
            continue;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", ML, ML + PW,
                sy(&s, pow(10, e)), sy(&s, pow(10, e)));
    }
    double xs = nice_step(s.x1 - s.x0);
    double xt0 = ceil(s.x0 / xs) * xs;
    for (double x = xt0; x <= s.x1 + 1e-9; x += xs)
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>\n", sx(&s, x), sx(&s, x),
                MT, MT + PH);
    fprintf(f, "</g>\n<g text-anchor=\"end\">\n");
    for (int e = s.e0; e <= s.e1; e++) {
        /* Round decades, and the floor; skip a decade crowding the floor. */
        if (e != s.e0 && (e % every != 0 || (every > 1 && e - s.e0 < every / 2 + 1)))
            continue;
        if (e == s.e0)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\">0</text>\n", ML - 8, sy(&s, 0) + 4);
        else
            fprintf(f, "<text x=\"%d\" y=\"%.1f\">1e%d</text>\n", ML - 8, sy(&s, pow(10, e)) + 4,
                    e);
    }
    fprintf(f, "</g>\n<g text-anchor=\"middle\">\n");
    for (double x = xt0; x <= s.x1 + 1e-9; x += xs)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n", sx(&s, x), MT + PH + 18, x);
    fprintf(f,
            "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"black\"/>\n",
            ML, MT, PW, PH);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", ML + PW / 2, H - 16);
    fprintf(f,
            "<text transform=\"translate(22 %d) rotate(-90)\" text-anchor=\"middle\">"
            "rel. difference of %s</text>\n",
            MT + PH / 2, repro_curve_measure(d));

    /* First divergent step. */
    if (d->first_step > 0) {
        double x = sx(&s, (double)d->first_step);
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#c00\" "
                "stroke-dasharray=\"5,4\"/>\n",
                x, x, MT, MT + PH);
        fprintf(f,
                "<text x=\"%.1f\" y=\"%d\" fill=\"#c00\" text-anchor=\"%s\">"
                "first divergence: step %ld</text>\n",
                x + (x > ML + PW * 0.7 ? -4 : 4), MT + 14, x > ML + PW * 0.7 ? "end" : "start",
                d->first_step);
    }

    /* The curve: one polyline per run of finite values (NaN breaks it). */
    int open = 0;
    for (long i = 0; i < d->ncurve; i++) {
        const repro_curve_point *c = &d->curve[i];
        if (!(c->rel_l2 >= 0) || isinf(c->rel_l2)) {
            if (open)
                fprintf(f, "\"/>\n");
            open = 0;
            continue;
        }
        if (!open)
            fprintf(f, "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" points=\"");
        fprintf(f, "%s%.1f,%.1f", open ? " " : "", sx(&s, (double)c->step), sy(&s, c->rel_l2));
        open = 1;
    }
    if (open)
        fprintf(f, "\"/>\n");
    if (d->ncurve <= 100)
        for (long i = 0; i < d->ncurve; i++)
            if (d->curve[i].rel_l2 >= 0 && !isinf(d->curve[i].rel_l2))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#1f5fbf\"/>\n",
                        sx(&s, (double)d->curve[i].step), sy(&s, d->curve[i].rel_l2));
    fprintf(f, "</svg>\n");
}

const char *repro_curve_measure(const repro_divergence *d)
{
    return d->curve_all_tensors ? "||all recorded tensors||" : "||params||";
}

int repro_plot_svg(const char *path, const repro_divergence *d, const char *title)
{
    /* The output-path rule (util/outpath.h): beside the target and renamed
     * over it (a reader never sees half a chart), or straight into a FIFO
     * or device; anything else refused. */
    repro_outfile out;
    if (repro_outfile_open(&out, path, "plot"))
        return -1;
    plot(out.f, d, title, 1);
    return repro_outfile_commit(&out);
}

void repro_plot_svg_element(FILE *f, const repro_divergence *d, const char *title)
{
    plot(f, d, title, 0);
}
