/* Clocks: see include/storylm/clock.h. */
#include "storylm/clock.h"

#include <time.h>
#include <unistd.h>

static double seconds_on(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double slm_clock_seconds(void) { return seconds_on(CLOCK_MONOTONIC); }

double slm_clock_cpu_seconds(void) { return seconds_on(CLOCK_PROCESS_CPUTIME_ID); }

double slm_clock_thread_cpu_seconds(void) { return seconds_on(CLOCK_THREAD_CPUTIME_ID); }

int slm_clock_seed(void) {
    /* two processes started in one second differ by their pid */
    return (int)(((unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u) & 0x7fffffff);
}
