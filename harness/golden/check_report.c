/* Gathering and writing the HTML report of a check (check_report.h). */
#include "golden/check_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/memtl_svg.h"
#include "golden/golden_log.h"
#include "util/error.h"

#define HISTORY_MAX 20

/* The fingerprint of the environment run 1 ran in (its trace header's
 * "env"), else of this process. */
static void environment(repro_check_html *h, repro_env *env)
{
    const repro_multirun *m = h->m;
    if (h->compared && m->ntraces > 0 && m->traces[0].header_json) {
        const json_t *e = json_object_get(m->traces[0].header_json, "env");
        if (e && repro_env_from_json(e, env) == 0) {
            h->env = env;
            h->env_source = "run 1's trace header";
            return;
        }
        repro_error_clear();
    }
    if (repro_env_get(env) == 0) {
        h->env = env;
        h->env_source = "this process (no run's trace was read)";
    } else {
        repro_error_clear();
    }
}

/* Run 1's memory timeline (multirun.h: memory_timeline), drawn; a note
 * when there is none. The SVG is malloc'd (the caller frees). */
static char *memory(repro_check_html *h, char *note, size_t len)
{
    const repro_multirun *m = h->m;
    char path[1200];
    repro_memtl tl;
    if (!m->memory_timeline) {
        snprintf(note, len, "%s", m->cmd ? "A program's check records no memory timeline: "
                                           "see `repro run --memory-timeline FILE -- PROGRAM`."
                                         : "No memory timeline was recorded for these runs.");
        h->memory_note = note;
        return NULL;
    }
    snprintf(path, sizeof path, "%s/memory.json", m->nplan ? m->plan[0].dir : "");
    if (m->nplan == 0 || access(path, F_OK) != 0) {
        snprintf(note, len, "Run 1 wrote no memory timeline (it did not get that far).");
        h->memory_note = note;
        return NULL;
    }
    char *svg = NULL;
    if (repro_memtl_read(&tl, path) == 0) {
        svg = repro_memtl_svg(&tl);
        repro_memtl_release(&tl);
    }
    if (svg)
        snprintf(note, len, "Run 1's memory over its steps, as `repro run --memory-timeline` "
                            "draws it.");
    else
        snprintf(note, len, "Run 1's memory timeline could not be drawn: %s",
                 repro_error_message());
    repro_error_clear();
    h->memory_note = note;
    return svg;
}

int repro_check_report_write(repro_outfile *out, repro_check_html *h,
                             const repro_check_report_src *src)
{
    json_t *history = NULL;
    char note[1200];
    repro_env env;
    if (!h->history && !h->history_note) {
        if (repro_golden_log(src->exp_file, src->program, src->golden_name, HISTORY_MAX,
                             &history) == 0) {
            h->history = history;
        } else {
            snprintf(note, sizeof note, "No history: %s", repro_error_message());
            repro_error_clear();
            h->history_note = note;
        }
    }
    if (!h->env)
        environment(h, &env);
    char mem_note[1400];
    char *svg = h->memory_svg || h->memory_note ? NULL : memory(h, mem_note, sizeof mem_note);
    if (svg)
        h->memory_svg = svg;
    repro_check_html_write(out->f, h);
    if (svg)
        h->memory_svg = NULL;
    free(svg);
    if (h->memory_note == mem_note)
        h->memory_note = NULL;
    if (h->history == history)
        h->history = NULL;
    json_decref(history);
    if (h->history_note == note)
        h->history_note = NULL;
    if (h->env == &env)
        h->env = NULL;
    return repro_outfile_commit(out);
}
