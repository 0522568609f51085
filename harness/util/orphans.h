/* Orphans: what a program leaves running outside the reach of its
 * process group. child.h kills a child's whole group when it ends, but a
 * process that left the group (`setsid sleep &`, a daemon's double fork
 * with a setsid between) is not in it, and when its parent exits it is
 * re-parented to init and lives on, one per run.
 *
 * Linux lets a process be a "child subreaper" (PR_SET_CHILD_SUBREAPER):
 * orphans among its descendants are re-parented to it instead of init.
 * repro makes itself one (repro_orphans_adopt, in main), and child.c
 * kills and reaps every child of repro's that it did not start itself
 * once none of its own children runs any more: after each run of a
 * program, and after an interruption (SIGINT/SIGTERM) has ended it. A
 * nested repro (a `repro run` that `repro check` starts) is a subreaper
 * of its own, so each program's orphans come to the repro that ran it.
 *
 * Not covered: repro killed with SIGKILL (nothing of it runs; its orphans
 * go to the next subreaper up, or init). A sandboxed run (sandbox.h)
 * needs none of this: its pid namespace dies with it. */
#ifndef REPRO_ORPHANS_H
#define REPRO_ORPHANS_H

/* Makes this process a child subreaper. 0, or -1 (errno; not Linux:
 * ENOSYS), after which repro_orphans_adopted() stays 0. */
int repro_orphans_adopt(void);
/* 1 when this process adopts orphans (repro_orphans_adopt succeeded). */
int repro_orphans_adopted(void);
/* SIGKILLs and reaps every child of this process, again and again until
 * none is left (a killed orphan's own children come to us in turn), each
 * waited for up to a few seconds. Only for when no child is one the
 * caller still wants (child.c calls it with none of its own running, and
 * holds off new starts meanwhile). Returns how many it killed. */
int repro_orphans_kill_all(void);

#endif
