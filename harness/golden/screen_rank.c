/* One rank of `repro screen` (screen.h): pinned, run, compared with the
 * golden of its own environment class. */
#include "golden/screen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "core/session.h"
#include "golden/golden.h"
#include "golden/golden_program.h"
#include "history/git.h"
#include "util/cpus.h"
#include "util/error.h"
#include "util/fault.h"

/* The process's index among the ranks on its node, from its launcher's
 * environment (Open MPI, Slurm, MPICH/PMI); the global rank when none says. */
static int local_rank(int rank)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       "MPI_LOCALRANKID", "PMI_LOCAL_RANK", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long n = v && *v ? strtol(v, &end, 10) : -1;
        if (n >= 0 && v && !*end)
            return (int)n;
    }
    return rank;
}

/* The golden of the run's class: NONE (only the peers judge), SKIPPED with
 * why, or the comparison. Never an error: a golden that cannot be read is
 * said in the note. */
static void compare_golden(const repro_trace *run, const repro_screen_opts *o,
                           repro_screen_rank *r)
{
    repro_git *git = NULL;
    const char *root = "";
    if (repro_golden_open_repo(&git, o->exp_file, NULL) == 0)
        root = repro_git_workdir(git);
    repro_error_clear();
    char path[1400];
    repro_golden_path(root, run->experiment, run->env_class, path, sizeof path);
    repro_trace g;
    memset(&g, 0, sizeof g);
    repro_divergence d;
    memset(&d, 0, sizeof d);
    if (access(path, F_OK) != 0) {
        snprintf(r->golden_note, sizeof r->golden_note, "no golden for class %s",
                 run->env_class);
    } else if (repro_trace_read(&g, path)) {
        snprintf(r->golden_note, sizeof r->golden_note, "golden unreadable: %.100s",
                 repro_error_message());
        r->golden = REPRO_SCREEN_GOLDEN_SKIPPED;
    } else if (strcmp(g.tensor_hash, run->tensor_hash) ||
               !repro_digest_eq(&g.numerics_digest, &run->numerics_digest)) {
        snprintf(r->golden_note, sizeof r->golden_note, "%s",
                 o->overridden ? "golden not compared: --set/--seed override the config"
                               : "golden is of another config or digest: re-bless it");
        r->golden = REPRO_SCREEN_GOLDEN_SKIPPED;
    } else if (repro_compare_traces(&g, run, &d)) {
        snprintf(r->golden_note, sizeof r->golden_note, "golden not compared: %.100s",
                 repro_error_message());
        r->golden = REPRO_SCREEN_GOLDEN_SKIPPED;
    } else if (d.identical || (d.first_step == 0 && d.common_steps > 0)) {
        r->golden = REPRO_SCREEN_GOLDEN_MATCH; /* a prefix of a longer golden matches */
    } else {
        r->golden = REPRO_SCREEN_GOLDEN_DIFFERS;
        r->golden_step = d.first_step ? d.first_step : d.common_steps;
        r->golden_ntensors = d.ntensors;
        if (d.ntensors)
            snprintf(r->golden_tensor, sizeof r->golden_tensor, "%s", d.tensors[0].name);
    }
    repro_error_clear();
    repro_divergence_release(&d);
    repro_trace_release(&g);
    repro_git_free(git);
}

/* The session of one repeat into trace_path. 0 or -1 (error slot); a
 * replay mismatch (REPRO_EMISMATCH) fills r's replay fields. */
static int train_once(const repro_config *cfg, const repro_screen_opts *o, int rank, int repeat,
                      const char *trace_path, repro_screen_rank *r)
{
    repro_session_opts so;
    memset(&so, 0, sizeof so);
    so.output = trace_path;
    so.no_eval = 1; /* the held-out eval adds nothing the steps do not show */
    if (repro_fault_from_env(&so.fault))
        return -1;
    repro_fault_select_screen(&so.fault, rank, repeat);
    so.fault_spec = o->fault_spec;
    repro_session *s;
    if (repro_session_open(&s, cfg, &so))
        return -1;
    int rc = repro_session_run(s) || repro_session_finish(s) ? -1 : 0;
    if (rc && repro_error_code() == REPRO_EMISMATCH && s->t.replay_differs[0]) {
        r->replay_step = s->t.step + 1;
        snprintf(r->replay_tensor, sizeof r->replay_tensor, "%s", s->t.replay_differs);
    }
    repro_session_close(s);
    return rc;
}

int repro_screen_rank_run(const repro_config *cfg, const repro_screen_opts *o, int rank,
                          int repeat, const char *trace_path, repro_screen_rank *r,
                          repro_trace *t)
{
    memset(r, 0, sizeof *r);
    memset(t, 0, sizeof *t);
    r->rank = rank;
    if (gethostname(r->host, sizeof r->host - 1))
        snprintf(r->host, sizeof r->host, "?");
    int width = cfg->train_threads > 0 ? cfg->train_threads : 1;
    if (repro_cpus_pin_slot(local_rank(rank), width, r->cores, sizeof r->cores) ||
        train_once(cfg, o, rank, repeat, trace_path, r) || repro_trace_read(t, trace_path)) {
        snprintf(r->error, sizeof r->error, "%s", repro_error_message());
        repro_error_clear();
        r->tested = r->replay_step > 0; /* a replay that differed is a verdict */
        if (r->tested)
            snprintf(r->golden_note, sizeof r->golden_note,
                     "golden not compared: the run stopped at step %ld's replay", r->replay_step);
        return 0;
    }
    r->tested = 1;
    snprintf(r->env_class, sizeof r->env_class, "%s", t->env_class);
    r->chain = t->trailer_chain;
    r->nsteps = t->nsteps;
    r->ntensors = t->nsteps ? t->steps[0].ntensors : 0;
    compare_golden(t, o, r);
    return 0;
}

void repro_screen_table(const repro_trace *t, long nsteps, int ntensors, repro_digest *table)
{
    long per = 1 + ntensors;
    memset(table, 0, (size_t)(nsteps * per) * sizeof *table);
    for (long i = 0; t && i < t->nsteps && i < nsteps; i++) {
        const repro_trace_step *s = &t->steps[i];
        table[i * per] = s->step_digest;
        for (int k = 0; k < s->ntensors && k < ntensors; k++)
            table[i * per + 1 + k] = s->tensors[k].digest;
    }
}
