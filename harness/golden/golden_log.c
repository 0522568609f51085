/* The golden's history through git (golden_log.h). */
#include "golden/golden_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/golden.h"
#include "golden/golden_program.h"
#include "history/git.h"
#include "util/error.h"

/* The trailer's chain digest in a golden file's text, or "" if none. */
static void trailer_chain(const char *text, char *out, size_t len)
{
    out[0] = '\0';
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    char *line = strndup(start, (size_t)(end - start));
    json_t *j = line ? json_loads(line, 0, NULL) : NULL;
    const char *chain = json_string_value(json_object_get(j, "chain"));
    const char *type = json_string_value(json_object_get(j, "type"));
    if (chain && type && !strcmp(type, "trailer"))
        snprintf(out, len, "%s", chain);
    json_decref(j);
    free(line);
}

/* Each class's chain at commit cm: {class: hex}; a class without a golden
 * there is left out. */
static json_t *chains_at(repro_git *g, const repro_git_commit *cm, const char *prefix,
                         char **classes, int ncls)
{
    json_t *chains = json_object();
    for (int k = 0; k < ncls; k++) {
        char path[400], chain[65];
        snprintf(path, sizeof path, "%s%s.jsonl", prefix, classes[k]);
        void *data = NULL;
        size_t len = 0;
        if (repro_git_read_blob(g, cm->id, path, &data, &len)) {
            repro_error_clear();
            continue; /* this class had no golden at that commit */
        }
        trailer_chain(data, chain, sizeof chain);
        free(data);
        json_object_set_new(chains, classes[k], json_string(chain));
    }
    return chains;
}

int repro_golden_log(const char *exp_file, char *const *program, const char *name_in, long max,
                     json_t **out)
{
    repro_git *g = NULL;
    repro_git_history *h = NULL;
    char **classes = NULL;
    int ncls = 0, rc = 0;
    char name[128], prefix[300];
    snprintf(name, sizeof name, "%s", name_in ? name_in : "");
    *out = NULL;
    /* A program's golden is named after the experiment it records (or
     * --name), as bless and check name it: found by the program its header
     * records, since log does not run it. */
    if (repro_golden_open_repo(&g, exp_file, program) ||
        (!name[0] && repro_golden_name_for_program(repro_git_workdir(g), program, name,
                                                   sizeof name))) {
        rc = -1;
        goto done;
    }
    snprintf(prefix, sizeof prefix, "golden/%s/", name);
    if (repro_git_path_history(g, prefix, (size_t)max, &h)) {
        rc = -1;
        goto done;
    }
    ncls = repro_golden_classes(repro_git_workdir(g), name, &classes);
    json_t *arr = json_array();
    for (size_t i = 0; i < h->n; i++) {
        const repro_git_commit *cm = &h->commits[i];
        json_t *o = json_pack("{s:s, s:s, s:s}", "commit", cm->id, "time", cm->time_iso,
                              "summary", cm->summary);
        json_object_set_new(o, "chains", chains_at(g, cm, prefix, classes, ncls));
        json_array_append_new(arr, o);
    }
    *out = json_pack("{s:s, s:o, s:b}", "experiment", name, "commits", arr, "incomplete",
                     h->incomplete);
    if (h->note)
        json_object_set_new(*out, "note", json_string(h->note));
done:
    repro_golden_classes_free(classes, ncls);
    repro_git_history_free(h);
    repro_git_free(g);
    return rc;
}
