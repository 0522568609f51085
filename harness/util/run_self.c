/* posix_spawn of /proc/self/exe (see spawn.h). */
#include "util/run_self.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"

extern char **environ;

int repro_spawn_self(char *const argv[], const char *env_add, const char *out_path,
                     const char *err_path)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return repro_error_set_errno(REPRO_EIO, "cannot find the repro executable");
    self[n] = '\0';

    int argc = 0;
    while (argv[argc])
        argc++;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    int envc = 0;
    while (environ[envc])
        envc++;
    char **env = calloc((size_t)envc + 2, sizeof *env);
    if (!args || !env) {
        free(args);
        free(env);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    args[0] = self;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    size_t klen = env_add ? strcspn(env_add, "=") + 1 : 0;
    int e = 0;
    for (int i = 0; i < envc; i++)
        if (!env_add || strncmp(environ[i], env_add, klen)) /* replaced, not duplicated */
            env[e++] = environ[i];
    if (env_add)
        env[e++] = (char *)env_add;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, args, env);
    posix_spawn_file_actions_destroy(&fa);
    free(args);
    free(env);
    if (rc != 0) {
        errno = rc;
        return repro_error_set_errno(REPRO_EIO, "cannot start %s", self);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return repro_error_set_errno(REPRO_EIO, "waiting for %s", self);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
