/* libFuzzer target: the strict experiment-config parser (config.c), fed
 * arbitrary bytes through a memfd, since repro_config_load takes a path.
 * Every config that loads is dumped as INI and the dump is loaded again:
 * it must load, and give the same value for every key (a dump that does
 * not parse back, or parses to something else, aborts: a finding). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/config.h"
#include "util/error.h"

/* Loads `size` bytes as an experiment through a fresh memfd. */
static int load_bytes(repro_config *cfg, const void *data, size_t size)
{
    int fd = memfd_create("fuzz.ini", 0);
    if (fd < 0)
        return -2;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -2;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rc = repro_config_load(cfg, path);
    close(fd);
    return rc;
}

static void round_trip(const repro_config *cfg)
{
    static repro_config back; /* large: keep it off the stack */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    repro_config_dump(cfg, f);
    if (fclose(f) != 0) {
        free(text);
        return;
    }
    if (load_bytes(&back, text, len) == -1) {
        fprintf(stderr, "dump does not load back: %s\n--- dump ---\n%s", repro_error_message(),
                text);
        abort();
    }
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        char a[REPRO_CONFIG_PATH_MAX + 64], b[REPRO_CONFIG_PATH_MAX + 64];
        repro_config_value_str(cfg, k, a, sizeof a);
        repro_config_value_str(&back, k, b, sizeof b);
        if (strcmp(a, b) != 0) {
            fprintf(stderr, "dump round trip changed %s.%s: '%s' became '%s'\n",
                    repro_config_key_section(k), repro_config_key_name(k), a, b);
            abort();
        }
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static repro_config cfg; /* large: keep it off the stack */
    if (load_bytes(&cfg, data, size) == 0) {
        repro_config_validate(&cfg);
        round_trip(&cfg);
    }
    repro_error_clear();
    return 0;
}
