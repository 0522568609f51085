/* `repro help [COMMAND | config]`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "util/error.h"

static const char synopsis[] =
    "usage: repro help [COMMAND | config]\n"
    "\n"
    "Without an argument, lists the commands. With a command, prints its usage.\n"
    "`repro help config` lists every experiment key: section, type, range, default.\n";

static const repro_cli_opt own_opts[] = {
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_help_spec = {"help", REPRO_CLI_HELP_CMD, synopsis, own_opts, NULL};

int repro_cmd_help(int argc, char **argv)
{
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_help_spec, argc, argv, &co, NULL, NULL);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed || repro_cli_operands(&p, 0, 1, "at most one command"))
        return repro_report_error();
    if (!p.nargs) {
        repro_print_usage(stdout);
        return repro_finish_stdout(0);
    }
    const char *topic = p.args[0];
    if (!strcmp(topic, "config")) {
        printf("Experiment files are INI with sections [model], [data], [train], [trace],\n"
               "[replay], [parallel], [variant].\n"
               "Unknown sections or keys, duplicates and bad values are errors (exit 2).\n\n");
        repro_config_print_reference(stdout);
        return repro_finish_stdout(0);
    }
    const repro_command *c = repro_command_find(topic);
    if (!c) {
        fprintf(stderr, "repro: no such command '%s'\n\n", topic);
        repro_print_usage(stderr);
        return REPRO_EXIT_USAGE;
    }
    repro_cli_help(stdout, c->spec);
    return repro_finish_stdout(0);
}
