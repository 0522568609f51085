/* The sandbox tests' directories (see tu_sandbox.h). */
#include "tu_sandbox.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

void tu_sandbox_dirs(const char *tag, char *root, const tu_sb_path *paths)
{
    tu_tmp_template(root, TU_TMP_LEN, tag);
    ck_assert_ptr_nonnull(mkdtemp(root));
    for (const tu_sb_path *p = paths; p->name; p++) {
        snprintf(p->path, TU_SB_LEN, "%s/%s", root, p->name);
        if (p->mkdir)
            ck_assert_msg(mkdir(p->path, 0755) == 0, "cannot make %s", p->path);
    }
}

void tu_sandbox_write(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}
