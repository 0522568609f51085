/* repro's entry point: dispatches to a subcommand of the table in
 * commands.c. The only place that turns errors into exit codes. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "kernels/isa.h"
#include "record/leaf_sha.h"
#include "util/child.h"
#include "util/error.h"
#include "util/orphans.h"
#include "util/suggest.h"
#include "util/version.h"

/* REPRO_ISA=sse2|avx2|avx512 forces the CPU kernels' vector path (a speed
 * setting: every path gives the same bits; kernels/isa.h). Read here, once,
 * so the library reads no environment. Unknown name: usage error (2); a
 * path this CPU lacks: environment error (3). */
static int select_isa(void)
{
    const char *want = getenv("REPRO_ISA");
    if (!want || !want[0])
        return REPRO_EXIT_OK;
    int isa = repro_isa_from_name(want);
    if (isa < 0) {
        fprintf(stderr, "repro: REPRO_ISA=%s: not a vector path (sse2, avx2, avx512)\n", want);
        return REPRO_EXIT_USAGE;
    }
    if (repro_isa_select((repro_isa)isa)) {
        fprintf(stderr, "repro: REPRO_ISA=%s: this CPU does not support %s\n", want, want);
        return REPRO_EXIT_ENV;
    }
    return REPRO_EXIT_OK;
}

/* REPRO_SHA=openssl hashes every tensor leaf with OpenSSL instead of many
 * at a time (AVX-512 lanes, SHA-NI) (record/leaf_sha.h; the digests are the same);
 * `auto` or unset: the fastest path. Anything else: usage error (2). */
static int select_leaf_sha(void)
{
    const char *want = getenv("REPRO_SHA");
    if (!want || !want[0] || !strcmp(want, "auto"))
        return REPRO_EXIT_OK;
    if (!strcmp(want, "openssl")) {
        repro_leaf_sha_force_openssl("REPRO_SHA");
        return REPRO_EXIT_OK;
    }
    fprintf(stderr, "repro: REPRO_SHA=%s: not a leaf hashing path (auto, openssl)\n", want);
    return REPRO_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* A write past the file-size limit (RLIMIT_FSIZE) fails with EFBIG, a
     * write error reported with the file's name like a full disk's ENOSPC,
     * instead of killing repro without a word. Children inherit it. */
    signal(SIGXFSZ, SIG_IGN);
    int isa_rc = select_isa();
    if (isa_rc != REPRO_EXIT_OK)
        return isa_rc;
    int sha_rc = select_leaf_sha();
    if (sha_rc != REPRO_EXIT_OK)
        return sha_rc;
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
    /* A SIGINT/SIGTERM while a program runs stops its whole process
     * group, and the command unwinds before exiting 130/143. What a
     * program leaves outside its group (setsid, a double fork) comes to
     * us and is killed when the run ends. Best effort: without it, the
     * group kill still holds. */
    repro_child_trap_signals();
    repro_orphans_adopt();
    int rc = c->fn(argc - 1, argv + 1);
    int sig = repro_child_interrupted();
    if (sig) {
        fprintf(stderr, "repro: interrupted by signal %d (%s): the programs it ran are stopped\n",
                sig, strsignal(sig));
        return 128 + sig;
    }
    return rc;
}
