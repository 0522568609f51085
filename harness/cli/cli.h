/* The command table (git's cmd_struct): one entry per subcommand, each
 * implemented in its own harness/cmd_<name>.c. Usage is printed from here. */
#ifndef REPRO_CLI_H
#define REPRO_CLI_H

#include <stdio.h>

#include "cli/common_opts.h"
#include "util/error.h"

/* Exit codes, as promised to CI and `git bisect run` (docs/DESIGN.md). Only
 * the CLI speaks in exit codes; the library returns REPRO_E* codes. */
enum {
    REPRO_EXIT_OK = 0,
    REPRO_EXIT_MISMATCH = 1,
    REPRO_EXIT_USAGE = 2, /* usage or input error: message names file:line */
    REPRO_EXIT_ENV = 3,   /* environment problem: missing library, device, memory */
    REPRO_EXIT_SKIP = 125
};

/* The exit code for a library error code: input problems (invalid, corrupt,
 * not found) are 2, environment problems (I/O, memory, unsupported) 3, a
 * failed verification 1. */
int repro_exit_code_for(int error_code);

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the command name; returns an exit code */
    const char *summary;
    const repro_cli_spec *spec; /* its options, usage and help (common_opts.h) */
} repro_command;

extern const repro_command repro_commands[];

const repro_command *repro_command_find(const char *name);
void repro_print_usage(FILE *out);

/* Prints "repro: <error slot>" to stderr and returns its exit code. */
int repro_report_error(void);
/* Flushes stdout and turns a write error (full disk, closed pipe) into exit 3. */
int repro_finish_stdout(int rc);

int repro_cmd_run(int argc, char **argv);
int repro_cmd_help(int argc, char **argv);
int repro_cmd_check(int argc, char **argv);
int repro_cmd_diff(int argc, char **argv);
int repro_cmd_env(int argc, char **argv);
int repro_cmd_bless(int argc, char **argv);
int repro_cmd_log(int argc, char **argv);
int repro_cmd_compare(int argc, char **argv);
int repro_cmd_bisect(int argc, char **argv);
int repro_cmd_kernels(int argc, char **argv);
int repro_cmd_submit(int argc, char **argv);
int repro_cmd_verify(int argc, char **argv);
int repro_cmd_verify_receipt(int argc, char **argv);
int repro_cmd_keygen(int argc, char **argv);
int repro_cmd_gc(int argc, char **argv);
int repro_cmd_screen(int argc, char **argv);

extern const repro_cli_spec repro_run_spec, repro_check_spec, repro_bless_spec,
    repro_compare_spec, repro_bisect_spec, repro_submit_spec, repro_diff_spec, repro_log_spec,
    repro_kernels_spec, repro_verify_spec, repro_verify_receipt_spec, repro_keygen_spec,
    repro_env_spec, repro_gc_spec, repro_help_spec, repro_screen_spec;

/* `repro parity` (cmd_parity.c). */
int repro_cmd_parity(int argc, char **argv);
extern const repro_cli_spec repro_parity_spec;

#endif
