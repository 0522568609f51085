/* `repro help [COMMAND | config]`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "util/error.h"

const char repro_help_usage[] =
    "usage: repro help [COMMAND | config]\n"
    "\n"
    "Without an argument, lists the commands. With a command, prints its usage.\n"
    "`repro help config` lists every experiment key: section, type, range, default.\n";

int repro_cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        repro_print_usage(stdout);
        return repro_finish_stdout(0);
    }
    if (argc > 2) {
        fprintf(stderr, "%s", repro_help_usage);
        return REPRO_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "config")) {
        printf("Experiment files are INI with sections [model], [data], [train], [trace].\n"
               "Unknown sections or keys, duplicates and bad values are errors (exit 2).\n\n");
        repro_config_print_reference(stdout);
        return repro_finish_stdout(0);
    }
    const repro_command *c = repro_command_find(argv[1]);
    if (!c) {
        fprintf(stderr, "repro: no such command '%s'\n\n", argv[1]);
        repro_print_usage(stderr);
        return REPRO_EXIT_USAGE;
    }
    if (c->spec)
        repro_cli_help(stdout, c->spec);
    else
        fputs(c->usage, stdout);
    return repro_finish_stdout(0);
}
