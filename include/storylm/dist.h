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
 * process exits without MPI_Finalize). Every exchange is non-blocking and
 * polled against a deadline (timeout_s), so a rank that is stopped (SIGSTOP)
 * or stuck makes the others fail within it, naming the rank that did not
 * come; the front end then stops the job (slm_dist_abort). */
#ifndef STORYLM_DIST_H
#define STORYLM_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

/* Seconds an exchange waits for the other ranks by default (--rank-timeout). */
#define DIST_DEFAULT_TIMEOUT_S 60.0
/* Before training starts (every rank reads and tokenizes the stories, rank 0
 * first) a wait may last this many times the deadline. */
#define DIST_STARTUP_FACTOR 30
/* After a missed deadline, how long the other ranks have to answer the roll
 * call that names the missing ones (at most timeout_s). */
#define DIST_ROLL_CALL_S 5.0
/* Polls of an exchange before waiting in naps (a step's exchange takes microseconds). */
#define DIST_SPIN_POLLS 20000

typedef struct Dist {
    int rank, size;      /* 0 and 1 in a single process */
    int mpi;             /* 1 when MPI was started here */
    double timeout_s;    /* an exchange waits at most this long for the others; 0: forever */
    int started;         /* 0 during start-up (waits DIST_STARTUP_FACTOR times longer), 1 when training */
    int agreed;          /* the last error is every rank's alike: print it once, no abort needed */
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
/* Fails on every rank alike (d->agreed set) unless every rank's text is
 * rank 0's. text: lines "name<TAB>value"; the message names the first line
 * that differs and both values ("the ranks disagree on --seed: rank 0 has 7,
 * rank 1 has 8"). */
int slm_dist_same_text(Dist *d, const char *text, Error *e);
int slm_dist_barrier(Dist *d, Error *e);

static inline int dist_size(const Dist *d) { return d ? d->size : 1; }
static inline int dist_rank(const Dist *d) { return d ? d->rank : 0; }

#endif
