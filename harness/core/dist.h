/* Data parallel over MPI: the process group of a run (one process per
 * replica, DistributedDataParallel's model) and the few collectives the
 * trainer needs. The only file that includes <mpi.h> is dist.c; a build
 * without Open MPI compiles a stand-in whose join fails with exit 3.
 *
 * The gradient sum is the shard rule's (core/model.h: repro_model_set_shards,
 * in core/shards.c): every rank holds whole shards of the global batch,
 * shard s on rank s mod N as local shard s / N, and repro_dist_reduce_shards gives every rank the same n floats:
 *   ordered  every shard's partial gathered on every rank (MPI_Allgather)
 *            and added in shard order, out = ((p0 + p1) + p2) + ...: the
 *            same bits as one process adding its shards, for any N;
 *   ring     each rank first adds its own shards in order, then a ring
 *            reduce-scatter + allgather (MPI_Sendrecv) as NCCL and Gloo
 *            do: chunk c's sum starts at rank c and goes round the ring, so the association
 *            changes with N (deterministic for a fixed N);
 *   arrival  rank 0 adds the shard partials in the order they reach it
 *            (its own as they come up between probes, the others'
 *            MPI_ANY_SOURCE), then broadcasts: the order, and so the bits,
 *            vary run to run; every replica still gets rank 0's sum.
 * With N = 1 all three are the ordered sum. */
#ifndef REPRO_DIST_H
#define REPRO_DIST_H

#include <stddef.h>

typedef struct repro_dist repro_dist;

/* The [variant] allreduce choices, in the config's order. */
enum { REPRO_ALLREDUCE_ORDERED = 0, REPRO_ALLREDUCE_RING = 1, REPRO_ALLREDUCE_ARRIVAL = 2 };

/* The world size of the MPI job this process was started in, read from the
 * launcher's environment (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx, PMI/Slurm)
 * without initializing MPI; 0 when it was not started by a launcher. */
int repro_dist_launched_size(void);
/* Initializes MPI (thread level funneled: only the training thread calls
 * it) and joins the job. Returns 0, or -1 with the error slot set
 * (REPRO_EUNSUPPORTED without MPI). */
int repro_dist_join(repro_dist **out);
/* Leaves the job (MPI_Finalize); d may be NULL. */
void repro_dist_leave(repro_dist *d);
int repro_dist_rank(const repro_dist *d);
int repro_dist_size(const repro_dist *d);

/* The gradient sum above. slots: nlocal partials of n floats (local shard q
 * at slots + q * n); out: n floats; scratch: at least
 * max(nlocal * size, 2) * n floats. Returns 0 or -1 (error slot). */
int repro_dist_reduce_shards(repro_dist *d, int variant, const float *slots, int nlocal, long n,
                             float *out, float *scratch);
/* Every rank's `bytes` bytes, rank order, into recv (size * bytes). */
int repro_dist_allgather(repro_dist *d, const void *send, size_t bytes, void *recv);
/* Every rank's `bytes` bytes, rank order, into rank 0's recv (others: NULL). */
int repro_dist_gather(repro_dist *d, const void *send, size_t bytes, void *recv);
/* Rank `from` sends `bytes` bytes to rank 0 (both call it; others no-op). */
int repro_dist_send_to_root(repro_dist *d, int from, const void *send, void *recv, size_t bytes);
/* Rank 0's `bytes` bytes of buf into every rank's buf (all call it). */
int repro_dist_bcast(repro_dist *d, void *buf, size_t bytes);


/* Tensor parallel (core/tp.h) over a group of the job. */
/* The processes of d with the same color, ranked by key (MPI_Comm_split);
 * every process of d calls it. Freed by repro_dist_free_sub (or leave). */
int repro_dist_split(repro_dist *d, int color, int key, repro_dist **out);
void repro_dist_free_sub(repro_dist *sub);
/* A caller's communicator (a pointer to its MPI_Comm) as a group, not
 * owned: repro_dist_free_sub frees the wrapper only. */
int repro_dist_wrap(const void *mpi_comm, repro_dist **out);
/* One message between two ranks of d (blocking; the order of the running
 * sums of core/tp.c's chain). */
int repro_dist_send(repro_dist *d, int to, const void *buf, size_t bytes);
int repro_dist_recv(repro_dist *d, int from, void *buf, size_t bytes);
/* Rank root's bytes into every rank's buf. */
int repro_dist_bcast_from(repro_dist *d, int root, void *buf, size_t bytes);
/* The ring all-reduce of `allreduce = ring` over one partial per rank:
 * out (n floats) = the sum of every rank's in, each chunk's sum starting
 * at another rank (scratch: n floats). */
int repro_dist_allreduce_ring(repro_dist *d, const float *in, long n, float *out, float *scratch);

#endif
