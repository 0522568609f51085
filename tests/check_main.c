/* The one test runner: joins every tests/check_<module>.c suite (the list is
 * generated from the file names, build/suites.inc) and exits nonzero when any
 * test fails. CK_RUN_SUITE / CK_EXCLUDE_TAGS etc. work as Check documents. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/isa.h"

#define SUITE(name) Suite *name##_suite(void);
#include "suites.inc"
#undef SUITE

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
    SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, name##_suite());
#include "suites.inc"
#undef SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
