/* JUnit XML reports, the format CI systems (GitLab, Jenkins, GitHub
 * test-reporter actions) display: one <testsuite>, one <testcase> each. */
#ifndef REPRO_JUNIT_H
#define REPRO_JUNIT_H

typedef struct {
    const char *name;
    int failed;          /* a <failure>: the test ran and found a difference */
    int errored;         /* an <error>: the test could not be run (wins over failed) */
    const char *message; /* one line, for the failure's message attribute */
    const char *details; /* the full report, as the failure's text */
    double seconds;
} repro_junit_case;

/* Writes the file (via a temporary and rename). 0 or -1 (error slot, exit 3). */
int repro_junit_write(const char *path, const char *suite, const repro_junit_case *cases, int n);

#endif
