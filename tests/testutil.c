/* Test helpers (see testutil.h). Not a suite: no check_ prefix. */
#include "testutil.h"

#include <check.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

_Static_assert(sizeof(tu_cpu_mask) >= sizeof(cpu_set_t), "tu_cpu_mask holds a cpu_set_t");

void tu_hold_to_cpus(int n, tu_cpu_mask *saved)
{
    cpu_set_t *all = (cpu_set_t *)(void *)saved, few;
    ck_assert_int_eq(sched_getaffinity(0, sizeof *all, all), 0);
    CPU_ZERO(&few);
    for (int c = 0, k = 0; c < CPU_SETSIZE && k < n; c++)
        if (CPU_ISSET(c, all))
            CPU_SET(c, &few), k++;
    ck_assert_int_eq(sched_setaffinity(0, sizeof few, &few), 0);
}

void tu_restore_cpus(const tu_cpu_mask *saved)
{
    ck_assert_int_eq(sched_setaffinity(0, sizeof(cpu_set_t), (const cpu_set_t *)(const void *)saved),
                     0);
}

void tu_tmp_template(char *buf, size_t len, const char *tag)
{
    const char *root = getenv("REPRO_TEST_TMP");
    int n = snprintf(buf, len, "%s/%s-XXXXXX", root && root[0] ? root : "/tmp", tag);
    ck_assert_msg(n > 0 && (size_t)n < len, "temporary path for '%s' too long under '%s'", tag,
                  root);
}

void tu_write_temp(char *path_out, size_t len, const char *name, const char *text)
{
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "test");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path_out, len, "%s/%s", dir, name);
    FILE *f = fopen(path_out, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

void tu_slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

int tu_run_repro(const char *args, char *out, size_t outlen, char *err, size_t errlen)
{
    const char *bin = getenv("REPRO_BIN");
    if (!bin)
        bin = "./build/repro";
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "run");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[4096], op[512], ep[512];
    snprintf(op, sizeof op, "%s/out", dir);
    snprintf(ep, sizeof ep, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s </dev/null", bin, args, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    tu_slurp(op, out, outlen);
    tu_slurp(ep, err, errlen);
    remove(op);
    remove(ep);
    remove(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tu_run_repro_fsize(const char *cwd, unsigned long fsize_bytes, const char *args, char *out,
                       size_t outlen)
{
    const char *bin = getenv("REPRO_BIN");
    char abs[4096], cmd[8192];
    if (!bin)
        bin = "./build/repro";
    ck_assert_ptr_nonnull(realpath(bin, abs));
    snprintf(cmd, sizeof cmd, "exec %s %s </dev/null", abs, args);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit rl = {fsize_bytes, fsize_bytes};
        if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 || chdir(cwd) != 0 ||
            setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(126);
        close(p[0]);
        close(p[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n < outlen - 1 && (r = read(p[0], out + n, outlen - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    char sink[4096]; /* drain what did not fit, so the child never blocks */
    while (read(p[0], sink, sizeof sink) > 0)
        ;
    close(p[0]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tu_isa_paths(repro_isa *out)
{
    int n = 0;
    for (int i = 0; i < REPRO_ISA_COUNT; i++)
        if (repro_isa_supported((repro_isa)i))
            out[n++] = (repro_isa)i;
    return n;
}

const char *tu_stage_flags(void)
{
    static char flags[4096];
    const char *stage = getenv("REPRO_STAGE");
    ck_assert_msg(stage && *stage, "REPRO_STAGE is not set: run the suite through `make check`");
#if defined(__SANITIZE_ADDRESS__)
    const char *san = "-fsanitize=address,undefined ";
#else
    const char *san = "";
#endif
    snprintf(flags, sizeof flags, "%s-I'%s/include' -L'%s/lib' -Wl,-rpath,'%s/lib' -lrepro", san,
             stage, stage, stage);
    return flags;
}

void tu_skip(const char *suite, const char *fmt, ...)
{
    char why[512], line[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    for (char *c = why; *c; c++) /* one line, one tab: the log's fields */
        if (*c == '\n' || *c == '\t')
            *c = ' ';
    fprintf(stderr, "%s: skipped: %s\n", suite, why);
    const char *log = getenv("REPRO_SKIP_LOG");
    if (!log || !*log)
        return;
    int n = snprintf(line, sizeof line, "%s\t%s\n", suite, why);
    if (n >= (int)sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    /* O_APPEND and one write: tests run in forked children, lines stay whole */
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ck_assert_msg(fd >= 0, "cannot append to REPRO_SKIP_LOG=%s", log);
    ck_assert_msg(write(fd, line, (size_t)n) == n, "cannot append to REPRO_SKIP_LOG=%s", log);
    close(fd);
}

const char *tu_no_python(const char *module)
{
    static char why[160];
    const char *lib = getenv("REPRO_LIB");
    if (lib && !*lib)
        return "a sanitizer build (python3 cannot load its librepro)";
    if (access("/usr/bin/python3", X_OK) != 0)
        return "no /usr/bin/python3";
    char cmd[200];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import %s' >/dev/null 2>&1", module);
    if (system(cmd) != 0) {
        snprintf(why, sizeof why, "no %s for /usr/bin/python3", module);
        return why;
    }
    return "";
}
