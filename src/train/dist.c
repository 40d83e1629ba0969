/* Training across processes with MPI: see include/storylm/dist.h. Built
 * without MPI (STORYLM_MPI undefined), every call is the single process's. */
#include "storylm/dist.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef STORYLM_MPI
#include <mpi.h>
#endif

/* How many processes mpirun started, 0 when it did not start this one. */
static int launched_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v) > 0 ? atoi(v) : 1;
    }
    return getenv("PMIX_RANK") ? 1 : 0;
}

#ifdef STORYLM_MPI
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* An MPI error as an Error naming the call. */
static int mpi_fail(int rc, const char *call, Error *e) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return FAIL(e, "another rank failed or was stopped: see its message above; the last saved model is intact",
                "%s failed: %.*s", call, len, msg);
}
#endif

int slm_dist_init(Dist *d, Error *e) {
    *d = (Dist){.rank = 0, .size = 1};
    int n = launched_size();
    if (n <= 1) return 0;
#ifdef STORYLM_MPI
    int rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Init", e);
    d->mpi = 1;
    /* errors come back as codes (and so as messages) instead of aborting here */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
#else
    return FAIL(e, "build with MPI (cmake -DSTORYLM_MPI=ON, Open MPI installed) or run without mpirun",
                "started by mpirun as one of %d processes, but this storylm was built without MPI", n);
#endif
}

void slm_dist_finalize(Dist *d) {
#ifdef STORYLM_MPI
    if (d->mpi) MPI_Finalize();
#endif
    d->mpi = 0;
}

void slm_dist_abort(Dist *d, int code) {
#ifdef STORYLM_MPI
    if (d->mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    (void)d, (void)code;
}

int slm_dist_allgather(Dist *d, void *buf, size_t each, Error *e) {
    if (!d || d->size <= 1) return 0;
#ifdef STORYLM_MPI
    if (each > INT_MAX) return FAIL(e, "use fewer threads per rank", "%zu bytes a rank are too many for one gather", each);
    /* the barrier first tells the wait for the slowest rank (uneven shards, a
     * busy core) from the transfer itself; it costs a few microseconds */
    double t0 = now_s();
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    double t1 = now_s();
    if (rc == MPI_SUCCESS) rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, buf, (int)each, MPI_BYTE, MPI_COMM_WORLD);
    d->comm_seconds += now_s() - t0;
    d->wait_seconds += t1 - t0;
    d->comm_bytes += (double)each * (d->size - 1);
    d->exchanges++;
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Allgather", e);
#else
    (void)buf, (void)each;
    return 0;
#endif
}

int slm_dist_any(Dist *d, int flag, int *any, Error *e) {
    *any = flag != 0;
    if (!d || d->size <= 1) return 0;
#ifdef STORYLM_MPI
    int mine = flag != 0; /* a maximum of integers: the same in any order */
    int rc = MPI_Allreduce(&mine, any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Allreduce", e);
#else
    return 0;
#endif
}

int slm_dist_same(Dist *d, uint64_t x, int *same, Error *e) {
    *same = 1;
    if (!d || d->size <= 1) return 0;
    uint64_t *all = xcalloc((size_t)d->size, sizeof *all, e);
    if (!all) return -1;
    all[d->rank] = x;
    int rc = slm_dist_allgather(d, all, sizeof *all, e);
    for (int i = 0; !rc && i < d->size; i++) *same &= all[i] == x;
    free(all);
    return rc;
}

int slm_dist_barrier(Dist *d, Error *e) {
    if (!d || d->size <= 1) return 0;
#ifdef STORYLM_MPI
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "MPI_Barrier", e);
#else
    return 0;
#endif
}
