/* The memory timeline of a program's run (run_memtl.h). */
#include "cli/run_memtl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/memtl_svg.h"
#include "util/error.h"
#include "util/escape.h"

int repro_run_memtl_begin(const char *path, char *tmp, size_t tmp_len)
{
    char cwd[4096] = "";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return repro_error_set_errno(REPRO_EIO, "run: --memory-timeline: the working directory");
    int n = snprintf(tmp, tmp_len, "%s%s%s.client-%ld.json", cwd, cwd[0] ? "/" : "", path,
                     (long)getpid());
    if (n < 0 || (size_t)n >= tmp_len)
        return repro_error_set(REPRO_EINVAL, "run: --memory-timeline: '%s': path too long", path);
    unlink(tmp);
    if (setenv(REPRO_MEMTL_ENV, tmp, 1))
        return repro_error_set_errno(REPRO_ENOMEM, "run: setenv");
    return 0;
}

int repro_run_memtl_end(const char *path, const char *tmp, int failed)
{
    char saved[1024];
    int code = repro_error_code();
    snprintf(saved, sizeof saved, "%s", failed ? repro_error_message() : "");
    unsetenv(REPRO_MEMTL_ENV);
    if (access(tmp, F_OK) != 0) {
        if (failed)
            return 0; /* the run's own error is what to report */
        return repro_error_set(REPRO_EINVAL,
                               "run: --memory-timeline: the program wrote no memory timeline "
                               "(record one with python/repro/memory.py: repro.memory.Timeline, "
                               "which writes where $%s says)",
                               REPRO_MEMTL_ENV);
    }
    repro_memtl tl;
    int rc = repro_memtl_read(&tl, tmp);
    if (!rc && failed && !tl.cut)
        repro_memtl_cut(&tl, saved);
    rc = rc || repro_memtl_write(&tl, path);
    repro_memtl_release(&tl);
    unlink(tmp);
    if (failed) {
        if (rc)
            fprintf(stderr, "repro: %s\n", repro_esc(repro_error_message()));
        repro_error_set(code, "%s", saved);
        return 0;
    }
    return rc;
}
