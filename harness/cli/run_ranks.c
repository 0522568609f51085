/* `repro run` with ranks > 1 (data parallel): outside an MPI job it starts
 * the job itself, `mpirun -np N repro run ARGS...` with the same arguments,
 * and returns mpirun's exit status; inside one (mpirun, srun, a hostfile
 * across machines) each process joins as its rank (core/dist.h).
 *
 * When the job fails because a rank died, mpirun (quiet: no banners) says
 * nothing, or a surviving rank's transport says "Read -1, expected ...",
 * and exits 128 + the signal. So the launcher watches the job
 * (util/rank_watch.h) and then says which rank died and how, and exits 3
 * (the run could not complete). A SIGINT or SIGTERM to repro
 * itself stops the job and exits 130 or 143. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_ranks.h"
#include "core/dist.h"
#include "util/child.h"
#include "util/error.h"
#include "util/rank_watch.h"

/* mpirun's options for a job on this machine: root needs its consent
 * flag, more ranks than cores needs --oversubscribe, and no binding, since
 * each rank has its own kernel threads and loader workers. */
static int mpirun_argv(char **argv, int cap, int ranks, char *self, const char *cmd, int argc,
                       char **args)
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
    argv[n++] = (char *)cmd;
    for (int i = 1; i < argc && n < cap - 1; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return n;
}

/* After mpirun failed: which rank died and how, then exit 3. */
static int report_rank_death(const char *cmd, const repro_rank_watch *w,
                             const repro_child_status *st)
{
    int code = repro_child_status_code(st);
    repro_child_status how = repro_rank_watch_status(w, st);
    char text[96], who[96];
    repro_child_status_text(&how, NULL, text, sizeof text);
    if (w->first_gone < 0)
        snprintf(who, sizeof who, "a rank of %d", w->ranks);
    else if (w->ngone_first > 1)
        snprintf(who, sizeof who, "one of %d ranks (rank %d first among %d gone at once)",
                 w->ranks, w->first_gone, w->ngone_first);
    else
        snprintf(who, sizeof who, "rank %d of %d (pid %ld)", w->first_gone, w->ranks,
                 (long)w->pid[w->first_gone]);
    repro_error_set(REPRO_EIO, "%s: %s %s, and the MPI job stopped (mpirun exit %d): the %s "
                    "did not complete", cmd, who, text, code,
                    strcmp(cmd, "run") ? "job" : "run");
    return repro_report_error();
}

int repro_run_launch_ranks(int ranks, int argc, char **args)
{
    return repro_launch_ranks("run", ranks, argc, args);
}

int repro_launch_ranks(const char *cmd, int ranks, int argc, char **args)
{
    char self[4096];
    if (repro_child_self_path(self, sizeof self))
        return repro_report_error();
    int cap = argc + 16;
    char **argv = calloc((size_t)cap, sizeof *argv);
    if (!argv)
        return REPRO_EXIT_ENV;
    mpirun_argv(argv, cap, ranks, self, cmd, argc, args);
    repro_child child;
    memset(&child, 0, sizeof child);
    child.argv = argv;
    child.inherit_output = 1; /* the job's output is ours */
    repro_rank_watch w;
    if (repro_rank_watch_init(&w, &child, ranks)) {
        free(argv);
        return REPRO_EXIT_ENV;
    }
    child.tick = repro_rank_watch_tick;
    child.tick_arg = &w;
    /* SIGINT/SIGTERM reach mpirun's group through the CLI's trap (main.c,
     * child.h), and the command exits 130/143. */
    repro_child_status st;
    int rc = repro_child_run(&child, &st);
    free(argv);
    if (rc) {
        repro_rank_watch_release(&w);
        repro_error_wrap(REPRO_EUNSUPPORTED,
                         "%s: %d ranks need Open MPI's mpirun (Debian: openmpi-bin)", cmd, ranks);
        return repro_report_error();
    }
    repro_rank_watch_settle(&w, &st);
    int code = repro_child_status_code(&st);
    int interrupted = repro_child_interrupted();
    if (interrupted) { /* a signal to us, passed on to the job by the CLI's trap */
        fprintf(stderr, "repro: %s: %s: the MPI job of %d ranks was stopped\n", cmd,
                interrupted == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", ranks);
        code = 128 + interrupted;
    } else if (code > 128 || (code != 0 && w.first_gone >= 0 && w.status >= 0 &&
                              WIFSIGNALED(w.status))) {
        code = report_rank_death(cmd, &w, &st); /* a rank died: not a verdict */
    }
    repro_rank_watch_release(&w);
    return code;
}
