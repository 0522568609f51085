/* A training session (session.h): setup, resume, recording, the step loop,
 * checkpoints and the trailer, in the order `repro run` has always done
 * them, so its traces stay the same bits. */
#include "core/session.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/dist.h"
#include "core/memtl.h"
#include "core/train_dist.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/progress.h"

/* Where the trace, its dumps and the checkpoints go: the trace at
 * runs/<experiment>/<YYYYmmdd-HHMMSS>-<pid>/trace.jsonl unless given, the
 * dumps under <its directory>/dump, checkpoints beside it unless given. */
static void plan_paths(repro_session *s, const repro_config *cfg)
{
    if (s->o.output) {
        snprintf(s->trace_path, sizeof s->trace_path, "%s", s->o.output);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(s->trace_path, sizeof s->trace_path, "runs/%s/%s-%ld/trace.jsonl", cfg->name,
                 stamp, (long)getpid());
    }
    const char *slash = strrchr(s->trace_path, '/');
    int dir_len = slash ? (int)(slash - s->trace_path) : 0;
    if (slash)
        snprintf(s->dump_dir, sizeof s->dump_dir, "%.*s/dump", dir_len, s->trace_path);
    else
        snprintf(s->dump_dir, sizeof s->dump_dir, "dump");
    if (s->o.checkpoint_dir)
        snprintf(s->ckpt_dir, sizeof s->ckpt_dir, "%s", s->o.checkpoint_dir);
    else
        snprintf(s->ckpt_dir, sizeof s->ckpt_dir, "%.*s", slash ? dir_len : 1,
                 slash ? s->trace_path : ".");
}

/* Before the recorder starts: it continues the checkpoint's chain. */
static int resume(repro_session *s)
{
    s->ck = (repro_checkpoint_info){0, -1, {{0}}};
    const char *path = s->o.resume;
    if (!path)
        return 0;
    if (repro_checkpoint_load(&s->t, path, &s->ck))
        return -1;
    if (s->ck.chain_steps != s->ck.step)
        return repro_error_set(REPRO_EINVAL,
                               "run: %s carries no hash chain (saved without a recorder): a "
                               "resumed trace could not continue it",
                               path);
    if (s->ck.step >= s->t.cfg.train_steps)
        return repro_error_set(REPRO_EINVAL,
                               "run: %s is at step %ld; this run has only %ld steps (raise "
                               "--steps)",
                               path, s->ck.step, (long)s->t.cfg.train_steps);
    return 0;
}

/* The trainer's recorder: rank 0 records, the others only train. */
static int start_recorder(repro_session *s)
{
    s->t.fault = s->o.fault; /* a replica fault (rank=R) is the trainer's to apply */
    s->t.scaler.fault_step = s->o.overflow_step;
    if (s->rank != 0 || s->o.no_recorder)
        return 0;
    const repro_config *cfg = &s->t.cfg;
    const repro_session_opts *o = &s->o;
    repro_train_recorder_opts ro = {
        .trace_path = o->no_trace ? NULL : s->trace_path,
        .level = cfg->trace_level,
        .every = cfg->trace_every,
        .digest = cfg->trace_digest,
        .total_steps = cfg->train_steps,
        .dump_steps = o->dump,
        .ndump = o->ndump,
        .dump_only = o->dump_only,
        .dump_dir = s->dump_dir,
        .tap_op = o->tap_mode ? o->tap_op : NULL,
        .tap_path = o->tap_path,
        .tap_mode = o->tap_mode,
        .start_step = s->ck.step,
        .start_chain = o->resume ? &s->ck.chain : NULL,
        .resumed_from = o->resume,
        .fault_spec = o->fault.active || o->overflow_step ? o->fault_spec : NULL,
    };
    return repro_train_recorder_new(&s->rec, &s->t, &ro, &o->fault);
}

/* The checkpoint directory, cleared of the temporaries of checkpoints
 * whose writer was killed before this session writes there. */
static int prepare_checkpoints(repro_session *s)
{
    if (!s->o.checkpoint_every)
        return 0;
    return repro_mkdirs(s->ckpt_dir) || repro_checkpoint_clean_temps(s->ckpt_dir,
                                                                      &s->temps_removed)
               ? -1
               : 0;
}

int repro_session_open(repro_session **out, const repro_config *cfg,
                       const repro_session_opts *opts)
{
    *out = NULL;
    repro_session *s = calloc(1, sizeof *s); /* large (the config): off the stack */
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    double t0 = repro_now();
    s->o = *opts;
    s->rank = repro_dist_rank(opts->dist);
    plan_paths(s, cfg);
    if (repro_trainer_init_ranked(&s->t, cfg, opts->dist)) {
        free(s);
        return -1;
    }
    s->trainer_ready = 1;
    if ((opts->algo_lock && repro_algo_policy_lock(&s->t.model.algo, opts->algo_lock)) ||
        resume(s) || start_recorder(s) || prepare_checkpoints(s) ||
        (opts->memtl && s->rank == 0 &&
         repro_memtl_begin(opts->memtl, &s->t.model, &s->t.cfg, s->rec != NULL))) {
        repro_session_close(s);
        return -1;
    }
    s->setup_s = repro_now() - t0;
    *out = s;
    return 0;
}

/* 1 when a checkpoint was written, 0 when none was due, -1 on failure. */
static int maybe_checkpoint(repro_session *s)
{
    long every = s->o.checkpoint_every;
    if (!every || s->t.step % every != 0 || s->rank != 0)
        return 0;
    char path[1400];
    snprintf(path, sizeof path, "%s/ckpt-%ld.bin", s->ckpt_dir, s->t.step);
    return repro_checkpoint_save(&s->t, path) ? -1 : 1;
}

/* The step into the memory timeline: the backend's cache emptied when a
 * release is due, and the backend's own figures beside the model's. */
static int memtl_step(repro_session *s, int checkpointed)
{
    long every = s->o.release_every;
    int rel = every > 0 && s->t.step % every == 0;
    const repro_model *m = &s->t.model;
    if (rel)
        m->be->empty_cache(m->be_ctx);
    int64_t alloc = -1, reserved = -1, device = -1;
    if (m->be->host_memory) {
        alloc = repro_memtl_rss_bytes();
    } else {
        repro_memory_stats st;
        m->be->memory_stats(m->be_ctx, &st);
        alloc = (int64_t)st.in_use;
        reserved = (int64_t)(st.in_use + st.cached);
        if (st.device_total)
            device = (int64_t)(st.device_total - st.device_free);
    }
    return repro_memtl_step_done(s->o.memtl, s->t.step,
                                 checkpointed ? REPRO_MEMTL_MARK_CHECKPOINT : 0, rel, alloc,
                                 reserved, device);
}

int repro_session_step(repro_session *s)
{
    int first = s->t.step == s->ck.step;
    int rc = repro_trainer_step(&s->t);
    if (first)
        s->first_loss = s->t.loss;
    int ck = rc ? -1 : maybe_checkpoint(s);
    if (ck >= 0 && s->o.memtl && s->rank == 0 && memtl_step(s, ck))
        return -1;
    return ck < 0 ? -1 : 0;
}

/* Every step is hashed before the clock stops: hashing is part of a run. */
int repro_session_run(repro_session *s)
{
    double t1 = repro_now();
    int rc = 0;
    while (!rc && s->t.step < s->t.cfg.train_steps) {
        if (s->o.stop && *s->o.stop) {
            rc = repro_error_set(REPRO_EIO, "interrupted by signal %d after step %ld",
                                 (int)*s->o.stop, s->t.step);
            break;
        }
        rc = repro_session_step(s);
        if (!rc && s->o.on_step)
            s->o.on_step(s->o.on_step_ctx, s->t.step, s->t.loss);
    }
    if (!rc && s->rec)
        rc = repro_train_recorder_sync(s->rec);
    s->train_s = repro_now() - t1;
    return rc ? -1 : 0;
}

/* Data parallel: every rank's training time and peak memory, gathered on
 * rank 0. */
static int rank_stats(repro_session *s)
{
    int world = s->t.world;
    s->rank_seconds = calloc((size_t)world, sizeof *s->rank_seconds);
    s->rank_rss_kib = calloc((size_t)world, sizeof *s->rank_rss_kib);
    if (!s->rank_seconds || !s->rank_rss_kib)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    return repro_train_rank_stats(&s->t, s->train_s, s->rank_seconds, s->rank_rss_kib);
}

/* Eval reads the trained weights only; its results go into the trailer as
 * information (not hashed). */
int repro_session_finish(repro_session *s)
{
    if (s->o.dist && rank_stats(s))
        return -1;
    if (s->rank != 0)
        return 0;
    json_t *extra = NULL;
    if (!s->o.no_eval) {
        repro_trainer_evaluate(&s->t, &s->eval_loss, &s->eval_accuracy);
        s->evaluated = 1;
        extra = json_pack("{s:f, s:f, s:f}", "train_seconds", s->train_s, "eval_loss",
                          isfinite(s->eval_loss) ? s->eval_loss : -1.0, "eval_accuracy",
                          isfinite(s->eval_accuracy) ? s->eval_accuracy : -1.0);
    }
    int rc = s->rec ? repro_train_recorder_finish(s->rec, &s->chain, extra) : 0;
    json_decref(extra);
    return rc ? -1 : 0;
}

void repro_session_close(repro_session *s)
{
    if (!s)
        return;
    if (s->trainer_ready)
        repro_trainer_release(&s->t); /* frees the recorder first */
    free(s->rank_seconds);
    free(s->rank_rss_kib);
    free(s);
}

int repro_session_join_job(repro_config *cfg, struct repro_dist **dist)
{
    *dist = NULL;
    int world = repro_dist_launched_size(), tp = cfg->parallel_tp;
    if (!world)
        return 0;
    if (world % tp)
        return repro_error_set(REPRO_EINVAL,
                               "run: tp = %d does not divide this MPI job's %d processes (a job "
                               "is ranks x tp processes)",
                               tp, world);
    if (cfg->line[REPRO_KEY_train_ranks] != 0 && cfg->train_ranks * tp != world)
        return repro_error_set(REPRO_EINVAL,
                               "run: ranks = %d (x tp = %d), but this MPI job has %d "
                               "processes: drop --ranks/ranks (the job's size is used) or start "
                               "%d",
                               cfg->train_ranks, tp, world, cfg->train_ranks * tp);
    cfg->train_ranks = world / tp;
    return repro_config_validate(cfg) || repro_dist_join(dist) ? -1 : 0;
}
