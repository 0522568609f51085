/* The header and summary of `repro run EXP` (run_print.h). */
#include "cli/run_print.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/memory.h"
#include "kernels/philox.h"
#include "util/error.h"
#include "util/seeds.h"

void repro_run_print_header(const repro_session *s, int json)
{
    const repro_config *cfg = &s->t.cfg;
    char nondet[1024];
    if (repro_config_nondeterministic(cfg, nondet, sizeof nondet) &&
        cfg->train_deterministic == REPRO_DETERMINISTIC_WARN)
        fprintf(stderr, "repro: warning: nondeterministic kernel variants in use: %s\n", nondet);
    if (json)
        return; /* the summary is one JSON document at the end */
    printf("repro run %s (%s): %s, seed %llu, %ld steps, batch %d, threads %d, workers %d\n",
           cfg->name, cfg->path, cfg->model_type == REPRO_MODEL_MLP ? "mlp" : "cnn",
           (unsigned long long)cfg->train_seed, (long)cfg->train_steps, cfg->train_batch_size,
           cfg->train_threads, cfg->data_num_workers);
    printf("  seed scheme %s, rng %s, %ld parameters\n", REPRO_SEED_SCHEME, REPRO_RNG_VERSION,
           repro_model_param_count(&s->t.model));
    static const char *const prec[] = {"fp32", "bf16", "fp16"};
    printf("  precision %s, accumulation_steps %d (%d samples per update), zero_grad %s\n",
           prec[cfg->train_precision], cfg->train_accumulation_steps,
           cfg->train_accumulation_steps * cfg->train_batch_size,
           cfg->train_zero_grad == REPRO_ZERO_GRAD_NONE ? "none" : "zero");
    repro_memory mem;
    repro_memory_account(&s->t.model, cfg->train_zero_grad, &mem);
    repro_memory_print(stdout, &mem, "  ");
    if (cfg->train_ranks > 1 || cfg->train_shard_size > 0) {
        char ar[32];
        printf("  ranks %d (MPI), shards of %d samples (%d per batch), allreduce %s\n",
               cfg->train_ranks, cfg->train_shard_size,
               cfg->train_shard_size ? cfg->train_batch_size / cfg->train_shard_size : 1,
               repro_config_variant_name(cfg, REPRO_KEY_variant_allreduce, ar, sizeof ar));
    }
    if (cfg->parallel_tp > 1) {
        char tr[32];
        printf("  tensor parallel %d (MPI, %d processes in all): fc1 column-parallel, fc2 "
               "row-parallel, linear.tp_reduce %s\n",
               cfg->parallel_tp, cfg->parallel_tp * cfg->train_ranks,
               repro_config_variant_name(cfg, REPRO_KEY_variant_linear_tp_reduce, tr, sizeof tr));
    }
    if (s->o.resume)
        printf("  resumed from %s after step %ld\n", s->o.resume, s->ck.step);
    fflush(stdout);
}

static double rank_ms_per_step(const repro_session *s, int r)
{
    long steps = s->t.cfg.train_steps - s->ck.step;
    return steps > 0 ? 1e3 * s->rank_seconds[r] / (double)steps : 0.0;
}

/* "ranks": [{"rank", "ms_per_step", "peak_rss_mib"}...] (JSON), or one
 * line per rank. */
static void print_ranks(const repro_session *s, json_t *doc)
{
    if (!s->o.dist)
        return;
    json_t *arr = doc ? json_array() : NULL;
    for (int r = 0; r < s->t.world; r++) {
        double mib = (double)s->rank_rss_kib[r] / 1024.0;
        if (arr)
            json_array_append_new(arr, json_pack("{s:i, s:f, s:f}", "rank", r, "ms_per_step",
                                                 rank_ms_per_step(s, r), "peak_rss_mib", mib));
        else
            printf("  rank %d: %.2f ms/step, peak resident %.1f MiB\n", r,
                   rank_ms_per_step(s, r), mib);
    }
    if (doc)
        json_object_set_new(doc, "ranks", arr);
}

/* --json: the summary as one document (the same facts as the text). */
static int print_json(const repro_session *s, const char *chain)
{
    const repro_config *cfg = &s->t.cfg;
    json_t *doc = json_pack(
        "{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:s}", "experiment", cfg->name, "path",
        cfg->path, "seed", (json_int_t)cfg->train_seed, "steps", (json_int_t)cfg->train_steps,
        "first_loss", s->first_loss, "final_loss", (double)(float)s->t.loss, "eval_loss",
        isfinite(s->eval_loss) ? s->eval_loss : -1.0, "eval_accuracy",
        isfinite(s->eval_accuracy) ? s->eval_accuracy : -1.0, "train_seconds", s->train_s,
        "chain", chain);
    if (!doc)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    json_object_set_new(doc, "trace", s->o.no_trace ? json_null() : json_string(s->trace_path));
    if (s->o.ndump)
        json_object_set_new(doc, "dump_dir", json_string(s->dump_dir));
    print_ranks(s, doc);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    json_decref(doc);
    return 0;
}

int repro_run_print_summary(const repro_session *s, int json)
{
    char hex[65];
    repro_digest_hex(&s->chain, hex);
    if (json)
        return print_json(s, hex);
    float final = (float)s->t.loss;
    uint32_t bits;
    memcpy(&bits, &final, sizeof bits);
    printf("  loss %.6f -> %.9g (float bits 0x%08x)\n", s->first_loss, final, bits);
    printf("  held-out: loss %.6f, accuracy %.2f%% of %d samples\n", s->eval_loss,
           100.0 * s->eval_accuracy, s->t.test_set.n);
    if (s->t.scaler.enabled)
        printf("  fp16 loss scaler: scale %g, %ld of %ld steps skipped (inf/NaN gradients)\n",
               (double)s->t.scaler.scale, s->t.scaler.skipped_total, s->t.step);
    printf("  %.2f s training, %.1f steps/s, %.2f s setup\n", s->train_s,
           (s->t.cfg.train_steps - s->ck.step) / s->train_s, s->setup_s);
    print_ranks(s, NULL);
    if (!s->o.no_trace)
        printf("  trace %s\n", s->trace_path);
    if (s->o.ndump)
        printf("  dumps %s/step-NNNNNN/\n", s->dump_dir);
    printf("chain %s\n", hex);
    return 0;
}
