/* Reading traces and comparing them, for programs that consume them (a CI
 * gate, a dashboard). The command `repro diff` is built on the same code. */
#ifndef REPRO_PUBLIC_TRACE_H
#define REPRO_PUBLIC_TRACE_H

#include <stdint.h>

#include "digest.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct repro_trace repro_trace;

/* Reads a whole trace. Errors name "path:line". A trace without a trailer
 * (cut short) is read; repro_trace_complete says so. */
int repro_trace_load(repro_trace **out, const char *path);
void repro_trace_free(repro_trace *t);

const char *repro_trace_experiment(const repro_trace *t);
/* The thread and loader-worker counts the run says it used
 * (repro_recorder_set_threads); -1 for one it did not say. */
void repro_trace_threads_used(const repro_trace *t, int *threads, int *workers);
/* The number of step lines, and the last step number. */
int64_t repro_trace_step_count(const repro_trace *t);
int64_t repro_trace_last_step(const repro_trace *t);
/* 1 if the trailer is there and agrees with the steps. */
int repro_trace_complete(const repro_trace *t);
/* The chain digest after step `step`: 0, or REPRO_ENOTFOUND. */
int repro_trace_chain_at(const repro_trace *t, int64_t step, repro_digest *out);

/* Where two traces part. */
typedef struct {
    int identical;          /* 1: same steps, same chain, both complete */
    int64_t first_step;     /* the first step whose digest differs (0: none) */
    char tensor[64];        /* the first differing tensor of that step, when both
                               traces have tensor detail there ("" otherwise) */
    int64_t common_steps;   /* steps present in both */
    int a_complete, b_complete;
} repro_trace_diff;

/* Compares a with b (binary search over the chain). 0 when compared (look
 * at out->identical), or a negative REPRO_E* code. */
int repro_trace_compare(const repro_trace *a, const repro_trace *b, repro_trace_diff *out);

#ifdef __cplusplus
}
#endif
#endif
