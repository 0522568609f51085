/* `make bench`'s PyTorch yardstick: drives bench/torch_ref.py --serve (one
 * Python process per thread count, its thread settings fixed before torch
 * is imported) over a pair of pipes, so PyTorch's runs interleave with
 * repro's in one program and machine noise hits both alike. Header-only:
 * each bench/NAME.c is its own program. */
#ifndef REPRO_BENCH_TORCH_PEER_H
#define REPRO_BENCH_TORCH_PEER_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    pid_t pid;
    FILE *to, *from;
    char banner[1024];
} torch_peer;

/* Starts `python script --serve --threads N --settings S` (S: "best", or
 * "default" for the reference line); 0 when it answered "ready". */
static int torch_peer_start(torch_peer *p, const char *python, const char *script, int threads,
                            const char *settings)
{
    memset(p, 0, sizeof *p);
    int in[2], out[2];
    /* close-on-exec: a second peer must not inherit this one's pipe ends
     * (its stdin would then never see EOF) */
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
        return -1;
    char nt[16];
    snprintf(nt, sizeof nt, "%d", threads);
    char *argv[] = {(char *)python, (char *)script, "--serve", "--threads", nt, "--settings",
                    (char *)settings, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    int rc = posix_spawnp(&p->pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc) {
        close(in[1]);
        close(out[0]);
        p->pid = 0;
        return -1;
    }
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    if (!p->to || !p->from || !fgets(p->banner, sizeof p->banner, p->from) ||
        strncmp(p->banner, "ready", 5)) {
        return -1;
    }
    p->banner[strcspn(p->banner, "\n")] = 0;
    return 0;
}

/* Steps/s of one PyTorch run of `steps` steps of arch ("mlp", "cnn"); <0 on error. */
static double torch_peer_rate(torch_peer *p, const char *arch, long steps)
{
    char line[64];
    if (!p->to || fprintf(p->to, "%s %ld\n", arch, steps) < 0 || fflush(p->to) ||
        !fgets(line, sizeof line, p->from))
        return -1;
    /* OpenBLAS's and OpenMP's threads keep spinning after PyTorch's last
     * step (measured here: a whole core for ~0.1 s after the 2-thread mlp),
     * which would steal a core from the repro run measured next. */
    usleep(300 * 1000);
    return atof(line);
}

static void torch_peer_stop(torch_peer *p)
{
    if (p->to)
        fclose(p->to); /* EOF: the server's loop ends */
    if (p->from)
        fclose(p->from);
    if (p->pid > 0) {
        int st;
        waitpid(p->pid, &st, 0);
    }
    memset(p, 0, sizeof *p);
}

#endif
