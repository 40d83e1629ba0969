/* Training across processes with MPI: see include/storylm/dist.h. Built
 * without MPI (STORYLM_MPI undefined), every call is the single process's. */
#include "storylm/dist.h"
#include "storylm/clock.h"
#include "storylm/fileio.h" /* slm_hash64 */

#include <limits.h>
#include <stdio.h>
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
/* An MPI error as an Error naming the call. */
static int mpi_fail(int rc, const char *call, Error *e) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return FAIL(e, "another rank failed or was stopped: see its message above; the last saved model is intact",
                "%s failed: %.*s", call, len, msg);
}

/* Tags of the roll call a rank makes when an exchange passes its deadline:
 * it asks every other rank "are you there?", and those waiting in an
 * exchange answer; the ones that do not are the ranks named. */
enum { TAG_ASK = 7101, TAG_ANSWER = 7102 };

/* How long a wait may last now: start-up (each rank reading and tokenizing
 * the stories, rank 0 first) takes far longer than a training step. */
static double wait_limit(const Dist *d) {
    if (!(d->timeout_s > 0)) return 0;
    return d->started ? d->timeout_s : d->timeout_s * DIST_STARTUP_FACTOR;
}

/* Answers every roll call that came, so that the asking rank counts this one
 * among those still there. */
static void answer_roll_calls(void) {
    for (;;) {
        int flag = 0, who;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) return;
        MPI_Recv(&who, 1, MPI_INT, st.MPI_SOURCE, TAG_ASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&who, 1, MPI_INT, st.MPI_SOURCE, TAG_ANSWER, MPI_COMM_WORLD); /* 4 bytes: sent eagerly */
    }
}

static void nap(long ns) { nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = ns}, NULL); }

/* Waits up to the grace time for answers[r] of every rank but this one;
 * then gives up on the rest (their receives cancelled: nothing lands later
 * in freed memory). Returns how many did not answer; *first is the lowest. */
static int await_answers(const Dist *d, MPI_Request *answers, int *got, int *first) {
    double grace = d->timeout_s < DIST_ROLL_CALL_S ? d->timeout_s : DIST_ROLL_CALL_S, start = slm_clock_seconds();
    for (int answered = 1; answered < d->size && slm_clock_seconds() - start < grace; nap(1000000)) {
        answer_roll_calls();
        for (int r = 0; r < d->size; r++) {
            int flag = 0;
            if (r != d->rank && !got[r] && MPI_Test(&answers[r], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag)
                got[r] = 1, answered++;
        }
    }
    int missing = 0;
    *first = -1;
    for (int r = 0; r < d->size; r++) {
        if (r == d->rank || got[r]) continue;
        MPI_Cancel(&answers[r]);
        MPI_Wait(&answers[r], MPI_STATUS_IGNORE);
        missing++;
        if (*first < 0) *first = r;
    }
    return missing;
}

/* After a missed deadline: asks every other rank and names the first that
 * does not answer. The caller then stops the job (MPI_Abort). */
static int roll_call(Dist *d, const char *call, double waited, Error *e) {
    int n = d->size, first = -1, missing = n - 1;
    int *got = calloc((size_t)n, sizeof *got), *echo = calloc((size_t)n, sizeof *echo);
    MPI_Request *answers = calloc((size_t)n, sizeof *answers);
    if (got && echo && answers) {
        for (int r = 0; r < n; r++) {
            if (r == d->rank) continue;
            MPI_Request ask; /* sent from d->rank, which outlives the job */
            MPI_Isend(&d->rank, 1, MPI_INT, r, TAG_ASK, MPI_COMM_WORLD, &ask);
            MPI_Request_free(&ask);
            MPI_Irecv(&echo[r], 1, MPI_INT, r, TAG_ANSWER, MPI_COMM_WORLD, &answers[r]);
        }
        missing = await_answers(d, answers, got, &first);
    }
    free(got), free(echo), free(answers);
    if (missing == 0)
        return FAIL(e, "start every rank with the same settings and binary; the last saved model is intact",
                    "%s: rank %d waited %.0f s; every rank answers, but not in the same exchange", call, d->rank,
                    waited);
    if (first < 0)
        return FAIL(e, "another rank is stopped, dead or stuck; the last saved model is intact",
                    "%s: the other ranks did not come within %.0f s", call, waited);
    return FAIL(e, "that rank is stopped (SIGSTOP), dead or stuck; resume from the last saved model with --resume",
                "rank %d did not come to %s within %.0f s (%d rank(s) missing; this is rank %d)", first, call, waited,
                missing, d->rank);
}

/* Waits for a non-blocking collective, at most the deadline: MPI cannot
 * cancel a collective, so a rank that never comes would hold the others
 * forever in a blocking one. Spins first (a step's exchange takes
 * microseconds), then naps, answering other ranks' roll calls. */
static int wait_for(Dist *d, MPI_Request *req, const char *call, Error *e) {
    double start = slm_clock_seconds(), limit = wait_limit(d);
    for (long polls = 0;; polls++) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, call, e);
        if (done) return 0;
        if (polls < DIST_SPIN_POLLS) continue;
        answer_roll_calls();
        double waited = slm_clock_seconds() - start;
        if (limit > 0 && waited > limit) return roll_call(d, call, waited, e);
        nap(polls < 4 * DIST_SPIN_POLLS ? 20000 : 200000);
    }
}

static int barrier(Dist *d, Error *e) {
    MPI_Request req;
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
    return rc == MPI_SUCCESS ? wait_for(d, &req, "an exchange (MPI_Ibarrier)", e) : mpi_fail(rc, "MPI_Ibarrier", e);
}

/* rank `root`'s len bytes at buf, to every rank. */
static int broadcast(Dist *d, void *buf, int len, int root, Error *e) {
    MPI_Request req;
    int rc = MPI_Ibcast(buf, len, MPI_BYTE, root, MPI_COMM_WORLD, &req);
    return rc == MPI_SUCCESS ? wait_for(d, &req, "an exchange (MPI_Ibcast)", e) : mpi_fail(rc, "MPI_Ibcast", e);
}
#endif

int slm_dist_init(Dist *d, Error *e) {
    *d = (Dist){.rank = 0, .size = 1, .timeout_s = DIST_DEFAULT_TIMEOUT_S};
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
    if (each > INT_MAX)
        return FAIL(e, "use fewer threads per rank", "%zu bytes a rank are too many for one gather", each);
    /* the barrier first tells the wait for the slowest rank (uneven shards, a
     * busy core) from the transfer itself; it costs a few microseconds */
    double t0 = slm_clock_seconds();
    int rc = barrier(d, e);
    double t1 = slm_clock_seconds();
    MPI_Request req;
    if (!rc) {
        int mrc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, buf, (int)each, MPI_BYTE, MPI_COMM_WORLD, &req);
        rc = mrc == MPI_SUCCESS ? wait_for(d, &req, "an exchange (MPI_Iallgather)", e)
                                : mpi_fail(mrc, "MPI_Iallgather", e);
    }
    d->comm_seconds += slm_clock_seconds() - t0;
    d->wait_seconds += t1 - t0;
    d->comm_bytes += (double)each * (d->size - 1);
    d->exchanges++;
    return rc;
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
    MPI_Request req;
    int rc = MPI_Iallreduce(&mine, any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    return rc == MPI_SUCCESS ? wait_for(d, &req, "an exchange (MPI_Iallreduce)", e) : mpi_fail(rc, "MPI_Iallreduce", e);
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

/* The line of text that starts at `line`, as "name" and "value" (split at
 * the first tab), for the message. */
static void split_line(const char *line, char *name, char *value, size_t size) {
    size_t n = strcspn(line, "\n"), tab = strcspn(line, "\t\n");
    snprintf(name, size, "%.*s", (int)(tab < n ? tab : n), line);
    snprintf(value, size, "%.*s", tab < n ? (int)(n - tab - 1) : 0, tab < n ? line + tab + 1 : "");
}

/* Fails naming the first line where b (rank r's) differs from a (rank 0's). */
static int differ(Dist *d, const char *a, const char *b, int r, Error *e) {
    while (*a && *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0) break;
        a += la + (a[la] == '\n'), b += lb + (b[lb] == '\n');
    }
    char na[128], va[256], nb[128], vb[256];
    split_line(a, na, va, sizeof na < sizeof va ? sizeof na : sizeof va);
    split_line(b, nb, vb, sizeof nb < sizeof vb ? sizeof nb : sizeof vb);
    d->agreed = 1;
    if (strcmp(na, nb) != 0)
        return FAIL(e, "start every rank with the same storylm and the same options",
                    "the ranks disagree on their settings: rank 0 has '%s %s' where rank %d has '%s %s'", na, va, r, nb,
                    vb);
    return FAIL(e, "start every rank with the same options and the same files (each rank reads its own)",
                "the ranks disagree on %s: rank 0 has %s, rank %d has %s", na, va, r, vb);
}

int slm_dist_same_text(Dist *d, const char *text, Error *e) {
    if (!d || d->size <= 1) return 0;
    size_t len = strlen(text);
    if (len >= INT_MAX) return FAIL(e, "give shorter options", "%zu bytes of settings are too many to compare", len);
    uint64_t *all = xcalloc((size_t)d->size * 2, sizeof *all, e);
    if (!all) return -1;
    all[2 * d->rank] = slm_hash64(text, len, 0);
    all[2 * d->rank + 1] = len;
    int rc = slm_dist_allgather(d, all, 2 * sizeof *all, e), r = 1;
    while (!rc && r < d->size && all[2 * r] == all[0] && all[2 * r + 1] == all[1]) r++;
    if (rc || r == d->size) return free(all), rc;
    /* rank 0's text and the first other one's, to every rank: all stop with the same message */
    size_t len0 = all[1], lenr = all[2 * r + 1];
    free(all);
    char *a = xcalloc(len0 + 1, 1, e), *b = a ? xcalloc(lenr + 1, 1, e) : NULL;
    if (b && d->rank == 0) memcpy(a, text, len0);
    if (b && d->rank == r) memcpy(b, text, lenr);
#ifdef STORYLM_MPI
    rc = b ? broadcast(d, a, (int)len0, 0, e) : -1;
    if (!rc) rc = broadcast(d, b, (int)lenr, r, e);
#endif
    if (!rc) rc = differ(d, a, b, r, e);
    free(a);
    free(b);
    return rc;
}

int slm_dist_barrier(Dist *d, Error *e) {
    if (!d || d->size <= 1) return 0;
#ifdef STORYLM_MPI
    return barrier(d, e);
#else
    return 0;
#endif
}
