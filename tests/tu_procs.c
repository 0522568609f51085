/* Finding processes by command line (see tu_procs.h). */
#include "tu_procs.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/trace.h"

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

long tu_peak_kib(const char *const *argv, const char *whole_trace, int *status)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        if (!argv) {
            repro_trace t;
            _exit(repro_trace_read(&t, whole_trace) ? 3 : 0);
        }
        execv(tu_repro_bin(), (char *const *)argv);
        _exit(127);
    }
    struct rusage ru;
    ck_assert_int_eq(wait4(pid, status, 0, &ru), pid);
    return ru.ru_maxrss;
}

long tu_own_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    ck_assert_int_gt(kib, 0);
    return kib;
}
