/* Convolution algorithm choice per call site, as cuDNN does it:
 *  - benchmark = on: at the site's first call, time every eligible
 *    algorithm on the real inputs (3 times each, median) and keep the
 *    fastest, as cudnnFind does; timing noise decides, so the choice — and
 *    the bits — can change from run to run;
 *  - benchmark = off: a fixed rule, as cuDNN's heuristics, set from the CPU
 *    kernels' measured speed (B 64, one thread: direct on its register
 *    tiles beats winograd up to 32 input channels and im2col everywhere):
 *        winograd  when the kernel is 3x3 and there are >= 64 input channels
 *                  (enough channels to amortize the transforms);
 *        direct    else (im2col only by benchmark or lock);
 *  - an algorithm lock (--algo-lock TRACE) replays the choices recorded in a
 *    trace, which makes a benchmark = on run reproducible.
 * deterministic = on admits only deterministic algorithms (all three are;
 * the rule exists for the GPU, where some are not: the backend says which,
 * conv_algo_deterministic). A backend with its own chooser
 * (conv_algo_choose: cuda, through cuDNN) makes the benchmark = off
 * ("heuristic") and benchmark = on choices itself; a lock is replayed the
 * same way on every backend. The choices, and the measured times, go into
 * the trace (step 1's "algorithms"). */
#ifndef REPRO_ALGO_SELECT_H
#define REPRO_ALGO_SELECT_H

#include "kernels/backend.h"

#define REPRO_MAX_SITES 16

typedef enum {
    REPRO_CHOSEN_BY_RULE = 0,
    REPRO_CHOSEN_BY_BENCHMARK = 1,
    REPRO_CHOSEN_BY_LOCK = 2,
    REPRO_CHOSEN_BY_HEURISTIC = 3 /* the backend's own (cuDNN's heuristics) */
} repro_chosen_by;

typedef struct {
    char site[32];          /* "conv2.fwd" */
    char shape[96];         /* "B64 C8 H13 W13 K16 R3 pad0" */
    int algo;               /* repro_conv_algo */
    repro_chosen_by how;
    double time_us[REPRO_CONV_ALGO_LIMIT]; /* times when benchmarked; < 0: not timed */
} repro_algo_choice;

typedef struct {
    int benchmark;
    int deterministic_only;
    /* the lock: site -> algorithm name, from a trace; nlock = 0 if none */
    int nlock;
    char lock_site[REPRO_MAX_SITES][32];
    char lock_algo[REPRO_MAX_SITES][16];
    char lock_path[1024];
    /* what was chosen, in first-call order */
    int nchoices;
    repro_algo_choice choices[REPRO_MAX_SITES];
} repro_algo_policy;

/* Reads the "algorithms" of a trace (the first line that has them) into
 * the policy's lock. Returns 0 or -1 (error slot, exit 2 naming the file). */
int repro_algo_policy_lock(repro_algo_policy *p, const char *trace_path);

/* The algorithm for `site` with shape s on backend be (context ctx):
 * decided at its first call (see above; eligibility is the backend's;
 * benchmarking runs the backend's forward on x, w, b into y, synchronizing
 * around each timed run; workspace holds workspace_bytes), remembered after. Returns the algorithm, or -1
 * with the error slot set (a lock without the site, or naming an
 * ineligible algorithm). */
int repro_algo_choose(repro_algo_policy *p, const char *site, const repro_backend *be, void *ctx,
                      const repro_conv_shape *s, const float *x, const float *w, const float *b,
                      float *y, void *workspace, size_t workspace_bytes);

/* The fixed rule (benchmark = off). repro_algo_choose falls back to
 * direct when the backend cannot run the rule's pick for the shape. */
repro_conv_algo repro_algo_rule(const repro_conv_shape *s);

/* The choices as a JSON array (jansson json_t *, new reference). */
void *repro_algo_choices_json(const repro_algo_policy *p);

#endif
