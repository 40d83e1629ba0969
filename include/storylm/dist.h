/* Training across processes with MPI (data parallel, like llm.c).
 *
 * `mpirun -np N storylm train ...` starts N ranks; each reads the stories
 * itself, runs its share of every step's shards (shards.h), and the shards'
 * gradients and losses are gathered to every rank in rank order
 * (slm_dist_allgather), so that every rank sums them in shard order and applies
 * the same Adam update: N ranks of T threads give the numbers, bit for bit,
 * of one process of N x T threads. Without MPI at build time, or when not
 * started by mpirun, a Dist is rank 0 of 1 and nothing here talks to anyone.
 *
 * Errors: the communicator returns errors instead of aborting, and a rank
 * that dies makes mpirun stop the others (Open MPI aborts the job when a
 * process exits without MPI_Finalize), so no rank waits forever. */
#ifndef STORYLM_DIST_H
#define STORYLM_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

typedef struct Dist {
    int rank, size;      /* 0 and 1 in a single process */
    int mpi;             /* 1 when MPI was started here */
    double comm_seconds; /* spent in slm_dist_allgather so far, waiting included */
    double wait_seconds; /* of which waiting for the slowest rank to arrive */
    double comm_bytes;   /* received by this rank in slm_dist_allgather so far */
    long long exchanges;
} Dist;

/* Starts MPI when launched by mpirun; else d is rank 0 of 1. Fails when
 * launched by mpirun with more than one rank but built without MPI (every
 * rank would train alone and write the same file). */
int slm_dist_init(Dist *d, Error *e);
void slm_dist_finalize(Dist *d);
/* Stops every rank (MPI_Abort): for the front end after an error it printed. */
void slm_dist_abort(Dist *d, int code);

/* In place: buf holds size parts of `each` bytes; this rank's part (at
 * rank * each) is sent to all, and every other rank's part lands at its
 * place. The order of the parts is the ranks', whatever MPI does inside. */
int slm_dist_allgather(Dist *d, void *buf, size_t each, Error *e);
/* *any = 1 on every rank when flag is set on some rank. */
int slm_dist_any(Dist *d, int flag, int *any, Error *e);
/* Every rank's x equal? *same = 1 when so (on every rank). */
int slm_dist_same(Dist *d, uint64_t x, int *same, Error *e);
int slm_dist_barrier(Dist *d, Error *e);

static inline int dist_size(const Dist *d) { return d ? d->size : 1; }
static inline int dist_rank(const Dist *d) { return d ? d->rank : 0; }

#endif
