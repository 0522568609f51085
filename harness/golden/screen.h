/* `repro screen EXP`: hunting silent data corruption across a fleet. Every
 * rank of an MPI job (mpirun with a hostfile, srun) runs the same
 * single-process workload on its own pinned core(s), records every tensor
 * of every step, and is compared twice: with the golden of its own
 * environment class (golden.h), and with every other rank (the ranks that
 * agree with the golden, else the largest group of ranks that agree with
 * each other, are the reference; a rank outside it diverged). Once the
 * workload is bitwise reproducible, a rank that computes other bits is a
 * bad core, GPU or link, or a nondeterministic kernel.
 *
 * screen.c runs the repeats and exchanges the ranks' results over MPI;
 * screen_rank.c is one rank's run and golden comparison; screen_verdict.c
 * decides, per repeat, which ranks diverged and where. Only rank 0 holds
 * the tally. */
#ifndef REPRO_SCREEN_H
#define REPRO_SCREEN_H

#include "core/config.h"
#include "record/trace.h"

struct repro_dist;

/* What the golden of a rank's class says of its run. */
enum {
    REPRO_SCREEN_GOLDEN_NONE = 0, /* no golden for its class: only the peers judge */
    REPRO_SCREEN_GOLDEN_MATCH,
    REPRO_SCREEN_GOLDEN_DIFFERS,
    REPRO_SCREEN_GOLDEN_SKIPPED   /* not comparable (overridden config, stale golden): why */
};

/* One rank's result of one repeat, as exchanged between ranks (plain
 * bytes: every field fixed size). */
typedef struct {
    int rank;
    char host[64];
    char cores[64];             /* the CPUs it was pinned to, "3" or "2,3" */
    char env_class[64];
    int tested;                 /* 0: could not test (error says why) */
    char error[256];
    int golden;                 /* REPRO_SCREEN_GOLDEN_* */
    char golden_note[128];      /* why NONE or SKIPPED */
    long golden_step;           /* DIFFERS: first divergent step */
    char golden_tensor[64];     /* ... the first differing tensor ("" when unknown) */
    int golden_ntensors;        /* ... how many differ there */
    long replay_step;           /* replay.every caught two computations differing at this
                                   step (the run stopped before its update); 0: none */
    char replay_tensor[48];     /* ... in this gradient */
    repro_digest chain;
    long nsteps;
    int ntensors;               /* tensors per step in its digest table */
} repro_screen_rank;

/* One rank's verdict in one repeat (screen_verdict.c). */
typedef struct {
    int tested;
    int diverged;               /* from the golden or from the reference ranks */
    const char *against;        /* "golden", "ranks", "replay" */
    long step;                  /* first divergent step */
    char tensor[64];            /* first differing tensor there ("": unknown) */
    int ntensors;               /* how many differ there */
    int ref_rank;               /* against "ranks": the reference rank compared with */
    int has_elements;           /* the element detail below is known (screen_detail.c) */
    long elements;              /* elements of `tensor` that differ at `step` */
    unsigned long long max_ulp; /* their largest ULP distance (float32) */
} repro_screen_verdict;

/* A rank over all repeats (rank 0's tally). */
typedef struct {
    repro_screen_rank info;     /* the last repeat's result (host, cores, class) */
    int runs, failures, untested;
    repro_screen_verdict first_failure; /* of the first failing repeat */
    int first_failure_repeat;
    char error[256];            /* the first "could not test" reason */
} repro_screen_tally;

typedef struct {
    int repeats;                /* --repeat K, >= 1 */
    const char *exp_file;       /* the experiment: its repository holds the goldens */
    int overridden;             /* --set/--seed: the committed config's golden does not apply */
    const char *fault_spec;     /* REPRO_FAULT's text (the trace header says so) */
    int keep;                   /* keep the traces of matching ranks too */
} repro_screen_opts;

typedef struct {
    int nranks, repeats;
    repro_screen_tally *ranks;  /* rank 0: nranks entries; NULL on other ranks */
    char dir[1100];             /* this rank's traces: runs/NAME/screen-HOST-PID */
    int no_majority;            /* some repeat had ranks that disagree with no majority */
} repro_screen_result;

/* Runs the screen in this process as rank repro_dist_rank(dist) of
 * repro_dist_size(dist) (dist NULL: one rank, no MPI), every repeat on
 * every rank. cfg is validated; its copy is run with train.ranks = 1 and
 * tensors recorded at every step. A rank's failure to run is its verdict
 * (could not test), never an error here. 0, or -1 with the error slot set
 * (MPI, memory). Rank 0's out->ranks holds the tally. */
int repro_screen_run(const repro_config *cfg, const repro_screen_opts *o, struct repro_dist *dist,
                     repro_screen_result *out);
void repro_screen_result_release(repro_screen_result *r);

/* ---- one rank (screen_rank.c) ------------------------------------------ */
/* Pins this process to its slot's core(s) (the node-local rank times the
 * thread count), runs cfg once into `trace_path` with the fault selected
 * for (rank, repeat), reads the trace back into *t (the caller releases
 * it) and compares it with the golden of its class. Fills *r; a failure
 * to run leaves r->tested 0 and the reason in r->error, and returns 0. */
int repro_screen_rank_run(const repro_config *cfg, const repro_screen_opts *o, int rank,
                          int repeat, const char *trace_path, repro_screen_rank *r,
                          repro_trace *t);
/* The digest table of a trace: per step, the step digest then each of its
 * first `ntensors` tensors' digests (zeros where missing). */
void repro_screen_table(const repro_trace *t, long nsteps, int ntensors, repro_digest *table);

/* ---- element detail (screen_detail.c) --------------------------------- */
/* Every rank calls it after rank 0 judged a repeat (v: rank 0's n
 * verdicts, NULL elsewhere; wanted[i]: rank 0 wants rank i's detail).
 * Each rank that diverged from a reference rank, and that reference, run
 * again to the divergent step (traces under dir), and rank 0 fills
 * v[i]'s element count and max ULP when the divergence came back. 0 or -1
 * (error slot: MPI, memory). */
int repro_screen_detail(const repro_config *cfg, const repro_screen_opts *o,
                        struct repro_dist *dist, int repeat, const char *dir,
                        repro_screen_verdict *v, const int *wanted, int n);

/* ---- verdicts (screen_verdict.c) --------------------------------------- */
/* The verdicts of one repeat: ranks[i] and its digest table at
 * tables + i * stride (stride digests per rank, each step 1 + ntensors).
 * names: the tensors' names (ntensors of them; may be NULL). Sets
 * *no_majority when tested ranks disagree and no group is larger. */
void repro_screen_judge(const repro_screen_rank *ranks, int n, const repro_digest *tables,
                        long stride, int ntensors, char (*names)[64], repro_screen_verdict *out,
                        int *no_majority);

#endif
