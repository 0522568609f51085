/* Which rank of an MPI job ended first, seen from outside (rank_watch.h):
 * every tick the launcher learns the ranks' pids (mpirun's children, by
 * OMPI_COMM_WORLD_RANK in their environment) and notes which rank is gone
 * first, with its status when it is caught as a zombie. */
#include "util/rank_watch.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util/error.h"
#include "util/progress.h"

int repro_rank_watch_init(repro_rank_watch *w, const repro_child *job, int ranks)
{
    memset(w, 0, sizeof *w);
    w->job = job;
    w->ranks = ranks;
    w->first_gone = -1;
    w->status = -1;
    w->pid = calloc((size_t)ranks, sizeof *w->pid);
    w->first_status = malloc((size_t)ranks * sizeof *w->first_status);
    if (!w->pid || !w->first_status) {
        repro_rank_watch_release(w);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    for (int r = 0; r < ranks; r++)
        w->first_status[r] = -2; /* not gone at the first sight */
    return 0;
}

void repro_rank_watch_release(repro_rank_watch *w)
{
    free(w->pid);
    free(w->first_status);
    w->pid = NULL;
    w->first_status = NULL;
}

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
static void learn_ranks(repro_rank_watch *w)
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

void repro_rank_watch_tick(void *arg)
{
    repro_rank_watch *w = arg;
    if (w->first_gone >= 0)
        return;
    learn_ranks(w);
    for (int r = 0; r < w->ranks; r++) {
        int status;
        char st = w->pid[r] ? proc_state(w->pid[r], &status) : 'R';
        if (st != 0 && st != 'Z')
            continue;
        w->first_status[r] = st == 'Z' ? status : -1;
        if (w->first_gone < 0) {
            w->first_gone = r;
            w->status = w->first_status[r];
            w->first_gone_at = repro_now();
        }
        w->ngone_first++;
    }
}

/* Where several ranks were gone at the first sight, mpirun knows which
 * failed first and exits with its status (an exit code, or 128 + its
 * signal): name a rank of that group that ended so. When one rank exits
 * with an error (a refusal), mpirun kills the rest, and a tick may find
 * them all gone: the kill is not the cause. */
void repro_rank_watch_settle(repro_rank_watch *w, const repro_child_status *mpirun)
{
    int code = repro_child_status_code(mpirun);
    if (w->ngone_first < 2 || code == 0)
        return;
    for (int r = 0; r < w->ranks; r++) {
        int s = w->first_status[r];
        if (s < 0)
            continue;
        int match = code > 128 ? WIFSIGNALED(s) && WTERMSIG(s) == code - 128
                               : WIFEXITED(s) && WEXITSTATUS(s) == code;
        if (match) {
            w->first_gone = r;
            w->status = s;
            return;
        }
    }
}

repro_child_status repro_rank_watch_status(const repro_rank_watch *w,
                                           const repro_child_status *mpirun)
{
    int code = repro_child_status_code(mpirun);
    repro_child_status how = {REPRO_CHILD_EXITED, code};
    if (w->status >= 0 && WIFSIGNALED(w->status))
        how = (repro_child_status){REPRO_CHILD_SIGNALED, WTERMSIG(w->status)};
    else if (w->status >= 0 && WIFEXITED(w->status))
        how = (repro_child_status){REPRO_CHILD_EXITED, WEXITSTATUS(w->status)};
    else if (code > 128) /* mpirun: 128 + the signal of the first rank to fail */
        how = (repro_child_status){REPRO_CHILD_SIGNALED, code - 128};
    return how;
}
