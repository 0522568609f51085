/* The one test runner: joins every tests/check_<module>.c suite (the list is
 * generated from the file names, build/suites.inc) and exits nonzero when any
 * test fails. CK_RUN_SUITE / CK_EXCLUDE_TAGS etc. work as Check documents. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels/isa.h"

#define SUITE(name) Suite *name##_suite(void);
#include "suites.inc"
#undef SUITE

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* One directory for every file this run's tests write (tests/testutil.h):
 * removed when the run passes, kept and named when it fails, for the
 * post-mortem. */
static int make_test_root(char *root, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, len, "%s/repro-check-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        return -1;
    }
    return setenv("REPRO_TEST_TMP", root, 1);
}

int main(void)
{
    /* REPRO_ISA forces the kernels' vector path, as for `repro` itself
     * (make portability runs the suites under each path the CPU has). */
    const char *isa = getenv("REPRO_ISA");
    if (isa && isa[0] && (repro_isa_from_name(isa) < 0 ||
                          repro_isa_select((repro_isa)repro_isa_from_name(isa)))) {
        fprintf(stderr, "check_all: REPRO_ISA=%s: unknown or not supported by this CPU\n", isa);
        return 3;
    }
    char root[256];
    if (make_test_root(root, sizeof root))
        return 3;
    SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, name##_suite());
#include "suites.inc"
#undef SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed == 0)
        nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    else
        fprintf(stderr, "check_all: the failed run's files are kept in %s\n", root);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
