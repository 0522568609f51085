/* libFuzzer target: the trace reader (trace_read.c) and, when a trace
 * reads, the comparator on it against itself. Bytes go through a memfd. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "util/error.h"
#include "record/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.jsonl", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    repro_trace t;
    if (repro_trace_read(&t, path) == 0) {
        repro_divergence d;
        if (repro_compare_traces(&t, &t, &d) == 0)
            repro_divergence_release(&d);
        repro_trace_release(&t);
    }
    repro_error_clear();
    close(fd);
    return 0;
}
