/* The host's evaluator (score.h). */
#include "verify/score.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "verify/bundle.h"

/* The file's text without surrounding white space, in buf. */
static void trimmed(const char *path, char *buf, size_t len)
{
    char *s;
    size_t n;
    buf[0] = '\0';
    if (repro_read_file_limited(path, 4096, &s, &n)) {
        repro_error_clear();
        snprintf(buf, len, "(more than 4 KiB, or unreadable)");
        return;
    }
    char *a = s, *e = s + n;
    while (a < e && strchr(" \t\r\n", *a))
        a++;
    while (e > a && strchr(" \t\r\n", e[-1]))
        e--;
    snprintf(buf, len, "%.*s", (int)(e - a), a);
    free(s);
}

int repro_score_run(const char *cmd, const json_t *paths, double timeout_s, const char *dir,
                    char text[32], double *value)
{
    size_t n = json_array_size(paths);
    char **argv = calloc(n + 2, sizeof *argv);
    if (!argv)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    argv[0] = (char *)cmd;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = (char *)json_string_value(json_array_get(paths, i));
    char out[1200], err[1200], said[300];
    snprintf(out, sizeof out, "%s/score.out", dir);
    snprintf(err, sizeof err, "%s/score.err", dir);
    repro_child c = {0};
    c.argv = argv;
    c.out_path = out;
    c.err_path = err;
    c.timeout_s = timeout_s;
    repro_child_status st;
    int rc = repro_child_run(&c, &st);
    free(argv);
    if (rc)
        return repro_error_wrap(REPRO_EIO, "verify: --score %s", cmd);
    if (repro_child_status_code(&st) != 0) {
        char how[128];
        repro_child_status_text(&st, &c, how, sizeof how);
        trimmed(err, said, sizeof said);
        unlink(out);
        unlink(err);
        return repro_error_set(REPRO_EIO, "verify: the host's evaluator `%s` %s%s%.200s", cmd,
                               how, said[0] ? "; its stderr: " : "", said);
    }
    trimmed(out, said, sizeof said);
    unlink(out);
    unlink(err);
    char *end;
    errno = 0;
    double v = strtod(said, &end);
    if (!said[0] || *end || errno == ERANGE || !isfinite(v) || strlen(said) > 31)
        return repro_error_set(REPRO_EIO,
                               "verify: the host's evaluator `%s` printed '%.80s', not one "
                               "finite number",
                               cmd, said);
    snprintf(text, 32, "%.31s", said); /* at most 31 bytes: checked above */
    *value = v;
    return 0;
}
