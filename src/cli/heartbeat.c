/* A line every 10 s of silence: see heartbeat.h. */
#include "heartbeat.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "storylm/clock.h"
#include "storylm/parse.h"

#define HEARTBEAT_MS 10000

/* $STORYLM_PROGRESS_SECONDS, else 10 s: the tests make it short. */
static long long interval_ms(void) {
    const char *v = getenv("STORYLM_PROGRESS_SECONDS");
    double s;
    return v && slm_parse_double(v, 0.01, 3600, &s) == PARSE_OK ? (long long)(s * 1000) : HEARTBEAT_MS;
}

static long long now_ms(void) { return (long long)(slm_clock_seconds() * 1000.0); }

static void *beat_loop(void *arg) {
    Heartbeat *h = arg;
    long long began = now_ms(), every = interval_ms(), wait_ms = every < 1000 ? every : 1000;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long long ns = until.tv_nsec + wait_ms * 1000000;
        until.tv_sec += ns / 1000000000, until.tv_nsec = ns % 1000000000;
        pthread_cond_timedwait(&h->wake, &h->lock, &until);
        long long now = now_ms(), last = atomic_load(&h->last_ms);
        if (h->stop || now - last < every) continue;
        char total[32];
        cli_format_duration((double)(now - began) / 1000, total, sizeof total);
        fprintf(stderr, "%sstorylm: %s: step %d of %d under way, %s in all%s", h->tty ? "\r\033[K" : "", h->what,
                atomic_load(&h->step), h->steps, total, h->tty ? "" : "\n");
        atomic_store(&h->last_ms, now);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

void cli_heartbeat_start(Heartbeat *h, const char *what, int steps) {
    *h = (Heartbeat){.what = what, .steps = steps, .tty = isatty(2)};
    atomic_init(&h->step, 1);
    atomic_init(&h->last_ms, now_ms());
    if (pthread_mutex_init(&h->lock, NULL) != 0) return;
    if (pthread_cond_init(&h->wake, NULL) != 0) {
        pthread_mutex_destroy(&h->lock);
        return;
    }
    h->running = pthread_create(&h->thread, NULL, beat_loop, h) == 0;
    if (!h->running) pthread_cond_destroy(&h->wake), pthread_mutex_destroy(&h->lock);
}

void cli_heartbeat_beat(Heartbeat *h, int done, bool printed) {
    atomic_store(&h->step, done + 1);
    if (printed) atomic_store(&h->last_ms, now_ms());
}

void cli_heartbeat_stop(Heartbeat *h) {
    if (!h->running) return;
    pthread_mutex_lock(&h->lock);
    h->stop = true;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    h->running = false;
}
