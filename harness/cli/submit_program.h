/* `repro submit -- PROGRAM ARGS` (submit_program.c): a program bundle. */
#ifndef REPRO_SUBMIT_PROGRAM_H
#define REPRO_SUBMIT_PROGRAM_H

#include "cli/common_opts.h"

#define REPRO_SUBMIT_OUTPUTS_MAX 64

typedef struct {
    char **program;         /* NULL-terminated argv */
    const char *dir;        /* the bundle */
    const char *keypath;    /* NULL: unsigned */
    const char *build;      /* NULL: no build command */
    int allow_dirty;
    const char *score;      /* the claimed score; NULL: none */
    const char *data;       /* --data DIR: the program's inputs (REPRO_DATA); NULL: none */
    const char *outputs[REPRO_SUBMIT_OUTPUTS_MAX];
    int noutputs;
    const repro_common *co;
} repro_submit_program_opts;

/* Packs, builds, runs, writes the bundle and prints the summary; an exit
 * code. */
int repro_submit_program(const repro_submit_program_opts *o);

#endif
