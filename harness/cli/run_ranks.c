/* `repro run` with ranks > 1 (data parallel): outside an MPI job it starts
 * the job itself, `mpirun -np N repro run ARGS...` with the same arguments,
 * and returns mpirun's exit status; inside one (mpirun, srun, a hostfile
 * across machines) each process joins as its rank (core/dist.h).
 *
 * When the job fails because a rank died, mpirun (quiet: no banners) says
 * nothing, or a surviving rank's transport says "Read -1, expected ...",
 * and exits 128 + the signal. So the launcher watches the job: every tick
 * it learns the ranks' pids (mpirun's children, by OMPI_COMM_WORLD_RANK in
 * their environment) and notes which rank is gone first, with its status
 * when it is caught as a zombie. It then says which rank died and how,
 * and exits 3 (the run could not complete). A SIGINT or SIGTERM to repro
 * itself stops the job and exits 130 or 143. */
#include <dirent.h>
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

/* What the launcher learns of the job's ranks while it runs. */
typedef struct {
    const char *cmd;        /* the command the ranks run ("run", "screen") */
    const repro_child *job; /* mpirun */
    int ranks;
    pid_t *pid;             /* per rank; 0 until seen */
    int first_gone;         /* the rank seen gone first, -1: none yet */
    int ngone_first;        /* how many were gone at that first sight */
    int status;             /* its wait status when caught as a zombie, -1: unknown */
} rank_watch;

/* The rank of a process of the job (OMPI_COMM_WORLD_RANK), or -1. */
static int rank_of(pid_t pid)
{
    char path[64], buf[1 << 15];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (!strncmp(buf + i, "OMPI_COMM_WORLD_RANK=", 21))
            return atoi(buf + i + 21);
    return -1;
}

/* A process's state letter, and its wait status when a zombie (field 52
 * of /proc/PID/stat), or 0 when it is gone. */
static char proc_state(pid_t pid, int *status)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything */
    if (!p || p[1] != ' ')
        return 0;
    char state = p[2];
    /* Fields from 3 (the state) on; the exit code is field 52. */
    int field = 3;
    for (char *q = p + 2; *q && field < 52; q++)
        if (*q == ' ')
            field++;
    *status = -1;
    if (field == 52) {
        char *q = p + 2;
        for (int k = 3; k < 52; k++)
            q = strchr(q, ' ') + 1;
        *status = atoi(q);
    }
    return state;
}

/* Learns the pids of ranks not seen yet: mpirun's children, in each of
 * its threads' children lists. */
static void learn_ranks(rank_watch *w)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/task", (long)w->job->pid);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char cp[200];
        snprintf(cp, sizeof cp, "%s/%.32s/children", path, e->d_name);
        FILE *f = fopen(cp, "r");
        long kid;
        while (f && fscanf(f, "%ld", &kid) == 1) {
            int r = rank_of((pid_t)kid);
            if (r >= 0 && r < w->ranks && !w->pid[r])
                w->pid[r] = (pid_t)kid;
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
}

/* Every tick: new ranks, and the first sight of a rank gone. */
static void watch_ranks(void *arg)
{
    rank_watch *w = arg;
    if (w->first_gone >= 0)
        return;
    learn_ranks(w);
    for (int r = 0; r < w->ranks; r++) {
        int status;
        char st = w->pid[r] ? proc_state(w->pid[r], &status) : 'R';
        if (st != 0 && st != 'Z')
            continue;
        if (w->first_gone < 0) {
            w->first_gone = r;
            w->status = st == 'Z' ? status : -1;
        }
        w->ngone_first++;
    }
}

/* After mpirun failed: which rank died and how, then exit 3. */
static int report_rank_death(const rank_watch *w, const repro_child_status *st)
{
    int code = repro_child_status_code(st);
    repro_child_status how = {REPRO_CHILD_EXITED, code};
    if (w->status >= 0 && WIFSIGNALED(w->status))
        how = (repro_child_status){REPRO_CHILD_SIGNALED, WTERMSIG(w->status)};
    else if (w->status >= 0 && WIFEXITED(w->status))
        how = (repro_child_status){REPRO_CHILD_EXITED, WEXITSTATUS(w->status)};
    else if (code > 128) /* mpirun: 128 + the signal of the first rank to fail */
        how = (repro_child_status){REPRO_CHILD_SIGNALED, code - 128};
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
                    "did not complete", w->cmd, who, text, code,
                    strcmp(w->cmd, "run") ? "job" : "run");
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
    rank_watch w = {cmd, &child, ranks, calloc((size_t)ranks, sizeof(pid_t)), -1, 0, -1};
    if (!w.pid) {
        free(argv);
        return REPRO_EXIT_ENV;
    }
    child.tick = watch_ranks;
    child.tick_arg = &w;
    /* SIGINT/SIGTERM reach mpirun's group through the CLI's trap (main.c,
     * child.h), and the command exits 130/143. */
    repro_child_status st;
    int rc = repro_child_run(&child, &st);
    free(argv);
    if (rc) {
        free(w.pid);
        repro_error_wrap(REPRO_EUNSUPPORTED,
                         "%s: %d ranks need Open MPI's mpirun (Debian: openmpi-bin)", cmd, ranks);
        return repro_report_error();
    }
    int code = repro_child_status_code(&st);
    int interrupted = repro_child_interrupted();
    if (interrupted) { /* a signal to us, passed on to the job by the CLI's trap */
        fprintf(stderr, "repro: %s: %s: the MPI job of %d ranks was stopped\n", cmd,
                interrupted == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", ranks);
        code = 128 + interrupted;
    } else if (code > 128 || (code != 0 && w.first_gone >= 0 && w.status >= 0 &&
                              WIFSIGNALED(w.status))) {
        code = report_rank_death(&w, &st); /* a rank died: not a verdict */
    }
    free(w.pid);
    return code;
}
