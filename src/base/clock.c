/* Clocks: see include/storylm/clock.h. */
#include "storylm/clock.h"

#include <time.h>
#include <unistd.h>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>

/* The WebAssembly build's CPU clocks: emscripten's clock_gettime knows only
 * wall clocks (it fails on the CPU ones), so under node the process's CPU
 * time from process.cpuUsage() (every thread of node: the engine's compiler
 * and collector too, as the native process clock counts OpenMP's threads); in
 * a browser tab, which has no CPU clock, wall time. One thread computes, so
 * the thread's clock is the process's. */
EM_JS(double, host_cpu_seconds, (void), {
    if (typeof process != 'undefined' && process.cpuUsage) {
        var u = process.cpuUsage();
        return (u.user + u.system) / 1e6;
    }
    return performance.now() / 1e3;
});
#endif

static double seconds_on(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double slm_clock_seconds(void) { return seconds_on(CLOCK_MONOTONIC); }

#ifdef __EMSCRIPTEN__
double slm_clock_cpu_seconds(void) { return host_cpu_seconds(); }

double slm_clock_thread_cpu_seconds(void) { return host_cpu_seconds(); }
#else
double slm_clock_cpu_seconds(void) { return seconds_on(CLOCK_PROCESS_CPUTIME_ID); }

double slm_clock_thread_cpu_seconds(void) { return seconds_on(CLOCK_THREAD_CPUTIME_ID); }
#endif

int slm_clock_seed(void) {
    /* two processes started in one second differ by their pid */
    return (int)(((unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u) & 0x7fffffff);
}
