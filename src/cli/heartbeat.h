/* A line on stderr every 10 s ($STORYLM_PROGRESS_SECONDS) while long work goes on between the lines a
 * verb prints itself (a training step of 4096 stories, a bench step on very
 * long stories): never minutes of silence. A thread of its own wakes each
 * second; the work only stores its step. */
#ifndef STORYLM_CLI_HEARTBEAT_H
#define STORYLM_CLI_HEARTBEAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct Heartbeat {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool running, stop, tty;
    const char *what;     /* "training", "bench train" */
    int steps;            /* the last step */
    atomic_int step;      /* the step under way: the last done + 1 */
    atomic_llong last_ms; /* when the verb last printed (or the step last moved) */
} Heartbeat;

/* Starts the thread (nothing when it cannot: the work goes on silent). */
void cli_heartbeat_start(Heartbeat *h, const char *what, int steps);
/* done steps are finished; printed: the verb just printed a line of its own
 * (the next heartbeat comes 10 s after it). */
void cli_heartbeat_beat(Heartbeat *h, int done, bool printed);
void cli_heartbeat_stop(Heartbeat *h);

#endif
