#include "util/cpus.h"

#include <sched.h>
#include <stdio.h>

#include "util/error.h"

int repro_cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return 1;
}

int repro_cpus_pin_slot(int slot, int width, char *cores, size_t len)
{
    cpu_set_t mask, pin;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0)
        return repro_error_set_errno(REPRO_EIO, "sched_getaffinity");
    int cpus[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mask))
            cpus[n++] = c;
    if (n == 0 || width < 1 || slot < 0)
        return repro_error_set(REPRO_EIO, "no CPU to pin to");
    CPU_ZERO(&pin);
    size_t at = 0;
    cores[0] = '\0';
    for (int i = 0; i < width && i < n; i++) {
        int c = cpus[((long)slot * width + i) % n];
        CPU_SET(c, &pin);
        if (at < len)
            at += (size_t)snprintf(cores + at, len - at, "%s%d", i ? "," : "", c);
    }
    if (sched_setaffinity(0, sizeof pin, &pin) != 0)
        return repro_error_set_errno(REPRO_EIO, "sched_setaffinity to CPU %s", cores);
    return 0;
}
