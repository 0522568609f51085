/* How many CPUs this process may run on. */
#ifndef REPRO_UTIL_CPUS_H
#define REPRO_UTIL_CPUS_H

/* The CPUs in this process's affinity mask (what taskset, cgroups' cpusets
 * and CI runners' limits leave it), at least 1. */
int repro_cpus_available(void);

#endif
