/* The JUnit XML writer (see junit.h). Text is escaped for XML; control
 * characters that XML 1.0 forbids are dropped. */
#include "util/junit.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/outpath.h"

static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r')
                fputc(c, f);
        }
    }
}

int repro_junit_write(const char *path, const char *suite, const repro_junit_case *cases, int n)
{
    repro_outfile out; /* the output-path rule (outpath.h) */
    if (repro_outfile_open(&out, path, "JUnit report"))
        return -1;
    FILE *f = out.f;
    int failures = 0, errors = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        errors += cases[i].errored != 0;
        failures += cases[i].failed && !cases[i].errored;
        total += cases[i].seconds;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    fprintf(f, "  <testsuite name=\"");
    put_escaped(f, suite);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", n, failures,
            errors, total);
    for (int i = 0; i < n; i++) {
        fprintf(f, "    <testcase classname=\"");
        put_escaped(f, suite);
        fprintf(f, "\" name=\"");
        put_escaped(f, cases[i].name);
        fprintf(f, "\" time=\"%.3f\"", cases[i].seconds);
        if (!cases[i].failed && !cases[i].errored) {
            fprintf(f, "/>\n");
            continue;
        }
        const char *tag = cases[i].errored ? "error" : "failure";
        fprintf(f, ">\n      <%s message=\"", tag);
        put_escaped(f, cases[i].message);
        fprintf(f, "\">");
        put_escaped(f, cases[i].details ? cases[i].details : "");
        fprintf(f, "</%s>\n    </testcase>\n", tag);
    }
    fprintf(f, "  </testsuite>\n</testsuites>\n");
    return repro_outfile_commit(&out);
}
