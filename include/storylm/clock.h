/* Time as the project measures it: seconds on the monotonic clock (wall
 * time that never jumps back, for durations and deadlines) and CPU seconds
 * (of the process, or of the calling thread), for reports of what a run
 * cost. */
#ifndef STORYLM_CLOCK_H
#define STORYLM_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (from an arbitrary start: differences only). */
double slm_clock_seconds(void);
/* CPU seconds the whole process has used so far (every thread). */
double slm_clock_cpu_seconds(void);
/* CPU seconds the calling thread has used so far. */
double slm_clock_thread_cpu_seconds(void);
/* A seed for "no seed given" (--seed -1, a request's seed -1): from the
 * wall clock and the process id, 0..2^31-1 so it prints and repeats as
 * --seed N. */
int slm_clock_seed(void);

#endif
