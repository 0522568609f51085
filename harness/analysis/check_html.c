/* The page of `repro check --report` (check_html.h). Plain HTML with one
 * inline style sheet; the charts are inline <svg> elements. */
#include "analysis/check_html.h"

#include <string.h>

#include "util/error.h"
#include "util/html.h"

static const char style[] =
    "body{font-family:sans-serif;margin:24px auto;padding:0 16px;max-width:1000px;color:#222;"
    "background:#fff}\n"
    "h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;border-bottom:1px solid #ccc;"
    "padding-bottom:4px;margin-top:32px}h3{font-size:15px}\n"
    ".verdict{padding:12px 16px;border-radius:6px;font-size:17px;font-weight:bold;"
    "margin:12px 0}\n"
    ".pass{background:#e3f4e1;border:1px solid #4a9a3f;color:#1d5a16}\n"
    ".fail{background:#fbe3e1;border:1px solid #c0392b;color:#8a1f12}\n"
    ".cut{background:#fff1d6;border:1px solid #d68910;color:#7a4a00}\n"
    "table{border-collapse:collapse;margin:8px 0 16px}caption{text-align:left;"
    "font-weight:bold;padding:4px 0}\n"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;"
    "font-size:13px}th{background:#f3f3f3}\n"
    "td.num{text-align:right;font-family:monospace}td.name,code,pre{font-family:monospace}\n"
    "td.ok{color:#1d5a16}td.bad{color:#a93226;font-weight:bold}td.warn{color:#9a6400}\n"
    ".mark{color:#a93226;font-family:sans-serif;font-size:12px}\n"
    "pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;overflow-x:auto;"
    "font-size:12px;white-space:pre-wrap}\n"
    ".chart svg{max-width:100%;height:auto;border:1px solid #eee}\n"
    ".meta{color:#555;font-size:13px}\n";

/* ---- runs and scopes --------------------------------------------------- */

/* The chain of a finished run's trace, for a check cut before the
 * comparison: "" when it has none. */
static void finished_chain(const repro_run_plan *p, char hex[65], long *steps)
{
    char path[1200];
    repro_trace t;
    hex[0] = '\0';
    *steps = 0;
    snprintf(path, sizeof path, "%s/trace.jsonl", p->dir);
    memset(&t, 0, sizeof t);
    if (repro_trace_scan(&t, path) == 0 && t.has_trailer) {
        repro_digest_hex(&t.trailer_chain, hex);
        *steps = t.trailer_steps;
    }
    repro_error_clear();
    repro_trace_release(&t);
}

/* What became of run i, as a table cell; 1 when it broke the contract. */
static int run_result(FILE *f, const repro_check_html *r, int i, const char *chain0)
{
    const repro_multirun *m = r->m;
    const repro_run_plan *p = &m->plan[i];
    if (p->state == REPRO_RUN_PLANNED) {
        fputs("<td class=\"warn\">not run (cut)</td>", f);
        return 0;
    }
    if (p->state == REPRO_RUN_RUNNING) {
        fputs("<td class=\"warn\">stopped while running (cut)</td>", f);
        return 0;
    }
    if (p->rc) {
        if (p->rc > 128) /* the child's 128 + signal: the check's interruption */
            fprintf(f, "<td class=\"warn\">stopped by signal %d (cut)</td>", p->rc - 128);
        else if (p->rc < 0 && r->signal) /* refused to start once interrupted */
            fprintf(f, "<td class=\"warn\">not started: interrupted by signal %d (cut)</td>",
                    r->signal);
        else
            fprintf(f, "<td class=\"bad\">failed (%s %d)</td>", p->rc > 0 ? "exit" : "error",
                    p->rc);
        return 0;
    }
    if (r->compared && i < m->ntraces) {
        const repro_divergence *d = &m->divs[i];
        if (i == 0)
            fprintf(f, "<td>the reference (%ld steps)</td>", m->traces[0].trailer_steps);
        else if (d->identical)
            fprintf(f, "<td class=\"ok\">identical to %s</td>", "run 1");
        else if (d->first_step > 0)
            fprintf(f, "<td class=\"bad\"><a href=\"#div-%d\">differs from run 1 at step %ld"
                       "</a></td>",
                    i + 1, d->first_step);
        else
            fprintf(f, "<td class=\"bad\"><a href=\"#div-%d\">differs from run 1</a></td>", i + 1);
        return i > 0 && !d->identical;
    }
    char hex[65];
    long steps;
    finished_chain(p, hex, &steps);
    if (!hex[0])
        fputs("<td class=\"warn\">finished, trace not read (cut)</td>", f);
    else if (i == 0 || !chain0[0])
        fprintf(f, "<td>finished, %ld steps, chain %.12s (not compared: cut)</td>", steps, hex);
    else
        fprintf(f, "<td class=\"%s\">finished; final chain %s run 1's (not compared step by "
                   "step: cut)</td>",
                strcmp(hex, chain0) ? "bad" : "ok", strcmp(hex, chain0) ? "differs from" : "equals");
    return 0;
}

static void runs_table(FILE *f, const repro_check_html *r, int *scope_bad)
{
    const repro_multirun *m = r->m;
    char chain0[65] = "";
    long steps0;
    if (!r->compared && m->nplan > 0 && m->plan[0].state == REPRO_RUN_DONE && !m->plan[0].rc)
        finished_chain(&m->plan[0], chain0, &steps0);
    fputs("<table class=\"runs\"><caption>runs</caption>\n<tr><th>run</th><th>scope</th>"
          "<th>its own setting</th><th>result</th><th>seconds</th></tr>\n",
          f);
    for (int i = 0; i < m->nplan; i++) {
        const repro_run_plan *p = &m->plan[i];
        fputs("<tr><td>", f);
        repro_html_text(f, p->label);
        fputs("</td><td>", f);
        repro_html_text(f, p->scope);
        fputs("</td><td>", f);
        if (p->extra[0][0]) {
            fputs("<code>", f);
            repro_html_printf(f, "%s %s", p->extra[0], p->extra[1]);
            fputs("</code>", f);
        } else if (p->resume_at > 0) {
            fprintf(f, "<code>--resume-at %ld</code>", p->resume_at);
        }
        fputs("</td>", f);
        scope_bad[i] = run_result(f, r, i, chain0);
        if (p->state == REPRO_RUN_DONE)
            fprintf(f, "<td class=\"num\">%.2f</td></tr>\n", p->seconds);
        else
            fputs("<td></td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* One row per scope of the contract the check exercised: held, broken,
 * or not known (cut). */
static void scopes_table(FILE *f, const repro_check_html *r, const int *bad)
{
    const repro_multirun *m = r->m;
    fputs("<table class=\"scopes\"><caption>verdict per scope</caption>\n<tr><th>scope</th>"
          "<th>runs</th><th>verdict</th></tr>\n",
          f);
    for (int i = 0; i < m->nplan; i++) {
        int first = 1, runs = 0, broken = 0, unknown = 0;
        for (int j = 0; j < i && first; j++)
            first = strcmp(m->plan[j].scope, m->plan[i].scope) != 0;
        if (!first)
            continue;
        for (int j = 0; j < m->nplan; j++)
            if (!strcmp(m->plan[j].scope, m->plan[i].scope)) {
                runs++;
                broken += bad[j];
                unknown += !r->compared || m->plan[j].state != REPRO_RUN_DONE || m->plan[j].rc;
            }
        fputs("<tr><td>", f);
        repro_html_text(f, m->plan[i].scope);
        fprintf(f, "</td><td class=\"num\">%d</td>", runs);
        if (broken)
            fprintf(f, "<td class=\"bad\">broken: %d run%s differ%s from run 1</td></tr>\n",
                    broken, broken == 1 ? "" : "s", broken == 1 ? "s" : "");
        else if (unknown)
            fputs("<td class=\"warn\">not known: the check was cut</td></tr>\n", f);
        else
            fputs("<td class=\"ok\">holds: bitwise identical</td></tr>\n", f);
    }
    if (r->golden_compared) {
        fputs("<tr><td>golden (this environment class)</td><td class=\"num\">1</td>", f);
        fputs(r->golden_rc == 0   ? "<td class=\"ok\">no mismatch: run 1 matches, or this class "
                                    "has no golden (see below)</td>"
              : r->golden_rc == 1 ? "<td class=\"bad\">run 1 differs from the golden</td>"
                                  : "<td class=\"warn\">could not be compared</td>",
              f);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    if (r->unexercised && r->unexercised[0]) {
        fputs("<p class=\"warn\">Not exercised: ", f);
        repro_html_text(f, r->unexercised);
        fputs("</p>\n", f);
    }
}

/* ---- golden, history ---------------------------------------------------- */

/* The commits of the history, each with its classes' chains. */
static void history_table(FILE *f, const json_t *commits)
{
    if (!json_array_size(commits))
        return;
    fputs("<table class=\"history\"><tr><th>commit</th><th>date"
          "</th><th>subject</th><th>chain of each class's golden there</th></tr>\n",
          f);
    size_t i;
    const json_t *cm;
    json_array_foreach(commits, i, cm) {
        fputs("<tr><td class=\"name\">", f);
        repro_html_printf(f, "%.7s", json_string_value(json_object_get(cm, "commit")));
        fputs("</td><td>", f);
        repro_html_text(f, json_string_value(json_object_get(cm, "time")));
        fputs("</td><td>", f);
        repro_html_text(f, json_string_value(json_object_get(cm, "summary")));
        fputs("</td><td class=\"name\">", f);
        const char *cls;
        const json_t *chain;
        json_object_foreach((json_t *)json_object_get(cm, "chains"), cls, chain) {
            const char *hex = json_string_value(chain);
            repro_html_printf(f, "%s %.12s", cls, hex && hex[0] ? hex : "(no trailer)");
            fputs("<br>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void golden_section(FILE *f, const repro_check_html *r)
{
    fputs("<h2 id=\"golden\">Golden</h2>\n", f);
    if (!r->golden_compared)
        fputs("<p>Run 1 was not compared with a golden (--no-golden, or the check stopped "
              "before).</p>\n",
              f);
    else if (r->golden_text && r->golden_text[0]) {
        fputs("<pre>", f);
        repro_html_text(f, r->golden_text);
        fputs("</pre>\n", f);
    } else {
        fputs("<p>Run 1 was compared with the golden of this environment class.</p>\n", f);
    }
    fputs("<h3>History (repro log)</h3>\n", f);
    const json_t *commits = json_object_get(r->history, "commits");
    if (!r->history) {
        fputs("<p>", f);
        repro_html_text(f, r->history_note ? r->history_note : "not asked for");
        fputs("</p>\n", f);
        return;
    }
    fprintf(f, "<p>%zu commit%s changed <code>golden/", json_array_size(commits),
            json_array_size(commits) == 1 ? "" : "s");
    repro_html_text(f, json_string_value(json_object_get(r->history, "experiment")));
    fputs("/</code>, newest first.</p>\n", f);
    history_table(f, commits);
    if (json_is_true(json_object_get(r->history, "incomplete"))) {
        const char *note = json_string_value(json_object_get(r->history, "note"));
        fputs("<p>History incomplete: ", f);
        repro_html_text(f, note ? note : "shallow clone");
        fputs("</p>\n", f);
    }
}

/* ---- memory, environment, timing ---------------------------------------- */

static void memory_section(FILE *f, const repro_check_html *r)
{
    fputs("<h2 id=\"memory\">Memory timeline</h2>\n", f);
    if (r->memory_note) {
        fputs("<p>", f);
        repro_html_text(f, r->memory_note);
        fputs("</p>\n", f);
    }
    if (r->memory_svg) {
        fputs("<div class=\"chart\">\n", f);
        repro_html_svg(f, r->memory_svg);
        fputs("</div>\n", f);
    }
}

static void env_section(FILE *f, const repro_check_html *r)
{
    fputs("<h2 id=\"environment\">Environment</h2>\n", f);
    if (!r->env) {
        fputs("<p>Not known.</p>\n", f);
        return;
    }
    fputs("<p>Class <code>", f);
    repro_html_text(f, r->env->class_id);
    fputs("</code> (goldens are filed under it; bitwise identity is promised within it)", f);
    if (r->env_source) {
        fputs(", from ", f);
        repro_html_text(f, r->env_source);
    }
    fputs(".</p>\n<table class=\"kv\"><tr><th>field</th><th>value</th><th>in the class"
          "</th></tr>\n",
          f);
    const char *key, *value;
    int in_class;
    for (int i = 0; (key = repro_env_field(r->env, i, &value, &in_class)) != NULL; i++) {
        if (!value || !value[0])
            continue;
        fputs("<tr><th>", f);
        repro_html_text(f, key);
        fputs("</th><td class=\"name\">", f);
        repro_html_text(f, value);
        fprintf(f, "</td><td>%s</td></tr>\n", in_class ? "yes" : "");
    }
    fputs("</table>\n", f);
}

enum { TW = 760, TROW = 22, TML = 130, TMR = 60 };

/* Each run as a bar from its start to its end: which ran at once, and
 * how long each took. */
static void timing_chart(FILE *f, const repro_check_html *r)
{
    const repro_multirun *m = r->m;
    double span = r->wall_s > 0 ? r->wall_s : 1;
    for (int i = 0; i < m->nplan; i++)
        if (m->plan[i].started + m->plan[i].seconds > span)
            span = m->plan[i].started + m->plan[i].seconds;
    int h = TROW * m->nplan + 30;
    double pw = TW - TML - TMR;
    fprintf(f, "<svg class=\"timing\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n",
            TW, h, TW, h);
    for (int i = 0; i < m->nplan; i++) {
        const repro_run_plan *p = &m->plan[i];
        double y = 4 + i * TROW;
        fprintf(f, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\">", TML - 8, y + 14);
        repro_html_text(f, p->label);
        fputs("</text>\n", f);
        if (p->state == REPRO_RUN_PLANNED)
            continue;
        double end = p->state == REPRO_RUN_DONE ? p->started + p->seconds : span;
        const char *color = p->state != REPRO_RUN_DONE ? "#d68910" : p->rc ? "#c0392b" : "#4a7fc1";
        fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>\n",
                TML + p->started / span * pw, y, (end - p->started) / span * pw + 1, color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\">%.1f s%s</text>\n", TML + end / span * pw + 6,
                y + 13, end - p->started, p->state == REPRO_RUN_DONE ? "" : " (cut)");
    }
    fprintf(f, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", TML,
            TML + pw, h - 24, h - 24);
    fprintf(f, "<text x=\"%d\" y=\"%d\">0 s</text><text x=\"%.0f\" y=\"%d\" "
               "text-anchor=\"end\">%.1f s</text>\n</svg>\n",
            TML, h - 8, TML + pw, h - 8, span);
}

static void timing_section(FILE *f, const repro_check_html *r)
{
    fputs("<h2 id=\"timing\">Timing</h2>\n", f);
    fprintf(f, "<p>The check took %.1f s of wall time", r->wall_s);
    if (r->m->jobs > 1)
        fprintf(f, ", up to %d runs at once (--jobs: it moves time, never bits)", r->m->jobs);
    fputs("; the comparison and any re-runs to the divergent step take the rest.</p>\n", f);
    if (r->m->nplan > 0)
        timing_chart(f, r);
}

/* ---- the page ------------------------------------------------------------ */

static void head(FILE *f, const repro_check_html *r)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"generator\" content=\"repro check --report\">\n<title>repro check: ",
          f);
    repro_html_text(f, r->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>repro check: ", style);
    repro_html_text(f, r->title);
    fputs("</h1>\n<p class=\"meta\">", f);
    if (r->started_at) {
        fputs("started ", f);
        repro_html_text(f, r->started_at);
    }
    if (r->command) {
        fputs(" &middot; <code>", f);
        repro_html_text(f, r->command);
        fputs("</code>", f);
    }
    if (r->m->root[0]) {
        fputs(" &middot; runs in <code>", f);
        repro_html_text(f, r->m->root);
        fputs("</code>", f);
    }
    fputs("</p>\n", f);
}

static void verdict(FILE *f, const repro_check_html *r)
{
    const char *cls = r->cut ? "cut" : r->exit_code == 0 ? "pass" : "fail";
    fprintf(f, "<div class=\"verdict %s\" id=\"verdict\">", cls);
    if (r->cut) {
        fputs("CUT SHORT: ", f);
        repro_html_text(f, r->cut);
        fputs("<br>This page shows what the check had when it stopped.", f);
    } else {
        repro_html_text(f, r->verdict ? r->verdict : r->exit_code ? "NOT reproducible"
                                                                  : "reproducible");
    }
    fprintf(f, " <span class=\"meta\">(exit %d)</span></div>\n", r->exit_code);
}

void repro_check_html_write(FILE *f, const repro_check_html *r)
{
    const repro_multirun *m = r->m;
    int bad[REPRO_MULTIRUN_MAX] = {0};
    head(f, r);
    verdict(f, r);
    fputs("<h2 id=\"scopes\">Verdict</h2>\n", f);
    runs_table(f, r, bad);
    scopes_table(f, r, bad);
    if (r->compared && m->failed) {
        fputs("<h2 id=\"divergence\">Divergence</h2>\n", f);
        for (int i = 1; i < m->nplan && i < m->ntraces; i++)
            if (!m->divs[i].identical)
                repro_check_html_divergence(f, m, i);
    }
    golden_section(f, r);
    memory_section(f, r);
    env_section(f, r);
    timing_section(f, r);
    fputs("<p class=\"meta\">Written by repro; self-contained: no script, nothing fetched."
          "</p>\n</body>\n</html>\n",
          f);
}
