/* From a program's step-level divergence to its first divergent op: the
 * `repro bisect` command that re-runs the failing comparison at trace
 * level op (see multirun.h). A program's tensors are in the order it
 * recorded them, so the first that differs is only the first in digest
 * order; the op outputs of a level-op trace are in execution order, and
 * the bisect names the first of them whose inputs agreed. */
#include <stdio.h>
#include <string.h>

#include "analysis/multirun.h"
#include "util/escape.h"

/* The scope's bisect option and the setting it varies, or NULL. */
static const char *scope_flag(const char *scope, const char **what)
{
    *what = NULL;
    if (!strcmp(scope, "thread count"))
        return *what = "threads", "--threads";
    if (!strcmp(scope, "worker count"))
        return *what = "workers", "--workers";
    return NULL;
}

int repro_multirun_op_command(const repro_multirun *m, int idx, char *buf, size_t len)
{
    const repro_divergence *d = &m->divs[idx];
    if (!m->cmd || d->identical || d->first_step <= 0 ||
        (d->nops > 0 && d->detail_step == d->first_step))
        return 0;
    const char *what, *flag = scope_flag(d->scope, &what);
    if (!flag && strcmp(d->scope, "fresh-process run to run"))
        return 0; /* a scope a program's bisect does not vary */
    snprintf(buf, len, "repro bisect");
    if (flag) {
        const char *a = repro_multirun_setting(m, 0, what), *b =
            repro_multirun_setting(m, idx, what);
        char pair[64];
        snprintf(pair, sizeof pair, "%s,%s", a ? a : "0", b ? b : "0");
        repro_shell_word_append(buf, len, flag);
        repro_shell_word_append(buf, len, pair);
    }
    for (int i = 0; i + 1 < m->npass; i += 2) {
        if (flag && repro_run_option_setting(m->pass[i], m->pass[i + 1], what))
            continue;
        repro_shell_word_append(buf, len, m->pass[i]);
        repro_shell_word_append(buf, len, m->pass[i + 1]);
    }
    if (m->timeout_s > 0) {
        char t[32];
        snprintf(t, sizeof t, "%.0f", m->timeout_s);
        repro_shell_word_append(buf, len, "--timeout");
        repro_shell_word_append(buf, len, t);
    }
    repro_shell_word_append(buf, len, "--");
    for (int i = 0; m->cmd[i]; i++)
        repro_shell_word_append(buf, len, m->cmd[i]);
    return 1;
}

void repro_multirun_op_hint(const repro_multirun *m, int idx, FILE *out)
{
    char cmd[4096];
    if (!repro_multirun_op_command(m, idx, cmd, sizeof cmd))
        return;
    fprintf(out,
            "  no op output is recorded at step %ld: to name the first op (module) that "
            "diverged, in execution order, re-run this comparison at trace level op:\n"
            "    %s\n",
            m->divs[idx].first_step, repro_esc(cmd));
}
