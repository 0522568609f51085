/* repro's entry point: dispatches to a subcommand of the table in
 * commands.c. The only place that turns errors into exit codes. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/error.h"
#include "util/suggest.h"
#include "util/version.h"

int main(int argc, char **argv)
{
    /* A write past the file-size limit (RLIMIT_FSIZE) fails with EFBIG, a
     * write error reported with the file's name like a full disk's ENOSPC,
     * instead of killing repro without a word. Children inherit it. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        repro_print_usage(stderr);
        return REPRO_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("repro %s\n", REPRO_VERSION);
        return repro_finish_stdout(0);
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        repro_print_usage(stdout);
        return repro_finish_stdout(0);
    }
    const repro_command *c = repro_command_find(cmd);
    if (!c) {
        const char *names[64];
        size_t n = 0;
        for (const repro_command *k = repro_commands; k->name && n < 64; k++)
            names[n++] = k->name;
        char hint[96];
        fprintf(stderr, "repro: '%s' is not a repro command%s\n\n", cmd,
                repro_suggest_phrase(hint, sizeof hint, cmd, names, n));
        repro_print_usage(stderr);
        return REPRO_EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}
