/* libFuzzer target: the strict experiment-config parser (config.c), fed
 * arbitrary bytes through a memfd, since repro_config_load takes a path. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/config.h"
#include "util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static repro_config cfg; /* large: keep it off the stack */
    int fd = memfd_create("fuzz.ini", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (repro_config_load(&cfg, path) == 0) {
        repro_config_validate(&cfg);
        /* The dump must load back: a round trip exercises the writer too. */
        char buf[1 << 16];
        FILE *f = fmemopen(buf, sizeof buf, "w");
        if (f) {
            repro_config_dump(&cfg, f);
            fclose(f);
        }
    }
    repro_error_clear();
    close(fd);
    return 0;
}
