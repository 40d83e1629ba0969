/* A small team of threads for coarse jobs, such as one training step's shards.
 *
 * Why not only OpenMP: between and at the end of parallel regions, OpenMP's
 * threads busy-wait. On a machine that other programs share, a waiting thread
 * then burns the CPU that its late partner needs, and a step with a dozen
 * regions waits a dozen times. These workers sleep on a condition variable
 * instead, and a step is one or two jobs. Inside a job each thread runs
 * OpenMP code (and OpenBLAS, single-threaded) on one thread: its OpenMP
 * thread count is set to 1 for the job. */
#ifndef STORYLM_WORKERS_H
#define STORYLM_WORKERS_H

#include <pthread.h>

#include "storylm/error.h"

typedef void (*WorkerJob)(void *arg, int thread, int n_threads);

typedef struct Workers {
    int n;              /* threads, the caller counted as thread 0 */
    pthread_t *threads; /* (n - 1) */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    WorkerJob job;
    void *arg;
    unsigned long round; /* jobs started so far */
    int busy;            /* threads still on the current job */
    int quit;
    int started; /* threads created (for slm_workers_free after a failed init) */
} Workers;

/* n >= 1 threads (1: jobs run on the caller alone, no thread is made). */
int slm_workers_init(Workers *w, int n, Error *e);
void slm_workers_free(Workers *w);
/* Calls job(arg, i, n) on every thread i (0 on the caller) and returns when all are done. */
void slm_workers_run(Workers *w, WorkerJob job, void *arg);

#endif
