/* Scratch git repositories for tests (see gitfixture.h). */
#include "gitfixture.h"

#include <check.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char home[PATH_MAX];
static int commit_seq; /* commit n is dated TU_GIT_T0 + 60 n */

void tu_git_home(const char *dir)
{
    ck_assert_int_lt(snprintf(home, sizeof home, "%s", dir), (int)sizeof home);
    commit_seq = 0;
}

int tu_git_next_time(void)
{
    return TU_GIT_T0 + 60 * commit_seq++;
}

static void vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
    ck_assert_msg(home[0], "tu_git_home was not called");
    int n = snprintf(buf, len, TU_GIT_ENV, home);
    ck_assert_int_lt(n, (int)len);
    int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
    ck_assert_int_lt(m, (int)(len - (size_t)n));
}

void tu_git_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vformat(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    ck_assert_msg(st == 0, "command failed (%d): %s", st, cmd);
}

void tu_git_capture(char *out, size_t len, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vformat(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    while (n > 0 && out[n - 1] == '\n')
        out[--n] = '\0';
    ck_assert_msg(pclose(p) == 0, "command failed: %s", cmd);
}

void tu_git_init(const char *dir)
{
    tu_git_sh("mkdir -p '%s' && git init -q -b main '%s'", dir, dir);
}

void tu_git_write(const char *dir, const char *rel, const char *mode, const char *text)
{
    char path[PATH_MAX * 2];
    ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s", dir, rel), (int)sizeof path);
    for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0777);
        *s = '/';
    }
    FILE *f = fopen(path, mode);
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

void tu_git_commit_all(const char *dir, const char *msg, char id[41])
{
    int t = tu_git_next_time();
    tu_git_sh("cd '%s' && git add -A && GIT_AUTHOR_DATE='@%d +0000' "
              "GIT_COMMITTER_DATE='@%d +0000' git commit -q -m '%s'",
              dir, t, t, msg);
    if (id) {
        char buf[64];
        tu_git_capture(buf, sizeof buf, "git -C '%s' rev-parse HEAD", dir);
        ck_assert_uint_eq(strlen(buf), 40);
        memcpy(id, buf, 41);
    }
}

void tu_git_scratch(char *base, size_t base_len, const char *tag, char *bin)
{
    tu_tmp_template(base, base_len, tag);
    ck_assert_ptr_nonnull(mkdtemp(base));
    tu_git_home(base);
    const char *b = getenv("REPRO_BIN");
    ck_assert_msg(realpath(b ? b : "./build/repro", bin) != NULL, "no repro binary to test");
}

void tu_git_scratch_remove(const char *base)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (base[0] && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", base);
}

void tu_git_write_program_makefile(const char *dir)
{
    char text[4200];
    snprintf(text, sizeof text, "prog: prog.c\n\t$(CC) -std=c11 -O2 -o $@ prog.c %s\n",
             tu_stage_flags());
    tu_git_write(dir, "Makefile", "w", text);
}
