/* `repro run EXP` past its options: joins the MPI job it was started in
 * (if any), reads the negative control from the environment, and drives
 * a training session (core/session.h) with a progress line on stderr, its
 * header and summary (run_print.h) on stdout, errors reported once per job. */
#include "cli/run_train.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/memtl_svg.h"
#include "cli/run_print.h"
#include "cli/run_ranks.h"
#include "core/dist.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/fault.h"
#include "util/progress.h"

/* Inside an MPI job (mpirun, srun): joins it as its rank. Ranks other than
 * 0 write nothing (no trace, dumps or checkpoints; stdout to /dev/null). */
static int join_ranks(repro_common *co, repro_session_opts *so, repro_config *cfg,
                      repro_dist **dist, int *rank)
{
    if (repro_session_join_job(cfg, dist))
        return -1;
    *rank = repro_dist_rank(*dist);
    if (*rank != 0) {
        so->no_trace = 1;
        so->output = NULL;
        co->quiet = 1;
        if (!freopen("/dev/null", "w", stdout))
            return repro_error_set_errno(REPRO_EIO, "run: rank %d: /dev/null", *rank);
    }
    return 0;
}

/* The negative control (util/fault.h) is read here, at the top, and
 * passed down: the numerics core never reads the environment. */
static int read_fault(repro_session_opts *so, int rank)
{
    if (repro_fault_from_env(&so->fault) || repro_fault_overflow_from_env(&so->overflow_step))
        return -1;
    so->fault_spec = getenv("REPRO_FAULT");
    if (rank == 0 && so->fault_spec && *so->fault_spec && (so->fault.active || so->overflow_step))
        fprintf(stderr, "repro: warning: REPRO_FAULT=%s: a test-only fault is injected into this "
                        "run (recorded in its trace header)\n",
                so->fault_spec);
    return 0;
}

/* A replica drift, and a refusal of the config or a checkpoint (which
 * every rank reads alike), are reported by rank 0; the other ranks exit
 * with the same code quietly. Any other error (a file missing on one
 * machine, MPI) is reported by the rank it happened on, naming it. */
static int report_rank_error(int rank)
{
    if (rank != 0 && (repro_error_code() == REPRO_EMISMATCH || repro_error_code() == REPRO_EINVAL))
        return repro_exit_code_for(repro_error_code());
    if (rank == 0)
        return repro_report_error();
    fprintf(stderr, "repro: rank %d: %s\n", rank, repro_esc(repro_error_message()));
    return repro_exit_code_for(repro_error_code());
}

static void show_progress(void *prog, long step, double loss)
{
    repro_progress_update(prog, step, loss);
}

/* The memory timeline, after the run: marked cut when it stopped short
 * (rc != 0: the error slot's message says why). Returns 0 or -1 (error
 * slot), and keeps the run's own error first: a failed run reports that. */
static int write_memtl(repro_memtl *tl, const char *path, int rc)
{
    if (rc || (tl->nsteps && tl->steps[tl->nsteps - 1].step < tl->planned_steps))
        repro_memtl_cut(tl, rc ? repro_error_message() : "stopped before the last step");
    if (!tl->nsteps)
        return 0; /* the session never opened: nothing was recorded */
    if (rc) {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", repro_error_message());
        int code = repro_error_code();
        if (repro_memtl_write(tl, path))
            fprintf(stderr, "repro: %s\n", repro_esc(repro_error_message()));
        else
            fprintf(stderr, "repro: memory timeline of the steps done: %s (cut)\n", path);
        repro_error_set(code, "%s", saved);
        return 0;
    }
    return repro_memtl_write(tl, path);
}

/* The session: its header, the steps with a progress line, the summary.
 * Returns the exit code. */
static int train_session(const repro_common *co, repro_session_opts *so,
                         const repro_config *cfg, int rank, const char *memtl_path)
{
    repro_progress prog;
    so->on_step = show_progress;
    so->on_step_ctx = &prog;
    repro_session *s;
    if (read_fault(so, rank) || repro_session_open(&s, cfg, so))
        return report_rank_error(rank);
    if (s->temps_removed && !co->quiet)
        fprintf(stderr, "repro: removed %d abandoned checkpoint temporar%s from %s\n",
                s->temps_removed, s->temps_removed == 1 ? "y" : "ies", s->ckpt_dir);
    repro_run_print_header(s, co->json);
    repro_progress_init(&prog, stderr, cfg->train_steps, cfg->train_log_every, co->quiet);
    int rc = repro_session_run(s);
    repro_progress_finish(&prog);
    rc = rc || repro_session_finish(s);
    if (so->memtl)
        rc = write_memtl(so->memtl, memtl_path, rc) || rc;
    rc = rc || (rank == 0 && repro_run_print_summary(s, co->json));
    int exit_code = rc ? report_rank_error(rank) : repro_finish_stdout(0);
    repro_session_close(s);
    return exit_code;
}

/* While a timeline is recorded, SIGINT and SIGTERM stop the run between
 * steps instead of killing it, so the steps done are written (cut); the
 * signal is raised again afterwards, and repro ends as it would have. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

static void catch_stop(int on, struct sigaction old[2])
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        if (!on) {
            sigaction(sigs[i], &old[i], NULL);
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, &old[i]);
        if (old[i].sa_handler == SIG_IGN) /* ignored by our parent: stays ignored */
            sigaction(sigs[i], &old[i], NULL);
    }
}

/* The session with its memory timeline when asked. Returns the exit code. */
static int train(const repro_common *co, repro_session_opts *so, const repro_config *cfg,
                 int rank, const char *memtl_path)
{
    if (!memtl_path || rank != 0)
        return train_session(co, so, cfg, rank, NULL);
    struct sigaction old[2];
    catch_stop(1, old);
    so->stop = &stop_signal;
    repro_memtl tl;
    repro_memtl_init(&tl, "repro", cfg->name);
    snprintf(tl.measured, sizeof tl.measured, "%s",
             cfg->train_backend == REPRO_BACKEND_CPU ? "process resident set"
                                                     : "CUDA caching allocator");
    so->memtl = &tl;
    int exit_code = train_session(co, so, cfg, rank, memtl_path);
    repro_memtl_release(&tl);
    catch_stop(0, old);
    if (stop_signal) {
        fflush(stdout);
        raise(stop_signal); /* the handler before ours: repro ends as it would have */
    }
    return exit_code;
}

int repro_run_train(int argc, char **argv, repro_common *co, repro_session_opts *so,
                    repro_config *cfg, const char *memtl_path)
{
    int procs = cfg->train_ranks * cfg->parallel_tp; /* data x tensor parallel */
    if (procs > 1 && !repro_dist_launched_size())
        return repro_run_launch_ranks(procs, argc, argv);
    repro_dist *dist = NULL;
    int rank = 0, exit_code;
    if (join_ranks(co, so, cfg, &dist, &rank)) {
        exit_code = report_rank_error(rank);
    } else {
        so->dist = dist;
        exit_code = train(co, so, cfg, rank, memtl_path);
    }
    repro_dist_leave(dist);
    return exit_code;
}

