/* The MPI process group and its collectives (see dist.h). Built with
 * REPRO_HAVE_MPI when the Makefile finds Open MPI; otherwise the stand-ins
 * at the end say what is missing. */
#include "core/dist.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* The launcher's world size, from its environment: no MPI call, so the CLI
 * can decide between launching mpirun and joining before MPI_Init. */
int repro_dist_launched_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE",
                                       "MPI_LOCALNRANKS", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (!*end && n >= 1 && n <= 1 << 20)
                return (int)n;
        }
    }
    return 0;
}

#ifdef REPRO_HAVE_MPI
#include <mpi.h>

struct repro_dist {
    int rank, size;
    MPI_Comm comm; /* MPI_COMM_WORLD, or a group of it (repro_dist_split) */
    int sub;       /* a split: freed by repro_dist_free_sub, never finalized */
};

enum { TAG_ARRIVAL = 71, TAG_CHAIN = 72 };


static int mpi_failed(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return repro_error_set(REPRO_EIO, "MPI: %s failed: %s", what, msg);
}

int repro_dist_join(repro_dist **out)
{
    int provided, inited;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS)
            return mpi_failed(rc, "MPI_Init_thread");
    }
    /* Errors come back as codes (reported with the rank), not as aborts. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    repro_dist *d = calloc(1, sizeof *d);
    if (!d)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    d->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    *out = d;
    return 0;
}

int repro_dist_split(repro_dist *d, int color, int key, repro_dist **out)
{
    *out = NULL;
    repro_dist *s = calloc(1, sizeof *s);
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = MPI_Comm_split(d->comm, color, key, &s->comm);
    if (rc != MPI_SUCCESS) {
        free(s);
        return mpi_failed(rc, "MPI_Comm_split");
    }
    MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    s->sub = 1;
    *out = s;
    return 0;
}

void repro_dist_free_sub(repro_dist *s)
{
    if (!s || !s->sub)
        return;
    if (s->sub == 1) /* ours (split); 2: the caller's (wrap) */
        MPI_Comm_free(&s->comm);
    free(s);
}

int repro_dist_wrap(const void *mpi_comm, repro_dist **out)
{
    *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited || !mpi_comm)
        return repro_error_set(REPRO_EINVAL, "tp: MPI is not initialized or no communicator");
    repro_dist *s = calloc(1, sizeof *s);
    if (!s)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    s->comm = *(const MPI_Comm *)mpi_comm;
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    s->sub = 2;
    *out = s;
    return 0;
}

void repro_dist_leave(repro_dist *d)
{
    if (!d)
        return;
    if (d->sub) {
        repro_dist_free_sub(d);
        return;
    }
    MPI_Finalize();
    free(d);
}


int repro_dist_rank(const repro_dist *d) { return d ? d->rank : 0; }
int repro_dist_size(const repro_dist *d) { return d ? d->size : 1; }

/* Message sizes are ints in MPI: the gradient of one layer is far below. */
static int count_of(size_t bytes, int *count)
{
    if (bytes > (size_t)1 << 30)
        return repro_error_set(REPRO_EINVAL, "MPI: a message of %zu bytes is over 1 GiB", bytes);
    *count = (int)bytes;
    return 0;
}

/* out = s0, then out = out + s_k: float adds in this order, never fused. */
static void add_into(float *out, const float *src, long n, int first)
{
    if (first)
        memcpy(out, src, (size_t)n * sizeof(float));
    else
        for (long i = 0; i < n; i++)
            out[i] = out[i] + src[i];
}

static int reduce_ordered(repro_dist *d, const float *slots, int nlocal, long n, float *out,
                          float *all)
{
    int count = 0, rc;
    if (count_of((size_t)nlocal * (size_t)n * sizeof(float), &count))
        return -1;
    rc = MPI_Allgather(slots, count, MPI_BYTE, all, count, MPI_BYTE, d->comm);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Allgather (gradient shards)");
    int nshards = nlocal * d->size;
    for (int s = 0; s < nshards; s++) { /* shard s: rank s % N, local s / N */
        long at = ((long)(s % d->size) * nlocal + s / d->size) * n;
        add_into(out, all + at, n, s == 0);
    }
    return 0;
}

static long chunk_at(long n, int size, int c) { return n * c / size; }

/* One ring phase step: send chunk sc to the right, receive chunk rc from
 * the left into buf (reduce: then added into out). */
static int ring_step(repro_dist *d, float *out, long n, int sc, int rcv, float *buf, int reduce)
{
    int right = (d->rank + 1) % d->size, left = (d->rank + d->size - 1) % d->size;
    long s0 = chunk_at(n, d->size, sc), s1 = chunk_at(n, d->size, sc + 1);
    long r0 = chunk_at(n, d->size, rcv), r1 = chunk_at(n, d->size, rcv + 1);
    float *into = reduce ? buf : out + r0;
    int rc = MPI_Sendrecv(out + s0, (int)(s1 - s0), MPI_FLOAT, right, 0, into, (int)(r1 - r0),
                          MPI_FLOAT, left, 0, d->comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Sendrecv (ring)");
    if (reduce)
        for (long i = 0; i < r1 - r0; i++)
            out[r0 + i] = buf[i] + out[r0 + i];
    return 0;
}

static int reduce_ring(repro_dist *d, const float *slots, int nlocal, long n, float *out,
                       float *buf)
{
    for (int q = 0; q < nlocal; q++)
        add_into(out, slots + (long)q * n, n, q == 0);
    int N = d->size, r = d->rank;
    if (n > 1L << 30)
        return repro_error_set(REPRO_EINVAL, "MPI: ring chunk too large");
    for (int t = 0; t < N - 1; t++) /* reduce-scatter: rank r ends with chunk r + 1 */
        if (ring_step(d, out, n, (r - t + 2 * N) % N, (r - t - 1 + 2 * N) % N, buf, 1))
            return -1;
    for (int t = 0; t < N - 1; t++) /* allgather of the finished chunks */
        if (ring_step(d, out, n, (r + 1 - t + 2 * N) % N, (r - t + 2 * N) % N, buf, 0))
            return -1;
    return 0;
}

/* Rank 0 adds whatever is there first: a remote partial that has arrived,
 * else its own next one; the result is broadcast. */
static int reduce_arrival(repro_dist *d, const float *slots, int nlocal, long n, float *out,
                          float *buf)
{
    int count = 0, rc;
    if (count_of((size_t)n * sizeof(float), &count))
        return -1;
    if (d->rank != 0) {
        for (int q = 0; q < nlocal; q++)
            if ((rc = MPI_Send(slots + (long)q * n, count, MPI_BYTE, 0, TAG_ARRIVAL,
                               d->comm)) != MPI_SUCCESS)
                return mpi_failed(rc, "MPI_Send (arrival)");
    } else {
        int own = 0, remote = nlocal * (d->size - 1);
        for (int k = 0; k < nlocal * d->size; k++) {
            int ready = 0;
            if (remote && own < nlocal)
                MPI_Iprobe(MPI_ANY_SOURCE, TAG_ARRIVAL, d->comm, &ready, MPI_STATUS_IGNORE);
            const float *src = slots + (long)own * n;
            if (remote && (ready || own == nlocal)) {
                rc = MPI_Recv(buf, count, MPI_BYTE, MPI_ANY_SOURCE, TAG_ARRIVAL, d->comm,
                              MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS)
                    return mpi_failed(rc, "MPI_Recv (arrival)");
                src = buf;
                remote--;
            } else {
                own++;
            }
            add_into(out, src, n, k == 0);
        }
    }
    rc = MPI_Bcast(out, count, MPI_BYTE, 0, d->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Bcast (arrival)");
}

int repro_dist_reduce_shards(repro_dist *d, int variant, const float *slots, int nlocal, long n,
                             float *out, float *scratch)
{
    switch (variant) {
    case REPRO_ALLREDUCE_RING: return reduce_ring(d, slots, nlocal, n, out, scratch);
    case REPRO_ALLREDUCE_ARRIVAL: return reduce_arrival(d, slots, nlocal, n, out, scratch);
    default: return reduce_ordered(d, slots, nlocal, n, out, scratch);
    }
}

int repro_dist_allgather(repro_dist *d, const void *send, size_t bytes, void *recv)
{
    int count = 0, rc;
    if (count_of(bytes, &count))
        return -1;
    rc = MPI_Allgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, d->comm);
    (void)d;
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Allgather");
}

int repro_dist_gather(repro_dist *d, const void *send, size_t bytes, void *recv)
{
    int count = 0, rc;
    if (count_of(bytes, &count))
        return -1;
    rc = MPI_Gather(send, count, MPI_BYTE, d->rank == 0 ? recv : NULL, count, MPI_BYTE, 0,
                    d->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Gather");
}

int repro_dist_send_to_root(repro_dist *d, int from, const void *send, void *recv, size_t bytes)
{
    int count = 0, rc = MPI_SUCCESS;
    if (count_of(bytes, &count))
        return -1;
    if (from == 0) {
        if (d->rank == 0)
            memcpy(recv, send, bytes);
        return 0;
    }
    if (d->rank == from)
        rc = MPI_Send(send, count, MPI_BYTE, 0, 0, d->comm);
    else if (d->rank == 0)
        rc = MPI_Recv(recv, count, MPI_BYTE, from, 0, d->comm, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Send/Recv (to rank 0)");
}

int repro_dist_bcast(repro_dist *d, void *buf, size_t bytes)
{
    int count = 0;
    if (count_of(bytes, &count))
        return -1;
    (void)d;
    int rc = MPI_Bcast(buf, count, MPI_BYTE, 0, d->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Bcast");
}



int repro_dist_send(repro_dist *d, int to, const void *buf, size_t bytes)
{
    int count = 0;
    if (count_of(bytes, &count))
        return -1;
    int rc = MPI_Send(buf, count, MPI_BYTE, to, TAG_CHAIN, d->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Send (chain)");
}

int repro_dist_recv(repro_dist *d, int from, void *buf, size_t bytes)
{
    int count = 0;
    if (count_of(bytes, &count))
        return -1;
    int rc = MPI_Recv(buf, count, MPI_BYTE, from, TAG_CHAIN, d->comm, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Recv (chain)");
}

int repro_dist_bcast_from(repro_dist *d, int root, void *buf, size_t bytes)
{
    int count = 0;
    if (count_of(bytes, &count))
        return -1;
    int rc = MPI_Bcast(buf, count, MPI_BYTE, root, d->comm);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Bcast");
}

int repro_dist_allreduce_ring(repro_dist *d, const float *in, long n, float *out, float *scratch)
{
    return reduce_ring(d, in, 1, n, out, scratch);
}

#else /* no MPI in this build: nothing can join; every collective is unreachable */

struct repro_dist {
    int unused;
};


int repro_dist_join(repro_dist **out)
{
    *out = NULL;
    return repro_error_set(REPRO_EUNSUPPORTED,
                           "this build has no MPI (install libopenmpi-dev and openmpi-bin, then "
                           "rebuild): ranks > 1 cannot run");
}

void repro_dist_leave(repro_dist *d) { (void)d; }
int repro_dist_rank(const repro_dist *d) { return (void)d, 0; }
int repro_dist_size(const repro_dist *d) { return (void)d, 1; }

static int no_mpi(void) { return repro_error_set(REPRO_EUNSUPPORTED, "this build has no MPI"); }

int repro_dist_reduce_shards(repro_dist *d, int variant, const float *slots, int nlocal, long n,
                             float *out, float *scratch)
{
    (void)d, (void)variant, (void)slots, (void)nlocal, (void)n, (void)out, (void)scratch;
    return no_mpi();
}
int repro_dist_allgather(repro_dist *d, const void *send, size_t bytes, void *recv)
{
    (void)d, (void)send, (void)bytes, (void)recv;
    return no_mpi();
}
int repro_dist_gather(repro_dist *d, const void *send, size_t bytes, void *recv)
{
    (void)d, (void)send, (void)bytes, (void)recv;
    return no_mpi();
}
int repro_dist_send_to_root(repro_dist *d, int from, const void *send, void *recv, size_t bytes)
{
    (void)d, (void)from, (void)send, (void)recv, (void)bytes;
    return no_mpi();
}
int repro_dist_bcast(repro_dist *d, void *buf, size_t bytes)
{
    (void)d, (void)buf, (void)bytes;
    return no_mpi();
}
int repro_dist_split(repro_dist *d, int color, int key, repro_dist **out)
{
    (void)d, (void)color, (void)key;
    *out = NULL;
    return no_mpi();
}
void repro_dist_free_sub(repro_dist *s) { (void)s; }
int repro_dist_wrap(const void *mpi_comm, repro_dist **out)
{
    (void)mpi_comm;
    *out = NULL;
    return no_mpi();
}
int repro_dist_send(repro_dist *d, int to, const void *buf, size_t bytes)
{
    (void)d, (void)to, (void)buf, (void)bytes;
    return no_mpi();
}
int repro_dist_recv(repro_dist *d, int from, void *buf, size_t bytes)
{
    (void)d, (void)from, (void)buf, (void)bytes;
    return no_mpi();
}
int repro_dist_bcast_from(repro_dist *d, int root, void *buf, size_t bytes)
{
    (void)d, (void)root, (void)buf, (void)bytes;
    return no_mpi();
}
int repro_dist_allreduce_ring(repro_dist *d, const float *in, long n, float *out, float *scratch)
{
    (void)d, (void)in, (void)n, (void)out, (void)scratch;
    return no_mpi();
}
#endif
