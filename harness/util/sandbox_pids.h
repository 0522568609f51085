/* The sandbox's cgroups. A process-count limit that holds for root: a cgroup of its own with the
 * pids controller's pids.max (cgroup v1's pids hierarchy, or v2 where the
 * controller can be enabled under our cgroup). RLIMIT_NPROC is no limit
 * for uid 0 (the kernel exempts the root user, also inside a user
 * namespace mapped to it, also with every capability dropped: measured,
 * see docs/submissions.md), and a sandboxed re-run is usually made by
 * root. pids.max counts processes and threads alike, only those in the
 * cgroup, and a fork past it fails with EAGAIN. The sandbox (sandbox.c)
 * makes one per run and has its child join it before exec
 * (repro_child.cgroup_procs). */
#ifndef REPRO_SANDBOX_PIDS_H
#define REPRO_SANDBOX_PIDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char dir[512];     /* the cgroup's directory; "" when none was made */
    char procs[560];   /* its cgroup.procs, for repro_child.cgroup_procs ("" when
                          shared: nothing more to join) */
    int version;       /* 1 or 2 */
    int shared;        /* the limit was set in another cgroup of ours (v2's
                          pids cgroup): not removed here */
} repro_pids_cgroup;

/* Makes a fresh cgroup below ours with pids.max = max. 0, or -1 with why
 * saying what is missing (no pids controller mounted, not writable); the
 * error slot is not touched: the caller decides whether it is an error. */
int repro_pids_cgroup_make(repro_pids_cgroup *g, uint64_t max, char *why, size_t len);
/* How many forks the cgroup refused at pids.max (pids.events "max N"). */
uint64_t repro_pids_cgroup_refused(const repro_pids_cgroup *g);
/* The most tasks it held at once (pids.peak where the kernel has it), or 0. */
uint64_t repro_pids_cgroup_peak(const repro_pids_cgroup *g);
/* The GPU sandbox's memory limit (sandbox.h, opts.gpu), in place of an
 * address-space limit that CUDA's virtual reservations (tens of GiB
 * before anything is used) would exceed: the memory the kernel charges
 * to the cgroup's tasks (resident pages, page cache, tmpfs pages they
 * write; not the GPU's own memory) held to bytes, swap closed where the
 * kernel accounts it. Past it the kernel's OOM killer kills a task of
 * the cgroup. In v2, where a process belongs to one cgroup, the limit
 * goes into pids (already made, v2; g then shares it: g->procs is "");
 * else a cgroup of its own in v1's memory hierarchy (or v2 without a
 * pids one), which the child joins too. 0, or -1 with why. */
int repro_mem_cgroup_make(repro_pids_cgroup *g, const repro_pids_cgroup *pids, uint64_t bytes,
                          char *why, size_t len);
/* How many tasks the OOM killer killed in it (oom_kill of memory.events
 * in v2, of memory.oom_control in v1), or 0. */
uint64_t repro_mem_cgroup_oom_kills(const repro_pids_cgroup *g);
/* Kills whatever is left in it and removes it (best effort; a shared
 * one is only forgotten). */
void repro_pids_cgroup_remove(repro_pids_cgroup *g);

#endif
