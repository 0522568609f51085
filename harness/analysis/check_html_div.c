/* The divergence section of `repro check --report` (check_html.h): for one
 * failing comparison, where the runs part, the curve, the tensors and op
 * outputs that differ first, the element detail from the dumps, and the
 * text report the terminal showed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/check_html.h"
#include "util/html.h"

/* Rows of each tensor table; the full text report below has the rest. */
#define HTML_MAX_ROWS 12

static void shape_text(const repro_trace_tensor *t, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s[", t->dtype);
    for (int i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%ld", i ? "," : "", t->shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

static void td_num(FILE *f, double v)
{
    if (isnan(v))
        fputs("<td class=\"num\">nan</td>", f);
    else
        fprintf(f, "<td class=\"num\">%.9g</td>", v);
}

/* One row: the name (marked when it is where the difference begins),
 * shape, and each side's l2 and max |x|. */
static void tensor_row(FILE *f, const repro_tensor_diff *d, const char *mark)
{
    const repro_trace_tensor *any = d->in_a ? &d->a : &d->b;
    char shape[128];
    shape_text(any, shape, sizeof shape);
    fputs("<tr><td class=\"name\">", f);
    repro_html_text(f, d->name);
    if (mark) {
        fputs(" <span class=\"mark\">", f);
        repro_html_text(f, mark);
        fputs("</span>", f);
    }
    fputs("</td><td>", f);
    repro_html_text(f, shape);
    fputs("</td>", f);
    if (!d->in_a || !d->in_b) {
        fprintf(f, "<td colspan=\"4\">only in %s</td></tr>\n", d->in_a ? "run 1" : "this run");
        return;
    }
    td_num(f, d->a.l2);
    td_num(f, d->b.l2);
    td_num(f, d->a.max_abs);
    td_num(f, d->b.max_abs);
    fputs("</tr>\n", f);
}

/* mark_name: the row that gets `mark` (NULL: none). */
static void tensor_table(FILE *f, const char *caption, const repro_tensor_diff *list, int n,
                         const char *mark_name, const char *mark)
{
    if (n <= 0)
        return;
    fputs("<table class=\"tensors\"><caption>", f);
    repro_html_text(f, caption);
    fputs("</caption>\n<tr><th>tensor</th><th>dtype[shape]</th><th>l2 (run 1)</th>"
          "<th>l2 (this run)</th><th>max |x| (run 1)</th><th>max |x| (this run)</th></tr>\n",
          f);
    for (int i = 0; i < n && i < HTML_MAX_ROWS; i++)
        tensor_row(f, &list[i], mark_name && !strcmp(list[i].name, mark_name) ? mark : NULL);
    if (n > HTML_MAX_ROWS)
        fprintf(f, "<tr><td colspan=\"6\">... and %d more (in the text report below)</td></tr>\n",
                n - HTML_MAX_ROWS);
    fputs("</table>\n", f);
}

/* The tensors and op outputs at the detail step, and which of them is the
 * likely origin, as the text report says: at the divergent step the first
 * in forward/backward order (a program's order says nothing: only an op
 * output's execution order does); at a later step the one the dumps at the
 * divergent step found. */
static void tensor_lists(FILE *f, const repro_divergence *d)
{
    char caption[200];
    int at_first = d->detail_step == d->first_step;
    if (!d->ntensors && !d->nops) {
        fputs("<p>No tensor detail on both sides at or after the first divergent step "
              "(re-run with <code>--set trace.every=1</code> to see which tensor differs).</p>\n",
              f);
        return;
    }
    if (!at_first)
        fprintf(f, "<p>Step %ld has no tensor detail; these differ at step %ld, the next step "
                   "with detail (by then the difference has spread).</p>\n",
                d->first_step, d->detail_step);
    snprintf(caption, sizeof caption, "tensors that differ at step %ld (%d), in %s order",
             d->detail_step, d->ntensors, d->order_unknown ? "the trace's" : "forward/backward");
    const char *origin = NULL, *mark = "likely origin";
    if (at_first && d->ntensors)
        origin = d->tensors[0].name;
    else if (!at_first && !d->order_unknown && d->element.valid && d->element.count > 0) {
        origin = d->element.tensor;
        mark = "likely origin (the dumps at the divergent step)";
    }
    if (d->order_unknown && at_first)
        mark = "first in digest order";
    tensor_table(f, caption, d->tensors, d->ntensors, origin, mark);
    snprintf(caption, sizeof caption, "op outputs that differ at step %ld (%d), in execution order",
             d->detail_step, d->nops);
    tensor_table(f, caption, d->ops, d->nops, at_first && d->nops ? d->ops[0].name : NULL,
                 "first in execution order: the likely origin");
}

/* What the dumps of both sides at the divergent step say of one tensor. */
static void element_detail(FILE *f, const repro_element_diff *e)
{
    if (!e->valid)
        return;
    fputs("<table class=\"kv\"><caption>element detail (from tensor dumps of both sides at the "
          "first divergent step)</caption>\n<tr><th>tensor</th><td class=\"name\">",
          f);
    repro_html_text(f, e->tensor);
    fprintf(f,
            "</td></tr>\n<tr><th>elements that differ</th><td>%ld of %ld</td></tr>\n"
            "<tr><th>element range</th><td>%ld .. %ld (4 KiB leaves %ld .. %ld)</td></tr>\n"
            "<tr><th>max |a-b|</th><td>%.9g</td></tr>\n",
            e->count, e->numel, e->first, e->last, e->first_leaf, e->last_leaf, e->max_abs);
    if (e->max_ulp == REPRO_ULP_NAN)
        fputs("<tr><th>max ULP distance</th><td>NaN against a number</td></tr>\n", f);
    else
        fprintf(f, "<tr><th>max ULP distance</th><td>%llu</td></tr>\n",
                (unsigned long long)e->max_ulp);
    fputs("</table>\n", f);
}

/* The first divergent step in words: scope, losses. */
static void summary(FILE *f, const repro_multirun *m, int idx, const repro_divergence *d)
{
    fputs("<table class=\"kv\">\n<tr><th>scope</th><td>", f);
    repro_html_text(f, d->scope[0] ? d->scope : m->plan[idx].scope);
    fputs("</td></tr>\n", f);
    if (d->scope_note[0]) {
        fputs("<tr><th>thread counts</th><td>", f);
        repro_html_text(f, d->scope_note);
        fputs("</td></tr>\n", f);
    }
    if (d->first_step > 0)
        fprintf(f, "<tr><th>first divergent step</th><td class=\"bad\">step %ld</td></tr>\n",
                d->first_step);
    else
        fprintf(f, "<tr><th>first divergent step</th><td>none among the %ld common steps: the "
                   "runs differ in length or final chain</td></tr>\n",
                d->common_steps);
    if (d->first_has_loss)
        fprintf(f, "<tr><th>loss there</th><td>run 1 %.9g (0x%08x), this run %.9g (0x%08x)"
                   "</td></tr>\n",
                d->first_loss_a, d->first_loss_bits_a, d->first_loss_b, d->first_loss_bits_b);
    fprintf(f, "<tr><th>steps</th><td>%ld common; run 1 to %ld, this run to %ld%s</td></tr>\n",
            d->common_steps, d->steps_a, d->steps_b,
            d->truncated_a || d->truncated_b ? " (a trace has no trailer: cut short)" : "");
    fputs("</table>\n", f);
}

void repro_check_html_divergence(FILE *f, const repro_multirun *m, int idx)
{
    const repro_divergence *d = &m->divs[idx];
    char id[32], title[200];
    snprintf(id, sizeof id, "div-%d", idx + 1);
    fprintf(f, "<section class=\"divergence\" id=\"%s\">\n<h3>", id);
    repro_html_printf(f, "%s differs from %s", m->plan[idx].label, m->plan[0].label);
    fputs("</h3>\n", f);
    summary(f, m, idx, d);
    snprintf(title, sizeof title, "%s vs %s", m->plan[0].label, m->plan[idx].label);
    fputs("<div class=\"chart\">\n", f);
    repro_plot_svg_element(f, d, title);
    fputs("</div>\n", f);
    tensor_lists(f, d);
    element_detail(f, &d->element);
    char hint[4096];
    if (repro_multirun_op_command(m, idx, hint, sizeof hint)) {
        fputs("<p>No op output is recorded at the divergent step: to name the first op that "
              "diverged, in execution order, re-run this comparison at trace level op:</p>\n"
              "<pre>",
              f);
        repro_html_text(f, hint);
        fputs("</pre>\n", f);
    }
    char *text = repro_divergence_text(&m->traces[0], &m->traces[idx], d);
    if (text) {
        fputs("<details><summary>the text report</summary>\n<pre>", f);
        repro_html_text(f, text);
        fputs("</pre></details>\n", f);
        free(text);
    }
    fputs("</section>\n", f);
}
