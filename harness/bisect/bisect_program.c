/* One probed commit's runs of the user's program (see bisect_program.h):
 * a multirun of K external runs in the worktree, whose traces are handed to
 * the caller, and a failure turned into "this commit cannot be tested". */
#include "bisect/bisect_program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/multirun.h"
#include "util/error.h"

/* The runner's message in two forms: its first line, without the lead-in
 * to the stderr it quotes, for the probe's verdict; the whole, without the
 * pointer to the run directory (it is removed with the probe), for the
 * user to read. */
static void untestable(const char *msg, char *why, size_t len, char *detail, size_t dlen)
{
    size_t n = strcspn(msg, "\n");
    const char *cut = strstr(msg, "; its stderr ends:");
    if (cut && (size_t)(cut - msg) < n)
        n = (size_t)(cut - msg);
    snprintf(why, len, "%.*s", (int)n, msg);
    if (!detail)
        return;
    const char *tail = strstr(msg, "\n  (the program's output: ");
    snprintf(detail, dlen, "%.*s", tail ? (int)(tail - msg) : (int)strlen(msg), msg);
}

/* The multirun of K runs, its directory s->dir (absolute: the program
 * runs elsewhere). */
static int plan(repro_multirun *m, const repro_bisect_program_spec *s)
{
    repro_multirun_init(m, s->name, s->name, "bisect");
    if ((size_t)snprintf(m->root, sizeof m->root, "%s", s->dir) >= sizeof m->root)
        return repro_error_set(REPRO_EINVAL, "bisect: the path %s is too long", s->dir);
    m->cmd = s->argv;
    m->cwd = s->cwd;
    m->env_unset = s->env_unset;
    m->interrupt = s->interrupt;
    m->timeout_s = s->timeout_s;
    m->quiet = 1;             /* the bisect says what it does */
    m->no_element_detail = 1; /* (an external program has no dumps anyway) */
    for (int i = 0; i < s->npass && m->npass < REPRO_MULTIRUN_MAX_PASS; i++)
        m->pass[m->npass++] = s->pass[i];
    for (int i = 0; i < s->repeat; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        if (repro_multirun_add(m, label, "fresh-process run to run", NULL, NULL))
            return -1;
    }
    return 0;
}

int repro_bisect_program_runs(const repro_bisect_program_spec *s, repro_trace *runs, char *why,
                              size_t len, char *detail, size_t dlen)
{
    repro_multirun *m = calloc(1, sizeof *m);
    if (!m)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = plan(m, s);
    if (rc == 0)
        rc = repro_multirun_execute(m);
    if (rc == 0) {
        for (int i = 0; i < m->ntraces; i++) /* the caller's now */
            runs[i] = m->traces[i];
        m->ntraces = 0;
    } else if (repro_error_code() == REPRO_ENOMEM) {
        rc = -1;
    } else { /* could not be tested: the program's fault at this commit */
        untestable(repro_error_message(), why, len, detail, dlen);
        repro_error_clear();
        rc = 1;
    }
    repro_multirun_release(m);
    free(m);
    return rc;
}
