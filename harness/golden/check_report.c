/* Gathering and writing the HTML report of a check (check_report.h). */
#include "golden/check_report.h"

#include <stdio.h>
#include <string.h>

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
    repro_check_html_write(out->f, h);
    if (h->history == history)
        h->history = NULL;
    json_decref(history);
    if (h->history_note == note)
        h->history_note = NULL;
    if (h->env == &env)
        h->env = NULL;
    return repro_outfile_commit(out);
}
