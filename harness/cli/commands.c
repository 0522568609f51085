/* The subcommand table, the usage that lists it, and how errors become exit
 * codes (the option parser is common_opts.c). */
#include "cli/cli.h"

#include <errno.h>
#include <string.h>

#include "util/error.h"
#include "util/escape.h"

const repro_command repro_commands[] = {
    {"run", repro_cmd_run, "train an experiment once, hashing every step into a trace",
     &repro_run_spec},
    {"check", repro_cmd_check, "run it N times in fresh processes: reproducible or not, and where",
     &repro_check_spec},
    {"bisect", repro_cmd_bisect,
     "find the first divergent op and the variant, or the first bad commit",
     &repro_bisect_spec},
    {"diff", repro_cmd_diff, "compare two traces: first divergent step, tensors, divergence curve",
     &repro_diff_spec},
    {"compare", repro_cmd_compare, "one experiment under several values of a key, side by side",
     &repro_compare_spec},
    {"bless", repro_cmd_bless, "make the runs' trace the golden record for this environment class",
     &repro_bless_spec},
    {"log", repro_cmd_log, "the golden's history through git: where the numerics changed",
     &repro_log_spec},
    {"parity", repro_cmd_parity,
     "trainer's forward vs an inference side on one checkpoint, bit for bit",
     &repro_parity_spec},
    {"kernels", repro_cmd_kernels, "list kernel variants and whether each is deterministic",
     &repro_kernels_spec},
    {"submit", repro_cmd_submit, "run once and pack the run into a submission bundle",
     &repro_submit_spec},
    {"verify", repro_cmd_verify, "re-run a submission bundle and write a signed verdict receipt",
     &repro_verify_spec},
    {"verify-receipt", repro_cmd_verify_receipt, "check a receipt's signature: valid or edited",
     &repro_verify_receipt_spec},
    {"keygen", repro_cmd_keygen, "make an Ed25519 key pair for signing bundles and receipts",
     &repro_keygen_spec},
    {"screen", repro_cmd_screen,
     "every rank and core against the golden and each other: silent data corruption",
     &repro_screen_spec},
    {"env", repro_cmd_env, "print the environment fingerprint and class",
     &repro_env_spec},
    {"gc", repro_cmd_gc, "delete old run directories under runs/ (keep the newest K)",
     &repro_gc_spec},
    {"help", repro_cmd_help, "show help for a command, or `repro help config` for the keys",
     &repro_help_spec},
    {NULL, NULL, NULL, NULL},
};

const repro_command *repro_command_find(const char *name)
{
    for (const repro_command *c = repro_commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

void repro_print_usage(FILE *out)
{
    fprintf(out, "usage: repro [--version] [--help] COMMAND [ARGS]\n\n"
                 "repro proves that a training run is reproducible, and when it is not,\n"
                 "says where and why.\n\ncommands:\n");
    for (const repro_command *c = repro_commands; c->name; c++)
        fprintf(out, "  %-14s %s\n", c->name, c->summary);
    fprintf(out, "\nexit codes: 0 ok, 1 mismatch, 2 usage or input error, 3 environment "
                 "problem, 125 cannot test\n"
                 "`repro help COMMAND` for a command's options.\n");
}

int repro_report_error(void)
{
    /* Messages quote files and programs that are not ours (a bundle's
     * config, a trace's names, a golden's header, a program's stderr):
     * never raw to a terminal. Their lines stay lines (a traceback must be
     * readable), each further one indented, so no quoted line can pass for
     * one of repro's own. */
    const char *msg = repro_esc_lines(repro_error_message());
    fputs("repro: ", stderr);
    for (const char *p = msg; *p;) {
        size_t n = strcspn(p, "\n");
        fwrite(p, 1, n, stderr);
        p += n;
        if (*p == '\n' && *++p)
            fputs("\n  ", stderr);
    }
    fputc('\n', stderr);
    return repro_exit_code_for(repro_error_code());
}

int repro_exit_code_for(int error_code)
{
    switch (error_code) {
    case REPRO_OK: return REPRO_EXIT_OK;
    case REPRO_EMISMATCH: return REPRO_EXIT_MISMATCH;
    case REPRO_EIO:
    case REPRO_ENOMEM:
    case REPRO_EUNSUPPORTED: return REPRO_EXIT_ENV;
    default: return REPRO_EXIT_USAGE; /* invalid, corrupt, not found */
    }
}

int repro_finish_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "repro: writing standard output: %s\n", strerror(errno));
        return REPRO_EXIT_ENV;
    }
    return rc;
}
