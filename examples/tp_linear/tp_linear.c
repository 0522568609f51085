/* tp_linear: a row-parallel linear layer trained over MPI, whose bits do
 * not depend on the tensor-parallel size: an example of a program using
 * librepro's tensor-parallel sum (<repro/tp.h>).
 *
 * Model: y = x W^T + b (x: B x K, W: O x K), loss = mean over rows of
 * ||y - t||^2 / 2, plain SGD. Rank r of the tensor-parallel group holds
 * W's columns [r*K/N, (r+1)*K/N) and the same columns of x (Megatron's
 * row-parallel layer). The forward sum over K is split across ranks:
 * repro_tp_linear_rowpar carries every output's running sum rank to rank
 * in ascending k from the bias, so N = 1, 2, 4 give the same bits. The
 * gradient of W's columns sums over the batch, which no rank splits.
 *
 * The negative control: `--set tp_reduce=ring` sums each rank's slice on
 * its own and adds them with MPI_Allreduce, as Megatron does: the
 * association, and so the bits, change with N; `repro check --tp 1,2`
 * must fail on it under the scope "tensor-parallel size".
 *
 * Run: repro check --tp 1,2 -- tp_linear   (repro starts the MPI job and
 * sets REPRO_TP, REPRO_TP_RANK; rank 0 writes the trace). Outside repro:
 * mpirun -np N tp_linear, with REPRO_TRACE set. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <repro/repro.h>
#include <repro/tp.h>

enum { B = 32, K = 64, O = 16, PURPOSE_DATA = 100, PURPOSE_INIT = 101 };

static void die(const char *what)
{
    fprintf(stderr, "tp_linear: %s: %s\n", what, repro_error_last());
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Step s's batch and targets, the same on every rank (from the seed). */
static void make_batch(float *x, float *t, uint64_t seed, long s)
{
    repro_generator g;
    repro_generator_init(&g, repro_seed_derive(seed, PURPOSE_DATA, (uint64_t)s, 0, 0, 0));
    for (int i = 0; i < B * K; i++)
        x[i] = repro_generator_unit(&g) - 0.5f;
    for (int i = 0; i < B * O; i++)
        t[i] = repro_generator_unit(&g) - 0.5f;
}

/* The ring control: slice sums (rank 0's from the bias), then MPI_SUM. */
static void forward_ring(const float *x, const float *w, const float *b, float *y, int r, int kw,
                         int k0)
{
    static float part[B * O];
    for (int i = 0; i < B; i++)
        for (int o = 0; o < O; o++)
            part[i * O + o] = r == 0 ? b[o] : 0.0f;
    repro_tp_continue(part, O, x + k0, K, w + k0, K, B, kw, O);
    MPI_Allreduce(part, y, B * O, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *tp_env = getenv("REPRO_TP");
    int tp = tp_env ? atoi(tp_env) : size;
    if (tp != size || K % size) {
        fprintf(stderr, "tp_linear: REPRO_TP=%s, but %d processes (K = %d must divide)\n",
                tp_env ? tp_env : "(unset)", size, K);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    repro_run_env env;
    if (repro_run_env_read(&env, 7))
        die("reading the REPRO_* environment");
    long steps = 20;
    const char *set = repro_run_env_setting("steps");
    if (set)
        steps = strtol(set, NULL, 10);
    const char *red = repro_run_env_setting("tp_reduce");
    int ring = red && !strcmp(red, "ring");

    /* Every rank starts from the whole W (the same draws), keeps it whole
     * and updates only its columns; the trace gathers them. */
    static float w[O * K], b[O], x[B * K], t[B * O], y[B * O], dy[B * O], wall[O * K];
    repro_generator g;
    repro_generator_init(&g, repro_seed_derive(env.seed, PURPOSE_INIT, 0, 0, 0, 0));
    for (int i = 0; i < O * K; i++)
        w[i] = (repro_generator_unit(&g) - 0.5f) * 0.25f;
    for (int o = 0; o < O; o++)
        b[o] = 0.0f;
    int kw = K / size, k0 = rank * kw;

    repro_recorder *r = NULL;
    if (rank == 0) {
        char config[128];
        snprintf(config, sizeof config, "{\"B\": %d, \"K\": %d, \"O\": %d, \"tp_reduce\": \"%s\"}",
                 B, K, O, ring ? "ring" : "ordered");
        repro_run_info info = {"tp_linear", env.seed, config};
        repro_recorder_options o;
        repro_recorder_options_init(&o);
        repro_recorder_options_from_env(&o, &env);
        o.total_steps = steps;
        if (repro_recorder_open_ex(&r, NULL, &info, &o))
            die("opening the trace");
        /* what this run really used: check --tp 1,2 can tell the scope was exercised */
        if (repro_recorder_set_tp(r, size))
            die("recording the tensor-parallel size");
    }
    for (long s = 1; s <= steps; s++) {
        make_batch(x, t, env.seed, s);
        if (ring)
            forward_ring(x, w, b, y, rank, kw, k0);
        else if (repro_tp_linear_rowpar(&(MPI_Comm){MPI_COMM_WORLD}, x + k0, K, w + k0, K, b, y,
                                        B, kw, O, 8))
            die("the row-parallel sum");
        double loss = 0;
        for (int i = 0; i < B * O; i++) { /* every rank: y is whole everywhere */
            float d = y[i] - t[i];
            loss += 0.5 * (double)d * d / B;
            dy[i] = d / B;
        }
        /* W's columns k0.. and b: sums over the batch, ascending rows */
        for (int o = 0; o < O; o++) {
            for (int k = k0; k < k0 + kw; k++) {
                float sum = 0.0f;
                for (int i = 0; i < B; i++)
                    sum = sum + dy[i * O + o] * x[i * K + k];
                w[o * K + k] = w[o * K + k] - 0.1f * sum;
            }
            float db = 0.0f;
            for (int i = 0; i < B; i++)
                db = db + dy[i * O + o];
            b[o] = b[o] - 0.1f * db;
        }
        /* the whole W in the one-process layout: rank q's columns */
        static float cols[O * K];
        for (int o = 0; o < O; o++)
            memcpy(cols + o * kw, w + o * K + k0, (size_t)kw * sizeof(float));
        MPI_Gather(cols, O * kw, MPI_FLOAT, wall, O * kw, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (rank != 0)
            continue;
        static float whole[O * K];
        for (int q = 0; q < size; q++)
            for (int o = 0; o < O; o++)
                memcpy(whole + o * K + q * kw, wall + q * O * kw + o * kw,
                       (size_t)kw * sizeof(float));
        int64_t yshape[2] = {B, O}, wshape[2] = {O, K}, bshape[1] = {O};
        if (repro_recorder_tensor(r, "fwd.y", REPRO_F32, 2, yshape, y) ||
            repro_recorder_tensor(r, "param.weight", REPRO_F32, 2, wshape, whole) ||
            repro_recorder_tensor(r, "param.bias", REPRO_F32, 1, bshape, b) ||
            repro_recorder_step(r, s, loss))
            die("recording");
    }
    if (rank == 0) {
        char chain[65];
        if (repro_recorder_close(r, chain))
            die("closing the trace");
        printf("tp_linear: %ld steps at tp %d, chain %s\n", steps, size, chain);
    }
    MPI_Finalize();
    return 0;
}
