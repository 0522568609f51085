/* How many CPUs this process may run on. */
#ifndef REPRO_UTIL_CPUS_H
#define REPRO_UTIL_CPUS_H

#include <stddef.h>

/* The CPUs in this process's affinity mask (what taskset, cgroups' cpusets
 * and CI runners' limits leave it), at least 1. */
int repro_cpus_available(void);

/* Pins the calling thread, and every thread it starts afterwards, to
 * `width` CPUs of its affinity mask: slot k takes the CPUs k*width ..
 * k*width + width - 1 of the mask in order, wrapping around (more slots
 * than CPUs share them). Writes the CPU numbers to `cores` ("3", "2,3").
 * 0, or -1 with the error slot set (REPRO_EIO). */
int repro_cpus_pin_slot(int slot, int width, char *cores, size_t len);

#endif
