/* The one option parser and help printer of every command (git's
 * parse-options as the model), and the options common to several commands
 * in ONE table: a command's parser and its `help` text are both built from
 * its own option table plus the common rows it takes, so an option cannot
 * be accepted by one command and not another, nor be missing from a help
 * text. The commands that run the workload (run, check, bless, compare,
 * bisect, submit) share most rows; --name and --timeout (a program's runs)
 * are rows too. Adding a common option is one row in common_opts.c (and,
 * for one forwarded to `repro run`, its config key in analysis/multirun.c's
 * pass-through table). */
#ifndef REPRO_CLI_COMMON_OPTS_H
#define REPRO_CLI_COMMON_OPTS_H

#include <getopt.h>
#include <stdio.h>

#include "analysis/multirun.h"

/* Every command, as bits of a row's mask; the first six run the workload. */
enum {
    REPRO_CLI_RUN = 1u << 0,
    REPRO_CLI_CHECK = 1u << 1,
    REPRO_CLI_BLESS = 1u << 2,
    REPRO_CLI_COMPARE = 1u << 3,
    REPRO_CLI_BISECT = 1u << 4,
    REPRO_CLI_SUBMIT = 1u << 5,
    REPRO_CLI_DIFF = 1u << 6,
    REPRO_CLI_LOG = 1u << 7,
    REPRO_CLI_KERNELS = 1u << 8,
    REPRO_CLI_VERIFY = 1u << 9,
    REPRO_CLI_VERIFY_RECEIPT = 1u << 10,
    REPRO_CLI_KEYGEN = 1u << 11,
    REPRO_CLI_ENV = 1u << 12,
    REPRO_CLI_GC = 1u << 13,
    REPRO_CLI_HELP_CMD = 1u << 14,
    REPRO_CLI_SCREEN = 1u << 15,
};
#define REPRO_CLI_WORKLOAD                                                                    \
    (REPRO_CLI_RUN | REPRO_CLI_CHECK | REPRO_CLI_BLESS | REPRO_CLI_COMPARE | REPRO_CLI_BISECT | \
     REPRO_CLI_SUBMIT)

#define REPRO_CLI_MAX_LISTS 8

/* What the common options say, one struct for every command. */
typedef struct {
    int quiet;          /* -q: no progress on stderr (nor a summary, for submit) */
    int json;           /* --json: the report as one JSON document on stdout */
    int runs;           /* --runs N (0: not given; the command's default) */
    repro_run_pass pass; /* single values forwarded to every run: --steps, --seed, ... */
    /* Lists (`--threads 1,2,3` on check): one more run per item. */
    struct {
        char flag[48];
        const char *value, *scope, *what;
    } lists[REPRO_CLI_MAX_LISTS];
    int nlists;
    /* A program's runs (-- PROGRAM): --name and --timeout. */
    char name[128];     /* "": not given */
    double timeout_s;   /* 0: not given (never killed) */
} repro_common;

typedef struct repro_common_opt repro_common_opt;

/* A common row's help for some commands (what it means there differs). */
struct repro_common_help {
    unsigned commands;
    const char *help;
};

struct repro_common_opt {
    const char *name;        /* long name, without dashes */
    int short_name;          /* 0: none */
    const char *arg;         /* the value's placeholder ("N"); NULL: takes no value */
    const char *help;        /* may hold '\n' for more lines */
    unsigned commands;       /* the REPRO_CLI_* that accept it */
    unsigned list_commands;  /* of those, where the value is a comma list */
    const char *list_arg, *list_help; /* placeholder and help there */
    const char *scope, *what; /* a list's runs: contract scope, noun ("thread count", "threads") */
    /* Reads the value into c; as_list: this command takes it as a list.
     * 0 or -1 (error slot, naming cmd and the flag). */
    int (*parse)(repro_common *c, const repro_common_opt *row, const char *cmd, int as_list,
                 const char *value);
    const struct repro_common_help *help_for; /* per-command help, ending in a zero row; or NULL */
};

/* The table, ending in a row whose name is NULL. */
extern const repro_common_opt repro_common_opts[];

/* A command's own option (the common ones come from the table). */
typedef struct {
    const char *name;  /* long name without dashes; NULL ends a table */
    int short_name;    /* 0: none */
    const char *arg;   /* placeholder; NULL: takes no value */
    const char *help;
    int id;            /* what repro_cli_next returns for it (> 0) */
} repro_cli_opt;

/* One command's command line: what its help and its parser are built from. */
typedef struct {
    const char *name;          /* "check" */
    unsigned bit;              /* REPRO_CLI_CHECK */
    const char *synopsis;      /* usage lines and description, before the options */
    const repro_cli_opt *own;  /* its own options, ending in a zero row */
    const char *epilogue;      /* after the options (may be NULL) */
} repro_cli_spec;

/* `repro help CMD`: the synopsis, the command's own options, the common
 * options it accepts (each with the help for how it takes them), -h, and
 * the epilogue. A common row whose name the command's own table also has
 * is the command's (bisect keeps its own --name and --timeout until it
 * moves to the common rows): shown and parsed once, as its own. */
void repro_cli_help(FILE *out, const repro_cli_spec *s);

#define REPRO_CLI_HELP (-2)
#define REPRO_CLI_MAX_OPTS 64

typedef struct {
    const repro_cli_spec *spec;
    struct option lo[REPRO_CLI_MAX_OPTS + 1];
    const repro_common_opt *common[REPRO_CLI_MAX_OPTS]; /* lo[i]'s row, or NULL: own */
    const repro_cli_opt *own[REPRO_CLI_MAX_OPTS];
    char shorts[2 * REPRO_CLI_MAX_OPTS + 4];
    int n;
    /* The operands, once repro_cli_next has returned 0: argv's non-options
     * in order (getopt moves them behind the options; "--" ends the
     * options, and what follows it is operands). */
    char **args;
    int nargs;
} repro_cli_parser;

/* Builds the getopt tables of spec's command: its own options, the common
 * rows whose mask has spec->bit, and -h/--help. Resets getopt (optind 1). */
void repro_cli_parser_init(repro_cli_parser *p, const repro_cli_spec *s);

/* The next option of argv. A common option is read into *c and the loop
 * goes on; an own option returns its id with *value its argument (NULL
 * without one); -h/--help returns REPRO_CLI_HELP; the end of the options
 * 0 (operands are then p->args[0..p->nargs), also argv[optind..argc)); an
 * unknown option (with a "did you mean" from this command's options) or a
 * missing value -1 with the error slot set. */
int repro_cli_next(repro_cli_parser *p, int argc, char **argv, repro_common *c,
                   const char **value);

/* The option loop of a command: calls own(ctx, id, value) for each own
 * option (0 or -1, error slot), reads the common ones into *c, prints the
 * help on -h. 0 with the operands in p->args, 1 after --help (printed on
 * stdout), or -1 (error slot). own may be NULL: no own options. */
int repro_cli_parse(repro_cli_parser *p, const repro_cli_spec *s, int argc, char **argv,
                    repro_common *c, int (*own)(void *ctx, int id, const char *value),
                    void *ctx);

/* Whether own option id is among argv's options, read with spec's table
 * (a value that looks like it is not it; nothing after "--"), without
 * reading any value or reporting any error: for an option that changes how
 * the parse's own errors are reported (check --git-bisect). */
int repro_cli_given(const repro_cli_spec *s, int argc, char **argv, int id);

/* The error for a count of operands outside lo..hi (hi < 0: no limit),
 * naming what they are ("two traces", "one bundle"): -1, error slot. */
int repro_cli_operands(const repro_cli_parser *p, int lo, int hi, const char *what);

/* `repro CMD [options] -- PROGRAM ARGS...`: cuts argv at the first "--",
 * leaving *argc the options' count and *program the NULL-terminated
 * program vector (NULL when there is no "--"). "--" with nothing after it
 * is an error (-1, error slot). */
int repro_cli_split_program(int *argc, char **argv, char ***program);

/* The error for an option `arg` that `cmd` does not know, with a "did you
 * mean" from its getopt table (opts, ending in a zero entry; may be NULL).
 * Returns -1 (error slot: REPRO_EINVAL). */
int repro_cli_unknown_option(const char *cmd, const char *arg, const struct option *opts);

/* The multi-run of a `-- PROGRAM` command (run, bisect): runs filed under
 * `name`, or the program's own name when it is empty, with the common
 * options passed to every run, quiet under -q or --json, killed after
 * timeout_s (0: never), and no element-detail re-runs. NULL when out of
 * memory; release with repro_multirun_release, then free. */
repro_multirun *repro_cli_program_runs(const repro_common *co, char **program, const char *name,
                                       double timeout_s, const char *kind);

#endif
