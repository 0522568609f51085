/* Test helpers (see testutil.h). Not a suite: no check_ prefix. */
#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void tu_write_temp(char *path_out, size_t len, const char *name, const char *text)
{
    char dir[] = "/tmp/repro-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path_out, len, "%s/%s", dir, name);
    FILE *f = fopen(path_out, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void slurp(const char *path, char *buf, size_t len)
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
    char dir[] = "/tmp/repro-run-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[4096], op[512], ep[512];
    snprintf(op, sizeof op, "%s/out", dir);
    snprintf(ep, sizeof ep, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s </dev/null", bin, args, op, ep);
    int st = system(cmd);
    ck_assert_int_ne(st, -1);
    slurp(op, out, outlen);
    slurp(ep, err, errlen);
    remove(op);
    remove(ep);
    remove(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
