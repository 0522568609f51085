/* The memory timeline's recorder (see memtl.h for what is modelled and
 * what is measured). */
#include "core/memtl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/memory.h"
#include "util/error.h"

static const char *const cat_names[REPRO_MEMTL_NCAT] = {
    "parameters", "gradients", "optimizer state", "activations", "activation grads",
    "workspace", "working copies", "loader buffers", "recorder buffers"};
static const char *const cat_keys[REPRO_MEMTL_NCAT] = {
    "params", "grads", "optimizer", "activations", "activation_grads",
    "workspace", "working_copies", "loader", "recorder"};
static const char *const mark_names[REPRO_MEMTL_NMARK] = {
    "zero_grad = none: gradients freed", "zero_grad = zero: gradients kept (memset)",
    "accumulation boundary (update)", "bf16/fp16 working copies", "checkpoint written",
    "explicit release (empty_cache)"};
static const char *const mark_keys[REPRO_MEMTL_NMARK] = {
    "zero_grad_none", "zero_grad_zero", "accumulation_boundary", "working_copies",
    "checkpoint", "release"};

static const char *pick(const char *const *v, int n, int i) { return i >= 0 && i < n ? v[i] : "?"; }
const char *repro_memtl_cat_name(int c) { return pick(cat_names, REPRO_MEMTL_NCAT, c); }
const char *repro_memtl_cat_key(int c) { return pick(cat_keys, REPRO_MEMTL_NCAT, c); }
const char *repro_memtl_mark_key(int b) { return pick(mark_keys, REPRO_MEMTL_NMARK, b); }
const char *repro_memtl_mark_name(int b) { return pick(mark_names, REPRO_MEMTL_NMARK, b); }

void repro_memtl_init(repro_memtl *tl, const char *source, const char *title)
{
    memset(tl, 0, sizeof *tl);
    snprintf(tl->source, sizeof tl->source, "%s", source ? source : "repro");
    snprintf(tl->title, sizeof tl->title, "%s", title ? title : "");
    tl->next_addr = 0x7f0000000000ull; /* made-up addresses, as a snapshot needs some */
}

void repro_memtl_release(repro_memtl *tl)
{
    free(tl->steps);
    free(tl->events);
    tl->steps = NULL;
    tl->events = NULL;
    tl->nsteps = tl->nevents = tl->steps_cap = tl->events_cap = 0;
}

void repro_memtl_step_blank(repro_memtl_step *s, long step)
{
    memset(s, 0, sizeof *s);
    s->step = step;
    s->peak_allocated = s->allocated = s->reserved = s->peak_reserved = -1;
    s->measured_allocated = s->measured_reserved = s->measured_device = -1;
    for (int c = 0; c < REPRO_MEMTL_NCAT; c++)
        s->at_peak[c] = s->at_end[c] = -1;
}

int repro_memtl_push_step(repro_memtl *tl, const repro_memtl_step *s)
{
    if (tl->nsteps == tl->steps_cap) {
        size_t cap = tl->steps_cap ? 2 * tl->steps_cap : 256;
        repro_memtl_step *v = realloc(tl->steps, cap * sizeof *v);
        if (!v)
            return repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
        tl->steps = v;
        tl->steps_cap = cap;
    }
    tl->steps[tl->nsteps++] = *s;
    return 0;
}

int repro_memtl_push_event(repro_memtl *tl, const repro_memtl_event *e)
{
    if (tl->nevents >= REPRO_MEMTL_MAX_EVENTS) {
        tl->events_dropped = 1;
        return 0;
    }
    if (tl->nevents == tl->events_cap) {
        size_t cap = tl->events_cap ? 2 * tl->events_cap : 1024;
        repro_memtl_event *v = realloc(tl->events, cap * sizeof *v);
        if (!v)
            return repro_error_set(REPRO_ENOMEM, "memory timeline: out of memory");
        tl->events = v;
        tl->events_cap = cap;
    }
    tl->events[tl->nevents++] = *e;
    return 0;
}

/* ---- the model of a caching allocator ---- */

static int event(repro_memtl *tl, int micro, const char *action, int cat, uint64_t addr,
                 int64_t bytes)
{
    repro_memtl_event e = {tl->cur.step, micro, "", cat, addr, (uint64_t)bytes};
    snprintf(e.action, sizeof e.action, "%s", action);
    return repro_memtl_push_event(tl, &e);
}

static void note_peak(repro_memtl *tl)
{
    if (tl->allocated > tl->cur.peak_allocated) {
        tl->cur.peak_allocated = tl->allocated;
        memcpy(tl->cur.at_peak, tl->live, sizeof tl->live);
    }
    if (tl->reserved > tl->cur.peak_reserved)
        tl->cur.peak_reserved = tl->reserved;
}

/* One block of `bytes` for cat (each category is one block in the model). */
static int alloc_cat(repro_memtl *tl, int cat, int64_t bytes, int micro)
{
    if (bytes <= 0 || tl->block_bytes[cat])
        return 0;
    uint64_t addr = tl->next_addr;
    tl->next_addr += ((uint64_t)bytes + 511) / 512 * 512;
    tl->allocated += bytes;
    if (tl->allocated > tl->reserved) { /* the cache has no block to reuse: grow */
        if (event(tl, micro, "segment_alloc", -1, addr, tl->allocated - tl->reserved))
            return -1;
        tl->reserved = tl->allocated;
    }
    tl->live[cat] += bytes;
    tl->block_bytes[cat] = bytes;
    tl->block_addr[cat] = addr;
    note_peak(tl);
    return event(tl, micro, "alloc", cat, addr, bytes);
}

/* Freed into the cache: allocated drops, reserved does not. */
static int free_cat(repro_memtl *tl, int cat, int micro)
{
    int64_t bytes = tl->block_bytes[cat];
    if (!bytes)
        return 0;
    tl->allocated -= bytes;
    tl->live[cat] -= bytes;
    tl->block_bytes[cat] = 0;
    return event(tl, micro, "free", cat, tl->block_addr[cat], bytes);
}

static void start_step(repro_memtl *tl, long step)
{
    repro_memtl_step_blank(&tl->cur, step);
    tl->cur.peak_allocated = tl->allocated;
    memcpy(tl->cur.at_peak, tl->live, sizeof tl->live);
    tl->cur.peak_reserved = tl->reserved;
    tl->cur.marks = 0;
}

static int end_step(repro_memtl *tl, int64_t measured_allocated, int64_t measured_reserved)
{
    tl->cur.allocated = tl->allocated;
    tl->cur.reserved = tl->reserved;
    memcpy(tl->cur.at_end, tl->live, sizeof tl->live);
    tl->cur.measured_allocated = measured_allocated;
    tl->cur.measured_reserved = measured_reserved;
    return repro_memtl_push_step(tl, &tl->cur);
}

int repro_memtl_begin(repro_memtl *tl, const repro_model *m, const repro_config *cfg,
                      int recorder)
{
    repro_memory acc;
    repro_memory_account(m, cfg->train_zero_grad, &acc);
    repro_memory_estimate est;
    repro_memory_estimate_config(cfg, &est);
    tl->size.params = (int64_t)acc.params;
    tl->size.grads = (int64_t)acc.grads;
    tl->size.optimizer = (int64_t)acc.optimizer;
    tl->size.activations = (int64_t)acc.activations;
    tl->size.activation_grads = (int64_t)acc.activation_grads;
    tl->size.workspace = (int64_t)acc.workspace;
    tl->size.working = (int64_t)acc.working_weights;
    tl->size.loader = (int64_t)est.loader;
    tl->size.recorder = recorder ? (int64_t)est.recorder : 0;
    tl->size.accumulation = cfg->train_accumulation_steps > 1 ? cfg->train_accumulation_steps : 1;
    tl->size.zero_none = cfg->train_zero_grad == REPRO_ZERO_GRAD_NONE;
    tl->size.low_precision = cfg->train_precision != REPRO_PRECISION_FP32;
    tl->planned_steps = cfg->train_steps;
    tl->cats_known = (1u << REPRO_MEMTL_NCAT) - 1;
    if (!tl->size.low_precision)
        tl->cats_known &= ~(1u << REPRO_MEMTL_WORKING);
    if (!recorder)
        tl->cats_known &= ~(1u << REPRO_MEMTL_RECORDER);
    start_step(tl, 0);
    if (alloc_cat(tl, REPRO_MEMTL_PARAMS, tl->size.params, -1) ||
        alloc_cat(tl, REPRO_MEMTL_LOADER, tl->size.loader, -1) ||
        alloc_cat(tl, REPRO_MEMTL_RECORDER, tl->size.recorder, -1))
        return -1;
    return end_step(tl, repro_memtl_rss_bytes(), -1);
}

/* One micro-batch's forward and backward, and its frees. */
static int micro_batch(repro_memtl *tl, int j)
{
    int lp = tl->size.low_precision;
    if ((lp && alloc_cat(tl, REPRO_MEMTL_WORKING, tl->size.working, j)) ||
        alloc_cat(tl, REPRO_MEMTL_ACTIVATIONS, tl->size.activations, j) ||
        alloc_cat(tl, REPRO_MEMTL_WORKSPACE, tl->size.workspace, j) ||
        alloc_cat(tl, REPRO_MEMTL_GRADS, tl->size.grads, j) || /* no-op when resident */
        alloc_cat(tl, REPRO_MEMTL_ACTIVATION_GRADS, tl->size.activation_grads, j))
        return -1;
    return free_cat(tl, REPRO_MEMTL_ACTIVATION_GRADS, j) ||
                   free_cat(tl, REPRO_MEMTL_ACTIVATIONS, j) ||
                   free_cat(tl, REPRO_MEMTL_WORKSPACE, j) ||
                   (lp && free_cat(tl, REPRO_MEMTL_WORKING, j))
               ? -1
               : 0;
}

/* Reserved back to allocated: the cache's free blocks go to the system. */
static int release(repro_memtl *tl)
{
    tl->cur.marks |= REPRO_MEMTL_MARK_RELEASE;
    if (tl->reserved > tl->allocated &&
        event(tl, -1, "segment_free", -1, 0, tl->reserved - tl->allocated))
        return -1;
    tl->reserved = tl->allocated;
    return 0;
}

int repro_memtl_step_done(repro_memtl *tl, long step, unsigned marks, int rel,
                          int64_t measured_allocated, int64_t measured_reserved,
                          int64_t measured_device)
{
    start_step(tl, step);
    for (int j = 0; j < tl->size.accumulation; j++)
        if (micro_batch(tl, tl->size.accumulation > 1 ? j : -1))
            return -1;
    if (alloc_cat(tl, REPRO_MEMTL_OPTIMIZER, tl->size.optimizer, -1)) /* at the first update */
        return -1;
    if (tl->size.accumulation > 1)
        tl->cur.marks |= REPRO_MEMTL_MARK_ACCUM;
    if (tl->size.low_precision)
        tl->cur.marks |= REPRO_MEMTL_MARK_WORKING;
    if (tl->size.zero_none) {
        tl->cur.marks |= REPRO_MEMTL_MARK_ZERO_NONE;
        if (free_cat(tl, REPRO_MEMTL_GRADS, -1))
            return -1;
    } else {
        tl->cur.marks |= REPRO_MEMTL_MARK_ZERO_ZERO;
    }
    tl->cur.marks |= marks;
    if (rel && release(tl))
        return -1;
    if (end_step(tl, measured_allocated, measured_reserved))
        return -1;
    tl->steps[tl->nsteps - 1].measured_device = measured_device;
    return 0;
}

void repro_memtl_cut(repro_memtl *tl, const char *reason)
{
    tl->cut = 1;
    snprintf(tl->cut_reason, sizeof tl->cut_reason, "%s", reason ? reason : "");
}

int64_t repro_memtl_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long size = 0, resident = 0;
    int n = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? (int64_t)resident * page : -1;
}
