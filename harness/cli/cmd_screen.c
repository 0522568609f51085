/* `repro screen EXP`: every rank of an MPI job runs the same workload on
 * its own core(s) and is compared with the golden of its class and with
 * every other rank (golden/screen.h); rank 0 prints the report
 * (screen_print.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_ranks.h"
#include "cli/screen_print.h"
#include "core/dist.h"
#include "golden/screen.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/numparse.h"
#include "util/runs.h"

static const char synopsis[] =
    "usage: repro screen EXP [--ranks N] [--repeat K] [--junit FILE] [options]\n"
    "       mpirun -np N [--hostfile H] repro screen EXP [options]\n"
    "       srun --mpi=pmix -n N repro screen EXP [options]\n"
    "\n"
    "Screens machines for silent data corruption: every rank of the MPI job runs\n"
    "the same single-process training of EXP on its own pinned core(s) (the\n"
    "node-local rank times --threads), records every tensor of every step, and\n"
    "is compared with the golden of its environment class (see `repro bless`)\n"
    "and with every other rank. Prints one line per rank (host, rank, core(s),\n"
    "verdict, first divergent step and tensor) and a summary naming the ranks\n"
    "that diverged. A rank that cannot run is \"could not test\", never a match.\n";

static const char epilogue[] =
    "\n"
    "The reference is the ranks that match their golden; without one, the\n"
    "largest group of ranks that agree. Ranks of other environment classes are\n"
    "each compared with their own class's golden.\n"
    "Exit: 0 every rank matches, 1 a rank diverged (or ranks disagree with no\n"
    "majority), 2 bad experiment or option, 3 a rank could not be tested.\n";

enum { O_RANKS = 1, O_REPEAT, O_JUNIT, O_KEEP };

static const repro_cli_opt own_opts[] = {
    {"ranks", 0, "N",
     "outside an MPI job: start N ranks on this machine with\nmpirun (inside one: must equal the "
     "job's size)",
     O_RANKS},
    {"repeat", 0, "K",
     "run the workload K times on every rank and count the\nrepeats each rank diverged in (a "
     "marginal core fails only\nsome of the time); default 1",
     O_REPEAT},
    {"junit", 0, "FILE", "also write a JUnit XML report, one case per rank", O_JUNIT},
    {"keep", 0, NULL, "keep every rank's traces (runs/NAME/screen-HOST-PID/)", O_KEEP},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_screen_spec = {"screen", REPRO_CLI_SCREEN, synopsis, own_opts,
                                          epilogue};

typedef struct {
    repro_common co;
    long ranks, repeat;
    const char *junit;
    int keep;
    const char *exp;
} screen_opts;

static int screen_option(void *ctx, int id, const char *v)
{
    screen_opts *o = ctx;
    switch (id) {
    case O_RANKS: return repro_parse_count("screen: --ranks", v, 1, 1 << 20, &o->ranks);
    case O_REPEAT: return repro_parse_count("screen: --repeat", v, 1, 64, &o->repeat);
    case O_JUNIT: o->junit = v; return 0;
    case O_KEEP: o->keep = 1; return 0;
    }
    return 0;
}

/* Options and the experiment into o and cfg: 0, 1 after --help, or -1. */
static int parse(int argc, char **argv, screen_opts *o, repro_config *cfg)
{
    repro_cli_parser p;
    int rc = repro_cli_parse(&p, &repro_screen_spec, argc, argv, &o->co, screen_option, o);
    if (rc)
        return rc;
    if (repro_cli_operands(&p, 1, 1, "one experiment file"))
        return -1;
    o->exp = p.args[0];
    if (!o->repeat)
        o->repeat = 1;
    if (repro_config_load(cfg, o->exp) ||
        repro_config_apply_run_options(cfg, o->co.pass.argv, o->co.pass.n) ||
        repro_config_validate(cfg))
        return -1;
    if (cfg->train_ranks > 1)
        return repro_error_set(REPRO_EINVAL,
                               "screen: %s trains data parallel (train.ranks = %d): every rank "
                               "of a screen runs the whole workload alone; set ranks = 1",
                               o->exp, cfg->train_ranks);
    return 0;
}

/* Inside a job: joins it, checks --ranks, silences the other ranks'
 * stdout. 0 or -1 (error slot). */
static int join(const screen_opts *o, repro_dist **dist)
{
    if (!repro_dist_launched_size())
        return 0;
    if (repro_dist_join(dist))
        return -1;
    int size = repro_dist_size(*dist), rank = repro_dist_rank(*dist);
    if (o->ranks && o->ranks != size)
        return repro_error_set(REPRO_EINVAL, "screen: --ranks %ld, but the MPI job has %d ranks",
                               o->ranks, size);
    if (rank != 0 && !freopen("/dev/null", "w", stdout))
        return repro_error_set_errno(REPRO_EIO, "screen: rank %d: /dev/null", rank);
    return 0;
}

static int screen(const screen_opts *o, const repro_config *cfg, repro_dist *dist)
{
    repro_screen_opts so = {(int)o->repeat, o->exp, o->co.pass.overridden, getenv("REPRO_FAULT"),
                            o->keep};
    repro_screen_result r;
    int rank = repro_dist_rank(dist);
    if (repro_screen_run(cfg, &so, dist, &r)) {
        fprintf(stderr, "repro: screen: rank %d: %s\n", rank, repro_esc(repro_error_message()));
        repro_screen_result_release(&r);
        return repro_exit_code_for(repro_error_code());
    }
    if (!o->keep && access(r.dir, F_OK) == 0 && repro_runs_remove(r.dir))
        fprintf(stderr, "repro: %s\n", repro_error_message());
    int exit_code = 0;
    if (rank == 0) {
        exit_code = repro_screen_exit_code(&r);
        if (o->co.json)
            repro_screen_print_json(stdout, cfg, &r, exit_code);
        else
            repro_screen_print_text(stdout, cfg, &r);
        if (o->junit && repro_screen_junit(o->junit, cfg, &r))
            exit_code = repro_report_error();
    }
    repro_screen_result_release(&r);
    return repro_finish_stdout(exit_code);
}

int repro_cmd_screen(int argc, char **argv)
{
    screen_opts o;
    memset(&o, 0, sizeof o);
    repro_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    int rc = parse(argc, argv, &o, cfg), exit_code;
    if (rc == 1)
        exit_code = repro_finish_stdout(0);
    else if (rc)
        exit_code = repro_report_error();
    else if (o.ranks > 1 && !repro_dist_launched_size())
        exit_code = repro_launch_ranks("screen", (int)o.ranks, argc, argv);
    else {
        repro_dist *dist = NULL;
        exit_code = join(&o, &dist) ? repro_report_error() : screen(&o, cfg, dist);
        repro_dist_leave(dist);
    }
    free(cfg);
    return exit_code;
}
