/* Killing the orphans a program leaves (see orphans.h). */
#include "util/orphans.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "util/progress.h"

static int adopted;

int repro_orphans_adopt(void)
{
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
    if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) != 0)
        return -1;
    adopted = 1;
    return 0;
#else
    errno = ENOSYS;
    return -1;
#endif
}

int repro_orphans_adopted(void)
{
    return adopted;
}

/* The parent of /proc/<name> (its stat's 4th field, after the command
 * name in parentheses, which may itself hold spaces and parentheses), or
 * -1. */
static pid_t parent_of(const char *name)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    char state;
    long ppid;
    if (!p || sscanf(p + 1, " %c %ld", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

enum { BATCH = 256 };

/* Up to BATCH children of ours, as /proc lists them: how many. */
static int list_children(pid_t self, pid_t *out)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < BATCH && (e = readdir(d)))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && parent_of(e->d_name) == self)
            out[n++] = (pid_t)atol(e->d_name);
    closedir(d);
    return n;
}

/* A killed process is reaped within milliseconds unless it is stuck in
 * the kernel (an uninterruptible wait): then it is left, not waited for
 * forever. */
#define REAP_WAIT_S 5.0

static void reap(pid_t pid, double deadline)
{
    struct timespec nap = {0, 1000000};
    for (;;) {
        pid_t w = waitpid(pid, NULL, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR) || repro_now() > deadline)
            return;
        if (w == 0)
            nanosleep(&nap, NULL);
    }
}

int repro_orphans_kill_all(void)
{
    pid_t self = getpid(), pids[BATCH];
    double deadline = repro_now() + REAP_WAIT_S;
    int killed = 0, n;
    /* Each round kills what is there; what a killed one forked in the
     * meantime is re-parented to us and found by the next. A process
     * cannot fork once killed, so the rounds end. */
    for (int round = 0; round < 1000 && (n = list_children(self, pids)) > 0; round++) {
        for (int i = 0; i < n; i++)
            killed += kill(pids[i], SIGKILL) == 0;
        for (int i = 0; i < n; i++)
            reap(pids[i], deadline);
        if (repro_now() > deadline)
            break;
    }
    return killed;
}
