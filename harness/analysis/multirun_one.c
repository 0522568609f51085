/* One planned run of a multirun as fresh processes (multirun.h:
 * repro_multirun_run_one): the `repro run` command line its plan entry
 * gives, the first process of a resumed run, progress on a terminal, and
 * what a failing child said. Below both callers: the runs in plan order
 * (multirun_jobs.c) and the re-runs to a divergent step (multirun.c). */
#include "analysis/multirun.h"

#include <stdio.h>
#include <unistd.h>

#include "analysis/run_progress.h"
#include "util/child.h"
#include "util/fsutil.h"
#include "util/progress.h"

/* `repro run ARGV...` as a fresh process, output to DIR/stdout.txt and
 * DIR/stderr.txt; a failure shows what the child said (its exit code says
 * what kind of failure). On a terminal (and not quiet) one updating line
 * shows the run's steps and an ETA. 0, the child's exit status, or -1. */
static int run_child_progress(char *const argv[], int idx, const char *dir, const char *what,
                              const char *trace, long total, int show)
{
    char out[1400], err[1400], env[64];
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    snprintf(env, sizeof env, "REPRO_CHECK_RUN=%d", idx);
    const char *const env_set[] = {env, NULL};
    if (repro_mkdirs(dir))
        return -1;
    repro_run_progress prog = {trace, what, total, 0, 0, repro_now()};
    int tty = show && trace && isatty(STDERR_FILENO);
    if (tty)
        repro_run_progress_join(&prog);
    int rc = repro_child_run_self_tick(argv, env_set, out, err,
                                       tty ? repro_run_progress_tick : NULL, &prog);
    if (tty)
        repro_run_progress_leave(&prog);
    if (rc <= 0)
        return rc;
    FILE *f = fopen(err, "r");
    char line[1024];
    repro_run_progress_hold(); /* runs at once: one failure's lines stay together */
    fprintf(stderr, "repro: %s failed (exit %d):\n", what, rc);
    while (f && fgets(line, sizeof line, f))
        fprintf(stderr, "  %s", line);
    if (f)
        fclose(f);
    /* Nothing to show: on a full disk the child could not write its error
     * either. Say so, and what writing there gives us now. */
    char silence[1600];
    if (repro_child_explain_silence(err, silence, sizeof silence))
        fprintf(stderr, "  (it said nothing: %s)\n", silence);
    repro_run_progress_release();
    return rc;
}

static int run_child(char *const argv[], int idx, const char *dir, const char *what)
{
    return run_child_progress(argv, idx, dir, what, NULL, 0, 0);
}

/* The first process of a resumed run: argv[0..n) with its trace in
 * DIR/pre/ (not compared), training to resume_at and checkpointing there
 * into DIR. 0, the child's exit status, or -1. */
static int train_to_checkpoint(char *const argv[], int n, const char *trace, int idx,
                               const repro_run_plan *p, const char *dir)
{
    char pre[1300], ptrace[1400], kstr[32], what[128];
    char *pargv[REPRO_MULTIRUN_MAX_PASS + 16];
    snprintf(pre, sizeof pre, "%s/pre", dir);
    snprintf(ptrace, sizeof ptrace, "%s/trace.jsonl", pre);
    snprintf(kstr, sizeof kstr, "%ld", p->resume_at);
    snprintf(what, sizeof what, "%s (training to step %ld)", p->label, p->resume_at);
    int pn = 0;
    for (int i = 0; i < n; i++)
        pargv[pn++] = argv[i] == trace ? ptrace : argv[i];
    pargv[pn++] = "--steps";
    pargv[pn++] = kstr;
    pargv[pn++] = "--checkpoint-every";
    pargv[pn++] = kstr;
    pargv[pn++] = "--checkpoint-dir";
    pargv[pn++] = (char *)dir;
    pargv[pn] = NULL;
    return run_child(pargv, idx, pre, what);
}

int repro_multirun_run_one(repro_multirun *m, int idx, const char *dir, long dump_step)
{
    if (m->cmd)
        return repro_multirun_run_external(m, idx, dir);
    char trace[1200], dump[32], steps[32], ckpt[1300], memtl[1200];
    snprintf(trace, sizeof trace, "%s/trace.jsonl", dir);
    if (repro_mkdirs(dir))
        return -1;
    char *argv[REPRO_MULTIRUN_MAX_PASS + 16];
    int n = 0;
    argv[n++] = "run";
    argv[n++] = (char *)m->exp;
    argv[n++] = "-q";
    argv[n++] = "-o";
    argv[n++] = trace;
    for (int i = 0; i < m->npass; i++)
        argv[n++] = m->pass[i];
    const repro_run_plan *p = &m->plan[idx];
    if (p->extra[0][0]) {
        argv[n++] = (char *)p->extra[0];
        argv[n++] = (char *)p->extra[1];
    }
    if (p->resume_at > 0) { /* this run resumes from the first process's checkpoint */
        int rc = train_to_checkpoint(argv, n, trace, idx, p, dir);
        if (rc)
            return rc;
        snprintf(ckpt, sizeof ckpt, "%s/ckpt-%ld.bin", dir, p->resume_at);
        argv[n++] = "--resume";
        argv[n++] = ckpt;
    }
    if (dump_step > 0) { /* after the passed options: these win */
        snprintf(steps, sizeof steps, "%ld", dump_step);
        snprintf(dump, sizeof dump, "%ld", dump_step);
        argv[n++] = "--steps";
        argv[n++] = steps;
        argv[n++] = "--dump";
        argv[n++] = dump;
    } else if (m->memory_timeline) {
        snprintf(memtl, sizeof memtl, "%s/memory.json", dir);
        argv[n++] = "--memory-timeline";
        argv[n++] = memtl;
    }
    argv[n] = NULL;
    return run_child_progress(argv, idx, dir, p->label, trace, dump_step > 0 ? dump_step
                                                              : m->total_steps - p->resume_at,
                              !m->quiet);
}
