/* Finding processes by command line (see tu_procs.h). */
#include "tu_procs.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 1 when /proc/<pid>/stat says zombie or dead. */
static int is_zombie(const char *pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !p || p[2] == 'Z' || p[2] == 'X';
}

static int matches(const char *pid, const char *prog, const char *arg)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t a0 = strlen(buf), lp = strlen(prog);
    if (a0 + 1 >= n || a0 < lp || strcmp(buf + a0 - lp, prog))
        return 0;
    return !strcmp(buf + a0 + 1, arg) && !is_zombie(pid);
}

pid_t tu_find_process(const char *prog, const char *arg)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && matches(e->d_name, prog, arg))
            found = (pid_t)atol(e->d_name);
    closedir(d);
    return found;
}

static void nap_10ms(void)
{
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
}

int tu_process_gone_within(const char *prog, const char *arg, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (!tu_find_process(prog, arg))
            return 1;
        nap_10ms();
    }
    return !tu_find_process(prog, arg);
}

pid_t tu_process_appears_within(const char *prog, const char *arg, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        pid_t p = tu_find_process(prog, arg);
        if (p)
            return p;
        nap_10ms();
    }
    return tu_find_process(prog, arg);
}

const char *tu_repro_bin(void)
{
    static char abs[4096];
    const char *bin = getenv("REPRO_BIN");
    if (!realpath(bin && bin[0] ? bin : "./build/repro", abs))
        snprintf(abs, sizeof abs, "%s", bin && bin[0] ? bin : "./build/repro");
    return abs;
}

void tu_kill_processes(const char *prog, const char *arg)
{
    pid_t p;
    for (int i = 0; i < 100 && (p = tu_find_process(prog, arg)); i++) {
        kill(p, SIGKILL);
        nap_10ms();
    }
}
