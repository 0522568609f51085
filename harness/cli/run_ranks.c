/* `repro run` with ranks > 1 (data parallel): outside an MPI job it starts
 * the job itself, `mpirun -np N repro run ARGS...` with the same arguments,
 * and returns mpirun's exit status; inside one (mpirun, srun, a hostfile
 * across machines) each process joins as its rank (core/dist.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_ranks.h"
#include "core/dist.h"
#include "util/child.h"
#include "util/error.h"

/* mpirun's options for a job on this machine: root needs its consent
 * flag, more ranks than cores needs --oversubscribe, and no binding, since
 * each rank has its own kernel threads and loader workers. */
static int mpirun_argv(char **argv, int cap, int ranks, char *self, int argc, char **args)
{
    static char np[16];
    snprintf(np, sizeof np, "%d", ranks);
    int n = 0;
    argv[n++] = "mpirun";
    argv[n++] = "--quiet"; /* no banners: a rank's own error says what failed */
    if (geteuid() == 0)
        argv[n++] = "--allow-run-as-root";
    if (ranks > sysconf(_SC_NPROCESSORS_ONLN))
        argv[n++] = "--oversubscribe";
    argv[n++] = "--bind-to";
    argv[n++] = "none";
    argv[n++] = "-np";
    argv[n++] = np;
    argv[n++] = self;
    argv[n++] = "run";
    for (int i = 1; i < argc && n < cap - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return n;
}

int repro_run_launch_ranks(int ranks, int argc, char **args)
{
    char self[4096];
    if (repro_child_self_path(self, sizeof self))
        return repro_report_error();
    int cap = argc + 16;
    char **argv = calloc((size_t)cap, sizeof *argv);
    if (!argv)
        return REPRO_EXIT_ENV;
    mpirun_argv(argv, cap, ranks, self, argc, args);
    repro_child child;
    memset(&child, 0, sizeof child);
    child.argv = argv;
    child.inherit_output = 1; /* the job's output is ours */
    /* SIGINT/SIGTERM reach mpirun's group through the CLI's trap (main.c,
     * child.h), and the command exits 130/143. */
    repro_child_status st;
    int rc = repro_child_run(&child, &st);
    free(argv);
    if (rc) {
        repro_error_wrap(REPRO_EUNSUPPORTED,
                         "run: ranks = %d needs Open MPI's mpirun (Debian: openmpi-bin)", ranks);
        return repro_report_error();
    }
    return repro_child_status_code(&st);
}
