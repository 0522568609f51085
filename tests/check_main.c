/* The one test runner: joins every tests/check_<module>.c suite (the list is
 * generated from the file names, build/suites.inc) and exits nonzero when any
 * test fails. CK_RUN_SUITE / CK_EXCLUDE_TAGS etc. work as Check documents. */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *name##_suite(void);
#include "suites.inc"
#undef SUITE

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(sr, name##_suite());
#include "suites.inc"
#undef SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
